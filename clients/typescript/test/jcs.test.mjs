// RFC 8785 by table and by a seeded property test (round trip and idempotence).
import { test } from "node:test";
import assert from "node:assert/strict";
import { canonicalize, canonicalizeText, CanonicalizationError } from "../dist/index.js";

test("jcs table", () => {
  const table = [
    ['{"b":2,"a":1}', '{"a":1,"b":2}'],
    ["[1.0, 1e21, 1e-7, -0, 0.1, 1e-6, 123456789012345680000, 4.5e-5]", "[1,1e+21,1e-7,0,0.1,0.000001,123456789012345680000,0.000045]"],
    ['"\\u20ac\\u0041\\n\\u001f\\"\\\\/"', '"€A\\n\\u001f\\"\\\\/"'],
    ['"\\ud83d\\ude00"', '"😀"'],
    // UTF-16 code unit order: "\ue000" (U+E000) sorts after "\ud83d\ude00" (U+1F600), unlike code point order.
    ['{"\\ue000":1,"\\ud83d\\ude00":2,"a":3,"A":4,"":5}', '{"":5,"A":4,"a":3,"\ud83d\ude00":2,"\ue000":1}'],
    ['{"x":{"z":[true,false,null],"y":{}}}', '{"x":{"y":{},"z":[true,false,null]}}'],
    ["333333333.33333329", "333333333.3333333"],
    ["1E400".replace("400", "30"), "1e+30"],
    ["-1.5e-300", "-1.5e-300"],
    ['  { "a" : [ ] }  ', '{"a":[]}'],
  ];
  for (const [input, want] of table) assert.equal(canonicalizeText(input), want, input);
});

test("jcs rejects what has no canonical form", () => {
  for (const v of [NaN, Infinity, -Infinity, { a: undefined }, [() => 1], 10n, "\ud800", { "\udc00": 1 }]) {
    assert.throws(() => canonicalize(v), CanonicalizationError);
  }
  assert.throws(() => canonicalizeText("{"), CanonicalizationError);
});

// mulberry32: a small seeded generator, so a failure is reproducible.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gen(r, depth) {
  const k = Math.floor(r() * (depth > 3 ? 4 : 7));
  switch (k) {
    case 0: return null;
    case 1: return r() < 0.5;
    case 2: {
      const f = [() => Math.floor(r() * 1e6) - 5e5, () => (r() - 0.5) * 10 ** Math.floor(r() * 60 - 30), () => r(), () => -0, () => 2 ** 53 + 2];
      return f[Math.floor(r() * f.length)]();
    }
    case 3: {
      let s = "";
      const n = Math.floor(r() * 8);
      const pool = ["a", "Z", "é", "€", "\n", "\u0000", "\u001f", '"', "\\", "/", "😀", "\ue000", "\u2028", " "];
      for (let i = 0; i < n; i++) s += pool[Math.floor(r() * pool.length)];
      return s;
    }
    case 4: case 5: {
      const a = [];
      const n = Math.floor(r() * 4);
      for (let i = 0; i < n; i++) a.push(gen(r, depth + 1));
      return a;
    }
    default: {
      const o = {};
      const n = Math.floor(r() * 5);
      for (let i = 0; i < n; i++) o[gen(r, 9) + String(Math.floor(r() * 100))] = gen(r, depth + 1);
      return o;
    }
  }
}

test("jcs property: canonical text parses back to the same value and is a fixed point", () => {
  const r = rng(21);
  for (let i = 0; i < 3000; i++) {
    const v = gen(r, 0);
    const c = canonicalize(v);
    const back = JSON.parse(c);
    assert.equal(canonicalize(back), c, `not a fixed point: ${c}`);
    // Round trip: same value up to -0 (which JSON has no way to say).
    assert.deepEqual(back, JSON.parse(JSON.stringify(v)), c);
    // Whitespace and member order do not change the canonical form.
    const shuffled = JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).reverse()) : x), 2);
    assert.equal(canonicalizeText(shuffled), c);
  }
});
