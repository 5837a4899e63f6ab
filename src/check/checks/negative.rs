//! Negative protocol cases: what a server must refuse or ignore (a JSON-RPC batch from
//! 2025-06-18 on, a second `initialize`, an invalid cursor, a notification it must not
//! answer) and what it must tolerate (unknown `_meta` keys, `notifications/cancelled` for a
//! request it never saw); and the grading of what every run already sees on the wire (server
//! requests for client capabilities we never declared, log notifications without `logging`).

use serde_json::{Value, json};

use super::Outcome;
use crate::check::session::{Ctx, Probed};
use crate::mcp::code::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR};
use crate::mcp::{CLIENT_NAME, DEFAULT_LEGACY, Era};
use crate::rpc::{Reply, describe};
use crate::text::truncate;

/// The id of the one request inside the batch we send.
const BATCH_ID: &str = "mcpw-batch-1";
/// The first version whose schema has no batch (2025-03-26 added batches, 2025-06-18 removed
/// them).
const NO_BATCH_FROM: &str = "2025-06-18";
/// A cursor no server handed out.
pub(crate) const INVALID_CURSOR: &str = "mcp-witness-invalid-cursor";
/// A `_meta` key no server knows (a prefix of our own, as the spec asks of custom keys).
pub(crate) const UNKNOWN_META_KEY: &str = "dev.mcp-witness/unknown";
/// The request id a `notifications/cancelled` names: never sent.
const NEVER_SENT: &str = "mcpw-never-sent";
/// A notification method no server defines.
const UNKNOWN_NOTIFICATION: &str = "notifications/mcp-witness/unknown";

/// A reply without an id, or with id null: what a server that answers a notification sends.
fn no_id(id: Option<&Value>) -> bool {
    id.is_none_or(Value::is_null)
}

fn array_lines(ctx: &Ctx<'_>) -> u64 {
    ctx.rpc.as_ref().map_or(0, |r| r.traffic.array_lines)
}

pub fn batch(ctx: &mut Ctx<'_>) -> Outcome {
    let version = ctx.protocol_version.clone().unwrap_or_default();
    if ctx.era == Era::Legacy && version.as_str() < NO_BATCH_FROM {
        return Outcome::skip(format!(
            "the session speaks {}, which allows batches (they are removed from {NO_BATCH_FROM} on)",
            truncate(&version, 32)
        ));
    }
    let (method, params) = match ctx.era {
        Era::Modern => ("server/discover", ctx.wrap(None)),
        Era::Legacy => ("ping", None),
    };
    let mut request = json!({"jsonrpc": "2.0", "id": BATCH_ID, "method": method});
    if let Some(p) = params {
        request["params"] = p;
    }
    let line = json!([request]).to_string();
    let before = array_lines(ctx);
    let probed = ctx.probe_line(line.as_bytes(), &|id| {
        no_id(id) || id.is_some_and(|v| v == BATCH_ID)
    });
    let what = format!(
        "a batch of one {method} (the session speaks {})",
        truncate(&version, 32)
    );
    if array_lines(ctx) > before {
        return Outcome::fail(format!(
            "{what} was answered with a JSON array: the batch was processed"
        ))
        .with(line);
    }
    match probed {
        Probed::Reply(Reply::Error { code, .. }) if code == INVALID_REQUEST || code == PARSE_ERROR => {
            Outcome::pass(format!("rejected with error {code}"))
        }
        Probed::Reply(Reply::Error { code, .. }) => {
            Outcome::warn(format!("{what} got error {code}, not -32600")).with(line)
        }
        Probed::Reply(Reply::Result(_)) => Outcome::fail(format!(
            "{what}: the request inside it got a result, so the batch was processed"
        ))
        .with(line),
        Probed::Reply(Reply::Malformed(_)) => {
            Outcome::fail(format!("{what} got a reply with neither result nor error")).with(line)
        }
        Probed::Ignored => Outcome::pass("dropped without a reply (not processed)"),
        Probed::NoReply(e) => Outcome::fail(format!("{what} {}", describe(&Err(e)))).with(line),
    }
}

pub fn second_initialize(ctx: &mut Ctx<'_>) -> Outcome {
    if ctx.era != Era::Legacy {
        return Outcome::skip("legacy era only (the modern era has no initialize)");
    }
    let version = ctx
        .protocol_version
        .clone()
        .unwrap_or_else(|| DEFAULT_LEGACY.into());
    let params = crate::mcp::initialize_params(&version, CLIENT_NAME);
    match ctx.request_with("initialize", Some(params), false) {
        Ok(Reply::Error { code, .. }) => Outcome::pass(format!("rejected with error {code}")),
        Ok(Reply::Result(r)) => {
            // It started the handshake over: finish it, or a strict server holds every later
            // request until `initialized` arrives.
            ctx.notify("notifications/initialized", None);
            match r.get("protocolVersion").and_then(Value::as_str) {
                Some(v) if v == version => Outcome::warn(format!(
                    "a second initialize in the session was accepted (answered {}); the session's version and capabilities could be renegotiated mid-session",
                    truncate(v, 32)
                )),
                other => Outcome::fail(format!(
                    "a second initialize asking for {} was answered with protocolVersion {}: the session's version changed mid-session",
                    truncate(&version, 32),
                    other.map_or_else(|| "(none)".into(), |v| format!("`{}`", truncate(v, 32)))
                )),
            }
        }
        other => Outcome::fail(format!("a second initialize {}", describe(&other))),
    }
}

