//! A third-party client run: the official TypeScript SDK client (`@modelcontextprotocol/sdk`,
//! installed by tests/setup/install-reference-servers) runs the list_changed cycle against a
//! real `mcp-witness serve` (tests/sdk-client/cycle.mjs), and `mcp-witness analyze` judges the
//! log. What it shows: SDK 1.32.2 delivers every list_changed notification; through its own
//! `listChanged` option it re-lists by itself (after its 300 ms default debounce) and the
//! cycle then uses beta, so all three domains are compliant. Through a plain
//! `setNotificationHandler` the handler fires and the script's re-list follows at once.
//! Then every domain in one session per client and era, each session recorded as a signed
//! client block and its verdicts read back: the TypeScript SDK (tests/sdk-client/flows.mjs,
//! legacy only: 1.32.2 knows no 2026-07-28) and the official Python SDK client (`mcp` 2.3.0,
//! pinned in the reference venv; tests/sdk-client/flows.py) in both eras, both opening serve's
//! loopback page for URL mode elicitation. And the TypeScript SDK declaring form mode only
//! refuses serve's URL mode request itself (tests/sdk-client/undeclared-mode.mjs).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

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

/// Runs a TypeScript SDK client script of tests/sdk-client against a real serve writing
/// `log`, with the pinned SDK and `env`; returns the JSON summary it prints.
fn run_sdk_script(script: &str, log: &Path, env: &[(&str, &str)]) -> Value {
    let out = Command::new("node")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/sdk-client")
                .join(script),
        )
        .arg(WITNESS)
        .arg(log)
        .env("MCP_WITNESS_SDK_DIR", sdk_node_modules())
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("node runs (is it on PATH?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{script} failed ({:?})\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("summary is JSON ({e}): {stdout}"))
}

