//! Turning an observation into the body of a `probe` evidence block (the chain fields,
//! hash and signature are added by the evidence layer).

use serde_json::{Map, Value, json};

use super::outcome::{Bound, Observation, TargetSeen};
use crate::evidence::canonical;
use crate::evidence::kind::BlockKind;
use crate::wire::stdio::ExitInfo;

/// The target's identity: what was run, where, with which variables (names only), asking
/// for which era and protocol version (`evidence::kind::probe::identity` says which fields).
/// Probes of one target are comparable (`--if-changed`).
pub fn target_id(t: &TargetSeen) -> String {
    target_json(t)["id"].as_str().unwrap_or_default().to_string()
}

/// The `target` object of a block. An HTTP target has no program, folder or variables: it
/// records the redacted URL, the transport and the header names (never their values).
pub fn target_json(t: &TargetSeen) -> Value {
    if let Some(url) = &t.url {
        let mut target = json!({
            "url": url,
            "transport": t.transport.as_str(),
            "headers": t.header_names,
            "era": t.era.as_str(),
            "protocol_version": t.protocol_version,
        });
        target["id"] = BlockKind::Probe.target_id(&target).into();
        return target;
    }
    let mut target = json!({
        "command": t.command,
        "program": t.program,
        "program_sha256": t.program_sha256,
        "cwd": t.cwd,
        "env": t.env_names,
        "era": t.era.as_str(),
        "protocol_version": t.protocol_version,
    });
    if let Some(source) = t.program_sha256_source {
        target["program_sha256_source"] = source.as_str().into();
    }
    target["id"] = BlockKind::Probe.target_id(&target).into();
    target
}

/// `expected` of a block: the block compared with and what differed (at most 1000 changes).
fn expected_json(e: &crate::probe::expect::Expected) -> Value {
    let changes: Vec<Value> = e
        .changes
        .iter()
        .take(1000)
        .map(crate::surface::Change::to_json)
        .collect();
    json!({"seq": e.seq, "hash": e.hash, "changes": changes})
}

/// The block body of a probe.
pub fn block_body(obs: &Observation) -> Map<String, Value> {
    let t = &obs.target;
    let target = target_json(t);
    let server = obs
        .server
        .as_ref()
        .map(|s| json!({"name": s.name, "version": s.version}));
    let tools = obs.tools.as_ref().map(
        |t| json!({"count": t.count, "names": t.names, "pages": t.pages, "names_complete": t.names_complete}),
    );
    let call = obs.call.as_ref().map(|c| {
        json!({
            "tool": c.tool,
            "outcome": c.outcome.as_str(),
            "argument_names": c.argument_names,
            "content_types": c.content_types,
            "preview": c.preview,
            "result_sha256": c.result_sha256,
            "error": c.error.as_ref().map(|(code, message)| {
                // A server's error code is foreign: one beyond ±(2^53−1) is kept as text.
                let code = if code.unsigned_abs() <= canonical::MAX_SAFE_INTEGER { json!(code) } else { json!(code.to_string()) };
                json!({"code": code, "message": message})
            }),
            "elapsed_ms": c.elapsed_ms,
        })
    });
    let reasons: Vec<Value> = obs
        .reasons
        .iter()
        .map(|r| json!({"code": r.code.as_str(), "message": r.message}))
        .collect();
    let silence = obs.silence.as_ref().map(super::outcome::Silence::to_json);
    let tr = &obs.traffic;
    let noise_lines: Vec<Value> = tr
        .noise
        .iter()
        .map(|(text, kind)| json!({"text": text, "kind": kind.code()}))
        .collect();
    let server_requests: Vec<Value> = tr
        .server_requests
        .iter()
        .map(|(m, answer)| json!({"method": m, "answer": answer}))
        .collect();
    let teardown = obs.teardown.as_ref().map(|td| {
        json!({
            "ended_by": td.ended_by.as_str(),
            "after_ms": td.after_ms,
            "exit": td.exit.map(|e| match e {
                ExitInfo::Code(c) => json!({"code": c}),
                ExitInfo::Signal(s) => json!({"signal": s}),
            }),
            "group_signals": td.group_signals,
            "escapees": td.escapees.iter().map(|e| json!({
                "pid": e.pid,
                "argv": e.argv,
                "left": e.left.as_str(),
                "ended": e.ended.as_str(),
            })).collect::<Vec<_>>(),
            "survivors": td.survivors,
        })
    });
    let tm = &obs.timings;
    let http = obs.http.as_ref().map(|h| http_json(h, t));

    let fields = json!({
        "target": target,
        "era": obs.era.as_str(),
        "era_detection": obs.era_detection,
        "protocol_requested": obs.protocol_requested,
        "protocol_version": obs.protocol_version,
        "server": server,
        "capabilities": obs.capabilities,
        "tools": tools,
        "call": call,
        "verdict": obs.verdict.as_str(),
        "reasons": reasons,
        "silence": silence,
        "bound": obs.bound.map(Bound::as_str),
        "surface": obs.surface.as_ref().map(crate::surface::Surface::to_json),
        "expected": obs.expected.as_ref().map(expected_json),
        "stdout_noise": {"count": tr.noise_count, "lines": noise_lines, "crlf_lines": tr.crlf_lines},
        "messages": {
            "count": tr.messages,
            "notifications": {"count": tr.notification_count, "methods": tr.notifications},
            "server_requests": {
                "count": tr.server_request_count,
                "unanswered": tr.answers_not_sent,
                "requests": server_requests,
            },
            "unmatched_replies": tr.unmatched_replies,
            "max_line_bytes": tr.max_line,
        },
        "stderr": {"bytes": obs.stderr_bytes, "tail": obs.stderr_tail},
        "timings_ms": {
            "first_stdout": tm.first_stdout,
            "discover": tm.discover,
            "initialize": tm.initialize,
            "tools_list": tm.tools_list,
            "call": tm.call,
            "total": tm.total,
        },
        "teardown": teardown,
    });
    let mut fields = fields;
    if let (Some(http), Some(map)) = (http, fields.as_object_mut()) {
        map.insert("http".into(), http);
    }
    // observation_sha256 is the kind's digest of these fields: equal digests mean nothing changed.
    crate::evidence::block::body(BlockKind::Probe, &obs.stamp, &obs.host, fields)
}

