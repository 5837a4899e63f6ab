// The official TypeScript SDK client declaring elicitation form mode only (`elicitation: {}`,
// which the spec reads as form only) against a real `mcp-witness serve`, calling
// `witness_ask_undeclared_mode`: serve then sends one `elicitation/create` in URL mode, which
// this client never declared. A correct client refuses it with an error; the elicitation
// handler below would accept anything, so the log shows what the SDK itself does. Then one
// more call, to show the session goes on.
//
// Usage:
//   MCP_WITNESS_SDK_DIR=<node_modules dir> node undeclared-mode.mjs <mcp-witness binary> <log file>
// Prints one JSON summary on stdout.

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const sdkDir = process.env.MCP_WITNESS_SDK_DIR;
const [bin, log] = process.argv.slice(2);
if (!sdkDir || !bin || !log) {
  console.error("usage: MCP_WITNESS_SDK_DIR=<node_modules> node undeclared-mode.mjs <mcp-witness> <log>");
  process.exit(2);
}
const sdkRoot = path.join(sdkDir, "@modelcontextprotocol", "sdk");
const load = (rel) => import(pathToFileURL(path.join(sdkRoot, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
const types = await load("types.js");
const sdkVersion = JSON.parse(fs.readFileSync(path.join(sdkRoot, "package.json"), "utf8")).version;

const summary = { handler_saw: [] };
const client = new Client(
  { name: "typescript-sdk-form-only", version: sdkVersion },
  { capabilities: { elicitation: {} } },
);
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  summary.handler_saw.push(req.params.mode ?? "form");
  return { action: "accept", content: { name: "typescript" } };
});
const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--log", log],
  env: getDefaultEnvironment(),
  stderr: "inherit",
});
try {
  await client.connect(transport);
  summary.call = await client.callTool({ name: "witness_ask_undeclared_mode", arguments: {} });
  summary.after = await client.callTool({ name: "witness_status", arguments: {} });
} catch (e) {
  summary.error = String(e?.message ?? e);
}
await client.close();
console.log(JSON.stringify(summary));
