//! `check` against the fixture server: a clean server has no findings, the deliberately bad
//! one has every finding the suite knows, and the reports parse back.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use serde_json::Value;

/// Runs `check --json` and returns (exit code, report, stderr).
fn check(b: &Bench, extra: &[&str], behaviour: &[&str]) -> (i32, Value, String) {
    let ev = b.evidence.to_str().unwrap().to_string();
    let mut args = vec!["check", "--json", "-e", &ev];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(fixture());
    args.extend_from_slice(behaviour);
    let run = b.run(&args);
    let report =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (run.code, report, run.stderr)
}

/// `check` of the `bad` fixture, with its two result-grading tools allowed to be called.
fn check_bad(b: &Bench) -> (i32, Value, String) {
    let opt_in = ["--safe-tool", "shape_bad", "--safe-tool", "big_result"];
    check(b, &[&["--timeout", "3"][..], &opt_in].concat(), &["bad"])
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

#[test]
fn a_clean_server_has_no_findings() {
    let b = Bench::new("check-clean");
    let (code, report, stderr) = check(&b, &[], &["correct"]);
    assert_eq!(code, 0, "{report:#}");
    let findings: Vec<_> = statuses(&report)
        .into_iter()
        .filter(|(_, s)| s == "warn" || s == "fail")
        .collect();
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(report["counts"]["fail"], 0);
    assert!(stderr.contains("recorded:"), "{stderr}");
    let block = b.last_block();
    assert_eq!(block["kind"], "check");
    assert_eq!(block["counts"], report["counts"]);
    assert_eq!(b.run(&["verify", b.evidence.to_str().unwrap()]).code, 0);
}

#[test]
fn the_bad_server_has_every_finding() {
    let b = Bench::new("check-bad");
    let (code, report, _) = check_bad(&b);
    assert_eq!(code, 1);
    let got = statuses(&report);
    let expected = [
        ("protocol.handshake.serverinfo", "warn"),
        ("protocol.capabilities.resources", "fail"),
        ("protocol.capabilities.prompts", "fail"),
        ("protocol.unknown_method", "fail"),
        ("protocol.parse_error", "warn"),
        ("protocol.invalid_request", "warn"),
        ("protocol.ping", "warn"),
        ("protocol.version_negotiation.unknown", "fail"),
        ("protocol.version_negotiation.older", "fail"),
        ("pagination.tools", "fail"),
        ("pagination.prompts", "fail"),
        ("schema.tool_name.missing", "fail"),
        ("schema.tool_name.format", "warn"),
        ("schema.tool_name.duplicate", "fail"),
        ("schema.tool_name.host_compat", "warn"),
        ("schema.tool_description.missing", "warn"),
        ("schema.tool_description.placeholder", "fail"),
        ("schema.tool_description.short", "warn"),
        ("schema.input_schema.malformed", "fail"),
        ("schema.input_schema.root_type", "fail"),
        ("schema.input_schema.orphan_required", "fail"),
        ("schema.input_schema.undescribed_params", "warn"),
        ("schema.input_schema.array_items", "fail"),
        ("schema.input_schema.open_object", "warn"),
        ("schema.output_schema", "fail"),
        ("schema.annotations", "fail"),
        ("schema.context_weight", "warn"),
        ("schema.tool_count", "warn"),
        ("robustness.unknown_tool", "fail"),
        ("robustness.missing_required", "fail"),
        ("robustness.wrong_types", "warn"),
        ("robustness.result_shape", "fail"),
        ("robustness.result_size", "fail"),
        ("robustness.malformed_input", "fail"),
        ("hygiene.stdout_purity", "fail"),
        ("hygiene.framing", "warn"),
        ("hygiene.stderr", "warn"),
        // It died of the malformed-input check's line and was started again.
        ("hygiene.survival", "pass"),
    ];
    for (id, status) in expected {
        assert_eq!(
            got.get(id).map(String::as_str),
            Some(status),
            "{id}: {:#}",
            report["results"]
        );
    }
    let purity = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "hygiene.stdout_purity")
        .unwrap();
    assert!(
        purity["payload"].as_str().unwrap().contains("npm chatter"),
        "{purity}"
    );
}

