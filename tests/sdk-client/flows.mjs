// The official TypeScript SDK client (`@modelcontextprotocol/sdk`) through every domain of the
// client kit in one session against a real `mcp-witness serve`: first the list_changed cycle
// (cycle-steps.mjs, through the SDK's own `listChanged` option), then the flows, as an SDK
// user wires them: request handlers for
// roots, sampling and elicitation; `setLoggingLevel` and a logging notification handler;
// `complete`; `subscribeResource` with a resources/updated handler that re-reads; and a
// tool call with `onprogress` cancelled through an AbortSignal. The SDK's own behaviour is
// what the log shows: nothing here papers over it. `mcp-witness analyze` judges the log.
//
// Usage:
//   MCP_WITNESS_SDK_DIR=<node_modules dir> node flows.mjs <mcp-witness binary> <log file>
// MCP_WITNESS_SDK_WAIT_MS bounds each wait for the server (default 3000).
//
// Every `witness_ask_*` tool serve lists is called (so a question serve learns later, such as
// another elicitation mode, is asked too). The SDK 1.32.2 speaks only the handshake era
// (its SUPPORTED_PROTOCOL_VERSIONS end at 2025-11-25), so this runs the legacy era.
//
// Prints one JSON summary on stdout; exits 0 when the run finished (whatever the SDK did),
// 1 on a crash, 2 on a usage error.

import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import * as steps from "./cycle-steps.mjs";

const sdkDir = process.env.MCP_WITNESS_SDK_DIR;
const bin = process.argv[2];
const log = process.argv[3];
const waitMs = Number(process.env.MCP_WITNESS_SDK_WAIT_MS ?? 3000);
if (!sdkDir || !bin || !log) {
  console.error("usage: MCP_WITNESS_SDK_DIR=<node_modules> node flows.mjs <mcp-witness> <log>");
  process.exit(2);
}

const sdkRoot = path.join(sdkDir, "@modelcontextprotocol", "sdk");
const load = (rel) => import(pathToFileURL(path.join(sdkRoot, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
const types = await load("types.js");
const sdkVersion = JSON.parse(fs.readFileSync(path.join(sdkRoot, "package.json"), "utf8")).version;

const COUNTER = "probe://counter";
const summary = {
  client: "@modelcontextprotocol/sdk",
  sdk_version: sdkVersion,
  supported_protocol_versions: types.SUPPORTED_PROTOCOL_VERSIONS,
  node: process.version,
  asked: {},
  steps: {},
  log_levels: [],
  progress: [],
  updated: [],
};

// A promise resolved by the first call of `hit`, and a bounded wait for it.
const signal = () => {
  let hit;
  const promise = new Promise((r) => (hit = r));
  return { promise, hit };
};
const within = (p, ms = waitMs) =>
  Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

const DOMAINS = steps.domains(types);
const { delivered, deliver } = steps.waiters(Object.keys(DOMAINS));
const client = new Client(
  { name: "typescript-sdk-flows", version: sdkVersion },
  {
    capabilities: {
      roots: { listChanged: true },
      sampling: {},
      elicitation: { form: {}, url: {} },
    },
    listChanged: steps.listChangedOption(Object.keys(DOMAINS), deliver),
  },
);

let roots = [{ uri: "file:///tmp/typescript-sdk-root", name: "ts root" }];
const rootsAsked = [];
let rootsReasked = signal();
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  rootsAsked.push(Date.now());
  if (rootsAsked.length > 1) rootsReasked.hit();
  return { roots };
});
client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
  summary.asked.sampling = req.params.messages?.length ?? 0;
  return {
    role: "assistant",
    content: { type: "text", text: "typescript" },
    model: "typescript-sdk-test-model",
    stopReason: "endTurn",
  };
});
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  const mode = req.params.mode ?? "form";
  (summary.asked.elicitation ??= []).push(mode);
  if (mode === "url") return { action: "accept" };
  return { action: "accept", content: { name: "typescript", count: 3 } };
});
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
  summary.log_levels.push(n.params.level);
});
const updated = signal();
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => {
  summary.updated.push(n.params.uri);
  updated.hit();
});

