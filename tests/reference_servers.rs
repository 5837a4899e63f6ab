//! `probe` against real reference servers from npm and PyPI, installed by
//! `tests/setup/install-reference-servers`. The recorded tool names must equal what each server
//! replies to an independent client, and the committed regression evidence must still match.

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

fn everything(dir: &Path) -> Vec<String> {
    let index = dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    vec!["node".into(), index.display().to_string(), "stdio".into()]
}

fn time_server(dir: &Path) -> Vec<String> {
    vec![
        dir.join("venv/bin/mcp-server-time").display().to_string(),
        "--local-timezone".into(),
        "UTC".into(),
    ]
}

fn probe(b: &Bench, extra: &[&str], argv: &[String]) -> Value {
    let ev = b.evidence.to_str().unwrap().to_string();
    let mut args: Vec<&str> = vec!["probe", "-e", &ev, "--timeout", "30"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(argv.iter().map(String::as_str));
    let run = b.run(&args);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    b.last_block()
}

#[test]
fn server_everything_passes_with_its_tools_exactly_as_replied() {
    let dir = reference_dir();
    let b = Bench::new("everything");
    let argv = everything(&dir);
    let block = probe(
        &b,
        &["--call", "echo", "--call-args", r#"{"message":"witnessed"}"#],
        &argv,
    );
    assert_eq!(block["server"]["name"], "mcp-servers/everything");
    assert_eq!(block["protocol_version"], "2025-11-25");
    assert_eq!(tool_names(&block), tool_names_by_hand(&argv));
    assert!(tool_names(&block).contains(&"echo".to_string()));
    assert_eq!(block["call"]["outcome"], "ok");
    assert!(block["call"]["preview"].as_str().unwrap().contains("witnessed"));
    // It announces a list change before its tools/list reply: matched by id regardless.
    assert!(block["messages"]["notifications"]["count"].as_u64().unwrap() >= 1);
    assert_eq!(block["teardown"]["ended_by"], "stdin_eof");
}

#[test]
fn server_everything_through_npx_leaves_no_process_behind() {
    let dir = reference_dir();
    let b = Bench::new("everything-npx");
    let marker = unique_marker("npx");
    let prefix = dir.join("node").display().to_string();
    let argv: Vec<String> = [
        "npx",
        "--prefix",
        &prefix,
        "--no-install",
        "mcp-server-everything",
        "stdio",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let block = probe(&b, &["--env", &marker], &argv);
    assert_eq!(tool_names(&block), tool_names_by_hand(&everything(&dir)));
    assert_eq!(block["teardown"]["survivors"], serde_json::json!([]));
    assert!(block["target"]["program"].as_str().unwrap().ends_with("/npx"));
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "npm exec, sh and node must all be gone"
    );
}

#[test]
fn mcp_server_time_passes_and_its_call_is_recorded() {
    let dir = reference_dir();
    let b = Bench::new("time");
    let argv = time_server(&dir);
    let block = probe(
        &b,
        &[
            "--call",
            "get_current_time",
            "--call-args",
            r#"{"timezone":"UTC"}"#,
        ],
        &argv,
    );
    assert_eq!(block["server"]["name"], "mcp-time");
    assert_eq!(tool_names(&block), ["get_current_time", "convert_time"]);
    assert_eq!(tool_names(&block), tool_names_by_hand(&argv));
    assert_eq!(block["call"]["outcome"], "ok");
    assert!(block["call"]["preview"].as_str().unwrap().contains("UTC"));
}

#[test]
fn auto_era_finds_modern_on_mcp_server_time_and_legacy_on_everything() {
    let dir = reference_dir();
    let b = Bench::new("auto-ref");
    let block = probe(&b, &["--era", "auto"], &time_server(&dir));
    assert_eq!(block["era"], "modern");
    assert_eq!(block["protocol_version"], "2026-07-28");
    assert_eq!(tool_names(&block), ["get_current_time", "convert_time"]);
    let block = probe(&b, &["--era", "auto"], &everything(&dir));
    assert_eq!(block["era"], "legacy");
    assert!(block["era_detection"].as_str().unwrap().contains("-32601"));
}

#[test]
fn the_committed_regression_evidence_verifies_and_still_matches_the_servers() {
    let dir = reference_dir();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("evidence/reference-servers.jsonl");
    let trust = root.join("evidence/reference-servers.pub");
    let b = Bench::new("regression");
    let run = b.run(&[
        "verify",
        "--trust",
        trust.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let text = std::fs::read_to_string(&file).unwrap();
    let latest = |server: &str| -> Vec<String> {
        let block = text
            .lines()
            .rev()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["server"]["name"] == server && v["verdict"] == "pass")
            .unwrap_or_else(|| panic!("no passing block of {server} in {}", file.display()));
        tool_names(&block)
    };
    assert_eq!(
        latest("mcp-servers/everything"),
        tool_names_by_hand(&everything(&dir))
    );
    assert_eq!(latest("mcp-time"), tool_names_by_hand(&time_server(&dir)));
}

fn filesystem(dir: &Path) -> Vec<String> {
    vec![
        "node".into(),
        dir.join("node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
            .display()
            .to_string(),
        dir.join("scratch/fs").display().to_string(),
    ]
}

/// Runs `check --json` and compares its findings with the accepted list: nothing else may be
/// found, and every accepted finding must still occur.
fn check_against_accepted(label: &str, extra: &[&str], argv: &[String], server: &str) {
    let b = Bench::new(label);
    let ev = b.evidence.to_str().unwrap().to_string();
    let mut args: Vec<&str> = vec!["check", "--json", "-e", &ev];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(argv.iter().map(String::as_str));
    let run = b.run(&args);
    let report: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    assert_eq!(report["server"]["name"], server);
    let accepted: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/accepted-findings.json"))
            .unwrap(),
    )
    .unwrap();
    // An entry with an `era` holds only in that era (its check skips the other).
    let mut accepted = accepted["servers"][server]
        .as_object()
        .cloned()
        .unwrap_or_default();
    accepted.retain(|_, a| a.get("era").is_none_or(|e| *e == report["era"]));
    let findings: Vec<(String, String)> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "warn" || r["status"] == "fail")
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (id, status) in &findings {
        let ok = accepted.get(id).is_some_and(|a| a["status"] == status.as_str());
        let result = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id.as_str())
            .unwrap();
        assert!(
            ok,
            "{server}: finding {id} ({status}) is not in tests/accepted-findings.json: {result:#}"
        );
    }
    // The security lint ran in full (lists walked twice, error replies provoked) and fails
    // nothing: no hidden text, lookalike name, contradictory annotation, leaked secret or
    // drifting tool list on a reference server.
    let security: Vec<&Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["group"] == "security")
        .collect();
    assert_eq!(security.len(), 12, "{security:#?}");
    for r in &security {
        // tool_shadowing compares the servers of a config: alone, a server skips it.
        let alone = r["id"] == "security.tool_shadowing" && r["status"] == "skip";
        assert!(
            alone || r["status"] == "pass" || r["status"] == "warn",
            "{server}: {r:#}"
        );
    }
    for id in accepted.keys() {
        assert!(
            findings.iter().any(|(f, _)| f == id),
            "{server}: accepted finding {id} no longer occurs: remove it"
        );
    }
    assert_eq!(
        run.code,
        if findings.iter().any(|(_, s)| s == "fail") {
            1
        } else {
            0
        }
    );
    assert_eq!(b.last_block()["kind"], "check");
}

