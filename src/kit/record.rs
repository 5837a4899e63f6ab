//! Turning a client analysis into the body of a `client` evidence block.

use super::analyze::{Analysis, Verdict};
use crate::evidence::kind::BlockKind;
use serde_json::{Map, Value, json};

/// The block body of one session: the client as it named itself, the log it was judged on
/// (path, digest, size, and which session of it), every answer with its evidence line, and
/// a verdict per domain and overall. A log with several sessions gets one block each: no
/// verdict is ever signed over mixed sessions.
pub fn block_body(a: &Analysis, log_path: &str, log: &super::analyze::Log) -> Map<String, Value> {
    let stamp = crate::clock::now();
    let client = a
        .client_info
        .as_ref()
        .map(|(n, v)| json!({"name": n, "version": v}));
    let domains: Vec<Value> = a
        .domains
        .iter()
        .map(|d| {
            let (question, why) = match &d.verdict {
                Verdict::Reacts => (None, None),
                Verdict::DoesNotReact { question, why } | Verdict::ServerFault { question, why } => {
                    (Some(*question as u64), Some(why.clone()))
                }
                Verdict::Incomplete { missing } => (None, Some(missing.clone())),
            };
            json!({
                "domain": d.domain.name(),
                "verdict": d.verdict.word(),
                "question": question,
                "why": why,
                "meaning": d.meaning,
                "answers": d.rows.iter().map(|r| json!({
                    "question": r.question,
                    "answer": r.answer,
                    "evidence_line": r.evidence.as_ref().map(|(line, _)| *line as u64),
                    "evidence_ts": r.evidence.as_ref().map(|(_, ts)| ts.clone()),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    // What a client or its log chose may hold a credential: masked like any server text.
    let redactor = crate::redact::Redactor::default();
    let mut client = client;
    let mut domains = domains;
    if let Some(c) = client.as_mut() {
        redactor.json(c);
    }
    domains.iter_mut().for_each(|d| redactor.json(d));
    let log_path = redactor.text(log_path);
    let any = |f: fn(&Verdict) -> bool| a.domains.iter().any(|d| f(&d.verdict));
    let overall = if a.domains.iter().all(|d| d.verdict == Verdict::Reacts) {
        "reacts to list_changed"
    } else if any(|v| matches!(v, Verdict::ServerFault { .. })) {
        "server at fault"
    } else if any(|v| matches!(v, Verdict::DoesNotReact { .. })) {
        "does not react"
    } else {
        "incomplete"
    };
    let session = a.session.as_ref().map(|s| {
        json!({"index": s.index as u64, "of": s.of as u64, "first_line": s.first_line as u64,
            "last_line": s.last_line as u64})
    });
    let mut target = json!({"client": client});
    target["id"] = BlockKind::Client.target_id(&target).into();
    let fields = json!({
        "target": target,
        "client": client,
        "log": {"path": log_path, "sha256": log.sha256, "bytes": log.bytes, "entries": a.entries as u64,
            "session": session},
        "domains": domains,
        "verdict": overall,
    });
    crate::evidence::block::body(
        BlockKind::Client,
        &stamp,
        &crate::evidence::block::host_name(),
        fields,
    )
}