const transport = new StdioClientTransport({
  command: bin,
  args: ["serve", "--log", log],
  env: getDefaultEnvironment(),
  stderr: "inherit",
});

const step = async (name, f) => {
  try {
    const r = await f();
    summary.steps[name] = r?.isError ? { isError: true, content: r.content } : { ok: true, result: r };
    return r;
  } catch (e) {
    summary.steps[name] = { error: String(e?.message ?? e) };
    return null;
  }
};

try {
  await client.connect(transport);
  summary.protocol_version = transport._protocolVersion ?? null;
  summary.server_capabilities = client.getServerCapabilities();
  summary.domains = await steps.runCycle(client, DOMAINS, delivered, waitMs);
  const tools = (await client.listTools()).tools.map((t) => t.name);

  // Roots, sampling, elicitation (every mode serve asks): the SDK's request handlers answer.
  for (const tool of tools.filter((t) => t.startsWith("witness_ask_"))) {
    await step(tool, () => client.callTool({ name: tool, arguments: {} }));
  }
  // Roots change: the SDK sends notifications/roots/list_changed; a server may ask again.
  roots = [...roots, { uri: "file:///tmp/typescript-sdk-root-2", name: "ts root 2" }];
  await step("sendRootsListChanged", () => client.sendRootsListChanged());
  summary.roots_reasked_after_list_changed = await within(rootsReasked.promise, 1000);
  summary.roots_asked = rootsAsked.length;

  // Logging: a level, then the messages of every level at or above it.
  await step("setLoggingLevel", () => client.setLoggingLevel("debug"));
  await step("witness_log_all_levels", () =>
    client.callTool({ name: "witness_log_all_levels", arguments: {} }),
  );

  // Completion: language, then framework given the language; the prompt with a suggestion.
  const ref = { type: "ref/prompt", name: "witness_complete_prompt" };
  const lang = await step("complete_language", () =>
    client.complete({ ref, argument: { name: "language", value: "py" } }),
  );
  const language = lang?.completion?.values?.[0] ?? "python";
  const fw = await step("complete_framework", () =>
    client.complete({ ref, argument: { name: "framework", value: "" }, context: { arguments: { language } } }),
  );
  const framework = fw?.completion?.values?.[0] ?? "none";
  await step("get_prompt", () =>
    client.getPrompt({ name: "witness_complete_prompt", arguments: { language, framework } }),
  );

  // Subscriptions: subscribe, touch, re-read on the update, unsubscribe.
  await step("subscribeResource", () => client.subscribeResource({ uri: COUNTER }));
  await step("witness_touch_resource", () =>
    client.callTool({ name: "witness_touch_resource", arguments: {} }),
  );
  summary.update_delivered = await within(updated.promise);
  if (summary.update_delivered) {
    const r = await step("reread", () => client.readResource({ uri: COUNTER }));
    summary.reread_text = r?.contents?.[0]?.text ?? null;
  }
  await step("unsubscribeResource", () => client.unsubscribeResource({ uri: COUNTER }));

  // Progress: onprogress (the SDK adds a progressToken), cancelled through an AbortSignal
  // once progress came (or the wait ran out).
  const abort = new AbortController();
  const gotProgress = signal();
  const slow = step("witness_slow", () =>
    client.callTool({ name: "witness_slow", arguments: {} }, undefined, {
      signal: abort.signal,
      onprogress: (p) => {
        summary.progress.push(p);
        if (summary.progress.length >= 3) gotProgress.hit();
      },
    }),
  );
  summary.progress_seen = await within(gotProgress.promise);
  abort.abort("mcp-witness flows.mjs cancels the slow call");
  await slow;

  // The session goes on: one more request answered.
  await step("witness_status", () => client.callTool({ name: "witness_status", arguments: {} }));
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
