//! Text a server (or an evidence file, or a log) chose never acts on a terminal, a CI log or
//! a report: every printer shows its controls, escape sequences, line breaks, bidi and tag
//! characters escaped, and the evidence file keeps the exact value.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{TempDir, WITNESS, fixture};
use serde_json::Value;

/// The hostile text of the fixture's `hostile-text` behaviour (examples/mcp-witness-fixture/hostile.rs).
const HOSTILE: &str = "H\u{1b}[31mred\u{1b}]0;title\u{7}\u{1b}]52;c;aGk=\u{7}\u{1b}Pdcs\u{1b}\\\u{9b}31m\u{9d}osc\0nul\n::error::forged\n::stop-commands::x\r\nrecorded: forged\npass: forged\u{202e}rtl\u{2066}iso\u{e0041}tag";

/// Lines a forger would like to start.
const FORGED: &[&str] = &[
    "::error::forged",
    "::stop-commands::",
    "recorded: forged",
    "pass: forged",
];

struct Out {
    code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn run(dir: &TempDir, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(WITNESS);
    cmd.args(args)
        .current_dir(dir.path())
        .env("MCP_WITNESS_KEY", dir.join("signing.key"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("mcp-witness runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

/// No control byte but the line feed, no DEL, no C1, bidi or tag character, and no line
/// that server text begins: a line starting with `::` is one of our workflow commands.
fn assert_inert(label: &str, bytes: &[u8]) {
    for (i, &b) in bytes.iter().enumerate() {
        assert!(
            (b >= 0x20 || b == b'\n') && b != 0x7f,
            "{label}: raw byte {b:#04x} at {i}: {}",
            String::from_utf8_lossy(&bytes[i.saturating_sub(60)..(i + 20).min(bytes.len())])
        );
    }
    let text = String::from_utf8_lossy(bytes);
    for c in text.chars() {
        let u = c as u32;
        assert!(
            !(0x80..=0x9f).contains(&u)
                && !(0x202a..=0x202e).contains(&u)
                && !(0x2066..=0x2069).contains(&u)
                && !(0xe0000..=0xe007f).contains(&u),
            "{label}: raw {c:?} in output"
        );
    }
    for line in text.lines() {
        if line.starts_with("::") {
            assert!(
                line.starts_with("::error title=")
                    || line.starts_with("::warning title=")
                    || line.starts_with("::notice title="),
                "{label}: a line that is not our workflow command: {line}"
            );
        }
        for forged in FORGED {
            assert!(!line.starts_with(forged), "{label}: forged line: {line}");
        }
    }
}

/// Every forged marker that appears does so right after an escaped line feed, or after the
/// prefix under which a report quotes one line the server wrote (a stdout noise line).
fn assert_markers_escaped(label: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let mut seen = 0;
    for forged in FORGED {
        for (i, _) in text.match_indices(forged) {
            seen += 1;
            let before = &text[..i];
            assert!(
                before.ends_with("\\u{a}") || before.ends_with("\\n") || before.ends_with("| "),
                "{label}: `{forged}` not behind an escaped line feed: …{}",
                &before[before.len().saturating_sub(40)..]
            );
        }
    }
    assert!(seen > 0, "{label}: the hostile text never reached this output");
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn blocks(path: &Path) -> Vec<Value> {
    String::from_utf8(read(path))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn long_name() -> String {
    format!("{}{HOSTILE}", "a".repeat(50))
}

#[test]
fn probe_summary_and_json_show_hostile_server_text_escaped_and_the_file_keeps_it_exact() {
    let dir = TempDir::new("hostile-probe");
    let ev = dir.join("e.jsonl");
    let ev = ev.to_str().unwrap();
    let out = run(
        &dir,
        &[
            "probe",
            "-e",
            ev,
            "--call",
            "echo",
            "--",
            fixture(),
            "hostile-text",
        ],
        &[],
    );
    assert!(
        out.code == 0 || out.code == 1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_inert("probe stdout", &out.stdout);
    assert_inert("probe stderr", &out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\u{1b}[31mred"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("recorded: ")), "{text}");

    let block = blocks(Path::new(ev)).pop().unwrap();
    assert_eq!(
        block["server"]["name"],
        long_name(),
        "the file keeps the exact value"
    );
    let names: Vec<&str> = block["tools"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(names.contains(&HOSTILE), "{names:?}");

    // An error reply to the call, and a crash whose stderr the summary quotes.
    let out = run(
        &dir,
        &[
            "probe",
            "-e",
            ev,
            "--call",
            "echo",
            "--call-args",
            r#"{"text":"fail"}"#,
            "--",
            fixture(),
            "hostile-text",
        ],
        &[],
    );
    assert_inert("probe call error stdout", &out.stdout);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error -32603 failed: H\\u{1b}[31m"), "{text}");
    let out = run(
        &dir,
        &["probe", "-e", ev, "--", fixture(), "hostile-text"],
        &[("HOSTILE_CRASH", "1")],
    );
    assert_eq!(out.code, 1);
    assert_inert("probe crash stdout", &out.stdout);
    assert_inert("probe crash stderr", &out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("stderr (") && text.contains("RuntimeError: H\\u{1b}[31m"),
        "{text}"
    );
    let crash = blocks(Path::new(ev)).pop().unwrap();
    assert!(
        crash["stderr"]["tail"]
            .as_str()
            .is_some_and(|t| t.contains(HOSTILE)),
        "{crash}"
    );

    let out = run(
        &dir,
        &[
            "probe",
            "-e",
            ev,
            "--json",
            "--call",
            "echo",
            "--",
            fixture(),
            "hostile-text",
        ],
        &[],
    );
    assert_inert("probe --json stdout", &out.stdout);
    assert_inert("probe --json stderr", &out.stderr);
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, blocks(Path::new(ev)).pop().unwrap());
    assert_eq!(printed["server"]["name"], long_name());
}

/// The report files of one `check` run in every format: JUnit, SARIF, Markdown, job summary.
struct Reports {
    junit: PathBuf,
    sarif: PathBuf,
    markdown: PathBuf,
    summary: PathBuf,
}

impl Reports {
    fn paths(&self) -> [(&'static str, &PathBuf); 4] {
        [
            ("junit", &self.junit),
            ("sarif", &self.sarif),
            ("markdown", &self.markdown),
            ("job summary", &self.summary),
        ]
    }
}

/// Runs `check -e EV --github --junit … --sarif … --markdown … [extra] -- SERVER…` with a job
/// summary file, so every report format is written in one run.
fn check_every_format(dir: &TempDir, ev: &Path, extra: &[&str], server: &[&str]) -> (Out, Reports) {
    let reports = Reports {
        junit: dir.join("j.xml"),
        sarif: dir.join("s.sarif"),
        markdown: dir.join("m.md"),
        summary: dir.join("summary.md"),
    };
    let mut args = vec![
        "check",
        "-e",
        ev.to_str().unwrap(),
        "--github",
        "--junit",
        reports.junit.to_str().unwrap(),
        "--sarif",
        reports.sarif.to_str().unwrap(),
        "--markdown",
        reports.markdown.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(server);
    let out = run(
        dir,
        &args,
        &[("GITHUB_STEP_SUMMARY", reports.summary.to_str().unwrap())],
    );
    (out, reports)
}

#[test]
fn check_reports_in_every_format_show_hostile_server_text_escaped() {
    let dir = TempDir::new("hostile-check");
    let ev = dir.join("c.jsonl");
    let (out, reports) = check_every_format(&dir, &ev, &[], &[fixture(), "hostile-text"]);
    assert_eq!(
        out.code,
        1,
        "the fixture has findings: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_inert("check --github stdout", &out.stdout);
    assert_inert("check stderr", &out.stderr);
    assert_markers_escaped("check --github stdout", &out.stdout);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.starts_with("::warning title=")),
        "{stdout}"
    );
    for (label, path) in reports.paths() {
        let bytes = read(path);
        assert_inert(label, &bytes);
        assert_markers_escaped(label, &bytes);
    }
    // A server that dies in the handshake: the suite could not run, quoting its stderr.
    let out = run(
        &dir,
        &[
            "check",
            "--no-record",
            "--github",
            "--",
            fixture(),
            "hostile-text",
        ],
        &[("HOSTILE_CRASH", "1")],
    );
    assert_eq!(out.code, 2, "{}", String::from_utf8_lossy(&out.stdout));
    assert_inert("check crash stdout", &out.stdout);
    assert_inert("check crash stderr", &out.stderr);
    let sarif: Value = serde_json::from_slice(&read(&reports.sarif)).unwrap();
    assert!(
        sarif["runs"][0]["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    );
    let block = blocks(&ev).pop().unwrap();
    assert_eq!(
        block["server"]["name"],
        long_name(),
        "the file keeps the exact value"
    );

    let out = run(
        &dir,
        &["check", "--no-record", "--json", "--", fixture(), "hostile-text"],
        &[],
    );
    assert_inert("check --json stdout", &out.stdout);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["server"]["name"],
        long_name(),
        "JSON keeps the exact value"
    );
}

#[test]
fn diff_of_hostile_blocks_shows_their_text_escaped() {
    let dir = TempDir::new("hostile-diff");
    let ev = dir.join("d.jsonl");
    let ev = ev.to_str().unwrap();
    let args = ["probe", "-e", ev, "--", fixture(), "hostile-text"];
    run(&dir, &args, &[]);
    run(&dir, &args, &[("HOSTILE_VARIANT", "1")]);
    let out = run(&dir, &["diff", ev], &[]);
    assert_eq!(out.code, 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_inert("diff stdout", &out.stdout);
    assert_inert("diff stderr", &out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tools added: added H\\u{1b}[31mred"), "{text}");
    assert!(text.contains("server version:"), "{text}");

    let out = run(&dir, &["diff", "--json", ev], &[]);
    assert_inert("diff --json stdout", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["changes"].as_array().is_some_and(|c| !c.is_empty()));
}

#[test]
fn verify_quotes_hostile_file_text_escaped() {
    let dir = TempDir::new("hostile-verify");
    let ev = dir.join("v.jsonl");
    let evs = ev.to_str().unwrap();
    run(&dir, &["probe", "-e", evs, "--", fixture(), "hostile-text"], &[]);
    let out = run(&dir, &["verify", evs], &[]);
    assert_eq!(out.code, 0, "{}", String::from_utf8_lossy(&out.stdout));
    assert_inert("verify stdout", &out.stdout);

    // A second block whose signed fields were altered to other hostile text, then a line
    // that is no JSON at all and carries raw escape bytes.
    let good = String::from_utf8(read(&ev)).unwrap();
    let mut block: Value = serde_json::from_str(good.trim()).unwrap();
    block["seq"] = Value::from(2);
    block["server"]["name"] = Value::from(format!("x{HOSTILE}"));
    block["kind"] = Value::from(HOSTILE);
    let mut text = good.clone();
    text.push_str(&block.to_string());
    text.push('\n');
    std::fs::write(&ev, &text).unwrap();
    for args in [vec!["verify", evs], vec!["verify", "--json", evs]] {
        let out = run(&dir, &args, &[]);
        assert_eq!(out.code, 1, "{}", String::from_utf8_lossy(&out.stdout));
        assert_inert("verify stdout", &out.stdout);
        assert_inert("verify stderr", &out.stderr);
    }
    let mut raw = good.into_bytes();
    raw.extend_from_slice(
        "{\"kind\": \"\u{1b}]0;owned\u{7}\u{9b}2J\u{202e}\"} \u{1b}[2J\r::error::forged\n".as_bytes(),
    );
    std::fs::write(&ev, &raw).unwrap();
    for args in [
        vec!["verify", evs],
        vec!["verify", "--json", evs],
        vec!["diff", evs],
    ] {
        let out = run(&dir, &args, &[]);
        assert_ne!(out.code, 0);
        assert_inert("verify/diff stdout", &out.stdout);
        assert_inert("verify/diff stderr", &out.stderr);
    }
}

#[test]
fn analyze_shows_hostile_client_names_and_methods_escaped() {
    let dir = TempDir::new("hostile-analyze");
    let log = dir.join("serve.jsonl");
    let entry =
        |ts: &str, dir: &str, msg: Value| serde_json::json!({"ts": ts, "dir": dir, "msg": msg}).to_string();
    let lines = [
        entry(
            HOSTILE,
            "in",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": HOSTILE,
                "capabilities": {HOSTILE: {"x": HOSTILE}},
                "clientInfo": {"name": HOSTILE, "version": HOSTILE}}}),
        ),
        entry(
            "2026-01-01T00:00:00Z",
            "in",
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": HOSTILE}),
        ),
        entry(
            "2026-01-01T00:00:01Z",
            "in",
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        ),
        format!("{{\"ts\": \"{HOSTILE}\", \"raw\": 1}}").replace('\n', " "),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let md = dir.join("a.md");
    let out = run(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_inert("analyze stdout", &out.stdout);
    assert_inert("analyze stderr", &out.stderr);
    assert_inert("analyze markdown", &read(&md));
    assert!(String::from_utf8_lossy(&out.stdout).contains("H\\u{1b}[31mred"));
}

/// A secret handed to the server as `--env=API_TOKEN=…`, which it echoes everywhere.
const SECRET: &str = "Zq7RwY2mKp4Lx9TcVb3N";

/// Every output holds neither the secret nor any 8-character piece of it, nor of the secret
/// reversed (which the server sends as header values, masked by their shape alone).
fn assert_secret_absent(label: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let reversed: String = SECRET.chars().rev().collect();
    for secret in [SECRET, &reversed] {
        for start in 0..=secret.len() - 8 {
            let piece = &secret[start..start + 8];
            assert!(
                !text.contains(piece),
                "{label}: `{piece}` of the secret leaked:\n{text}"
            );
        }
    }
}

#[test]
fn a_secret_the_server_echoes_into_every_field_is_masked_before_any_cut_everywhere() {
    let dir = TempDir::new("secret-echo");
    let ev = dir.join("p.jsonl");
    let cev = dir.join("c.jsonl");
    let env_arg = format!("--env=API_TOKEN={SECRET}");
    let args_json = format!("{{\"api_key\": \"{SECRET}\", \"text\": \"hi\"}}");
    let probe = run(
        &dir,
        &[
            "probe",
            "-e",
            ev.to_str().unwrap(),
            "--call",
            "echo",
            "--call-args",
            &args_json,
            "--",
            fixture(),
            "secret-echo",
            &env_arg,
            "-p",
            SECRET,
        ],
        &[],
    );
    let (check, reports) =
        check_every_format(&dir, &cev, &["--verbose"], &[fixture(), "secret-echo", &env_arg]);
    let check_json = run(
        &dir,
        &[
            "check",
            "--no-record",
            "--json",
            "--",
            fixture(),
            "secret-echo",
            &env_arg,
        ],
        &[],
    );
    let pev = dir.join("version.jsonl");
    let pev = pev.to_str().unwrap();
    let version_probe = run(
        &dir,
        &["probe", "-e", pev, "--", fixture(), "secret-echo", &env_arg],
        &[("SECRET_PROTOCOL", "1")],
    );
    let version_check = run(
        &dir,
        &["check", "-e", pev, "--", fixture(), "secret-echo", &env_arg],
        &[("SECRET_PROTOCOL", "1")],
    );
    let probe_json = run(
        &dir,
        &[
            "probe",
            "--no-record",
            "--json",
            "--",
            fixture(),
            "secret-echo",
            &env_arg,
        ],
        &[],
    );
    for (label, out) in [
        ("probe", &probe),
        ("check", &check),
        ("check --json", &check_json),
        ("probe --json", &probe_json),
        ("probe, secret version", &version_probe),
        ("check, secret version", &version_check),
    ] {
        assert!(out.code >= 0, "{label} ran");
        assert_secret_absent(&format!("{label} stdout"), &out.stdout);
        assert_secret_absent(&format!("{label} stderr"), &out.stderr);
    }
    let version = dir.join("version.jsonl");
    let reported = reports.paths().map(|(_, p)| p);
    for path in [&ev, &cev, &version].into_iter().chain(reported) {
        assert_secret_absent(&path.display().to_string(), &read(path));
    }
    for b in blocks(&dir.join("version.jsonl")) {
        assert_eq!(b["protocol_version"], "[REDACTED]", "{b}");
    }
    let failed = blocks(&dir.join("version.jsonl")).remove(0);
    assert!(
        failed["stderr"]["tail"].to_string().contains("[REDACTED]"),
        "{failed}"
    );
    // The server did echo it: the fields hold the mask where the secret was.
    let block = blocks(&ev).pop().unwrap();
    let text = block.to_string();
    for field in [
        "server",
        "capabilities",
        "tools",
        "call",
        "stdout_noise",
        "messages",
    ] {
        assert!(
            block[field].to_string().contains("[REDACTED]"),
            "{field} was masked: {}",
            block[field]
        );
    }
    assert!(
        block["target"]["command"]
            .to_string()
            .contains("--env=API_TOKEN=[REDACTED]"),
        "{text}"
    );
    assert!(
        failed["stderr"]["tail"]
            .to_string()
            .contains("X-API-Key: [REDACTED]"),
        "{failed}"
    );
    assert!(
        block["stdout_noise"]
            .to_string()
            .contains("Authorization: Bearer [REDACTED]"),
        "{}",
        block["stdout_noise"]
    );
    let report: Value = serde_json::from_slice(&check_json.stdout).unwrap();
    assert!(
        report["server"]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with("[REDACTED]")),
        "{report}"
    );
}