#[test]
fn check_finds_only_accepted_findings_on_server_everything() {
    check_against_accepted(
        "check-everything",
        &[],
        &everything(&reference_dir()),
        "mcp-servers/everything",
    );
}

#[test]
fn check_finds_only_accepted_findings_on_server_filesystem() {
    check_against_accepted(
        "check-filesystem",
        &[],
        &filesystem(&reference_dir()),
        "secure-filesystem-server",
    );
}

#[test]
fn check_finds_only_accepted_findings_on_mcp_server_time_in_both_eras() {
    check_against_accepted("check-time", &[], &time_server(&reference_dir()), "mcp-time");
    check_against_accepted(
        "check-time-auto",
        &["--era", "auto"],
        &time_server(&reference_dir()),
        "mcp-time",
    );
}

#[test]
fn server_everything_probed_twice_has_the_same_surface_and_diff_says_unchanged() {
    let dir = reference_dir();
    let b = Bench::new("everything-twice");
    let argv = everything(&dir);
    let first = probe(&b, &[], &argv);
    let second = probe(&b, &[], &argv);
    assert!(
        first["surface"]["tools"]["count"].as_u64().unwrap() > 5,
        "{}",
        first["surface"]
    );
    assert_eq!(first["surface"]["sha256"], second["surface"]["sha256"]);
    assert_eq!(first["observation_sha256"], second["observation_sha256"]);
    let diff = b.run(&["diff", b.evidence.to_str().unwrap()]);
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);
    // And the pin holds: --expect against its own evidence passes.
    let pinned = probe(&b, &["--expect", b.evidence.to_str().unwrap()], &argv);
    assert_eq!(pinned["verdict"], "pass");
    assert_eq!(pinned["expected"]["changes"], serde_json::json!([]));
}