/// Runs cycle.mjs in `mode` against a real serve writing `log`; returns its JSON summary.
fn run_cycle(mode: &str, log: &Path) -> Value {
    run_sdk_script("cycle.mjs", log, &[("MCP_WITNESS_SDK_MODE", mode)])
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

/// `analyze --domain all --record` of a log with a fresh key in `dir`: the exit code, the
/// one signed block (verified against that key) and the markdown.
fn record_every_domain(dir: &TempDir, log: &Path) -> (i32, Value, String) {
    let key = dir.join("test.key");
    let keygen = witness(dir, &["keygen", "--key", key.to_str().unwrap()]);
    assert_eq!(keygen.code, 0, "{}{}", keygen.stdout, keygen.stderr);
    let public = keygen.stdout.trim().to_string();
    let evidence = dir.join("clients.jsonl");
    let run = witness(
        dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--record",
            "-e",
            evidence.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
        ],
    );
    let text = std::fs::read_to_string(&evidence).unwrap_or_default();
    let blocks: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        blocks.len(),
        1,
        "one session, one block: {}{}",
        run.stdout,
        run.stderr
    );
    let verify = witness(dir, &["verify", "--trust", &public, evidence.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    (run.code, blocks[0].clone(), run.stdout)
}

/// The verdict the block gives each domain, in the block's order.
fn verdicts(block: &Value) -> Vec<(String, String)> {
    block["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["domain"].as_str().unwrap().to_string(),
                d["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn all(verdict: &str) -> Vec<(String, String)> {
    EVERY_KIT_DOMAIN
        .iter()
        .enumerate()
        .map(|(i, d)| {
            // Both SDKs declare both elicitation modes: none is left to test a refusal with.
            let v = match (i, *d) {
                (0..3, _) => "reacts to list_changed",
                (_, "elicitation-undeclared") => "not declared",
                _ => verdict,
            };
            (d.to_string(), v.to_string())
        })
        .collect()
}

/// The TypeScript SDK 1.32.2 client through every domain in one session
/// (tests/sdk-client/flows.mjs): the list_changed cycle through its `listChanged` option, then
/// request handlers for roots, sampling and elicitation, `setLoggingLevel`, `complete`,
/// `subscribeResource` with an updated handler, and a call with `onprogress` cancelled through
/// an AbortSignal. It handles every one. It speaks only the handshake era: its supported
/// versions end at 2025-11-25, it sends `initialize`, and serve marks the session legacy.
#[test]
fn typescript_sdk_client_handles_every_domain_in_the_legacy_era_and_knows_no_modern_era() {
    let dir = TempDir::new("sdk-flows");
    let log = dir.join("serve.jsonl");
    let summary = run_sdk_script("flows.mjs", &log, &[]);
    assert_eq!(summary["sdk_version"], "1.32.2");
    let versions = summary["supported_protocol_versions"].as_array().unwrap();
    assert_eq!(versions[0], "2025-11-25", "its newest version");
    assert!(!versions.iter().any(|v| v == "2026-07-28"), "{versions:?}");
    assert_eq!(summary["log_levels"].as_array().unwrap().len(), 8, "{summary}");
    assert_eq!(summary["updated"], serde_json::json!(["probe://counter"]));
    assert_eq!(summary["reread_text"], "count 1");
    assert!(summary["progress"].as_array().unwrap().len() >= 3, "{summary}");
    assert!(
        summary["steps"]["witness_slow"]["error"]
            .as_str()
            .unwrap()
            .contains("cancels the slow call"),
        "the abort rejected the call: {summary}"
    );
    // URL mode: the script opened serve's loopback page; the SDK's handler got the completion.
    assert_eq!(summary["url_page_status"], 200, "{summary}");
    assert_eq!(
        summary["elicitation_completed"].as_array().map(Vec::len),
        Some(1),
        "{summary}"
    );
    assert_eq!(summary["roots_reasked_after_list_changed"], true, "{summary}");

    let (code, block, markdown) = record_every_domain(&dir, &log);
    assert_eq!(code, 0, "{markdown}");
    assert_eq!(block["client"]["name"], "typescript-sdk-flows");
    assert_eq!(block["log"]["session"]["era"], "legacy");
    assert_eq!(verdicts(&block), all("handled"), "{markdown}");
    assert_eq!(block["verdict"], "reacts to list_changed");
    for (domain, question, answer) in [
        (
            "roots",
            "Did the client declare `roots`?",
            "yes, `roots` with listChanged true",
        ),
        ("roots", "`notifications/roots/list_changed`?", "| yes |"),
        ("roots", "Did serve ask `roots/list` again", "| yes |"),
        (
            "roots",
            "What changed between",
            "added `file:///tmp/typescript-sdk-root-2`",
        ),
        (
            "elicitation",
            "Did the client declare `elicitation`?",
            "modes declared: form, url",
        ),
        ("elicitation-url", "Did the client open the URL", "| yes, "),
        (
            "elicitation-url",
            "`notifications/elicitation/complete`",
            "| yes |",
        ),
        (
            "logging",
            "Did the client set a log level",
            "`logging/setLevel` `debug`",
        ),
        (
            "subscriptions",
            "subscribe to `probe://counter`",
            "`resources/subscribe`",
        ),
        ("subscriptions", "Did the client unsubscribe", "| yes |"),
        ("progress", "unique among the open requests?", "yes, unique"),
        ("progress", "with the call's `requestId`", "| yes, "),
    ] {
        assert!(
            row(&markdown, domain, question).contains(answer),
            "{domain}: {}",
            row(&markdown, domain, question)
        );
    }
}

/// Runs tests/sdk-client/flows.py (the Python SDK's `mcp.Client`) in `era` against a real
/// serve; returns its summary.
fn run_python_flows(dir: &TempDir, log: &Path, era: &str) -> Value {
    let python = reference_dir().join("venv/bin/python");
    assert!(
        python.exists(),
        "no reference venv at {}: run tests/setup/install-reference-servers",
        python.display()
    );
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk-client/flows.py"))
        .arg(WITNESS)
        .arg(log)
        .arg(era)
        .current_dir(dir.path())
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
    serde_json::from_str(stdout.trim()).unwrap()
}

/// The official Python SDK client (`mcp` 2.3.0, in the reference venv) through every domain
/// in one session per era (tests/sdk-client/flows.py). Legacy (`mode="legacy"`): the
/// notifications reach its message handler, it re-lists; it answers roots, sampling and
/// elicitation through its callbacks (and sends `notifications/roots/list_changed` when told
/// its roots changed), sets a log level, completes, subscribes with `resources/subscribe`, and
/// a cancelled task scope sends `notifications/cancelled`.
#[test]
fn python_sdk_client_handles_every_domain_in_the_legacy_era() {
    let dir = TempDir::new("python-legacy");
    let log = dir.join("serve.jsonl");
    let summary = run_python_flows(&dir, &log, "legacy");
    assert_eq!(summary["sdk_version"], "2.3.0", "the pinned SDK version");
    assert_eq!(summary["protocol_version"], "2025-11-25");
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
    let (code, block, markdown) = record_every_domain(&dir, &log);
    assert_eq!(code, 0, "{markdown}");
    assert_eq!(block["client"]["name"], "python-sdk-flows-legacy");
    assert_eq!(block["log"]["session"]["era"], "legacy");
    assert_eq!(verdicts(&block), all("handled"), "{markdown}");
    assert!(
        row(&markdown, "elicitation", "Did the client declare").contains("| modes declared: form, url |"),
        "{markdown}"
    );
    assert!(
        row(&markdown, "subscriptions", "subscribe to").contains("`resources/subscribe`"),
        "{markdown}"
    );
    assert!(
        row(&markdown, "roots", "`notifications/roots/list_changed`?").contains("| yes |"),
        "send_roots_list_changed() sends it: {markdown}"
    );
    // serve asks again, and the SDK's callback answers with the new roots.
    assert!(
        row(&markdown, "roots", "What changed between").contains("added `file:///tmp/python-sdk-root-2`"),
        "{markdown}"
    );
    // URL mode: the script opened the page; the SDK's message handler got the completion.
    assert_eq!(summary["url_page_status"], 200, "{summary}");
    assert_eq!(
        summary["elicitation_completed"].as_array().map(Vec::len),
        Some(1),
        "{summary}"
    );
    assert!(
        row(
            &markdown,
            "elicitation-url",
            "`notifications/elicitation/complete`"
        )
        .contains("| yes |"),
        "{markdown}"
    );
}

/// The same SDK in the modern era (`mode="auto"`: it probes `server/discover` and speaks
/// 2026-07-28 with serve): list changes and the resource update come through its
/// `listen()` streams, roots, sampling and elicitation through `input_required` retries
/// (new id, requestState back), logging through the `_meta` logLevel of `log_level`.
#[test]
fn python_sdk_client_handles_every_domain_in_the_modern_era() {
    let dir = TempDir::new("python-modern");
    let log = dir.join("serve.jsonl");
    let summary = run_python_flows(&dir, &log, "modern");
    assert_eq!(summary["protocol_version"], "2026-07-28");
    assert_eq!(summary["log_levels"].as_array().unwrap().len(), 8, "{summary}");
    let (code, block, markdown) = record_every_domain(&dir, &log);
    assert_eq!(code, 0, "{markdown}");
    assert_eq!(block["client"]["name"], "python-sdk-flows-modern");
    assert_eq!(block["log"]["session"]["era"], "modern");
    assert_eq!(verdicts(&block), all("handled"), "{markdown}");
    assert!(
        row(&markdown, "tools", "What capabilities").contains("roots"),
        "{markdown}"
    );
    for domain in ["roots", "sampling", "elicitation"] {
        assert!(
            row(&markdown, domain, "Did the client retry with")
                .contains("new id: yes; requestState back: yes"),
            "{domain}: {markdown}"
        );
    }
    assert!(
        row(&markdown, "logging", "opt in").contains("`_meta` logLevel `debug`"),
        "{markdown}"
    );
    // URL mode without elicitationId or notification: the retry after the visit completes.
    assert_eq!(summary["url_page_status"], 200, "{summary}");
    assert!(
        row(&markdown, "elicitation-url", "Did the retry complete the call").contains("| yes |"),
        "{markdown}"
    );
    assert!(
        row(&markdown, "subscriptions", "subscribe to").contains("`subscriptions/listen`"),
        "{markdown}"
    );
}

/// The committed client evidence (tests/setup/record-client-evidence): every block verifies
/// against the pinned evidence/clients.pub (by verify and by tests/reverify.py), each names a serve log committed next to it whose
/// bytes are the ones it judged, analyze reads the same verdicts from that log today, and the
/// README's table says what the blocks say.
#[test]
fn the_committed_client_evidence_verifies_matches_its_logs_and_the_readme_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("evidence/clients/clients.jsonl");
    let trust = root.join("evidence/clients.pub");
    let dir = TempDir::new("committed-clients");
    let run = witness(
        &dir,
        &[
            "verify",
            "--trust",
            trust.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // And from outside: the independent re-verifier, with the schema, line by line.
    let again = Command::new(verifier_python())
        .arg(root.join("tests/reverify.py"))
        .args([
            "--trust",
            trust.to_str().unwrap(),
            "--each",
            file.to_str().unwrap(),
        ])
        .output()
        .expect("the verifier's python runs");
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        !said.contains("FAIL") && said.lines().all(|l| l.ends_with(": ok")),
        "{said}"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(blocks.len() >= 3, "TypeScript legacy, Python legacy and modern");
    for block in &blocks {
        let name = Path::new(block["log"]["path"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_owned();
        let log = root.join("evidence/clients").join(&name);
        use sha2::Digest;
        let bytes = std::fs::read(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        assert_eq!(
            block["log"]["sha256"],
            mcp_witness::hex::encode(&sha2::Sha256::digest(&bytes)).as_str(),
            "{}",
            log.display()
        );
        let again = witness(&dir, &["analyze", log.to_str().unwrap()]);
        for (domain, verdict) in verdicts(block) {
            assert!(
                verdict_line(&again.stdout, &domain).starts_with(&format!("**Verdict: {verdict}**")),
                "{}: {domain}",
                log.display()
            );
        }
        let row = format!(
            "| {} {} | {} | {} |",
            block["client"]["name"].as_str().unwrap(),
            block["client"]["version"].as_str().unwrap(),
            block["log"]["session"]["era"].as_str().unwrap(),
            verdicts(block)
                .iter()
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
                .join(" | ")
        );
        assert!(readme.contains(&row), "README.md lacks the row {row}");
    }
}

/// The TypeScript SDK 1.32.2 declaring form mode only (`elicitation: {}`) is sent a URL mode
/// request by `witness_ask_undeclared_mode` (tests/sdk-client/undeclared-mode.mjs): the SDK
/// itself refuses it with -32602 before the application's handler sees it, and the session
/// goes on.
#[test]
fn typescript_sdk_refuses_an_elicitation_mode_it_never_declared() {
    let dir = TempDir::new("sdk-undeclared");
    let log = dir.join("serve.jsonl");
    let summary = run_sdk_script("undeclared-mode.mjs", &log, &[]);
    assert_eq!(summary["handler_saw"], serde_json::json!([]), "{summary}");
    assert!(summary["after"]["structuredContent"].is_object(), "{summary}");
    let run = witness(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--domain",
            "elicitation-undeclared",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    for row in [
        "| modes declared: form |",
        "| yes, mode `url` |",
        "| refused with error -32602 |",
        "| Did the session go on afterwards (a later request answered)? | yes |",
        "**Verdict: handled**. refused undeclared mode",
    ] {
        assert!(run.stdout.contains(row), "{row}: {}", run.stdout);
    }
}