/// The `http` object of a block: per connection its exchanges (method, status, content
/// type, framing, whether a session id came and its length, never its value), redirects and
/// the DELETE; after a 401, the challenge and the resource metadata.
pub fn http_json(h: &super::outcome::HttpSeen, t: &TargetSeen) -> Value {
    use crate::http::DeleteOutcome;
    let connections: Vec<Value> = h
        .sessions
        .iter()
        .map(|s| {
            let f = &s.facts;
            let (delete, delete_error) = match &s.delete {
                DeleteOutcome::NoSession => ("no_session", None),
                DeleteOutcome::Status(_) if s.delete.accepted() => ("accepted", None),
                DeleteOutcome::Status(_) => ("refused", None),
                DeleteOutcome::Failed(e) => ("failed", Some(e.code())),
            };
            json!({
                "exchanges": serde_json::to_value(&f.exchanges).unwrap_or_default(),
                "exchanges_dropped": f.exchanges_dropped,
                "session_id": f.session_id.map(|s| json!({"length": s.length, "visible_ascii": s.visible_ascii})),
                "session_id_changed": f.session_id_changed,
                "redirects": serde_json::to_value(&f.redirects).unwrap_or_default(),
                "delete": delete,
                "delete_status": f.delete_status,
                "delete_error": delete_error,
                "readers_left": s.readers_left,
            })
        })
        .collect();
    let auth = h.auth.as_ref().map(|a| {
        json!({
            "challenges": a.challenges,
            "metadata_url": a.metadata_url,
            "metadata_status": a.metadata_status,
            "metadata": a.metadata,
            "metadata_note": a.metadata_note,
        })
    });
    let mut out = json!({
        "transport": t.transport.as_str(),
        "connections": connections,
        "auth": auth,
    });
    // https:// only: the server's certificate, as first seen in the run.
    if let Some(d) = h
        .sessions
        .iter()
        .find_map(|s| s.facts.certificate_sha256.as_deref())
        && let Some(o) = out.as_object_mut()
    {
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        o.insert("certificate_sha256".into(), Value::String(hex));
    }
    out
}
