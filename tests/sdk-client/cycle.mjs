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

const DOMAINS = {
  tools: {
    schema: types.ToolListChangedNotificationSchema,
    mutate: "witness_mutate_tools",
    alpha: "witness_probe_alpha",
    beta: "witness_probe_beta",
    list: async (c) => (await c.listTools()).tools,
    key: "name",
    use: (c, name) => c.callTool({ name, arguments: {} }),
  },
  resources: {
    schema: types.ResourceListChangedNotificationSchema,
    mutate: "witness_mutate_resources",
    alpha: "probe://alpha",
    beta: "probe://beta",
    list: async (c) => (await c.listResources()).resources,
    key: "uri",
    use: (c, uri) => c.readResource({ uri }),
  },
  prompts: {
    schema: types.PromptListChangedNotificationSchema,
    mutate: "witness_mutate_prompts",
    alpha: "witness_alpha_prompt",
    beta: "witness_beta_prompt",
    list: async (c) => (await c.listPrompts()).prompts,
    key: "name",
    use: (c, name) => c.getPrompt({ name }),
  },
};

// One waiter per domain: resolved by whatever the SDK delivers.
const delivered = {};
for (const d of Object.keys(DOMAINS)) {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  delivered[d] = { promise, resolve, count: 0, at: null, items: null, error: null };
}
const deliver = (d, error, items) => {
  const w = delivered[d];
  w.count += 1;
  if (w.at === null) {
    w.at = Date.now();
    w.error = error ? String(error) : null;
    w.items = items ?? null;
    w.resolve();
  }
};

const options = { capabilities: {} };
if (mode === "listChanged") {
  options.listChanged = {};
  for (const d of Object.keys(DOMAINS)) {
    options.listChanged[d] = { onChanged: (error, items) => deliver(d, error, items) };
  }
}
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

const text = (r) =>
  (r?.content ?? r?.contents ?? r?.messages ?? [])
    .map((c) => c.text ?? c.content?.text ?? "")
    .join(" ")
    .slice(0, 120);
const attempt = async (f) => {
  try {
    const r = await f();
    return { ok: !r?.isError, text: text(r) };
  } catch (e) {
    return { ok: false, error: String(e?.message ?? e) };
  }
};

const summary = { client: "@modelcontextprotocol/sdk", sdk_version: sdkVersion, node: process.version, mode, wait_ms: waitMs, domains: {} };
try {
  await client.connect(transport);
  summary.server = client.getServerVersion();
  summary.server_capabilities = client.getServerCapabilities();
  for (const [d, spec] of Object.entries(DOMAINS)) {
    const r = {};
    const before = await spec.list(client);
    r.initial = before.map((it) => it[spec.key]);
    r.alpha = await attempt(() => spec.use(client, spec.alpha));
    const mutatedAt = Date.now();
    r.mutate = await attempt(() => client.callTool({ name: spec.mutate, arguments: {} }));
    const timeout = new Promise((res) => setTimeout(() => res("timeout"), waitMs));
    const got = await Promise.race([delivered[d].promise.then(() => "delivered"), timeout]);
    r.notification_delivered = got === "delivered";
    if (r.notification_delivered) {
      r.delivered_ms_after_mutate_call = delivered[d].at - mutatedAt;
      if (delivered[d].error) r.delivery_error = delivered[d].error;
      let items = delivered[d].items;
      if (items) {
        r.relisted_by = "sdk (listChanged autoRefresh)";
      } else {
        items = await spec.list(client);
        r.relisted_by = "script (after the notification handler fired)";
      }
      r.relisted = items.map((it) => it[spec.key]);
    } else {
      r.relisted_by = "nobody (no notification delivered within the wait)";
    }
    r.beta = await attempt(() => spec.use(client, spec.beta));
    summary.domains[d] = r;
  }
  const status = await attempt(() => client.callTool({ name: "witness_status", arguments: {} }));
  summary.status = status.text;
  for (const d of Object.keys(DOMAINS)) summary.domains[d].notifications_delivered = delivered[d].count;
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
