//! `probe` against the bundled fixture server, one misbehaviour at a time: real processes,
//! real pipes, real evidence files.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn a_correct_server_passes_and_everything_is_recorded() {
    let b = Bench::new("correct");
    let run = b.probe_fixture(&[], &["correct"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("pass: mcp-witness-fixture"), "{}", run.stdout);
    assert!(run.stdout.contains("recorded: "), "{}", run.stdout);

    let block = b.last_block();
    assert_eq!(block["verdict"], "pass");
    assert_eq!(block["kind"], "probe");
    assert_eq!(block["seq"], 1);
    assert_eq!(block["era"], "legacy");
    assert_eq!(block["protocol_version"], "2025-11-25");
    assert_eq!(block["server"]["name"], "mcp-witness-fixture");
    assert_eq!(block["server"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(tool_names(&block), ["echo", "add", "get_time"]);
    assert_eq!(block["tools"]["count"], 3);
    assert_eq!(block["target"]["program"], fixture());
    let digest = {
        use sha2::Digest;
        let bytes = std::fs::read(fixture()).unwrap();
        mcp_witness::hex::encode(&sha2::Sha256::digest(bytes))
    };
    assert_eq!(block["target"]["program_sha256"], digest.as_str());
    assert_eq!(block["teardown"]["ended_by"], "stdin_eof");
    assert_eq!(block["teardown"]["exit"]["code"], 0);
    assert_eq!(block["teardown"]["survivors"], serde_json::json!([]));
    assert!(block["observed_at"].as_str().unwrap().contains('T'));
    assert_eq!(block["reasons"], serde_json::json!([]));
    assert_eq!(block["call"], Value::Null);
}

#[test]
fn every_page_of_a_paginated_list_is_followed() {
    let b = Bench::new("paginated");
    let run = b.probe_fixture(&[], &["paginated"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(
        tool_names(&block),
        [
            "echo",
            "add",
            "get_time",
            "reverse",
            "uppercase",
            "lowercase",
            "length"
        ]
    );
    assert_eq!(block["tools"]["pages"], 3);
}

#[test]
fn a_repeated_cursor_is_a_fail_not_a_hang() {
    let b = Bench::new("cursorloop");
    let run = b.probe_fixture(&[], &["cursor-loop"]);
    assert_eq!(run.code, 1);
    assert_eq!(reason_codes(&b.last_block()), ["cursor_repeated"]);
}

#[test]
fn a_server_silent_from_the_start_is_inconclusive_with_its_symptoms() {
    let b = Bench::new("silent");
    let run = b.probe_fixture(&["--timeout", "0.5"], &["silent"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(block["verdict"], "inconclusive");
    assert_eq!(reason_codes(&block), ["no_reply"]);
    let s = &block["silence"];
    assert_eq!(s["step"], "initialize");
    assert_eq!(s["alive"], true);
    assert_eq!(s["stdout_bytes"], 0);
    assert!(s["waited_ms"].as_u64().unwrap() >= 500);
}

#[test]
fn a_server_silent_after_initialize_is_inconclusive_at_tools_list() {
    let b = Bench::new("silentafter");
    let run = b.probe_fixture(&["--timeout", "0.5"], &["silent-after-init"]);
    assert_eq!(run.code, 3);
    let block = b.last_block();
    assert_eq!(block["silence"]["step"], "tools/list");
    assert_eq!(block["server"]["name"], "mcp-witness-fixture");
    assert!(block["silence"]["stdout_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn an_error_reply_to_initialize_fails() {
    let b = Bench::new("initerror");
    assert_eq!(b.probe_fixture(&[], &["init-error"]).code, 1);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["initialize_error"]);
    assert!(
        block["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("database unavailable")
    );
}

#[test]
fn a_reply_without_protocol_version_and_server_info_fails_on_both() {
    let b = Bench::new("badinit");
    assert_eq!(b.probe_fixture(&[], &["bad-init"]).code, 1);
    assert_eq!(
        reason_codes(&b.last_block()),
        ["missing_protocol_version", "missing_server_info"]
    );
}

#[test]
fn banner_lines_on_stdout_are_noise_not_replies() {
    let b = Bench::new("banner");
    let run = b.probe_fixture(&[], &["banner"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let block = b.last_block();
    let noise = &block["stdout_noise"];
    assert_eq!(noise["count"], 3);
    let kinds: Vec<&str> = noise["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["bom", "not_json", "invalid_utf8"]);
    assert!(
        noise["lines"][1]["text"]
            .as_str()
            .unwrap()
            .contains("[INFO] listening on stdio")
    );
    assert!(
        noise["crlf_lines"].as_u64().unwrap() >= 2,
        "replies end in CRLF: {noise}"
    );
}

#[test]
fn a_crash_fails_at_once_with_the_traceback_recorded() {
    let b = Bench::new("crash");
    let run = b.probe_fixture(&["--timeout", "30"], &["crash"]);
    assert_eq!(run.code, 1);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["server_exited"]);
    assert!(
        block["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("code 1")
    );
    assert!(
        block["stderr"]["tail"]
            .as_str()
            .unwrap()
            .contains("RuntimeError: boom")
    );
    assert_eq!(block["teardown"]["ended_by"], "exited_before");
    // Noticed when it exited, not at the 30 s timeout.
    assert!(block["timings_ms"]["initialize"].as_u64().unwrap() < 10_000);
}

#[test]
fn a_server_that_exits_after_initialize_fails() {
    let b = Bench::new("exitafter");
    assert_eq!(b.probe_fixture(&[], &["exit-after-init"]).code, 1);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["server_exited"]);
    assert_eq!(block["teardown"]["exit"]["code"], 3);
}

#[test]
fn a_server_that_closes_stdout_fails() {
    let b = Bench::new("stdoutclose");
    assert_eq!(b.probe_fixture(&[], &["stdout-close"]).code, 1);
    assert_eq!(reason_codes(&b.last_block()), ["stdout_closed"]);
}

#[test]
fn an_empty_tool_list_fails() {
    let b = Bench::new("empty");
    assert_eq!(b.probe_fixture(&[], &["empty-tools"]).code, 1);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["no_tools"]);
    assert_eq!(block["tools"]["count"], 0);
}

#[test]
fn tools_without_a_name_or_schema_fail_and_names_come_from_the_reply() {
    let b = Bench::new("invalidtools");
    assert_eq!(b.probe_fixture(&[], &["invalid-tools"]).code, 1);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["invalid_tool"]);
    assert_eq!(tool_names(&block), ["ok", "no_schema"]);
    assert_eq!(block["tools"]["count"], 3);
}

#[test]
fn a_slow_start_inside_the_timeout_passes() {
    let b = Bench::new("slowin");
    let run = b.probe_fixture(&["--timeout", "5"], &["slow-start", "300"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(b.last_block()["timings_ms"]["initialize"].as_u64().unwrap() >= 250);
}

#[test]
fn a_slow_start_outside_the_timeout_is_inconclusive() {
    let b = Bench::new("slowout");
    let run = b.probe_fixture(&["--timeout", "0.3"], &["slow-start", "3000"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    assert_eq!(b.last_block()["silence"]["step"], "initialize");
}

#[test]
fn server_pings_are_answered_and_other_server_requests_refused() {
    let b = Bench::new("chatty");
    let run = b.probe_fixture(&["--timeout", "5"], &["chatty"]);
    assert_eq!(
        run.code, 0,
        "the fixture withholds its list until both are answered: {}",
        run.stdout
    );
    let block = b.last_block();
    let reqs = &block["messages"]["server_requests"];
    assert_eq!(reqs["count"], 2);
    assert_eq!(
        reqs["requests"][0],
        serde_json::json!({"method": "ping", "answer": "{}"})
    );
    assert_eq!(
        reqs["requests"][1],
        serde_json::json!({"method": "roots/list", "answer": "-32601"})
    );
    let methods = block["messages"]["notifications"]["methods"].as_array().unwrap();
    assert!(
        methods.contains(&Value::from("notifications/tools/list_changed")),
        "{methods:?}"
    );
}

#[test]
fn replies_are_matched_by_id() {
    let b = Bench::new("wrongid");
    assert_eq!(b.probe_fixture(&[], &["wrong-id"]).code, 0);
    assert!(b.last_block()["messages"]["unmatched_replies"].as_u64().unwrap() >= 2);
}

#[test]
fn a_line_past_the_bound_is_a_fail_not_an_out_of_memory() {
    let b = Bench::new("huge");
    let run = b.probe_fixture(&["--max-line", "4096"], &["huge-line", "100000"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(reason_codes(&b.last_block()), ["line_too_long"]);
}

#[test]
fn a_grandchild_in_the_group_is_killed_with_the_server() {
    let b = Bench::new("grandchild");
    let marker = unique_marker("grandchild");
    let run = b.probe_fixture(&["--env", &marker], &["grandchild"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(block["teardown"]["group_signals"][0], "sigterm");
    assert_eq!(block["teardown"]["survivors"], serde_json::json!([]));
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "no process of the server may remain"
    );
}

#[test]
fn an_escaped_process_holding_the_pipes_does_not_keep_the_probe_alive() {
    let b = Bench::new("escape");
    let marker = unique_marker("escape");
    let run = b.probe_fixture(&["--env", &marker], &["escape"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    // The escaped child would live 3 s holding stdout and stderr: the probe neither waited
    // on those pipes nor left it running; it ended it and said so.
    let td = &b.last_block()["teardown"];
    let escapees = td["escapees"].as_array().unwrap();
    assert_eq!(escapees.len(), 1, "{td:#}");
    assert_eq!(escapees[0]["left"], "session");
    assert_eq!(escapees[0]["ended"], "sigterm");
    assert_eq!(td["survivors"], serde_json::json!([]));
    assert_eq!(processes_with_env(&marker), Vec::<u32>::new());
}

#[test]
fn a_server_runs_without_a_controlling_terminal_so_it_cannot_forge_a_line_on_dev_tty() {
    let b = Bench::new("tty");
    let report = b.dir.join("report.txt");
    let env = format!("FIXTURE_REPORT={}", report.display());
    let run = b.probe_fixture(&["--env", &env], &["tty-forge"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("forged"), "{}", run.stdout);
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("tty: open failed"), "{text}");
    // The server leads its own session (sid == pid) and has no terminal (tty_nr 0).
    let ids = text
        .lines()
        .find(|l| l.starts_with("sid "))
        .expect("the fixture reported its ids");
    let f: Vec<&str> = ids.split(' ').collect();
    assert_eq!(f[1], f[3], "session id is the server's own pid: {ids}");
    assert_eq!(f[5], "0", "no controlling terminal: {ids}");
}

/// Probes an `escape-*` fixture and checks that every lingerer it reported is listed in the
/// block's teardown (pid, argv, how it left) as ended by SIGTERM (or `ended`), and that none
/// remains.
fn escapee_is_listed_and_ended(label: &str, behaviour: &str, left: &str) -> String {
    escapee_is_listed_and_ended_by(label, behaviour, left, "sigterm")
}

fn escapee_is_listed_and_ended_by(label: &str, behaviour: &str, left: &str, ended: &str) -> String {
    let b = Bench::new(label);
    let marker = unique_marker(label);
    let report = b.dir.join("report.txt");
    let env = format!("FIXTURE_REPORT={}", report.display());
    let run = b.probe_fixture(&["--env", &marker, "--env", &env], &[behaviour]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "no process of the run may remain"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let reported: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("escapee pid ")?.parse().ok())
        .collect();
    assert!(!reported.is_empty(), "the fixture reported its lingerer");
    let td = &b.last_block()["teardown"];
    assert_eq!(td["survivors"], serde_json::json!([]), "{td:#}");
    for pid in reported {
        let e = td["escapees"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["pid"] == pid)
            .unwrap_or_else(|| panic!("pid {pid} is not listed: {td:#}"));
        let argv: Vec<&str> = e["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[0], fixture(), "{e}");
        assert_eq!(argv[1], "lingerer", "{e}");
        assert_eq!(e["left"], left, "{e}");
        assert_eq!(e["ended"], ended, "{e}");
        assert!(run.stdout.contains(&format!("pid {pid} ")), "{}", run.stdout);
    }
    text
}

#[test]
fn a_child_that_calls_setsid_is_ended_and_listed_in_the_teardown() {
    escapee_is_listed_and_ended("setsid", "escape-setsid", "session");
}

#[test]
fn a_child_that_calls_setpgid_is_ended_and_listed_in_the_teardown() {
    escapee_is_listed_and_ended("setpgid", "escape-setpgid", "group");
}

#[test]
fn an_escaped_child_ignoring_sigterm_is_ended_by_sigkill_and_listed() {
    escapee_is_listed_and_ended_by("escstubborn", "escape-stubborn", "session", "sigkill");
}

#[test]
fn an_orphaned_double_fork_daemon_is_ended_and_listed_in_the_teardown() {
    let report = escapee_is_listed_and_ended("daemon", "escape-daemon", "session");
    // mcp-witness is a child subreaper: the orphan was reparented to it, not to init, so
    // its parent-pid chain still led to the probe.
    assert!(report.contains(&format!("adopted by {WITNESS}\n")), "{report}");
}

#[test]
fn a_server_ignoring_eof_is_ended_by_sigterm() {
    let b = Bench::new("ignoreeof");
    assert_eq!(b.probe_fixture(&[], &["ignore-eof"]).code, 0);
    let td = &b.last_block()["teardown"];
    assert_eq!(td["ended_by"], "sigterm");
    assert_eq!(td["exit"]["signal"], 15);
}

#[test]
fn a_server_ignoring_sigterm_is_ended_by_sigkill() {
    let b = Bench::new("stubborn");
    let marker = unique_marker("stubborn");
    assert_eq!(b.probe_fixture(&["--env", &marker], &["stubborn"]).code, 0);
    let td = &b.last_block()["teardown"];
    assert_eq!(td["ended_by"], "sigkill");
    assert_eq!(td["exit"]["signal"], 9);
    assert!(processes_with_env(&marker).is_empty());
}

#[test]
fn a_program_that_cannot_start_is_a_recorded_fail() {
    let b = Bench::new("nostart");
    let run = b.run(&[
        "probe",
        "-e",
        b.evidence.to_str().unwrap(),
        "--",
        "/nonexistent/mcp-server",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["program_not_found"]);
    assert!(
        block["reasons"][0]["message"]
            .as_str()
            .unwrap()
            .contains("No such file")
    );
    assert_eq!(block["target"]["program"], Value::Null);
}

#[test]
fn a_bare_program_name_is_found_on_path_and_recorded_absolute() {
    let b = Bench::new("pathlookup");
    let dir = std::path::Path::new(fixture())
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let path = format!("PATH={dir}:/usr/bin:/bin");
    let ev = b.evidence.to_str().unwrap();
    let run = b.run(&[
        "probe",
        "-e",
        ev,
        "--env",
        &path,
        "--",
        "mcp-witness-fixture",
        "correct",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(block["target"]["program"], fixture());
    assert_eq!(block["target"]["command"][0], "mcp-witness-fixture");
    assert_eq!(block["target"]["env"], serde_json::json!(["PATH"]));
}

#[test]
fn secrets_never_reach_the_evidence_file() {
    let b = Bench::new("secrets");
    let token_value = "s3cr3t-value-for-the-fixture";
    let env = format!("FIXTURE_TOKEN={token_value}");
    let run = b.probe_fixture(
        &["--env", &env],
        &[
            "stderr-secret",
            "--api-key",
            "k3y-value-1234",
            "--token=t0ken-value-99",
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    let text = std::fs::read_to_string(&b.evidence).unwrap();
    for secret in [token_value, "k3y-value-1234", "t0ken-value-99", "ghp_"] {
        assert!(
            !text.contains(secret),
            "`{secret}` leaked into the evidence: {text}"
        );
    }
    let block = b.last_block();
    let stderr = block["stderr"]["tail"].as_str().unwrap();
    assert!(stderr.contains("using token [REDACTED]"), "{stderr}");
    assert_eq!(block["target"]["command"][2], "--api-key");
    assert_eq!(block["target"]["command"][3], "[REDACTED]");
    assert_eq!(block["target"]["command"][4], "--token=[REDACTED]");
    assert!(
        !run.stdout.contains(token_value),
        "the summary must not show it either"
    );
}

#[test]
fn a_named_tool_is_called_only_when_listed_and_its_result_recorded() {
    let b = Bench::new("call");
    let run = b.probe_fixture(
        &["--call", "echo", "--call-args", r#"{"text":"hello there"}"#],
        &["correct"],
    );
    assert_eq!(run.code, 0);
    let call = &b.last_block()["call"];
    assert_eq!(call["outcome"], "ok");
    assert_eq!(call["preview"], "hello there");
    assert_eq!(call["content_types"], serde_json::json!(["text"]));
    assert_eq!(call["result_sha256"].as_str().unwrap().len(), 64);

    let run = b.probe_fixture(&["--call", "not_a_tool"], &["correct"]);
    assert_eq!(run.code, 0, "the verdict covers handshake and list only");
    assert_eq!(b.last_block()["call"]["outcome"], "not_listed");
}

#[test]
fn tool_errors_and_silent_calls_are_outcomes_not_verdicts() {
    let b = Bench::new("callerr");
    assert_eq!(
        b.probe_fixture(
            &["--call", "echo", "--call-args", r#"{"text":"x"}"#],
            &["tool-error"]
        )
        .code,
        0
    );
    assert_eq!(b.last_block()["call"]["outcome"], "tool_error");
    assert_eq!(
        b.probe_fixture(&["--call", "echo", "--call-timeout", "0.3"], &["call-silent"])
            .code,
        0
    );
    assert_eq!(b.last_block()["call"]["outcome"], "silent");
    let run = b.probe_fixture(&["--call", "echo", "--call-args", "[1]"], &["correct"]);
    assert_eq!(run.code, 2, "call args must be an object: {}", run.stderr);
}

#[test]
fn the_modern_era_uses_server_discover() {
    let b = Bench::new("modern");
    let run = b.probe_fixture(&["--era", "modern"], &["modern"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(block["era"], "modern");
    assert_eq!(block["protocol_version"], "2026-07-28");
    assert_eq!(block["server"]["name"], "mcp-witness-fixture");
    assert_eq!(tool_names(&block), ["echo", "add", "get_time"]);
}

#[test]
fn auto_picks_modern_when_discover_answers_and_legacy_otherwise() {
    let b = Bench::new("auto");
    assert_eq!(b.probe_fixture(&["--era", "auto"], &["modern"]).code, 0);
    assert_eq!(b.last_block()["era"], "modern");

    assert_eq!(b.probe_fixture(&["--era", "auto"], &["correct"]).code, 0);
    let block = b.last_block();
    assert_eq!(block["era"], "legacy");
    assert_eq!(block["protocol_version"], "2025-11-25");
    assert!(
        block["era_detection"].as_str().unwrap().contains("-32601"),
        "{}",
        block["era_detection"]
    );

    let run = b.probe_fixture(&["--era", "auto", "--timeout", "0.3"], &["silent"]);
    assert_eq!(run.code, 3);
    let block = b.last_block();
    assert_eq!(block["era"], "legacy");
    assert!(block["era_detection"].as_str().unwrap().contains("no reply"));
}

#[test]
fn the_modern_era_against_a_legacy_server_fails_plainly() {
    let b = Bench::new("modernlegacy");
    assert_eq!(b.probe_fixture(&["--era", "modern"], &["correct"]).code, 1);
    assert_eq!(reason_codes(&b.last_block()), ["discover_failed"]);
}

#[test]
fn a_server_flooding_requests_without_reading_cannot_hang_the_probe() {
    let b = Bench::new("reqflood");
    let ev = b.evidence.to_str().unwrap();
    // `yes` writes requests forever and never reads its stdin.
    let run = b.run(&[
        "probe",
        "-e",
        ev,
        "--timeout",
        "1",
        "--",
        "yes",
        r#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
    ]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(block["silence"]["step"], "initialize");
    assert!(block["messages"]["server_requests"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn a_stdout_flood_does_not_stretch_the_timeout() {
    let b = Bench::new("outflood");
    let ev = b.evidence.to_str().unwrap();
    let line = format!("[{}0]", "0,".repeat(30_000));
    let run = b.run(&["probe", "-e", ev, "--timeout", "1", "--", "yes", &line]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    // Bounded by the timeout, not by the flood (which never ends).
    assert!(
        block["silence"]["waited_ms"].as_u64().unwrap() < 5_000,
        "{}",
        block["silence"]
    );
    assert!(block["stdout_noise"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn the_deadline_bounds_the_whole_probe_and_the_block_names_it() {
    let b = Bench::new("probe-deadline");
    let run = b.probe_fixture(&["--timeout", "30", "--deadline", "1"], &["silent"]);
    assert_eq!(run.code, 3, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(reason_codes(&block), ["deadline"]);
    assert_eq!(block["bound"], "deadline");
    assert!(block["silence"]["waited_ms"].as_u64().unwrap() < 30_000);
    assert!(run.stdout.contains("--deadline"), "{}", run.stdout);

    let b = Bench::new("probe-timeout-bound");
    let run = b.probe_fixture(&["--timeout", "0.5"], &["silent"]);
    assert_eq!(run.code, 3);
    assert_eq!(b.last_block()["bound"], "timeout");
}

#[test]
fn auto_era_records_modern_when_discover_shares_no_version() {
    let b = Bench::new("probe-future-only");
    let run = b.probe_fixture(&["--era", "auto"], &["future-only"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let block = b.last_block();
    assert_eq!(block["era"], "modern");
    assert_eq!(reason_codes(&block), ["no_common_version"]);
}

/// Runs `mcp-witness ARGS` under a pseudo-terminal (util-linux `script`), returning what the
/// terminal showed.
fn on_a_terminal(args: &str) -> String {
    let out = bounded_output(
        std::process::Command::new("script")
            .args(["-qec", &format!("{WITNESS} {args}"), "/dev/null"])
            .stdin(std::process::Stdio::null()),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_long_wait_shows_what_is_awaited_on_a_terminal_and_nothing_in_a_pipe_or_with_quiet() {
    let silent = format!("--no-record --timeout 2.5 -- {} silent", fixture());
    let shown = on_a_terminal(&format!("probe {silent}"));
    assert!(
        shown.contains("waiting for the initialize reply… 1 s of 2.5"),
        "{shown:?}"
    );
    assert!(shown.contains("inconclusive"), "{shown:?}");
    let quiet = on_a_terminal(&format!("probe --quiet {silent}"));
    assert!(!quiet.contains("waiting for"), "{quiet:?}");
    let b = Bench::new("progress-pipe");
    let piped = b.run(&[
        "probe",
        "--no-record",
        "--timeout",
        "2.5",
        "--",
        fixture(),
        "silent",
    ]);
    assert_eq!(piped.code, 3);
    assert!(!piped.stderr.contains("waiting for"), "{}", piped.stderr);
    assert!(!piped.stderr.contains('\x1b'), "{:?}", piped.stderr);
}

#[test]
fn probe_all_probes_every_server_of_a_config_and_exits_with_the_worst_verdict() {
    let b = Bench::new("probe-all");
    let config = b.dir.join("mcp.json");
    let text = serde_json::json!({"mcpServers": {
        "good": {"command": fixture(), "args": ["correct"]},
        "empty": {"command": fixture(), "args": ["empty-tools"]},
        "web": {"type": "websocket", "url": "ws://127.0.0.1:1"},
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let ev = b.evidence.to_str().unwrap();
    let run = b.run(&["probe", "-e", ev, "--config", config.to_str().unwrap(), "--all"]);
    // The websocket entry cannot be probed: a usage error, the worst code.
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("summary of 3 servers:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("good") && run.stdout.contains("pass"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("no_tools"), "{}", run.stdout);
    assert!(run.stdout.contains("could not run"), "{}", run.stdout);
    assert_eq!(b.blocks().len(), 2, "one block per server that ran");
    // Without the unusable entry, the worst is the empty server's fail.
    let text = serde_json::json!({"mcpServers": {
        "good": {"command": fixture(), "args": ["correct"]},
        "empty": {"command": fixture(), "args": ["empty-tools"]},
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let run = b.run(&[
        "probe",
        "--no-record",
        "--config",
        config.to_str().unwrap(),
        "--all",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
}

#[test]
fn config_auto_reads_the_installed_clients_configs_and_says_which() {
    let b = Bench::new("config-auto");
    let home = b.dir.join("home");
    let project = b.dir.join("project");
    std::fs::create_dir_all(project.join(".cursor")).unwrap();
    std::fs::create_dir_all(home.join(".config/zed")).unwrap();
    let cursor = serde_json::json!({"mcpServers": {"fx": {"command": fixture(), "args": ["correct"]}}});
    std::fs::write(project.join(".cursor/mcp.json"), cursor.to_string()).unwrap();
    let zed = serde_json::json!({"context_servers": {"zz": {"command": {"path": fixture(), "args": ["paginated"]}}}});
    std::fs::write(home.join(".config/zed/settings.json"), zed.to_string()).unwrap();
    let run = |args: &[&str]| {
        Run::from(bounded_output(
            std::process::Command::new(WITNESS)
                .args(args)
                .current_dir(&project)
                .env("HOME", &home)
                .env("MCP_WITNESS_KEY", b.dir.join("signing.key"))
                .env("MCP_WITNESS_DIGEST_CACHE", b.dir.join("digests"))
                .stdin(std::process::Stdio::null()),
        ))
    };
    let one = run(&["probe", "--no-record", "--config", "auto", "--server", "zz"]);
    assert_eq!(one.code, 0, "{}{}", one.stdout, one.stderr);
    assert!(one.stderr.contains("--config auto read"), "{}", one.stderr);
    assert!(one.stderr.contains(".config/zed/settings.json"), "{}", one.stderr);
    let all = run(&["probe", "--no-record", "--config", "auto", "--all"]);
    assert_eq!(all.code, 0, "{}{}", all.stdout, all.stderr);
    assert!(all.stdout.contains("summary of 2 servers:"), "{}", all.stdout);
    assert!(
        all.stdout.contains("fx (") && all.stdout.contains("zz ("),
        "{}",
        all.stdout
    );
    let missing = run(&["probe", "--no-record", "--config", "auto", "--server", "nope"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .contains("no client config here has a server `nope`"),
        "{}",
        missing.stderr
    );
}