#[test]
fn handshake_defects_are_reported_and_a_silent_server_could_not_run() {
    let b = Bench::new("check-handshake");
    let (code, report, _) = check(&b, &[], &["bad-init"]);
    assert_eq!(code, 1);
    let got = statuses(&report);
    assert_eq!(got["protocol.handshake.version"], "fail");
    assert_eq!(got["protocol.handshake.serverinfo"], "fail");

    let (code, report, _) = check(&b, &["--timeout", "0.3"], &["silent"]);
    assert_eq!(code, 2, "{report:#}");
    assert!(report["could_not_run"].as_str().unwrap().contains("no reply"));
    assert_eq!(statuses(&report)["robustness.unknown_tool"], "skip");
}

#[test]
fn the_modern_era_checks_run_against_a_modern_server() {
    let b = Bench::new("check-modern");
    let (code, report, _) = check(&b, &["--era", "modern"], &["modern"]);
    assert_eq!(code, 0, "{report:#}");
    let got = statuses(&report);
    for id in [
        "protocol.modern.discover",
        "protocol.modern.bad_version",
        "protocol.modern.missing_meta",
    ] {
        assert_eq!(got[id], "pass", "{id}");
    }
    assert_eq!(report["era"], "modern");
}

#[test]
fn shutdown_is_graded_by_what_ended_the_server() {
    let b = Bench::new("check-shutdown");
    let (code, report, _) = check(&b, &["--only", "hygiene.shutdown"], &["stubborn"]);
    assert_eq!(code, 1);
    assert_eq!(statuses(&report)["hygiene.shutdown"], "fail");
    let (code, report, _) = check(&b, &["--only", "hygiene.shutdown"], &["ignore-eof"]);
    assert_eq!(code, 0, "a warning is not a failure without --strict");
    assert_eq!(statuses(&report)["hygiene.shutdown"], "warn");
    let (code, _, _) = check(&b, &["--only", "hygiene.shutdown", "--strict"], &["grandchild"]);
    assert_eq!(
        code, 1,
        "leaving its grandchild behind is a warning, a failure under --strict"
    );
}

#[test]
fn only_and_skip_select_an_id_and_everything_below_it() {
    let b = Bench::new("check-select");
    let (_, report, _) = check(&b, &["--only", "schema.tool_name", "--no-record"], &["correct"]);
    let ids: Vec<String> = statuses(&report).into_keys().collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert!(ids.iter().all(|id| id.starts_with("schema.tool_name.")));
    let (_, report, _) = check(
        &b,
        &["--skip", "robustness", "--skip", "protocol", "--no-record"],
        &["correct"],
    );
    assert!(
        statuses(&report)
            .keys()
            .all(|id| !id.starts_with("robustness") && !id.starts_with("protocol"))
    );
    let run = b.run(&["check", "--only", "nonsense", "--", fixture(), "correct"]);
    assert_eq!(run.code, 2);
}

#[test]
fn json_junit_and_sarif_reports_parse_back() {
    let b = Bench::new("check-reports");
    let (junit, sarif, markdown, json) = (
        b.dir.join("r.xml"),
        b.dir.join("r.sarif"),
        b.dir.join("r.md"),
        b.dir.join("r.json"),
    );
    let run = b.run(&[
        "check",
        "--json",
        "--no-record",
        "--junit",
        junit.to_str().unwrap(),
        "--sarif",
        sarif.to_str().unwrap(),
        "--markdown",
        markdown.to_str().unwrap(),
        "--",
        fixture(),
        "bad",
    ]);
    assert_eq!(run.code, 1);
    std::fs::write(&json, &run.stdout).unwrap();
    validate_reports(&json, &junit, &sarif);
    let md = std::fs::read_to_string(&markdown).unwrap();
    assert!(
        md.contains("## schema") && md.contains("`schema.annotations`"),
        "{md}"
    );
}

