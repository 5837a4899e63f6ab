//! The second half of the roots flow: what happens when the client's roots change. Legacy:
//! the client sends `notifications/roots/list_changed`, serve asks `roots/list` again, and
//! the re-answer must be valid (file:// URIs); the table says what changed between the two
//! answers. 2026-07-28 has no such notification (each ask gets the roots afresh), so there the
//! table says what changed between the first and the last roots the client answered.

use serde_json::Value;
use std::collections::HashSet;

use super::analyze::{Entry, Row};
use super::flow::{Flow, FlowReport, FlowVerdict, QUOTE, ev, id, method, params, reply};

/// The notification a legacy client sends when its roots change.
pub const LIST_CHANGED: &str = "notifications/roots/list_changed";

/// The URIs of a `roots/list` result.
fn uris(result: &Value) -> Vec<String> {
    result
        .get("roots")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|r| r.get("uri").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What changed from one roots answer to another, in words.
pub fn diff(before: &Value, after: &Value) -> String {
    let (b, a) = (uris(before), uris(after));
    let list = |v: Vec<&String>| {
        v.iter()
            .take(8)
            .map(|u| format!("`{}`", crate::text::truncate(u, QUOTE)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // Sets, not list scans: a client chooses how many roots it answers.
    let (in_b, in_a): (HashSet<&String>, HashSet<&String>) = (b.iter().collect(), a.iter().collect());
    let added: Vec<&String> = a.iter().filter(|u| !in_b.contains(u)).collect();
    let removed: Vec<&String> = b.iter().filter(|u| !in_a.contains(u)).collect();
    match (added.is_empty(), removed.is_empty()) {
        (true, true) => format!("nothing changed (the same {} root(s))", a.len()),
        (false, true) => format!("added {}", list(added)),
        (true, false) => format!("removed {}", list(removed)),
        (false, false) => format!("added {}; removed {}", list(added), list(removed)),
    }
}

/// Adds the rows about a change of roots to the roots flow's report, and turns its verdict
/// when a legacy client announced a change but did not answer the re-ask validly.
pub fn extend(e: &[Entry], ask: usize, modern: bool, mut report: FlowReport) -> FlowReport {
    let mut row = |q: &str, a: String, at: Option<usize>| {
        report.rows.push(Row {
            question: q.into(),
            answer: a,
            evidence: ev(e, at),
        });
        report.rows.len()
    };
    let changed = (0..e.len()).find(|&i| e[i].dir == "in" && method(&e[i]) == Some(LIST_CHANGED));
    if modern {
        row(
            "Did the client send `notifications/roots/list_changed`?",
            if changed.is_some() {
                "yes, but 2026-07-28 has no such notification (each ask gets the roots afresh)".into()
            } else {
                "no (2026-07-28 has none: each ask gets the roots afresh)".into()
            },
            changed,
        );
        let answers: Vec<(usize, &Value)> = (ask..e.len())
            .filter(|&i| e[i].dir == "in" && method(&e[i]) == Some("tools/call"))
            .filter_map(|i| {
                let r = params(&e[i])?.get("inputResponses")?.get(Flow::Roots.name())?;
                Some((i, r.get("result").unwrap_or(r)))
            })
            .collect();
        let (first, last) = (answers.first(), answers.last());
        row(
            "What changed between the first and the last roots the client answered?",
            match (first, last) {
                (Some(f), Some(l)) if answers.len() > 1 => diff(f.1, l.1),
                (Some(_), _) => "one answer only".into(),
                _ => "no answer".into(),
            },
            last.filter(|_| answers.len() > 1).map(|l| l.0),
        );
        return report;
    }
    row(
        "Did the client send `notifications/roots/list_changed`? (required only when its roots change)",
        if changed.is_some() {
            "yes".into()
        } else {
            "no".into()
        },
        changed,
    );
    let Some(changed) = changed else {
        return report;
    };
    let reask = (changed..e.len())
        .find(|&i| e[i].dir == "out" && method(&e[i]) == Some("roots/list") && id(&e[i]).is_some());
    row(
        "Did serve ask `roots/list` again after it?",
        if reask.is_some() {
            "yes".into()
        } else {
            "no".into()
        },
        reask,
    );
    let reanswer = reask.and_then(|r| reply(e, r, "in"));
    let result = reanswer.and_then(|a| e[a].msg.as_ref()?.get("result"));
    let checked = result.map(|r| Flow::Roots.check_answer(r));
    let q_valid = row(
        "Did the client answer the re-ask with a valid list (file:// URIs)?",
        match (reanswer, &checked) {
            (None, _) => "no answer".into(),
            (Some(_), None) => "with an error, not a result".into(),
            (Some(_), Some(Ok(s))) => format!("yes: {s}"),
            (Some(_), Some(Err(why))) => format!("no: {why}"),
        },
        reanswer,
    );
    // The first answer: to the first roots/list serve sent after the call.
    let first = (ask..changed)
        .find(|&i| e[i].dir == "out" && method(&e[i]) == Some("roots/list") && id(&e[i]).is_some())
        .and_then(|q| reply(e, q, "in"))
        .and_then(|a| e[a].msg.as_ref()?.get("result"));
    row(
        "What changed between the answer before the notification and the re-answer?",
        match (first, result) {
            (Some(b), Some(a)) => diff(b, a),
            _ => "unknown: one of the two answers is missing".into(),
        },
        reanswer,
    );
    if report.verdict != FlowVerdict::Handled {
        return report;
    }
    let fault = match (reask, reanswer, &checked) {
        // Not the client's doing (a serve from before the re-ask, or a log cut short).
        (None, _, _) => {
            report.meaning.push_str(
                " serve did not ask `roots/list` again after its `notifications/roots/list_changed`.",
            );
            return report;
        }
        (Some(_), None, _) => Some((q_valid, "the client never answered the re-ask".into())),
        (Some(_), Some(_), None) => Some((q_valid, "the client answered the re-ask with an error".into())),
        (Some(_), Some(_), Some(Err(why))) => Some((q_valid, why.clone())),
        (Some(_), Some(_), Some(Ok(_))) => None,
    };
    match fault {
        Some((question, why)) => {
            report.verdict = FlowVerdict::NotHandled { question, why };
            report.meaning =
                "The client announced new roots but did not answer serve's re-ask validly.".into();
        }
        None => {
            report
                .meaning
                .push_str(" After `notifications/roots/list_changed` it answered serve's re-ask validly.");
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_difference_of_two_roots_answers_names_what_was_added_and_removed() {
        let roots = |u: &[&str]| json!({"roots": u.iter().map(|u| json!({"uri": u})).collect::<Vec<_>>()});
        assert_eq!(
            diff(&roots(&["file:///a"]), &roots(&["file:///a"])),
            "nothing changed (the same 1 root(s))"
        );
        assert_eq!(
            diff(&roots(&["file:///a"]), &roots(&["file:///a", "file:///b"])),
            "added `file:///b`"
        );
        assert_eq!(
            diff(&roots(&["file:///a", "file:///b"]), &roots(&["file:///c"])),
            "added `file:///c`; removed `file:///a`, `file:///b`"
        );
    }

    #[test]
    fn two_long_roots_answers_are_compared_whole() {
        // As many roots as a client cares to answer: one swapped at the end.
        let many = |last: &str| {
            let mut u: Vec<String> = (0..20_000).map(|i| format!("file:///r{i}")).collect();
            u.push(last.to_string());
            json!({"roots": u.iter().map(|u| json!({"uri": u})).collect::<Vec<_>>()})
        };
        assert_eq!(
            diff(&many("file:///old"), &many("file:///new")),
            "added `file:///new`; removed `file:///old`"
        );
    }
}
