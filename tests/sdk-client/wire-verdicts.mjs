// The official TypeScript SDK's verdict on server messages, for the wire group's
// differential test (tests/wire_differential.rs): each message is parsed as the SDK client
// parses it (the JSON-RPC message schema its stdio transport applies to every line, then the
// result schema of the method the request called, or the server notification / request
// schema). The SDK is version-agnostic: one set of zod schemas for every protocol version.
//
// Usage: MCP_WITNESS_SDK_DIR=<node_modules dir> node wire-verdicts.mjs < cases.json
// Input: [{kind: "reply"|"notification"|"request", method, version, message}, …]
// Output: one JSON array, per case {accepted: true|false|null, why}; null: no opinion (a
// method the SDK has no schema for).

import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.MCP_WITNESS_SDK_DIR;
if (!sdkDir) {
  console.error("set MCP_WITNESS_SDK_DIR to the node_modules holding @modelcontextprotocol/sdk");
  process.exit(2);
}
const types = await import(
  pathToFileURL(path.join(sdkDir, "@modelcontextprotocol/sdk/dist/esm/types.js")).href
);

const RESULTS = {
  initialize: types.InitializeResultSchema,
  ping: types.EmptyResultSchema,
  "logging/setLevel": types.EmptyResultSchema,
  "tools/list": types.ListToolsResultSchema,
  "resources/list": types.ListResourcesResultSchema,
  "resources/templates/list": types.ListResourceTemplatesResultSchema,
  "prompts/list": types.ListPromptsResultSchema,
  "tools/call": types.CallToolResultSchema,
  "resources/read": types.ReadResourceResultSchema,
  "prompts/get": types.GetPromptResultSchema,
  "completion/complete": types.CompleteResultSchema,
};

function why(r) {
  return r.error.issues.slice(0, 3).map((i) => `${i.path.join("/")}: ${i.message}`).join("; ");
}

function verdict(c) {
  const envelope = types.JSONRPCMessageSchema.safeParse(c.message);
  if (!envelope.success) return { accepted: false, why: `envelope: ${why(envelope)}` };
  const m = c.message;
  if (c.kind === "reply") {
    if ("error" in m) return { accepted: true, why: "" };
    const schema = RESULTS[c.method];
    if (!schema) return { accepted: null, why: `no result schema for ${c.method}` };
    const r = schema.safeParse(m.result);
    return r.success ? { accepted: true, why: "" } : { accepted: false, why: why(r) };
  }
  const schema = c.kind === "notification" ? types.ServerNotificationSchema : types.ServerRequestSchema;
  const r = schema.safeParse(m);
  if (r.success) return { accepted: true, why: "" };
  // A method the SDK does not know is ignored (notification) or answered -32601 (request).
  const known = schema.options
    .map((o) => o.shape?.method?.value)
    .filter((x) => x !== undefined);
  if (!known.includes(m.method)) return { accepted: null, why: `unknown method ${m.method}` };
  return { accepted: false, why: why(r) };
}

const cases = JSON.parse(fs.readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(verdict)));