/// Validates the JSON, JUnit and SARIF reports with tests/validate_reports.py (the SARIF
/// 2.1.0 schema included).
fn validate_reports(json: &Path, junit: &Path, sarif: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sarif_schema =
        reference_dir().join("node/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json");
    let out = std::process::Command::new(verifier_python())
        .arg(root.join("tests/validate_reports.py"))
        .args(["--json", json.to_str().unwrap()])
        .args([
            "--json-schema",
            root.join("schemas/check-report.schema.json").to_str().unwrap(),
        ])
        .args([
            "--junit",
            junit.to_str().unwrap(),
            "--sarif",
            sarif.to_str().unwrap(),
        ])
        .args(["--sarif-schema", sarif_schema.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sarif_results_of_a_server_from_config_point_at_its_entry_in_the_config_file() {
    let b = Bench::new("check-sarif-config");
    std::fs::create_dir(b.dir.join(".git")).unwrap();
    let script = b.dir.join("srv.sh");
    std::fs::write(&script, format!("#!/bin/sh\nexec {} bad\n", fixture())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = b.dir.join("mcp.json");
    std::fs::write(
        &config,
        format!(
            "{{\n  \"mcpServers\": {{\n    \"other\": {{\"command\": \"x\"}},\n    \"bad\": {{\"command\": \"{}\", \"args\": [\"bad\"]}},\n    \"script\": {{\"command\": \"{}\"}}\n  }}\n}}\n",
            fixture(),
            script.display()
        ),
    )
    .unwrap();
    let check = |server: &str| -> Value {
        let (json, junit, sarif) = (
            b.dir.join(&format!("{server}.json")),
            b.dir.join(&format!("{server}.xml")),
            b.dir.join(&format!("{server}.sarif")),
        );
        let run = b.run(&[
            "check",
            "--no-record",
            "--only",
            "schema",
            "--config",
            config.to_str().unwrap(),
            "--server",
            server,
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--sarif",
            sarif.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
        validate_reports(&json, &junit, &sarif);
        let sarif: Value = serde_json::from_slice(&std::fs::read(&sarif).unwrap()).unwrap();
        assert_eq!(sarif["runs"][0]["columnKind"], "utf16CodeUnits");
        let results = sarif["runs"][0]["results"].as_array().unwrap().clone();
        assert!(!results.is_empty());
        Value::Array(results)
    };
    let entry = |line: u64, column: u64, end: u64| {
        serde_json::json!({
            "artifactLocation": {"uri": "mcp.json", "uriBaseId": "SRCROOT"},
            "region": {"startLine": line, "startColumn": column, "endColumn": end},
        })
    };

    // The fixture is outside the repository: the config entry is where the results are.
    for result in check("bad").as_array().unwrap() {
        assert_eq!(
            result["locations"][0]["physicalLocation"],
            entry(4, 5, 10),
            "{result}"
        );
        assert!(result.get("relatedLocations").is_none(), "{result}");
    }
    // A server whose own file is in the repository is located there, its entry related.
    for result in check("script").as_array().unwrap() {
        let primary = &result["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(primary["uri"], "srv.sh", "{result}");
        assert_eq!(
            result["relatedLocations"][0]["physicalLocation"],
            entry(5, 5, 13),
            "{result}"
        );
    }
}

#[test]
fn github_annotations_and_the_job_summary() {
    let b = Bench::new("check-github");
    let summary = b.dir.join("summary.md");
    let out = std::process::Command::new(WITNESS)
        .args([
            "check",
            "--github",
            "--no-record",
            "--only",
            "schema",
            "--",
            fixture(),
            "bad",
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("::error title=schema.annotations::"), "{stdout}");
    assert!(stdout.contains("::warning title=schema.tool_count::"), "{stdout}");
    assert!(
        std::fs::read_to_string(summary)
            .unwrap()
            .contains("# mcp-witness check")
    );
}

#[test]
fn diff_names_what_changed_between_the_two_latest_blocks_of_a_target() {
    let b = Bench::new("diff");
    let mode = b.dir.join("mode");
    let script = b.dir.join("server.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec {} \"$(cat {})\"\n", fixture(), mode.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ev = b.evidence.to_str().unwrap();
    let probe = |behaviour: &str| {
        std::fs::write(&mode, behaviour).unwrap();
        b.run(&["probe", "-e", ev, "--", script.to_str().unwrap()]).code
    };
    assert_eq!(probe("correct"), 0);
    assert_eq!(probe("correct"), 0);
    let run = b.run(&["diff", ev]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("unchanged"));
    assert_eq!(probe("paginated"), 0);
    let run = b.run(&["diff", ev]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("tools added: reverse, uppercase, lowercase, length"),
        "{}",
        run.stdout
    );
    assert_eq!(
        b.run(&["diff", b.dir.join("none.jsonl").to_str().unwrap()]).code,
        2
    );
}

#[test]
fn the_github_action_check_step_sets_its_outputs() {
    // Runs the action's check step as GitHub would, with the binary the build step would install.
    let b = Bench::new("action");
    let action = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml")).unwrap();
    let step = action.split("id: check").nth(1).expect("a step with id check");
    let script: String = step
        .split("      run: |\n")
        .nth(1)
        .expect("the step's run block")
        .lines()
        .map(|l| l.strip_prefix("        ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    let bin = b.dir.join("mcp-witness/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(WITNESS, bin.join("mcp-witness")).unwrap();
    let output = b.dir.join("github-output");
    let out = std::process::Command::new("bash")
        .args(["-e", "-c", &script])
        .env("RUNNER_TEMP", b.dir.path())
        .env("GITHUB_OUTPUT", &output)
        .env("MCP_WITNESS_COMMAND", format!("{} bad", fixture()))
        .env("MCP_WITNESS_ARGS", "--only schema")
        .env("MCP_WITNESS_STRICT", "false")
        .env("MCP_WITNESS_KEY", b.dir.join("key"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("::error title=schema."), "{stdout}");
    let outputs = std::fs::read_to_string(&output).unwrap();
    // `schema_array` is also an array without items; every argument object is open.
    assert!(outputs.contains("failures=9\n"), "{outputs}");
    assert!(outputs.contains("warnings=8\n"), "{outputs}");
    let report_line = outputs.lines().find(|l| l.starts_with("report=")).unwrap();
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report_line[7..]).unwrap()).unwrap();
    assert_eq!(report["counts"]["fail"], 9);
}

fn result<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}: {report:#}"))
}

#[test]
fn the_bad_servers_stderr_is_blamed_only_for_what_the_checks_did_not_provoke() {
    let b = Bench::new("check-bad-stderr");
    let (_, report, _) = check(&b, &["--timeout", "3"], &["bad"]);
    let stderr = result(&report, "hygiene.stderr");
    let message = stderr["message"].as_str().unwrap();
    // The unhandled rejection it logs at start-up is its own; the traceback it prints when
    // the malformed-input check's line kills it is not.
    assert!(
        message.contains("unhandled Node promise rejection during start-up"),
        "{stderr}"
    );
    assert!(
        message.contains("a Python traceback during robustness.malformed_input"),
        "{stderr}"
    );
}

#[test]
fn every_robustness_finding_says_what_was_sent_and_what_came_back() {
    let b = Bench::new("check-bad-payloads");
    let (_, report, _) = check_bad(&b);
    let findings: Vec<&Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["group"] == "robustness" && (r["status"] == "fail" || r["status"] == "warn"))
        .collect();
    assert_eq!(findings.len(), 6, "{report:#}");
    for f in findings {
        let payload = f["payload"].as_str().unwrap_or_else(|| panic!("no payload: {f}"));
        assert!(payload.contains("sent: "), "{f}");
        assert!(payload.contains("received: "), "{f}");
    }
}

#[test]
fn a_server_that_exits_on_bad_input_is_restarted_and_that_is_one_finding() {
    let b = Bench::new("check-exit-on-bad");
    let (code, report, _) = check(&b, &["--timeout", "5"], &["exit-on-bad-input"]);
    assert_eq!(code, 1, "{report:#}");
    let parse = result(&report, "protocol.parse_error");
    assert_eq!(parse["status"], "fail", "{parse}");
    assert!(
        parse["message"].as_str().unwrap().contains("started again"),
        "{parse}"
    );
    // The same cause is not counted again, and nothing waits for a dead server.
    for id in ["protocol.invalid_request", "robustness.malformed_input"] {
        let r = result(&report, id);
        assert_eq!(r["status"], "skip", "{r}");
        assert!(
            r["message"].as_str().unwrap().contains("protocol.parse_error"),
            "{r}"
        );
    }
    let fails: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "fail")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(fails, ["protocol.parse_error"], "{report:#}");
    // The checks after it ran on the fresh process.
    assert_eq!(result(&report, "protocol.ping")["status"], "pass");
    assert_eq!(result(&report, "robustness.unknown_tool")["status"], "pass");
    assert_eq!(result(&report, "hygiene.survival")["status"], "pass");
    // The Go panic it printed was provoked by the check: not a stderr finding.
    assert_eq!(result(&report, "hygiene.stderr")["status"], "pass");
    let block = b.last_block();
    assert_eq!(
        block["session"]["restarts"],
        serde_json::json!(["protocol.parse_error"])
    );
    assert!(
        block["session"]["stderr"]["tail"]
            .as_str()
            .unwrap()
            .contains("panic: jsonrpc"),
        "{block:#}"
    );
    assert_eq!(b.run(&["verify", b.evidence.to_str().unwrap()]).code, 0);
}

/// The version-negotiation checks each run in a fresh process of their own, started with
/// the main session (so a slow starter is waited for once, not twice: bench 4 measures it)
/// at a lower CPU priority (nice +10), so that where the copies compete for the cores the
/// main session's start wins.
#[test]
fn the_version_side_runs_are_two_fresh_processes_beside_the_main_one() {
    let b = Bench::new("check-side-order");
    let log = b.dir.join("starts.log");
    let (_, report, _) = check(&b, &["--timeout", "5"], &["record-starts", log.to_str().unwrap()]);
    assert_eq!(
        result(&report, "protocol.version_negotiation.unknown")["status"],
        "pass"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<(&str, u32)> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0], f[1].parse().unwrap())
        })
        .collect();
    let pids = |kind: &str| -> std::collections::BTreeSet<u32> {
        events
            .iter()
            .filter(|(what, _)| *what == kind)
            .map(|e| e.1)
            .collect()
    };
    assert_eq!(
        pids("start").len(),
        3,
        "the main process and two side runs: {text}"
    );
    assert_eq!(
        pids("initialized"),
        pids("start"),
        "each answered its initialize: {text}"
    );
    let own = nice_of_this_process();
    let mut nices: Vec<i32> = text
        .lines()
        .filter(|l| l.starts_with("start "))
        .map(|l| l.split(' ').nth(3).unwrap().parse().unwrap())
        .collect();
    nices.sort();
    let side = (own + 10).min(19);
    assert_eq!(
        nices,
        vec![own, side, side],
        "the main server at this process's priority, the side runs lowered: {text}"
    );
}

/// A check that reads a side run whose result is not in yet does not hold up the main
/// session: here both side runs answer 3 s late, and the main session's tool calls (the
/// robustness checks, after the version-negotiation checks in the registry) are answered
/// before either side run answers. The report keeps the registry's order.
#[test]
fn a_slow_side_run_does_not_hold_up_the_main_session_and_the_order_holds() {
    let b = Bench::new("check-side-slow");
    let log = b.dir.join("starts.log");
    let (_, report, _) = check(
        &b,
        &["--timeout", "10"],
        &["record-starts", log.to_str().unwrap(), "3000"],
    );
    for id in [
        "protocol.version_negotiation.unknown",
        "protocol.version_negotiation.older",
    ] {
        assert_eq!(result(&report, id)["status"], "pass", "{id}: {report:#}");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let times = |kind: &str, pid_of: &dyn Fn(u32) -> bool| -> Vec<u128> {
        text.lines()
            .map(|l| l.split(' ').collect::<Vec<_>>())
            .filter(|f| f[0] == kind && pid_of(f[1].parse().unwrap()))
            .map(|f| f[2].parse().unwrap())
            .collect()
    };
    let calls = times("call", &|_| true);
    assert!(!calls.is_empty(), "the robustness checks called tools: {text}");
    let main_pid: u32 = text
        .lines()
        .find(|l| l.starts_with("call "))
        .and_then(|l| l.split(' ').nth(1)?.parse().ok())
        .unwrap();
    let side = times("initialized", &|pid| pid != main_pid);
    assert_eq!(side.len(), 2, "two side runs answered: {text}");
    assert!(
        calls.iter().max() < side.iter().min(),
        "every tool call was answered before a side run answered: {text}"
    );
    let ids: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let registry: Vec<&str> = mcp_witness::check::checks::ALL
        .iter()
        .map(|c| c.id)
        .filter(|id| ids.contains(id))
        .collect();
    assert_eq!(ids, registry, "results in the registry's order");
}

fn nice_of_this_process() -> i32 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(16).unwrap().parse().unwrap()
}

#[test]
fn a_check_that_could_not_run_records_what_the_server_showed() {
    let b = Bench::new("check-silent-block");
    let (code, report, _) = check(&b, &["--timeout", "1"], &["silent"]);
    assert_eq!(code, 2);
    assert_eq!(report["bound"], "timeout");
    let block = b.last_block();
    assert_eq!(block["bound"], "timeout");
    let silence = &block["session"]["silence"];
    assert_eq!(silence["step"], "initialize", "{block:#}");
    assert_eq!(silence["stdout_bytes"], 0);
    assert_eq!(silence["alive"], true);

    let b = Bench::new("check-crash-block");
    let (code, _, _) = check(&b, &["--timeout", "3"], &["crash"]);
    assert_eq!(code, 2);
    let block = b.last_block();
    assert!(
        block["session"]["stderr"]["bytes"].as_u64().unwrap() > 0,
        "{block:#}"
    );
    assert!(
        block["session"]["stderr"]["tail"]
            .as_str()
            .unwrap()
            .contains("RuntimeError: boom"),
        "{block:#}"
    );
    assert_eq!(b.run(&["verify", b.evidence.to_str().unwrap()]).code, 0);
}

#[test]
fn the_check_deadline_bounds_the_whole_run() {
    let b = Bench::new("check-deadline");
    let (code, report, _) = check(&b, &["--timeout", "30", "--deadline", "1"], &["silent"]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["bound"], "deadline");
    assert_eq!(b.last_block()["bound"], "deadline");
}

#[test]
fn a_modern_server_sharing_no_version_is_modern_in_auto_era() {
    let b = Bench::new("check-future-only");
    let (code, report, _) = check(&b, &["--era", "auto"], &["future-only"]);
    assert_eq!(code, 2, "{report:#}");
    assert_eq!(report["era"], "modern");
    assert!(
        report["could_not_run"]
            .as_str()
            .unwrap()
            .contains("no common version"),
        "{report:#}"
    );
}

/// The `hygiene.shutdown` result of `check` (all checks, so the version-negotiation side
/// runs start their own processes too) against `behaviour`, with the pids the fixture
/// reported for its lingerers; checks that none of the run's processes remains.
fn shutdown_with_lingerers(label: &str, behaviour: &str) -> (Value, Vec<String>) {
    let b = Bench::new(label);
    let marker = unique_marker(label);
    let report = b.dir.join("report.txt");
    let env = format!("FIXTURE_REPORT={}", report.display());
    let (_, json, stderr) = check(&b, &["--env", &marker, "--env", &env], &[behaviour]);
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "no process of the run may remain: {stderr}"
    );
    let pids: Vec<String> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("escapee pid ").map(str::to_string))
        .collect();
    assert!(
        pids.len() >= 2,
        "the main run and the side runs each started one: {pids:?}"
    );
    let result = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "hygiene.shutdown")
        .unwrap()
        .clone();
    let block = b.last_block();
    let recorded = block["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "hygiene.shutdown")
        .unwrap();
    assert_eq!(recorded["message"], result["message"], "the block says the same");
    (result, pids)
}

#[test]
fn shutdown_names_and_ends_every_process_that_left_the_group_or_session() {
    for (behaviour, left) in [
        ("escape-setsid", "session"),
        ("escape-setpgid", "group"),
        ("escape-daemon", "session"),
    ] {
        let (result, pids) = shutdown_with_lingerers(&format!("check-{behaviour}"), behaviour);
        assert_eq!(result["status"], "warn", "{result}");
        let message = result["message"].as_str().unwrap();
        for pid in pids {
            assert!(
                message.contains(&format!(
                    "pid {pid} ({} lingerer {}) left its {left}, ended: sigterm",
                    fixture(),
                    if behaviour == "escape-daemon" {
                        "stay"
                    } else {
                        &behaviour[7..]
                    }
                )),
                "{behaviour}: pid {pid} is not named: {message}"
            );
        }
    }
}

#[test]
fn on_a_terminal_the_results_come_as_they_are_known_and_the_summary_last() {
    let out = bounded_output(
        std::process::Command::new("script")
            .args([
                "-qec",
                &format!("{WITNESS} check --no-record -- {} correct", fixture()),
                "/dev/null",
            ])
            .stdin(std::process::Stdio::null()),
    );
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let first_result = shown.find("protocol.handshake.version").expect("results shown");
    let who = shown
        .find("mcp-witness check: mcp-witness-fixture")
        .expect("the server named");
    let summary = shown.find("summary:").expect("a summary");
    assert!(first_result < who && who < summary, "{shown}");
    assert_eq!(shown.matches("protocol.handshake.version").count(), 1, "{shown}");
}

#[test]
fn report_files_get_their_folders_before_the_run_and_a_bad_path_fails_before_it() {
    let b = Bench::new("check-outputs");
    let nested = b.dir.join("reports/ci/junit.xml");
    let run = b.run(&[
        "check",
        "--no-record",
        "--junit",
        nested.to_str().unwrap(),
        "--",
        fixture(),
        "correct",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(std::fs::read_to_string(&nested).unwrap().contains("<testsuites"));
    let folder = b.dir.join("reports");
    let run = b.run(&[
        "check",
        "--no-record",
        "--sarif",
        folder.to_str().unwrap(),
        "--",
        fixture(),
        "silent",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
    assert!(
        run.stdout.is_empty(),
        "the run must not have started: {}",
        run.stdout
    );
}

#[test]
fn check_all_runs_every_server_of_a_config_and_finds_tools_that_shadow_another_servers() {
    let b = Bench::new("check-all");
    let config = b.dir.join("mcp.json");
    let entry = |behaviour: &str| serde_json::json!({"command": fixture(), "args": [behaviour]});
    let text = serde_json::json!({"mcpServers": {
        "plain": entry("correct"),
        "more": entry("paginated"),
        "none": entry("empty-tools"),
    }});
    std::fs::write(&config, text.to_string()).unwrap();
    let run = b.run(&[
        "check",
        "-e",
        b.evidence.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--all",
        "--only",
        "security.tool_shadowing",
        "--only",
        "protocol.handshake",
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    for name in ["plain", "more", "none"] {
        assert!(run.stdout.contains(&format!("== {name} ==")), "{}", run.stdout);
    }
    assert!(run.stdout.contains("summary of 3 servers:"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("3 tools have the name of another server's tool: `echo` (also in more)"),
        "{}",
        run.stdout
    );
    // One block per server, each with its own shadowing result.
    let blocks = b.blocks();
    assert_eq!(blocks.len(), 3);
    let status_of = |block: &Value| {
        block["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "security.tool_shadowing")
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    let mut statuses: Vec<String> = blocks.iter().filter_map(status_of).collect();
    statuses.sort();
    assert_eq!(statuses, ["fail", "fail", "pass"]);
    assert_eq!(b.run(&["verify", b.evidence.to_str().unwrap()]).code, 0);
    // Run alone, a server has nothing to compare with.
    let one = b.run(&[
        "check",
        "--no-record",
        "--only",
        "security.tool_shadowing",
        "--",
        fixture(),
        "correct",
    ]);
    assert!(
        one.stdout.contains("run `check --config FILE --all`"),
        "{}",
        one.stdout
    );
}

#[test]
fn a_safe_tool_the_server_does_not_list_is_a_warning_on_stderr() {
    let b = Bench::new("safe-tool-typo");
    let run = b.run(&[
        "check",
        "--no-record",
        "--only",
        "robustness.result_shape",
        "--safe-tool",
        "ech0",
        "--safe-tool",
        "echo",
        "--",
        fixture(),
        "correct",
    ]);
    assert!(
        run.stderr
            .contains("--safe-tool `ech0` names no tool the server lists"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("`echo` names no tool"), "{}", run.stderr);
}
