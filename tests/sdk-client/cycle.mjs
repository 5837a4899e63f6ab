// The official TypeScript SDK client (`@modelcontextprotocol/sdk`) running the list_changed
// cycle against `mcp-witness serve`, as a careful SDK user would. The point is to observe
// what the SDK does: nothing here papers over its behaviour. If the SDK never delivers a
// notification, the summary says so and the cycle carries on without a re-list, so the
// serve log (and `mcp-witness analyze`) shows it.
//
// Usage:
//   MCP_WITNESS_SDK_DIR=<node_modules dir> node cycle.mjs <mcp-witness binary> <log file>
// (MCP_WITNESS_BIN and MCP_WITNESS_LOG may replace the two arguments.)
//
// MCP_WITNESS_SDK_MODE chooses how notifications are received:
//   listChanged (default)  the SDK's own `listChanged` client option (SDK >= 1.2x): the SDK
//                          re-lists by itself (autoRefresh, default 300 ms debounce) and hands
//                          the new list to `onChanged`; the script uses that list.
//   handler                `client.setNotificationHandler(<Domain>ListChangedNotificationSchema)`
//                          and an explicit re-list by the script once the notification arrives.
// MCP_WITNESS_SDK_WAIT_MS bounds the wait per domain (default 2000).
//
// Prints one JSON summary on stdout; exits 0 when the cycle ran (whatever the SDK did),
// 1 on a crash, 2 on a usage error.

import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import * as steps from "./cycle-steps.mjs";

const sdkDir = process.env.MCP_WITNESS_SDK_DIR;
const bin = process.argv[2] ?? process.env.MCP_WITNESS_BIN;
const log = process.argv[3] ?? process.env.MCP_WITNESS_LOG;
const mode = process.env.MCP_WITNESS_SDK_MODE ?? "listChanged";
const waitMs = Number(process.env.MCP_WITNESS_SDK_WAIT_MS ?? 2000);
if (!sdkDir || !bin || !log || !["listChanged", "handler"].includes(mode)) {
  console.error(
    "usage: MCP_WITNESS_SDK_DIR=<node_modules> [MCP_WITNESS_SDK_MODE=listChanged|handler] node cycle.mjs <mcp-witness> <log>",
  );
  process.exit(2);
}

const sdkRoot = path.join(sdkDir, "@modelcontextprotocol", "sdk");
const load = (rel) => import(pathToFileURL(path.join(sdkRoot, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
const types = await load("types.js");
const sdkVersion = JSON.parse(fs.readFileSync(path.join(sdkRoot, "package.json"), "utf8")).version;

const DOMAINS = steps.domains(types);
const names = Object.keys(DOMAINS);
const { delivered, deliver } = steps.waiters(names);

const options = { capabilities: {} };
if (mode === "listChanged") options.listChanged = steps.listChangedOption(names, deliver);
const client = new Client({ name: "typescript-sdk-cycle", version: sdkVersion }, options);
if (mode === "handler") {
  for (const [d, spec] of Object.entries(DOMAINS)) {
    client.setNotificationHandler(spec.schema, () => deliver(d, null, null));
  }
}

const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--log", log],
  env: getDefaultEnvironment(),
  stderr: "inherit",
});

const summary = { client: "@modelcontextprotocol/sdk", sdk_version: sdkVersion, node: process.version, mode, wait_ms: waitMs, domains: {} };
try {
  await client.connect(transport);
  summary.server = client.getServerVersion();
  summary.server_capabilities = client.getServerCapabilities();
  summary.domains = await steps.runCycle(client, DOMAINS, delivered, waitMs);
  const status = await steps.attempt(() => client.callTool({ name: "witness_status", arguments: {} }));
  summary.status = status.text;
  await client.close();
  console.log(JSON.stringify(summary));
  process.exit(0);
} catch (e) {
  summary.crash = String(e?.stack ?? e);
  console.log(JSON.stringify(summary));
  try {
    await client.close();
  } catch {}
  process.exit(1);
}
