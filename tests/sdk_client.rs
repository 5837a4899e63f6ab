//! A third-party client run: the official TypeScript SDK client (`@modelcontextprotocol/sdk`,
//! installed by tests/setup/install-reference-servers) runs the list_changed cycle against a
//! real `mcp-witness serve` (tests/sdk-client/cycle.mjs), and `mcp-witness analyze` judges the
//! log. What it shows: SDK 1.32.2 delivers every list_changed notification; through its own
//! `listChanged` option it re-lists by itself (after its 300 ms default debounce) and the
//! cycle then uses beta, so all three domains are compliant. Through a plain
//! `setNotificationHandler` the handler fires and the script's re-list follows at once.
//! The official Python SDK client (`mcp` 2.3.0, pinned in the reference venv) runs the new
//! flows (tests/sdk-client/flows.py): roots (and a change of roots announced with
//! `send_roots_list_changed`), sampling, elicitation in form and URL mode (it declares both;
//! the script opens serve's loopback page and the SDK delivers
//! `notifications/elicitation/complete`), logging and completion.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn cycle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk-client/cycle.mjs")
}

fn sdk_node_modules() -> PathBuf {
    let modules = reference_dir().join("node/node_modules");
    let sdk = modules.join("@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "the TypeScript SDK is not installed at {}: run tests/setup/install-reference-servers",
        sdk.display()
    );
    let version: Value = serde_json::from_str(&std::fs::read_to_string(&sdk).unwrap()).unwrap();
    assert_eq!(version["version"], "1.32.2", "the pinned SDK version");
    modules
}

/// Runs cycle.mjs in `mode` against a real serve writing `log`; returns its JSON summary.
fn run_cycle(mode: &str, log: &Path) -> Value {
    let out = Command::new("node")
        .arg(cycle_script())
        .arg(WITNESS)
        .arg(log)
        .env("MCP_WITNESS_SDK_DIR", sdk_node_modules())
        .env("MCP_WITNESS_SDK_MODE", mode)
        .stdin(Stdio::null())
        .output()
        .expect("node runs (is it on PATH?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cycle.mjs failed ({:?})\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("summary is JSON ({e}): {stdout}"))
}

fn verdict_line<'a>(markdown: &'a str, domain: &str) -> &'a str {
    let section = markdown
        .split("\n## Domain: ")
        .find(|s| s.starts_with(domain))
        .unwrap_or_else(|| panic!("no {domain} section in:\n{markdown}"));
    section
        .lines()
        .find(|l| l.starts_with("**Verdict:"))
        .unwrap_or_else(|| panic!("no verdict for {domain} in:\n{section}"))
}

fn row<'a>(markdown: &'a str, domain: &str, question_start: &str) -> &'a str {
    let section = markdown
        .split("\n## Domain: ")
        .find(|s| s.starts_with(domain))
        .unwrap();
    section
        .lines()
        .find(|l| l.contains(question_start))
        .unwrap_or_else(|| panic!("no row {question_start:?} for {domain} in:\n{section}"))
}

