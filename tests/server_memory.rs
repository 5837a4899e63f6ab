//! What probe and check keep is bounded by the tool, not by what a server sends: hostile
//! fixture servers (a 60 MiB reply of zeros, 8 pages of 5 MiB of invalid tools, pings with
//! 30 MiB ids to a client it never reads from) and replies that cannot be matched (a
//! duplicated `id` key, an error with `id: null`). Every run is measured: the peak resident
//! memory `/usr/bin/time -v` reports (the largest of mcp-witness and the fixture processes it
//! reaped; the fixture streams its output and stays small) stays under 256 MiB.

mod common;

use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

/// The peak resident memory every run must stay under.
const PEAK_LIMIT_KIB: u64 = 256 * 1024;
/// `--max-line` large enough to admit the 60 MiB line.
const MAX_LINE: &str = "67108864";

/// Runs `mcp-witness args` under `/usr/bin/time -v`; returns the run and the peak RSS in KiB.
fn measured(b: &Bench, args: &[&str]) -> (Run, u64) {
    let out = Command::new("/usr/bin/time")
        .arg("-v")
        .arg(WITNESS)
        .args(args)
        .current_dir(b.dir.path())
        .env("MCP_WITNESS_KEY", b.dir.join("signing.key"))
        .stdin(Stdio::null())
        .output()
        .expect("/usr/bin/time runs mcp-witness");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let peak = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes): "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no peak memory in /usr/bin/time's report: {stderr}"));
    let code = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit status: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(-1);
    let run = Run {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    };
    println!("peak RSS {} MiB: mcp-witness {}", peak / 1024, args.join(" "));
    (run, peak)
}

fn probe(b: &Bench, extra: &[&str], behaviour: &[&str]) -> (Run, u64) {
    let ev = b.evidence.to_str().unwrap().to_string();
    let mut args = vec!["probe", "-e", &ev, "--max-line", MAX_LINE];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(fixture());
    args.extend_from_slice(behaviour);
    measured(b, &args)
}

/// `check --json --no-record`; returns the report and the peak RSS in KiB.
fn check(b: &Bench, extra: &[&str], behaviour: &[&str]) -> (Value, u64) {
    let mut args = vec!["check", "--json", "--no-record", "--max-line", MAX_LINE];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(fixture());
    args.extend_from_slice(behaviour);
    let (run, peak) = measured(b, &args);
    let report =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (report, peak)
}

fn result<'r>(report: &'r Value, id: &str) -> &'r Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result {id} in {report:#}"))
}

