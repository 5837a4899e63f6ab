//! Turning a client analysis into the body of a `client` evidence block: every domain
//! analyze judged, the list_changed domains and the flows alike, each with its answers.

use super::analyze::{Analysis, Row, Verdict};
use super::flow::FlowVerdict;
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
    let lists = a.domains.iter().map(|d| {
        let (question, why) = match &d.verdict {
            Verdict::Reacts => (None, None),
            Verdict::DoesNotReact { question, why } | Verdict::ServerFault { question, why } => {
                (Some(*question), Some(why.clone()))
            }
            Verdict::Incomplete { missing } => (None, Some(missing.clone())),
        };
        judged(
            d.domain.name(),
            d.verdict.word(),
            question,
            why,
            &d.meaning,
            &d.rows,
        )
    });
    let flows = a.flows.iter().map(|f| {
        let (question, why) = match &f.verdict {
            FlowVerdict::NotHandled { question, why } => (Some(*question), Some(why.clone())),
            FlowVerdict::Incomplete { missing } => (None, Some(missing.clone())),
            FlowVerdict::Handled | FlowVerdict::NotDeclared | FlowVerdict::NotExercised => (None, None),
        };
        judged(
            f.flow.name(),
            f.verdict.word(),
            question,
            why,
            &f.meaning,
            &f.rows,
        )
    });
    let domains: Vec<Value> = lists.chain(flows).collect();
    // What a client or its log chose may hold a credential: masked like any server text.
    let redactor = crate::redact::Redactor::default();
    let mut client = client;
    let mut domains = domains;
    if let Some(c) = client.as_mut() {
        redactor.json(c);
    }
    domains.iter_mut().for_each(|d| redactor.json(d));
    let log_path = redactor.text(log_path);
    let overall = overall(a);
    let session = a.session.as_ref().map(|s| {
        json!({"index": s.index as u64, "of": s.of as u64, "first_line": s.first_line as u64,
            "last_line": s.last_line as u64, "era": era(log, s)})
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

/// One judged domain of the block: its verdict, the question that proves it, why, what it
/// means, and every answer with its evidence line.
fn judged(
    name: &str,
    verdict: &str,
    question: Option<usize>,
    why: Option<String>,
    meaning: &str,
    rows: &[Row],
) -> Value {
    json!({
        "domain": name,
        "verdict": verdict,
        "question": question.map(|q| q as u64),
        "why": why,
        "meaning": meaning,
        "answers": rows.iter().map(|r| json!({
            "question": r.question,
            "answer": r.answer,
            "evidence_line": r.evidence.as_ref().map(|(line, _)| *line as u64),
            "evidence_ts": r.evidence.as_ref().map(|(_, ts)| ts.clone()),
        })).collect::<Vec<_>>(),
    })
}

/// The verdict over everything judged: the server's fault first, then a list_changed domain
/// the client did not react in, then a flow it did not handle, then anything incomplete;
/// else every list_changed domain reacted (`handled` when only flows were judged and at
/// least one was handled).
pub fn overall(a: &Analysis) -> &'static str {
    let list = |f: fn(&Verdict) -> bool| a.domains.iter().any(|d| f(&d.verdict));
    let flow = |f: fn(&FlowVerdict) -> bool| a.flows.iter().any(|x| f(&x.verdict));
    if list(|v| matches!(v, Verdict::ServerFault { .. })) {
        "server at fault"
    } else if list(|v| matches!(v, Verdict::DoesNotReact { .. })) {
        "does not react"
    } else if flow(|v| matches!(v, FlowVerdict::NotHandled { .. })) {
        "not handled"
    } else if list(|v| matches!(v, Verdict::Incomplete { .. }))
        || flow(|v| matches!(v, FlowVerdict::Incomplete { .. }))
    {
        "incomplete"
    } else if !a.domains.is_empty() {
        "reacts to list_changed"
    } else if flow(|v| *v == FlowVerdict::Handled) {
        "handled"
    } else {
        "incomplete"
    }
}

/// The era serve marked for the session (its `session` entry), if it did.
fn era(log: &super::analyze::Log, s: &super::analyze::Session) -> Option<String> {
    log.entries
        .iter()
        .filter(|e| (s.first_line..=s.last_line).contains(&e.line) && e.dir == "session")
        .find_map(|e| e.info.as_ref()?.get("era")?.as_str().map(str::to_string))
        .filter(|era| matches!(era.as_str(), "legacy" | "modern"))
}

#[cfg(test)]
mod tests {
    use super::super::{Domain, flow::Flow};
    use crate::evidence::kind::client::DOMAINS;

    /// The block's domain list is the kit's: every list_changed domain, then every flow.
    #[test]
    fn the_block_names_every_domain_analyze_judges() {
        let kit: Vec<&str> = Domain::ALL
            .iter()
            .map(|d| d.name())
            .chain(Flow::ALL.iter().map(|f| f.name()))
            .collect();
        assert_eq!(kit, DOMAINS);
    }
}
