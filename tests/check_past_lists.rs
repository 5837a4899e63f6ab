//! `check` past the list methods (resources/read, resources/templates/list, prompts/get,
//! completion/complete, logging/setLevel, client-only capabilities) and on the negative
//! protocol cases (a batch, a second initialize, an invalid cursor, unknown `_meta` keys,
//! notifications that must go unanswered, server requests and log notifications the client
//! never allowed), against fixture servers that plant one defect per check and their clean
//! twin.

mod common;

use std::collections::BTreeMap;

use common::*;
use serde_json::Value;

/// The checks this file is about.
const NEW_CHECKS: &[&str] = &[
    "protocol.capabilities.client_only",
    "protocol.resources.read",
    "protocol.resources.templates",
    "protocol.prompts.get",
    "protocol.prompts.missing_argument",
    "protocol.completion",
    "protocol.logging.set_level",
    "protocol.batch",
    "protocol.second_initialize",
    "protocol.invalid_cursor",
    "protocol.meta.unknown_keys",
    "protocol.notification.cancel_unknown",
    "protocol.notification.no_reply",
    "traffic.server_requests",
    "traffic.log_undeclared",
];

/// Runs `check --json --no-record` of a fixture behaviour: (exit code, report).
fn check(extra: &[&str], behaviour: &str) -> (i32, Value) {
    let b = Bench::new("check-past");
    let mut args = vec!["check", "--json", "--no-record", "--timeout", "5"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", fixture(), behaviour]);
    let run = b.run(&args);
    let report =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (run.code, report)
}

fn statuses(report: &Value) -> BTreeMap<String, String> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn message<'a>(report: &'a Value, id: &str) -> &'a str {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .and_then(|r| r["message"].as_str())
        .unwrap_or_else(|| panic!("no result {id}"))
}

#[test]
fn every_planted_defect_past_the_lists_and_every_negative_case_is_named_by_its_id() {
    let (code, report) = check(&[], "past-defects");
    assert_eq!(code, 1, "{report:#}");
    let got = statuses(&report);
    let expected = [
        ("protocol.capabilities.client_only", "fail"),
        ("protocol.resources.read", "fail"),
        ("protocol.resources.templates", "fail"),
        ("protocol.prompts.get", "fail"),
        ("protocol.prompts.missing_argument", "fail"),
        ("protocol.completion", "fail"),
        ("protocol.logging.set_level", "fail"),
        ("protocol.batch", "fail"),
        // Accepting a repeat is not forbidden in words, and a cursor error is a SHOULD.
        ("protocol.second_initialize", "warn"),
        ("protocol.invalid_cursor", "warn"),
        ("protocol.meta.unknown_keys", "fail"),
        ("protocol.notification.cancel_unknown", "fail"),
        ("protocol.notification.no_reply", "fail"),
        ("traffic.server_requests", "fail"),
    ];
    for (id, status) in expected {
        assert_eq!(
            got.get(id).map(String::as_str),
            Some(status),
            "{id}: {}",
            message(&report, id)
        );
    }
    // The messages say what was wrong, not only that something was.
    assert!(message(&report, "protocol.capabilities.client_only").contains("`sampling`"));
    assert!(message(&report, "protocol.prompts.get").contains("role `system`"));
    assert!(message(&report, "protocol.batch").contains("JSON array"));
    assert!(message(&report, "traffic.server_requests").contains("sampling/createMessage"));
    assert!(message(&report, "protocol.resources.read").contains("-32603"));
    // It declares `logging`, so its log-less run is no finding of that check.
    assert_eq!(got["traffic.log_undeclared"], "pass");
}

#[test]
fn a_log_notification_without_the_logging_capability_is_a_failure() {
    let (code, report) = check(&[], "past-undeclared-log");
    assert_eq!(code, 1, "{report:#}");
    let got = statuses(&report);
    assert_eq!(got["traffic.log_undeclared"], "fail");
    assert!(message(&report, "traffic.log_undeclared").contains("1 notifications/message"));
    // Without `logging` there is no setLevel to try; nothing else is wrong with it.
    assert_eq!(got["protocol.logging.set_level"], "skip");
    let others: Vec<_> = got
        .iter()
        .filter(|(id, s)| *id != "traffic.log_undeclared" && (*s == "warn" || *s == "fail"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

#[test]
fn a_server_request_for_roots_the_client_never_declared_is_a_failure() {
    // `chatty` sends a ping (allowed) and a roots/list after `initialized`.
    let (code, report) = check(&["--only", "traffic.server_requests"], "chatty");
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(statuses(&report)["traffic.server_requests"], "fail");
    let text = message(&report, "traffic.server_requests");
    assert!(text.contains("roots/list (needs `roots`)"), "{text}");
    assert!(!text.contains("ping"), "{text}");
}

#[test]
fn the_clean_twin_passes_every_new_check_in_both_eras() {
    for (era, not_run) in [
        ("legacy", &[][..]),
        // No initialize and no logging/setLevel in the modern era.
        (
            "modern",
            &["protocol.second_initialize", "protocol.logging.set_level"][..],
        ),
    ] {
        let (code, report) = check(&["--era", era], "past-clean");
        assert_eq!(code, 0, "{era}: {report:#}");
        assert_eq!(report["era"], era);
        let got = statuses(&report);
        let findings: Vec<_> = got.iter().filter(|(_, s)| *s == "warn" || *s == "fail").collect();
        assert!(findings.is_empty(), "{era}: {findings:?}");
        for id in NEW_CHECKS {
            let want = if not_run.contains(id) { "skip" } else { "pass" };
            assert_eq!(got[*id], want, "{era} {id}: {}", message(&report, id));
        }
    }
}

#[test]
fn the_correct_and_modern_fixtures_have_no_finding_in_the_new_checks() {
    for (extra, behaviour) in [(&[][..], "correct"), (&["--era", "modern"][..], "modern")] {
        let (code, report) = check(extra, behaviour);
        assert_eq!(code, 0, "{behaviour}: {report:#}");
        let got = statuses(&report);
        for id in NEW_CHECKS {
            assert!(
                got[*id] == "pass" || got[*id] == "skip",
                "{behaviour} {id}: {} {}",
                got[*id],
                message(&report, id)
            );
        }
        // The negative cases run on every server, whatever it declares.
        for id in [
            "protocol.batch",
            "protocol.invalid_cursor",
            "protocol.meta.unknown_keys",
        ] {
            assert_eq!(got[id], "pass", "{behaviour} {id}");
        }
    }
}

#[test]
fn a_batch_is_not_sent_to_a_session_of_a_version_that_allows_batches() {
    let (code, report) = check(
        &["--protocol-version", "2025-03-26", "--only", "protocol.batch"],
        "past-defects",
    );
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(statuses(&report)["protocol.batch"], "skip");
    assert!(message(&report, "protocol.batch").contains("2025-03-26"));
}
