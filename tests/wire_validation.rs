//! `check`'s wire group against real fixture servers: every planted defect of the
//! `wire-defects` server is named by its check id, JSON pointer and rule; the clean fixture
//! (both eras) and `mcp-witness serve` have no wire finding; `--only wire` still walks the
//! lists it validates. (The reference servers are held to no unaccepted finding, the wire
//! group included, by tests/reference_servers.rs.)

mod common;

use common::*;
use serde_json::Value;

/// Runs `check --json --no-record [extra] -- COMMAND…` and returns (exit code, report).
fn check_json(b: &Bench, extra: &[&str], command: &[&str]) -> (i32, Value) {
    let mut args = vec!["check", "--json", "--no-record"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(command);
    let run = b.run(&args);
    let report =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (run.code, report)
}

fn result<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}: {report:#}"))
}

fn wire_results(report: &Value) -> Vec<&Value> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("wire."))
        .collect()
}

/// The defects `wire-defects` plants: check id, status, and the `pointer` [rule] its message
/// quotes.
const PLANTED: &[(&str, &str, &str)] = &[
    ("wire.initialize", "fail", "`/result/instructions` [type]"),
    ("wire.tools_list", "fail", "`/result/tools/0/title` [null]"),
    ("wire.tools_list", "fail", "`/result/nextCursor` [null]"),
    (
        "wire.tools_list",
        "fail",
        "`/result/tools/1/inputSchema/required` [type]",
    ),
    ("wire.resources_list", "fail", "`/result/resources/0` [required]"),
    (
        "wire.prompts_list",
        "fail",
        "`/result/prompts/0/arguments/0/required` [type]",
    ),
    (
        "wire.tools_call",
        "fail",
        "`/result/content/0/type` [unknown-content-type]",
    ),
    ("wire.envelope", "fail", "`(message)` [jsonrpc]"),
    ("wire.envelope", "fail", "`/id` [id-echo-string]"),
    ("wire.errors", "fail", "`/error/message` [null]"),
    ("wire.notifications", "fail", "`/params/level` [enum]"),
    ("wire.server_requests", "fail", "`/params` [required]"),
];

#[test]
fn check_exits_1_naming_each_planted_wire_defect_by_id_pointer_and_rule() {
    let b = Bench::new("wire-defects");
    let (code, report) = check_json(&b, &["--timeout", "3"], &[fixture(), "wire-defects"]);
    assert_eq!(code, 1, "{report:#}");
    for (id, status, quoted) in PLANTED {
        let r = result(&report, id);
        assert_eq!(r["status"], *status, "{id}: {r:#}");
        let message = r["message"].as_str().unwrap();
        assert!(
            message.contains(quoted),
            "{id} does not quote {quoted}: {message}"
        );
        assert!(r["payload"].is_string(), "{id} quotes no payload: {r:#}");
    }
    // The id echoed as a string is tolerated by both SDKs: it is counted as such.
    let envelope = result(&report, "wire.envelope")["message"].as_str().unwrap();
    assert!(
        envelope.contains("1 violation(s) a client rejects and "),
        "{envelope}"
    );
    assert!(envelope.contains("(tolerated)"), "{envelope}");
    // The offending values are quoted as JSON.
    let tools = result(&report, "wire.tools_list")["payload"].as_str().unwrap();
    assert!(
        tools.contains("/result/tools/1/inputSchema/required: \"a\""),
        "{tools}"
    );
}

#[test]
fn in_the_modern_era_a_bad_result_type_and_missing_cache_members_fail_and_a_server_request_warns() {
    let b = Bench::new("wire-defects-modern");
    let (code, report) = check_json(
        &b,
        &["--era", "modern", "--timeout", "3"],
        &[fixture(), "wire-defects"],
    );
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["protocol_version"], "2026-07-28", "{report:#}");
    let tools = result(&report, "wire.tools_list");
    assert_eq!(tools["status"], "fail");
    let message = tools["message"].as_str().unwrap();
    for quoted in [
        "`/result/resultType` [enum]",
        "`/result` [required] `ttlMs` is missing",
    ] {
        assert!(message.contains(quoted), "{quoted}: {message}");
    }
    let requests = result(&report, "wire.server_requests");
    assert_eq!(requests["status"], "warn");
    assert!(
        requests["message"]
            .as_str()
            .unwrap()
            .contains("`/method` [modern-server-request]"),
        "{requests:#}"
    );
}

/// The methods another part of check may call (resources/read, prompts/get, completion): the
/// fixture answers each with a defect, so whenever a run reaches one it is graded a fail.
#[test]
fn methods_past_the_lists_are_graded_whenever_the_run_calls_them() {
    let b = Bench::new("wire-defects-past-lists");
    let (_, report) = check_json(&b, &["--timeout", "3"], &[fixture(), "wire-defects"]);
    for (id, quoted) in [
        ("wire.prompts_get", "`/result/messages/0/role` [role]"),
        ("wire.resources_read", "`/result/contents/0` [text-or-blob]"),
        ("wire.completion", "`/result/completion/values/1` [type]"),
    ] {
        let r = result(&report, id);
        match r["status"].as_str().unwrap() {
            "skip" => assert!(r["message"].as_str().unwrap().starts_with("no "), "{r:#}"),
            status => {
                assert_eq!(status, "fail", "{r:#}");
                assert!(r["message"].as_str().unwrap().contains(quoted), "{r:#}");
            }
        }
    }
}

#[test]
fn clean_servers_have_no_wire_finding_in_either_era() {
    let b = Bench::new("wire-clean");
    let witness = WITNESS;
    let log = b.dir.join("serve.jsonl");
    let log = log.to_str().unwrap();
    let runs: &[(&[&str], &[&str])] = &[
        (&[], &[fixture(), "correct"]),
        (&[], &[fixture(), "modern"]),
        (&["--era", "modern"], &[fixture(), "modern"]),
        (&[], &[witness, "serve", "--log", log]),
        (&["--era", "auto"], &[witness, "serve", "--log", log]),
    ];
    for (extra, command) in runs {
        let (code, report) = check_json(&b, extra, command);
        assert_eq!(code, 0, "{command:?}: {report:#}");
        let wire = wire_results(&report);
        assert_eq!(wire.len(), 14, "{command:?}");
        for r in &wire {
            let status = r["status"].as_str().unwrap();
            assert!(
                status == "pass" || status == "skip",
                "{command:?} {extra:?}: {r:#}"
            );
        }
        for id in ["wire.envelope", "wire.initialize", "wire.tools_list"] {
            assert_eq!(
                result(&report, id)["status"],
                "pass",
                "{command:?} {extra:?}: {id}"
            );
        }
    }
}

#[test]
fn only_wire_still_walks_the_lists_it_validates() {
    let b = Bench::new("wire-only");
    let (code, report) = check_json(&b, &["--only", "wire"], &[fixture(), "wire-defects"]);
    assert_eq!(code, 1, "{report:#}");
    assert!(
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"].as_str().unwrap().starts_with("wire."))
    );
    assert_eq!(result(&report, "wire.tools_list")["status"], "fail");
    assert_eq!(result(&report, "wire.prompts_list")["status"], "fail");
}

#[test]
fn notifications_and_server_requests_are_graded_on_a_clean_chatty_server() {
    let b = Bench::new("wire-chatty");
    let (_, report) = check_json(&b, &[], &[fixture(), "chatty"]);
    for id in ["wire.notifications", "wire.server_requests"] {
        let r = result(&report, id);
        assert_eq!(r["status"], "pass", "{r:#}");
        assert!(r["message"].as_str().unwrap().starts_with("2 "), "{r:#}");
    }
}
