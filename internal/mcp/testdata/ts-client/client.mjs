// Drives kurad's /mcp with the official MCP TypeScript SDK over Streamable
// HTTP, the way the MCP Inspector does: it lists the tools, checks every
// input schema, and calls the write tools with arguments built from what a
// person types into the Inspector's form, typed by the schema.
//
// Usage: node client.mjs <mcp-url> <expect.json> <session-id>
// expect.json: {"enum_args":[names], "tools":{tool:{"required":[...],
// "enums":{path:[values]}}}}. Prints one JSON line of what it wrote on
// success; exits 1 with the failures on stderr.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, expectFile, sessionID] = process.argv.slice(2);
const expect = JSON.parse(readFileSync(expectFile, "utf8"));
const failures = [];
const fail = (msg) => failures.push(msg);

const client = new Client({ name: "kura-ts-test", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

// Schemas.
const { tools } = await client.listTools();
const schemas = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]));
for (const [name, want] of Object.entries(expect.tools)) {
  const s = schemas[name];
  if (!s) {
    fail(`tool ${name} is not listed`);
    continue;
  }
  checkPlain(name, "", s);
  const req = [...(s.required ?? [])].sort();
  if (JSON.stringify(req) !== JSON.stringify(want.required)) {
    fail(`${name}: required ${JSON.stringify(req)}, want ${JSON.stringify(want.required)}`);
  }
  for (const [path, values] of Object.entries(want.enums ?? {})) {
    const got = at(s, path)?.enum;
    if (JSON.stringify(got) !== JSON.stringify(values)) {
      fail(`${name}: ${path} has enum ${JSON.stringify(got)}, want ${JSON.stringify(values)}`);
    }
  }
}
for (const t of tools) {
  if (!expect.tools[t.name]) fail(`tool ${t.name} is not expected`);
}

function checkPlain(tool, path, s) {
  if (Array.isArray(s.type)) fail(`${tool}: ${path || "(root)"} has type ${JSON.stringify(s.type)}, want one type`);
  if (s.type === "null") fail(`${tool}: ${path} has type null`);
  for (const [name, p] of Object.entries(s.properties ?? {})) {
    checkPlain(tool, `${path}.${name}`, p);
    if (expect.enum_args.includes(name)) {
      const e = p.type === "array" ? p.items : p;
      if (!Array.isArray(e?.enum) || e.enum.length === 0) fail(`${tool}: ${path}.${name} has no enum`);
    }
  }
  if (s.items && typeof s.items === "object") checkPlain(tool, `${path}[]`, s.items);
  if (s.additionalProperties && typeof s.additionalProperties === "object") {
    checkPlain(tool, `${path}{}`, s.additionalProperties);
  }
}

function at(s, path) {
  for (const part of path.split(".")) {
    const arr = part.endsWith("[]");
    s = s?.properties?.[arr ? part.slice(0, -2) : part];
    if (arr) s = s?.items;
  }
  return s;
}

// form turns what a person types into the Inspector's form fields into the
// arguments it sends: a field's text is converted by the property's type,
// as the Inspector's form does. A select (enum) offers only its values. A
// property whose type is not one plain type gets a text box, and its text
// is sent as a string: that is how a ["null","array"] argument reached
// kurad as "[...]". A required field left empty stops the form.
function form(tool, fields) {
  const s = schemas[tool];
  const args = {};
  for (const name of s.required ?? []) {
    if (!(name in fields)) throw new Error(`${tool}: the form's required field ${name} is empty`);
  }
  for (const [name, text] of Object.entries(fields)) {
    const p = s.properties?.[name];
    if (!p) throw new Error(`${tool}: the form has no field ${name}`);
    if (p.enum && !p.enum.includes(text)) throw new Error(`${tool}: ${name} offers ${p.enum.join(", ")}, not ${text}`);
    switch (p.type) {
      case "number":
      case "integer":
        args[name] = Number(text);
        break;
      case "boolean":
        args[name] = text === "true";
        break;
      case "array":
      case "object":
        args[name] = JSON.parse(text);
        break;
      default:
        args[name] = text;
    }
  }
  return args;
}