#[test]
fn a_60_mib_reply_of_zeros_is_refused_as_too_complex_within_bounded_memory() {
    let b = Bench::new("mem-zeros");
    let (run, peak) = probe(&b, &[], &["zeros-init", "62914560"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(reason_codes(&b.last_block()), ["reply_too_complex"]);
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    // `protocol` includes the version negotiation: two more processes send the 60 MiB line.
    let (report, peak) = check(&b, &["--only", "protocol"], &["zeros-init", "62914560"]);
    let version = result(&report, "protocol.handshake.version");
    assert_eq!(version["status"], "fail");
    assert!(
        version["message"].as_str().unwrap().contains("too complex"),
        "{version}"
    );
    // The two fresh processes of the version negotiation ran too (each sent the 60 MiB line,
    // of which they read at most 1 MiB); with no session their checks are not run.
    let unknown = result(&report, "protocol.version_negotiation.unknown");
    assert_eq!(unknown["status"], "skip", "{unknown}");
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn eight_pages_of_invalid_tools_keep_a_count_and_the_first_few_within_bounded_memory() {
    let b = Bench::new("mem-invalid");
    let (run, peak) = probe(&b, &[], &["invalid-tools-flood", "300"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["invalid_tool"]);
    assert_eq!(block["tools"]["pages"], 8);
    let count = block["tools"]["count"].as_u64().unwrap();
    let message = block["reasons"][0]["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!("(and {} more)", count - 5)),
        "{message}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    let (report, peak) = check(
        &b,
        &["--only", "protocol.capabilities.tools"],
        &["invalid-tools-flood", "300"],
    );
    let tools = result(&report, "protocol.capabilities.tools");
    let message = tools["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "tools/list answered {count} items (the checks read the first "
        )),
        "{message}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn a_5_mib_page_of_tiny_tools_is_refused_as_too_complex_within_bounded_memory() {
    let b = Bench::new("mem-tiny");
    let (run, peak) = probe(&b, &[], &["invalid-tools-flood", "0"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(reason_codes(&b.last_block()), ["reply_too_complex"]);
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    let (report, peak) = check(
        &b,
        &["--only", "protocol.capabilities.tools"],
        &["invalid-tools-flood", "0"],
    );
    let tools = result(&report, "protocol.capabilities.tools");
    assert_eq!(tools["status"], "fail");
    assert!(
        tools["message"].as_str().unwrap().contains("too complex"),
        "{tools}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn pings_with_30_mib_ids_are_not_echoed_to_a_server_that_never_reads() {
    let b = Bench::new("mem-pings");
    let (run, peak) = probe(&b, &["--timeout", "5"], &["ping-flood", "31457280"]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["no_reply"]);
    let requests = &block["messages"]["server_requests"];
    assert!(requests["count"].as_u64().unwrap() >= 1, "{requests}");
    assert_eq!(requests["unanswered"], requests["count"]);
    for r in requests["requests"].as_array().unwrap() {
        assert_eq!(r["method"], "ping");
        assert_eq!(r["answer"], "not_answered", "{r}");
    }
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    let (report, peak) = check(
        &b,
        &[
            "--timeout",
            "5",
            "--only",
            "protocol.handshake.version",
            "--only",
            "protocol.version_negotiation",
        ],
        &["ping-flood", "31457280"],
    );
    assert!(report["results"].as_array().is_some(), "{report:#}");
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn a_reply_with_a_duplicated_id_key_is_a_fail_at_once() {
    let b = Bench::new("mem-dupid");
    let (run, peak) = probe(&b, &[], &["duplicate-id"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(block["verdict"], "fail");
    assert_eq!(reason_codes(&block), ["duplicate_id_key"]);
    assert_eq!(block["silence"], Value::Null);
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    let (report, peak) = check(&b, &["--only", "protocol.handshake"], &["duplicate-id"]);
    let version = result(&report, "protocol.handshake.version");
    assert_eq!(version["status"], "fail");
    assert!(
        version["message"].as_str().unwrap().contains("`id` key 2 times"),
        "{version}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn an_error_with_a_null_id_while_a_request_is_pending_is_a_fail_at_once() {
    let b = Bench::new("mem-nullid");
    let (run, peak) = probe(&b, &[], &["null-id-error"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(block["verdict"], "fail");
    assert_eq!(reason_codes(&block), ["error_with_null_id"]);
    let message = block["reasons"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("-32700: Parse error: could not read the request"),
        "{message}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "probe peaked at {peak} KiB");

    let (report, peak) = check(&b, &["--only", "protocol.handshake"], &["null-id-error"]);
    let version = result(&report, "protocol.handshake.version");
    assert_eq!(version["status"], "fail");
    assert!(
        version["message"]
            .as_str()
            .unwrap()
            .contains("error with id null (-32700"),
        "{version}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}

#[test]
fn a_60_mib_string_in_the_initialize_reply_is_held_by_the_main_session_only() {
    let b = Bench::new("mem-string");
    let (report, peak) = check(
        &b,
        &[
            "--only",
            "protocol.handshake",
            "--only",
            "protocol.version_negotiation",
        ],
        &["huge-line", "62914560"],
    );
    assert_eq!(result(&report, "protocol.handshake.version")["status"], "pass");
    // The fresh processes of the version negotiation read at most 1 MiB of a line.
    for id in [
        "protocol.version_negotiation.unknown",
        "protocol.version_negotiation.older",
    ] {
        let r = result(&report, id);
        assert_eq!(r["status"], "skip", "{r}");
        assert!(r["message"].as_str().unwrap().contains("was not read"), "{r}");
    }
    assert!(peak < PEAK_LIMIT_KIB, "check peaked at {peak} KiB");
}