fn check_compliant_run(mode: &str, relisted_by: &str) {
    let dir = TempDir::new(&format!("sdk-{mode}"));
    let log = dir.join("serve.jsonl");
    let summary = run_cycle(mode, &log);
    assert_eq!(summary["sdk_version"], "1.32.2");
    for (domain, beta) in [
        ("tools", "witness_probe_beta"),
        ("resources", "probe://beta"),
        ("prompts", "witness_beta_prompt"),
    ] {
        let d = &summary["domains"][domain];
        assert_eq!(d["notification_delivered"], true, "{domain}: {summary}");
        assert_eq!(d["notifications_delivered"], 1, "{domain}: exactly one delivery");
        assert!(
            d["relisted_by"].as_str().unwrap().starts_with(relisted_by),
            "{domain}: {d}"
        );
        assert!(
            d["relisted"].as_array().unwrap().iter().any(|i| i == beta),
            "{domain}: the re-list has beta: {d}"
        );
        assert_eq!(d["beta"]["ok"], true, "{domain}: beta worked: {d}");
    }

    let md = dir.join("report.md");
    let run = witness(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(
        run.code, 0,
        "every domain reacts:\n{}\n{}",
        run.stdout, run.stderr
    );
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(
        markdown.contains("- Client: typescript-sdk-cycle 1.32.2"),
        "clientInfo from initialize: {markdown}"
    );
    assert!(
        row(&markdown, "tools", "What capabilities did the client send?").contains("`{}`"),
        "capabilities {{}}"
    );
    for domain in ["tools", "resources", "prompts"] {
        assert!(
            verdict_line(&markdown, domain).starts_with("**Verdict: reacts to list_changed**"),
            "{domain}: {}",
            verdict_line(&markdown, domain)
        );
        let relist = row(
            &markdown,
            domain,
            "after the notification, and how many ms later?",
        );
        assert!(relist.contains("| yes, "), "{domain} re-listed: {relist}");
        let alpha = row(&markdown, domain, "Was alpha still");
        assert!(alpha.contains("| no |"), "{domain} alpha not used after: {alpha}");
    }
    if mode == "listChanged" {
        // The SDK's own refresh waits out its default 300 ms debounce.
        for domain in ["tools", "resources", "prompts"] {
            let relist = row(
                &markdown,
                domain,
                "after the notification, and how many ms later?",
            );
            let ms: u64 = relist
                .split("| yes, ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("ms in {relist}"));
            assert!(ms >= 250, "{domain}: debounced re-list, {ms} ms");
        }
    }
}

#[test]
fn typescript_sdk_list_changed_option_relists_by_itself_and_reacts_in_every_domain() {
    check_compliant_run("listChanged", "sdk");
}

#[test]
fn typescript_sdk_notification_handler_receives_every_list_changed_and_reacts() {
    check_compliant_run("handler", "script");
}

/// The official Python SDK client (`mcp`, in the reference venv) through the new flows: its
/// callbacks answer roots, sampling and elicitation (form and URL mode), it announces a change
/// of roots and answers serve's re-ask, opens the URL serve sent and gets the completion, sets
/// a log level and completes the prompt's arguments (tests/sdk-client/flows.py). Legacy era
/// (it sends `initialize`).
#[test]
fn python_sdk_client_handles_roots_and_their_change_sampling_form_and_url_elicitation_logging_and_completion()
{
    let python = reference_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "no reference venv at {}: run tests/setup/install-reference-servers",
        python.display()
    );
    let dir = TempDir::new("python-flows");
    let log = dir.join("serve.jsonl");
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk-client/flows.py"))
        .arg(WITNESS)
        .arg(&log)
        .stdin(Stdio::null())
        .output()
        .expect("the venv's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "flows.py failed ({:?})\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        summary["log_levels"],
        serde_json::json!([
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency"
        ]),
        "the SDK's logging callback saw all eight levels"
    );
    let url = summary["url"]
        .as_str()
        .expect("the SDK's callback got a URL mode request");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(summary["page_status"], 200, "{summary}");
    let elicitation_id = url.rsplit('/').next().unwrap();
    assert_eq!(
        summary["completed"],
        serde_json::json!([elicitation_id]),
        "the SDK's message handler got the completion of that elicitation: {summary}"
    );
    for domain in [
        "roots",
        "sampling",
        "elicitation",
        "logging",
        "completion",
        "elicitation-url",
    ] {
        let run = witness(&dir, &["analyze", log.to_str().unwrap(), "--domain", domain]);
        assert_eq!(run.code, 0, "{domain}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stdout.contains("**Verdict: handled**"),
            "{domain}: {}",
            run.stdout
        );
    }
    let roots = witness(&dir, &["analyze", log.to_str().unwrap(), "--domain", "roots"]);
    for row in [
        "| Did serve ask `roots/list` again after it? | yes |",
        "| yes: 2 root(s), every URI file:// |",
        "| added `file:///tmp/python-sdk-root-2` |",
    ] {
        assert!(roots.stdout.contains(row), "{row}: {}", roots.stdout);
    }
    let url = witness(
        &dir,
        &["analyze", log.to_str().unwrap(), "--domain", "elicitation-url"],
    );
    assert!(
        url.stdout.contains("The client completed the URL flow"),
        "{}",
        url.stdout
    );
    let elicitation = witness(
        &dir,
        &["analyze", log.to_str().unwrap(), "--domain", "elicitation"],
    );
    assert!(
        elicitation.stdout.contains("| modes declared: form, url |"),
        "{}",
        elicitation.stdout
    );
}