async function call(tool, fields) {
  let res;
  try {
    res = await client.callTool({ name: tool, arguments: form(tool, fields) });
  } catch (e) {
    fail(`${tool}: ${e.message}`);
    return null;
  }
  const text = res.content?.map((c) => c.text ?? "").join("");
  if (res.isError) {
    fail(`${tool}: tool error ${text}`);
    return null;
  }
  return res.structuredContent;
}

// Calls.
const wrote = {};
const opened = await call("turn_open", {
  session_id: sessionID,
  instruction: JSON.stringify({ type: "task.instruction", content: "check the build", author_id: "user:oles" }),
  deadline_seconds: "600",
});
if (opened) {
  wrote.turn_id = opened.id;
  const appended = await call("turn_append", {
    turn_id: opened.id,
    epoch: "0", // an unclaimed turn's epoch
    records: JSON.stringify([{ type: "memory.fact", content: "the build is green", author_id: "agent:bmo" }]),
  });
  if (appended && appended.output_record_ids?.length !== 1) {
    fail(`turn_append: output_record_ids ${JSON.stringify(appended.output_record_ids)}, want one`);
  }
  const closed = await call("turn_close", { turn_id: opened.id, epoch: "0", status: "failed" });
  if (closed && (closed.state !== "failed" || !closed.output_ledger_id)) {
    fail(`turn_close: got ${JSON.stringify(closed)}, want state failed with an output ledger`);
  }
}
const node = await call("memory_put", {
  scope: "hashi",
  kind: "fact",
  id: "x",
  title: "build",
  summary: "the build is green",
  confidence: "0.9",
  lifecycle: "active",
  authority: "trusted",
  source_type: "told_by_agent",
  target_files: JSON.stringify(["Makefile"]),
  metadata: JSON.stringify({ via: "inspector" }),
});
if (node && (node.ref !== "fact:x" || node.confidence !== 0.9 || node.target_files?.[0] !== "Makefile")) {
  fail(`memory_put: got ${JSON.stringify(node)}`);
}
// A new version: the summary resent (the schema requires it), a new
// confidence; the fields left out keep their value.
const v2 = await call("memory_put", { scope: "hashi", kind: "fact", id: "x", summary: "the build is green", confidence: "0.95" });
if (
  v2 &&
  (v2.version !== 2 || v2.confidence !== 0.95 || v2.title !== "build" || v2.lifecycle !== "active" ||
    v2.target_files?.[0] !== "Makefile" || v2.summary !== "the build is green")
) {
  fail(`memory_put of a new version: got ${JSON.stringify(v2)}, want version 2 with only the confidence changed`);
}
const bare = await call("kb_put", { kb: "docs", identifier: "no keys", value: "an entry without keys" });
if (bare && JSON.stringify(bare.keys ?? []) !== "[]") fail(`kb_put without keys: got ${JSON.stringify(bare)}`);
const keyed = await call("kb_put", { kb: "docs", identifier: "install guide", keys: '["setup","install"]', value: "run make build" });
if (keyed && JSON.stringify(keyed.keys) !== '["setup","install"]') fail(`kb_put with keys: got ${JSON.stringify(keyed)}`);

// A node resource, its ref's colon written as it is.
try {
  const rr = await client.readResource({ uri: "kura://scopes/hashi/nodes/fact:x" });
  const got = JSON.parse(rr.contents?.[0]?.text ?? "null");
  if (got?.ref !== "fact:x" || got?.summary !== "the build is green") fail(`read kura://scopes/hashi/nodes/fact:x: got ${rr.contents?.[0]?.text}`);
  wrote.resource = got?.ref;
} catch (e) {
  fail(`read kura://scopes/hashi/nodes/fact:x: ${e.message}`);
}

await client.close();
if (failures.length > 0) {
  for (const f of failures) console.error(f);
  process.exit(1);
}
console.log(JSON.stringify(wrote));
