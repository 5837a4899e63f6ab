// The list_changed cycle of the client kit, as an SDK user runs it with the official
// TypeScript SDK client: per domain (tools, resources, prompts) list, use alpha, mutate, wait
// for the SDK to deliver the notification, re-list (or take the SDK's own re-list), use beta.
// Shared by cycle.mjs (the cycle alone, in either notification mode) and flows.mjs (the cycle,
// then the flows, in one session).

// `types`: the SDK's types.js module.
export const domains = (types) => ({
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
});

// One waiter per domain, resolved by whatever the SDK delivers; `deliver(d, error, items)`.
export const waiters = (names) => {
  const delivered = {};
  for (const d of names) {
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
  return { delivered, deliver };
};

// The client option that makes the SDK re-list by itself (`listChanged`, SDK >= 1.2x).
export const listChangedOption = (names, deliver) =>
  Object.fromEntries(names.map((d) => [d, { onChanged: (error, items) => deliver(d, error, items) }]));

const text = (r) =>
  (r?.content ?? r?.contents ?? r?.messages ?? [])
    .map((c) => c.text ?? c.content?.text ?? "")
    .join(" ")
    .slice(0, 120);

export const attempt = async (f) => {
  try {
    const r = await f();
    return { ok: !r?.isError, text: text(r) };
  } catch (e) {
    return { ok: false, error: String(e?.message ?? e) };
  }
};

// Runs the cycle in every domain; returns what happened per domain.
export const runCycle = async (client, spec, delivered, waitMs) => {
  const out = {};
  for (const [d, s] of Object.entries(spec)) {
    const r = {};
    const before = await s.list(client);
    r.initial = before.map((it) => it[s.key]);
    r.alpha = await attempt(() => s.use(client, s.alpha));
    const mutatedAt = Date.now();
    r.mutate = await attempt(() => client.callTool({ name: s.mutate, arguments: {} }));
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
        items = await s.list(client);
        r.relisted_by = "script (after the notification handler fired)";
      }
      r.relisted = items.map((it) => it[s.key]);
    } else {
      r.relisted_by = "nobody (no notification delivered within the wait)";
    }
    r.beta = await attempt(() => s.use(client, s.beta));
    out[d] = r;
  }
  for (const d of Object.keys(spec)) out[d].notifications_delivered = delivered[d].count;
  return out;
};
