// RFC 8785 JSON Canonicalization Scheme. ECMAScript's own number and string
// serialisation is what RFC 8785 specifies, so JSON.stringify does the
// leaves; this file sorts object members by UTF-16 code units (the default
// order of JavaScript string comparison), rejects what I-JSON forbids (a
// number that is not finite, a lone surrogate) and what JSON cannot carry.

/** Thrown when a value has no RFC 8785 form. */
export class CanonicalizationError extends TypeError {
  override name = "CanonicalizationError";
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function str(s: string, path: string): string {
  if (loneSurrogate.test(s)) throw new CanonicalizationError(`jcs: ${path}: string holds a lone surrogate (not I-JSON)`);
  return JSON.stringify(s);
}

function walk(v: unknown, path: string, depth: number): string {
  if (depth > 1000) throw new CanonicalizationError(`jcs: ${path}: nested deeper than 1000 levels`);
  if (v === null) return "null";
  switch (typeof v) {
    case "boolean":
      return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new CanonicalizationError(`jcs: ${path}: ${v} is not a finite number`);
      return JSON.stringify(v); // ECMAScript Number.prototype.toString: RFC 8785 §3.2.2.3; -0 becomes 0
    case "string":
      return str(v, path);
    case "object": {
      if (Array.isArray(v)) {
        return "[" + v.map((x, i) => walk(x, `${path}[${i}]`, depth + 1)).join(",") + "]";
      }
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o).sort(); // UTF-16 code unit order
      const parts: string[] = [];
      for (const k of keys) {
        if (o[k] === undefined) throw new CanonicalizationError(`jcs: ${path}.${k}: undefined is not JSON`);
        parts.push(str(k, path) + ":" + walk(o[k], `${path}.${k}`, depth + 1));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      throw new CanonicalizationError(`jcs: ${path}: a ${typeof v} is not JSON`);
  }
}

/** The RFC 8785 canonical JSON text of a JSON value (as JSON.parse returns it). */
export function canonicalize(value: unknown): string {
  return walk(value, "$", 0);
}

/**
 * The RFC 8785 canonical form of JSON text. Note JSON.parse keeps the last of
 * duplicate member names, where kurad refuses such content outright.
 */
export function canonicalizeText(json: string): string {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (e) {
    throw new CanonicalizationError(`jcs: not JSON: ${(e as Error).message}`);
  }
  return canonicalize(v);
}
