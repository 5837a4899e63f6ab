//! The control client's side of the elicitation-mode flows and of a change of roots, as a
//! correct client runs them: URL mode (consent, open serve's loopback page, then legacy: wait
//! for `notifications/elicitation/complete`; modern: retry with the requestState), a request
//! in a mode it never declared (refused: legacy -32602, modern: the retry leaves it
//! unanswered), and new roots (legacy: `notifications/roots/list_changed`, then serve's
//! re-ask answered with them; modern: the next ask answered with them).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::drive::{NOTIFY_WAIT, TIMEOUT, describe, succeeded, wait_for_notification};
use super::flow::{ElicitModes, Flow};
use super::url_page;
use crate::mcp::Era;
use crate::rpc::{Reply, Rpc};

/// The roots the control client has after its change: one more than before.
fn new_roots() -> Value {
    json!({"roots": [
        {"uri": "file:///tmp/mcp-witness-root", "name": "witness root"},
        {"uri": "file:///tmp/mcp-witness-root-2", "name": "witness root 2"},
    ]})
}

/// The `_meta` of a modern request declaring `elicitation` as `caps`.
fn modern_meta(elicitation: Value, info: &Value) -> Value {
    json!({
        crate::mcp::meta::PROTOCOL_VERSION: crate::mcp::DEFAULT_MODERN,
        crate::mcp::meta::CLIENT_CAPABILITIES: {"elicitation": elicitation},
        crate::mcp::meta::CLIENT_INFO: info,
    })
}