pub fn invalid_cursor(ctx: &mut Ctx<'_>) -> Outcome {
    let Some(method) = ["tools", "resources", "prompts"]
        .into_iter()
        .find(|c| ctx.capabilities().is_some_and(|caps| caps.contains_key(*c)))
        .map(|c| format!("{c}/list"))
    else {
        return Outcome::skip("no list capability declared");
    };
    let what = format!("{method} with the cursor `{INVALID_CURSOR}`, never handed out");
    match ctx.request(&method, Some(json!({"cursor": INVALID_CURSOR}))) {
        Ok(Reply::Error {
            code: INVALID_PARAMS, ..
        }) => Outcome::pass(format!("{method}: error -32602")),
        Ok(Reply::Error { code, .. }) => Outcome::warn(format!("{what} got error {code}, not -32602")),
        Ok(Reply::Result(_)) => Outcome::warn(format!(
            "{what} got a result (an invalid cursor SHOULD be error -32602)"
        )),
        other => Outcome::fail(format!("{what} {}", describe(&other))),
    }
}

pub fn unknown_meta(ctx: &mut Ctx<'_>) -> Outcome {
    let method = match ctx.era {
        Era::Modern => "server/discover",
        Era::Legacy => "ping",
    };
    let params = json!({"_meta": {UNKNOWN_META_KEY: "a key the server does not know"}});
    match ctx.request(method, Some(params)) {
        Ok(Reply::Result(_)) => Outcome::pass(format!("{method} with an unknown _meta key: a result")),
        other => Outcome::fail(format!(
            "{method} with the unknown _meta key `{UNKNOWN_META_KEY}` {}",
            describe(&other)
        )),
    }
}

/// Sends a notification as a raw line and grades what follows: no reply, and the next
/// request still answered.
fn notification_ignored(ctx: &mut Ctx<'_>, message: &Value, what: &str) -> Outcome {
    let line = message.to_string();
    match ctx.probe_line(line.as_bytes(), &no_id) {
        Probed::Ignored => Outcome::pass(format!("{what}: no reply, and the next request was answered")),
        Probed::Reply(reply) => Outcome::fail(format!(
            "{what} was answered ({}): a notification never gets a reply",
            describe(&Ok(reply))
        ))
        .with(line),
        Probed::NoReply(e) => {
            Outcome::fail(format!("after {what}, the next request {}", describe(&Err(e)))).with(line)
        }
    }
}

pub fn cancel_unknown(ctx: &mut Ctx<'_>) -> Outcome {
    let message = json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": NEVER_SENT, "reason": "mcp-witness: a request that was never sent"},
    });
    notification_ignored(ctx, &message, "notifications/cancelled for an unknown request id")
}

pub fn notification_no_reply(ctx: &mut Ctx<'_>) -> Outcome {
    let message = json!({"jsonrpc": "2.0", "method": UNKNOWN_NOTIFICATION});
    notification_ignored(ctx, &message, "an unknown notification")
}

/// The client capability a server request needs, for the requests that need one.
fn client_capability(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        "elicitation/create" => Some("elicitation"),
        _ => None,
    }
}

/// One round trip, so that whatever the server sent before its reply has been read: a
/// server answers in order.
fn settle(ctx: &mut Ctx<'_>) {
    let method = match ctx.era {
        Era::Modern => "server/discover",
        Era::Legacy => "ping",
    };
    let _ = ctx.request(method, None);
}

pub fn server_requests(ctx: &mut Ctx<'_>) -> Outcome {
    settle(ctx);
    let traffic = ctx.traffic();
    if traffic.server_request_count == 0 {
        return Outcome::pass("no server request in the run");
    }
    let mut names: Vec<String> = Vec::new();
    for (m, _) in &traffic.server_requests {
        let m = truncate(m, 64);
        if !names.contains(&m) {
            names.push(m);
        }
    }
    let kept = traffic.server_requests.len() as u64;
    let more = if traffic.server_request_count > kept {
        format!(
            " (the methods of the first {kept} of {} requests)",
            traffic.server_request_count
        )
    } else {
        String::new()
    };
    if ctx.era == Era::Modern {
        return Outcome::fail(format!(
            "{} server request(s) in the modern era, which has none on stdio: {}{more}",
            traffic.server_request_count,
            names.join(", ")
        ));
    }
    let undeclared: Vec<String> = names
        .iter()
        .filter_map(|m| client_capability(m).map(|c| format!("{m} (needs `{c}`)")))
        .collect();
    if !undeclared.is_empty() {
        return Outcome::fail(format!(
            "the server sent requests for client capabilities mcp-witness never declared: {}{more}",
            undeclared.join(", ")
        ));
    }
    let unknown: Vec<&String> = names.iter().filter(|m| m.as_str() != "ping").collect();
    if unknown.is_empty() {
        Outcome::pass(format!("{} ping request(s) only", traffic.server_request_count))
    } else {
        Outcome::warn(format!(
            "server requests of no MCP method a client offers: {}{more}",
            unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))
    }
}

pub fn log_without_capability(ctx: &mut Ctx<'_>) -> Outcome {
    settle(ctx);
    let logs = ctx.traffic().log_messages;
    let declared = ctx.capabilities().is_some_and(|c| c.contains_key("logging"));
    match (logs, declared) {
        (0, _) => Outcome::pass("no log notification in the run"),
        (n, true) => Outcome::pass(format!("{n} log notification(s), `logging` declared")),
        (n, false) => Outcome::fail(format!(
            "{n} notifications/message sent, but the server does not declare `logging`"
        )),
    }
}