/// The legacy handshake declaring `elicitation` as `elicitation`.
fn initialize(
    rpc: &mut Rpc,
    elicitation: Value,
    info: Value,
    step: &mut impl FnMut(&str, bool, String) -> bool,
) -> bool {
    let what = format!("initialize declaring elicitation {elicitation}");
    let init = rpc.request(
        "initialize",
        Some(json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": elicitation}, "clientInfo": info})),
        TIMEOUT,
    );
    if !step(&what, succeeded(&init), describe(&init)) {
        return false;
    }
    rpc.notify("notifications/initialized", None);
    true
}

/// The control client's answer to `elicitation/create` given the modes it declared: its form
/// answer, consent to a URL (remembered in `urls`), or -32602 for a mode it never declared.
fn answer_elicitation(declared: ElicitModes, urls: Arc<Mutex<Vec<String>>>) -> crate::rpc::Answerer {
    Box::new(move |method, params| {
        if method != "elicitation/create" {
            return None;
        }
        let mode = params
            .and_then(|p| p.get("mode"))
            .and_then(Value::as_str)
            .unwrap_or("form");
        match mode {
            "form" if declared.form => Some(Ok(Flow::Elicitation.control_answer())),
            "url" if declared.url => {
                let url = params
                    .and_then(|p| p.get("url"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                urls.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(url.to_string());
                Some(Ok(Flow::ElicitationUrl.control_answer()))
            }
            other => Some(Err((
                -32602,
                format!(
                    "elicitation mode `{}` was not declared by this client",
                    crate::text::truncate(other, 32)
                ),
            ))),
        }
    })
}

fn text_of(r: &Result<Reply, crate::rpc::NoReply>) -> String {
    match r {
        Ok(Reply::Result(v)) => v
            .pointer("/content/0/text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    }
}

/// Opens a URL serve sent, after checking it is serve's loopback page (never anything else).
fn open(url: &str, serve_log: &Path, step: &mut impl FnMut(&str, bool, String) -> bool) -> bool {
    if !step(
        "the URL is a page on a loopback address",
        url_page::is_loopback_page(url),
        crate::text::truncate(url, 120),
    ) {
        return false;
    }
    // A bridge between drive and serve (`--through`) could put another well-formed loopback
    // URL in serve's place: drive opens only one that serve's own log shows serve sent.
    if !step(
        "the URL is the one serve sent (its log shows it)",
        issued_by_serve(serve_log, url),
        crate::text::truncate(url, 120),
    ) {
        return false;
    }
    let opened = url_page::open_url(url);
    step(
        "opening the URL (the user's out-of-band step) gets 200",
        opened == Ok(200),
        format!("{opened:?}"),
    )
}

/// How much of serve's log drive reads to find the URL serve sent.
const LOG_READ_LIMIT: u64 = 64 << 20;

/// Whether serve's log (serve is drive's own child, whatever stands between them) holds
/// `url` as a JSON string: the URL serve put in its elicitation.
fn issued_by_serve(serve_log: &Path, url: &str) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(serve_log) else {
        return false;
    };
    let mut text = Vec::new();
    if file.take(LOG_READ_LIMIT).read_to_end(&mut text).is_err() {
        return false;
    }
    let Ok(needle) = serde_json::to_string(url) else {
        return false;
    };
    let needle = needle.as_bytes();
    !needle.is_empty() && text.windows(needle.len()).any(|w| w == needle)
}

/// Calls `witness_status`; the session must go on.
fn status(rpc: &mut Rpc, meta: Option<&Value>, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let mut p = json!({"name": super::STATUS_TOOL, "arguments": {}});
    if let Some(m) = meta {
        p["_meta"] = m.clone();
    }
    let r = rpc.request("tools/call", Some(p), TIMEOUT);
    step(
        "the session goes on (status answered)",
        succeeded(&r),
        describe(&r),
    );
}

/// URL mode elicitation, declaring both modes.
pub fn url(
    rpc: &mut Rpc,
    era: Era,
    info: Value,
    serve_log: &Path,
    step: &mut impl FnMut(&str, bool, String) -> bool,
) {
    let f = Flow::ElicitationUrl;
    let caps = f.control_capability();
    let call = json!({"name": f.ask_tool(), "arguments": {}});
    match era {
        Era::Legacy => {
            let urls = Arc::new(Mutex::new(Vec::new()));
            rpc.answerer = Some(answer_elicitation(ElicitModes::of(&caps), Arc::clone(&urls)));
            if !initialize(rpc, caps, info, step) {
                return;
            }
            let r = rpc.request("tools/call", Some(call), TIMEOUT);
            if !step(
                "witness_ask_url_elicitation is answered after serve's URL request was accepted",
                succeeded(&r) && text_of(&r).starts_with("elicitation/create answered: accept"),
                describe(&r),
            ) {
                return;
            }
            let url = urls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()
                .unwrap_or_default();
            rpc.traffic.notifications.clear();
            if !open(&url, serve_log, step) {
                return;
            }
            let got = wait_for_notification(rpc, url_page::COMPLETE, NOTIFY_WAIT);
            if !step(
                "notifications/elicitation/complete arrives once the page is visited",
                got == 1,
                format!("{got}"),
            ) {
                return;
            }
            status(rpc, None, step);
        }
        Era::Modern => {
            let meta = modern_meta(caps, &info);
            let mut first = call.clone();
            first["_meta"] = meta.clone();
            let r = rpc.request("tools/call", Some(first), TIMEOUT);
            let asked = match &r {
                Ok(Reply::Result(v)) if v.get("resultType") == Some(&Value::from("input_required")) => {
                    let p = v.pointer(&format!("/inputRequests/{}/params", f.name()));
                    let url = p
                        .filter(|p| p.get("mode") == Some(&Value::from("url")))
                        .and_then(|p| p.get("url"))
                        .and_then(Value::as_str);
                    url.map(|u| (u.to_string(), v.get("requestState").cloned()))
                }
                _ => None,
            };
            let Some((url, state)) = asked else {
                step(
                    "the call answers input_required asking a URL",
                    false,
                    describe(&r),
                );
                return;
            };
            step("the call answers input_required asking a URL", true, describe(&r));
            if !open(&url, serve_log, step) {
                return;
            }
            let mut retry = call;
            retry["_meta"] = meta.clone();
            retry["inputResponses"] = json!({ f.name(): f.control_answer() });
            retry["requestState"] = state.unwrap_or(Value::Null);
            let r = rpc.request("tools/call", Some(retry), TIMEOUT);
            if !step(
                "the retry after the visit completes the call",
                succeeded(&r) && text_of(&r).contains("the URL flow is complete"),
                describe(&r),
            ) {
                return;
            }
            status(rpc, Some(&meta), step);
        }
    }
}

/// A request in a mode never declared: the control declares `elicitation: {}` (form only, per
/// the spec) and refuses serve's URL mode request.
pub fn undeclared(rpc: &mut Rpc, era: Era, info: Value, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let f = Flow::UndeclaredMode;
    let caps = f.control_capability();
    let declared = ElicitModes::of(&caps);
    let call = json!({"name": f.ask_tool(), "arguments": {}});
    match era {
        Era::Legacy => {
            rpc.answerer = Some(answer_elicitation(declared, Arc::new(Mutex::new(Vec::new()))));
            if !initialize(rpc, caps, info, step) {
                return;
            }
            let r = rpc.request("tools/call", Some(call), TIMEOUT);
            if !step(
                "serve's request in the undeclared mode is refused with -32602",
                succeeded(&r) && text_of(&r).contains("refused with error -32602 (correct)"),
                describe(&r),
            ) {
                return;
            }
            status(rpc, None, step);
        }
        Era::Modern => {
            let meta = modern_meta(caps, &info);
            let mut first = call.clone();
            first["_meta"] = meta.clone();
            let r = rpc.request("tools/call", Some(first), TIMEOUT);
            let (mode, state) = match &r {
                Ok(Reply::Result(v)) => (
                    v.pointer(&format!("/inputRequests/{}/params/mode", f.name()))
                        .and_then(Value::as_str)
                        .unwrap_or("form")
                        .to_string(),
                    v.get("requestState").cloned(),
                ),
                _ => (String::new(), None),
            };
            let undeclared = (mode == "url" && !declared.url) || (mode == "form" && !declared.form);
            if !step(
                "the call answers input_required in a mode this client did not declare",
                undeclared && state.is_some(),
                describe(&r),
            ) {
                return;
            }
            // Refused: the retry answers nothing it was not declared for.
            let mut retry = call;
            retry["_meta"] = meta.clone();
            retry["inputResponses"] = json!({});
            retry["requestState"] = state.unwrap_or(Value::Null);
            let r = rpc.request("tools/call", Some(retry), TIMEOUT);
            if !step(
                "the retry leaves the undeclared request unanswered, and serve calls that a refusal",
                succeeded(&r) && text_of(&r).contains("refused (correct)"),
                describe(&r),
            ) {
                return;
            }
            status(rpc, Some(&meta), step);
        }
    }
}

/// Legacy, after the first roots answer: the control's roots change, it sends
/// `notifications/roots/list_changed`, and answers serve's re-ask with the new roots.
pub fn roots_changed(rpc: &mut Rpc, step: &mut impl FnMut(&str, bool, String) -> bool) {
    rpc.answers = vec![("roots/list", new_roots())];
    let before = rpc.traffic.server_request_count;
    rpc.notify("notifications/roots/list_changed", None);
    let start = Instant::now();
    while rpc.traffic.server_request_count == before && start.elapsed() < NOTIFY_WAIT {
        let _ = rpc.wait_reply(&|_| false, Duration::from_millis(10));
    }
    let reasked = rpc.traffic.server_request_count - before;
    let answered = rpc
        .traffic
        .server_requests
        .last()
        .is_some_and(|(m, how)| m == "roots/list" && *how == "answered");
    if step(
        "after notifications/roots/list_changed serve asks roots/list again, answered with the new roots",
        reasked == 1 && answered,
        format!("{reasked} request(s): {:?}", rpc.traffic.server_requests),
    ) {
        status(rpc, None, step);
    }
}

/// Modern: no list_changed exists; the next ask is answered with the new roots.
pub fn roots_asked_again(rpc: &mut Rpc, meta: Value, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let f = Flow::Roots;
    let call = json!({"name": f.ask_tool(), "arguments": {}, "_meta": meta});
    let r = rpc.request("tools/call", Some(call.clone()), TIMEOUT);
    let state = match &r {
        Ok(Reply::Result(v)) if v.get("resultType") == Some(&Value::from("input_required")) => {
            v.get("requestState").cloned()
        }
        _ => None,
    };
    if !step(
        "a second ask after the roots changed answers input_required",
        state.is_some(),
        describe(&r),
    ) {
        return;
    }
    let mut retry = call;
    retry["inputResponses"] = json!({ f.name(): new_roots() });
    retry["requestState"] = state.unwrap_or(Value::Null);
    let r = rpc.request("tools/call", Some(retry), TIMEOUT);
    step(
        "the retry with the new roots completes the call",
        succeeded(&r) && text_of(&r).starts_with("roots/list answered: 2 root(s)"),
        describe(&r),
    );
}
