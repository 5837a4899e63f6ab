//! The client kit: `serve`, `drive` and `analyze`, with test clients as real processes
//! talking to a real `mcp-witness serve`.

mod common;
use common::*;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

/// A minimal MCP client over pipes to `mcp-witness serve --log <log>`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    notifications: Vec<String>,
}

impl Client {
    fn start(log: &Path) -> Client {
        let mut child = Command::new(WITNESS)
            .args(["serve", "--log"])
            .arg(log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client {
            child,
            stdin,
            stdout,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply_to(id)
    }

    fn initialize(&mut self, name: &str) {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                   "clientInfo": {"name": name, "version": "9.9"}}),
        );
        assert_eq!(
            r["result"]["protocolVersion"], "2025-06-18",
            "a known version is echoed"
        );
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call(&mut self, tool: &str) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": {}}))
    }

    /// Closes stdin and waits: serve exits 0 on end of file.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert_eq!(status.code(), Some(0));
    }
}

fn analyze(dir: &TempDir, log: &Path, domain: &str) -> Run {
    witness(dir, &["analyze", log.to_str().unwrap(), "--domain", domain])
}

fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every log line is JSON"))
        .collect()
}

#[test]
fn drive_all_passes_against_serve() {
    let dir = TempDir::new("drive");
    let run = witness(&dir, &["drive", "--domain", "all"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("drive: PASS"));
    for d in EVERY_KIT_DOMAIN {
        assert!(run.stdout.contains(&format!("## Domain: {d}")), "{}", run.stdout);
    }
    assert_eq!(
        run.stdout.matches("**Verdict: handled**").count(),
        9,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("**Verdict: reacts to list_changed**").count(),
        3,
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_ignores_the_notification_does_not_react() {
    let dir = TempDir::new("ignore");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("ignorer");
    let list = c.request("tools/list", json!({}));
    assert!(
        list["result"]["tools"]
            .to_string()
            .contains("witness_probe_alpha")
    );
    assert!(
        c.call("witness_probe_alpha")["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("alpha called at ")
    );
    c.call("witness_mutate_tools");
    // Still using its session-start list: alpha again, never tools/list.
    let again = c.call("witness_probe_alpha");
    assert!(again.get("error").is_some(), "a gone tool is an error: {again}");
    c.call("witness_status");
    assert_eq!(c.notifications, ["notifications/tools/list_changed"]);
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("Client: ignorer 9.9"), "{}", run.stdout);
    assert!(
        run.stdout.contains("**Verdict: does not react** (Q8:"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "| 7 | Did the server send `notifications/tools/list_changed` after the mutate? | yes | log line "
    ));
    assert!(run.stdout.contains("| 8 | Did the client send `tools/list` after the notification, and how many ms later? | no | absent |"));
}

#[test]
fn a_client_that_relists_but_still_calls_alpha_does_not_react() {
    let dir = TempDir::new("stale");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("stale");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    c.call("witness_mutate_tools");
    let relist = c.request("tools/list", json!({}));
    assert!(
        relist["result"]["tools"]
            .to_string()
            .contains("witness_probe_beta")
    );
    c.call("witness_probe_beta");
    c.call("witness_probe_alpha");
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("**Verdict: does not react** (Q11:"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("| 9 | Did that list include beta (witness_probe_beta)? | yes |")
    );
}

#[test]
fn a_client_that_stops_half_way_is_incomplete() {
    let dir = TempDir::new("half");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("quitter");
    c.request("resources/list", json!({}));
    let read = c.request("resources/read", json!({"uri": "probe://alpha"}));
    assert_eq!(read["result"]["contents"][0]["text"], "I am the alpha resource");
    c.finish();

    let run = analyze(&dir, &log, "all");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(
        run.stdout.matches("**Verdict: incomplete**").count(),
        3,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("(Q3: mutate was never called)"),
        "{}",
        run.stdout
    );
    // `all` covers the flows too: never asked for in this session, they are not counted.
    assert_eq!(
        run.stdout.matches("**Verdict: not exercised**").count(),
        9,
        "{}",
        run.stdout
    );
}

#[test]
fn a_complete_resources_cycle_by_a_test_client_reacts_within_the_window() {
    let dir = TempDir::new("good");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("good");
    c.request("resources/list", json!({}));
    c.request("resources/read", json!({"uri": "probe://alpha"}));
    c.call("witness_mutate_resources");
    let second = c.call("witness_mutate_resources");
    assert_eq!(second["result"]["isError"], true, "{second}");
    c.request("resources/list", json!({}));
    c.request("resources/read", json!({"uri": "probe://beta"}));
    assert_eq!(
        c.notifications,
        ["notifications/resources/list_changed"],
        "sent once"
    );
    c.finish();

    let md = dir.join("report.md");
    let run = witness(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--domain",
            "resources",
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("**Verdict: reacts to list_changed**"));
    assert!(
        run.stdout
            .contains("ms after the notification (within the 5000 ms window)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("it sets no MUST for the client's re-list"),
        "the spec line that applies is quoted: {}",
        run.stdout
    );
    assert_eq!(std::fs::read_to_string(&md).unwrap(), run.stdout);
}

#[test]
fn the_log_survives_sigterm_mid_session() {
    log_survives_signal("TERM");
}

#[test]
fn the_log_survives_sigint_mid_session() {
    log_survives_signal("INT");
}

fn log_survives_signal(signal: &str) {
    let dir = TempDir::new("signal");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("killed");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    // Lines that are not JSON-RPC objects are logged raw and answered with a parse error:
    // a JSON string, then plain text.
    c.send(&json!("placeholder"));
    let stdin = c.stdin.as_mut().unwrap();
    writeln!(stdin, "not json at all").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    c.stdout.read_line(&mut line).unwrap();
    assert!(line.contains("-32700"), "{line}");
    line.clear();
    c.stdout.read_line(&mut line).unwrap();
    assert!(line.contains("-32700"), "{line}");

    let pid = c.child.id().to_string();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = c.child.wait().unwrap();
    assert_eq!(status.code(), None, "ended by the signal");

    let entries = log_lines(&log);
    let dirs: Vec<&str> = entries.iter().map(|e| e["dir"].as_str().unwrap()).collect();
    // The process start, initialize, the session start, its reply, initialized, list, reply,
    // call, reply, "placeholder", error, raw line, error.
    assert_eq!(
        dirs,
        [
            "start", "in", "session", "out", "in", "in", "out", "in", "out", "in", "out", "in", "out"
        ]
    );
    for e in &entries {
        assert!(e["ts"].as_str().is_some_and(|ts| ts.len() == 29), "{e}");
    }
    assert_eq!(entries[0]["info"]["pid"], c.child.id());
    assert_eq!(entries[2]["info"]["era"], "legacy");
    assert_eq!(entries[7]["msg"]["params"]["name"], "witness_probe_alpha");
    assert!(
        entries[8]["msg"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("alpha called at")
    );
    assert_eq!(entries[9]["raw"], "\"placeholder\"");
    assert_eq!(entries[11]["raw"], "not json at all");
    assert_eq!(entries[12]["msg"]["error"]["code"], -32700);
}

#[test]
fn the_log_path_comes_from_the_environment_when_no_flag_is_given() {
    let dir = TempDir::new("env");
    let log = dir.join("from-env.jsonl");
    let out = Command::new(WITNESS)
        .arg("serve")
        .current_dir(dir.path())
        .env("MCP_WITNESS_LOG", &log)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
            drop(stdin);
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"id":1,"jsonrpc":"2.0","result":{}}"#
    );
    // The start entry, the ping and its reply.
    assert_eq!(log_lines(&log).len(), 3);
    assert!(!dir.join("mcp-witness-serve.log.jsonl").exists());
}

/// The modern request envelope (2026-07-28).
fn modern(mut params: Value, version: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "1"},
    });
    params
}

#[test]
fn drive_modern_era_passes_against_serve() {
    let dir = TempDir::new("drive-modern");
    let run = witness(&dir, &["drive", "--domain", "all", "--era", "modern"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.matches("**Verdict: reacts to list_changed**").count(),
        3,
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("yes, on subscription "), "{}", run.stdout);
}

#[test]
fn a_modern_client_that_never_listens_gets_no_notification_and_does_not_react() {
    let dir = TempDir::new("modern-deaf");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    let disc = c.request("server/discover", modern(json!({}), "2026-07-28"));
    assert_eq!(
        disc["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{disc}"
    );
    assert_eq!(disc["result"]["resultType"], "complete");
    let list = c.request("tools/list", modern(json!({}), "2026-07-28"));
    assert_eq!(list["result"]["cacheScope"], "public", "{list}");
    assert!(list["result"]["ttlMs"].is_u64());
    // A read of an item that can change has a cache lifetime of 0 (the field is required).
    let read = c.request(
        "resources/read",
        modern(json!({"uri": "probe://alpha"}), "2026-07-28"),
    );
    assert_eq!(read["result"]["contents"][0]["text"], "I am the alpha resource");
    assert_eq!(read["result"]["ttlMs"], 0, "{read}");
    for tool in ["witness_probe_alpha", "witness_mutate_tools", "witness_status"] {
        let r = c.request(
            "tools/call",
            modern(json!({"name": tool, "arguments": {}}), "2026-07-28"),
        );
        assert!(r.get("result").is_some(), "{r}");
    }
    // No listen stream: in the modern era the change is not announced.
    assert!(c.notifications.is_empty(), "{:?}", c.notifications);
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: does not react** (Q6: the client never subscribed to list changes)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_modern_listen_is_acknowledged_tagged_and_cancellable() {
    let dir = TempDir::new("modern-listen");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    // Asks for prompts and a resource subscription: only the list filter is agreed to.
    let listen = json!({"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen",
        "params": modern(json!({"notifications": {"promptsListChanged": true,
            "resourceSubscriptions": ["probe://alpha"]}}), "2026-07-28")});
    c.send(&listen);
    let mut line = String::new();
    c.stdout.read_line(&mut line).unwrap();
    let ack: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L1"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"promptsListChanged": true})
    );

    // Tools changes are not sent to a prompts-only listener; prompts changes are, tagged.
    c.request(
        "tools/call",
        modern(json!({"name": "witness_mutate_tools"}), "2026-07-28"),
    );
    c.request(
        "tools/call",
        modern(json!({"name": "witness_mutate_prompts"}), "2026-07-28"),
    );
    // The notification follows the reply: one more request makes sure it was read.
    c.request(
        "tools/call",
        modern(json!({"name": "witness_status"}), "2026-07-28"),
    );
    assert_eq!(c.notifications, ["notifications/prompts/list_changed"]);
    // After cancelling, nothing more arrives.
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L1"}}));
    c.request(
        "tools/call",
        modern(json!({"name": "witness_mutate_resources"}), "2026-07-28"),
    );
    c.request(
        "tools/call",
        modern(json!({"name": "witness_status"}), "2026-07-28"),
    );
    assert_eq!(c.notifications.len(), 1, "{:?}", c.notifications);

    // An unknown modern version is -32022 naming the supported ones; missing capabilities
    // is -32602.
    let bad = c.request("tools/list", modern(json!({}), "2099-01-01"));
    assert_eq!(bad["error"]["code"], -32022, "{bad}");
    assert_eq!(bad["error"]["data"]["supported"], json!(["2026-07-28"]));
    let no_caps = c.request(
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(no_caps["error"]["code"], -32602, "{no_caps}");
    c.finish();

    let entries = log_lines(&log);
    let tagged = entries
        .iter()
        .find(|e| e["msg"]["method"] == "notifications/prompts/list_changed")
        .unwrap();
    assert_eq!(
        tagged["msg"]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L1"
    );
}

#[test]
fn analyze_record_appends_a_signed_client_block_that_verifies() {
    let dir = TempDir::new("record");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("ignorer");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    c.call("witness_mutate_tools");
    c.call("witness_probe_alpha");
    c.finish();
    let evidence = dir.join("clients.jsonl");
    let run = witness(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--domain",
            "tools",
            "--record",
            "-e",
            evidence.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "does not react: {}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("recorded"), "{}", run.stderr);
    let block: Value = serde_json::from_str(std::fs::read_to_string(&evidence).unwrap().trim()).unwrap();
    assert_eq!(block["kind"], "client");
    assert_eq!(block["client"], json!({"name": "ignorer", "version": "9.9"}));
    assert_eq!(block["verdict"], "does not react");
    assert_eq!(
        block["log"]["session"],
        json!({"index": 1, "of": 1, "first_line": 1, "last_line": 14, "era": "legacy"})
    );
    assert_eq!(block["domains"][0]["domain"], "tools");
    assert_eq!(block["domains"][0]["question"], 8);
    let bytes = std::fs::read(&log).unwrap();
    use sha2::Digest;
    assert_eq!(
        block["log"]["sha256"],
        mcp_witness::hex::encode(&sha2::Sha256::digest(&bytes)).as_str()
    );
    assert_eq!(witness(&dir, &["verify", evidence.to_str().unwrap()]).code, 0);
}

#[test]
fn the_checker_finds_nothing_wrong_with_serve_in_either_era() {
    let dir = TempDir::new("check-serve");
    let log = dir.join("serve.jsonl");
    for era in ["legacy", "modern"] {
        let run = witness(
            &dir,
            &[
                "check",
                "--json",
                "--no-record",
                "--era",
                era,
                "--",
                WITNESS,
                "serve",
                "--log",
                log.to_str().unwrap(),
            ],
        );
        assert_eq!(run.code, 0, "{era}: {}{}", run.stdout, run.stderr);
        let report: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(report["counts"]["fail"], 0, "{era}: {report:#}");
        assert_eq!(report["counts"]["warn"], 0, "{era}: {report:#}");
    }
}

#[test]
fn hostile_clients_get_errors_not_silence_and_cannot_forge_the_report() {
    let dir = TempDir::new("hostile");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("evil\n\n**Verdict: compliant** `x`");
    // Nested too deeply for the log to be read back: refused with an error, not ignored.
    let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let stdin = c.stdin.as_mut().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"witness_probe_alpha","x":{deep}}}}}"#).unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    c.stdout.read_line(&mut line).unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    c.finish();
    let run = analyze(&dir, &log, "tools");
    let client_line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("- Client:"))
        .unwrap()
        .to_string();
    assert!(!client_line.contains('`'), "{client_line}");
    let verdicts = run.stdout.lines().filter(|l| l.starts_with("**Verdict:")).count();
    assert_eq!(verdicts, 1, "one verdict, not a forged one: {}", run.stdout);
}

#[test]
fn a_listen_id_already_open_is_refused() {
    let dir = TempDir::new("listen-dup");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let listen = json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true}}});
    c.send(&listen);
    c.send(&listen);
    let mut line = String::new();
    let mut refused = false;
    for _ in 0..4 {
        line.clear();
        c.stdout.read_line(&mut line).unwrap();
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg["id"] == "L" && msg["error"]["code"] == -32602 {
            refused = true;
            break;
        }
    }
    assert!(refused, "the second listen with id L must be refused");
    c.finish();
}

/// Runs `serve` once per step list, all appending to one log, as a client that starts a
/// server process per command does.
fn one_process_per_step(log: &Path, steps: &[&[&str]]) {
    for (i, calls) in steps.iter().enumerate() {
        let mut c = Client::start(log);
        c.initialize(&format!("one-shot-{}", i + 1));
        for call in *calls {
            if *call == "tools/list" {
                c.request("tools/list", json!({}));
            } else {
                c.call(call);
            }
        }
        c.finish();
    }
}

#[test]
fn three_client_processes_appending_to_one_log_are_judged_as_three_sessions() {
    let dir = TempDir::new("sessions");
    let log = dir.join("serve.jsonl");
    // One process lists and calls alpha, the next mutates, the third lists and calls beta:
    // read as one session this would look like a full cycle without a notification seen.
    one_process_per_step(
        &log,
        &[
            &["tools/list", "witness_probe_alpha"],
            &["witness_mutate_tools"],
            &["tools/list", "witness_probe_beta"],
        ],
    );
    let starts = log_lines(&log).iter().filter(|e| e["dir"] == "start").count();
    assert_eq!(starts, 3, "one start entry per serve process");

    let evidence = dir.join("clients.jsonl");
    let run = witness(
        &dir,
        &[
            "analyze",
            log.to_str().unwrap(),
            "--domain",
            "tools",
            "--record",
            "-e",
            evidence.to_str().unwrap(),
        ],
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("- Sessions: 3 (one per serve process or handshake), each judged on its own"),
        "{}",
        run.stdout
    );
    for (n, client) in [(1, "one-shot-1"), (2, "one-shot-2"), (3, "one-shot-3")] {
        let section = run
            .stdout
            .split("\n# Session ")
            .find(|s| s.starts_with(&format!("{n} of 3: log lines ")))
            .unwrap_or_else(|| panic!("no session {n}: {}", run.stdout));
        assert!(section.contains(&format!("- Client: {client} 9.9")), "{section}");
        assert!(
            section.contains(&format!("## Domain: tools (session {n})")),
            "{section}"
        );
    }
    // Each session on its own is incomplete: none saw the whole cycle, nobody is at fault.
    assert_eq!(
        run.stdout.matches("**Verdict: incomplete**").count(),
        3,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("(Q6: mutate was never called)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("(Q4: no initial list)"), "{}", run.stdout);
    assert!(!run.stdout.contains("server at fault"), "{}", run.stdout);

    // One signed block per session: no verdict over mixed sessions.
    let blocks: Vec<Value> = std::fs::read_to_string(&evidence)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(blocks.len(), 3);
    for (i, b) in blocks.iter().enumerate() {
        assert_eq!(b["log"]["session"]["index"], i + 1);
        assert_eq!(b["log"]["session"]["of"], 3);
        assert_eq!(b["client"]["name"], format!("one-shot-{}", i + 1));
        assert_eq!(b["verdict"], "incomplete");
    }
    assert_eq!(witness(&dir, &["verify", evidence.to_str().unwrap()]).code, 0);
}

#[test]
fn a_client_that_lists_before_every_call_relisted_by_habit_not_prompted_by_the_notification() {
    let dir = TempDir::new("habit");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("habitual");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    c.request("tools/list", json!({}));
    c.call("witness_mutate_tools");
    c.request("tools/list", json!({}));
    c.call("witness_probe_beta");
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("| re-listed, not prompted by the notification: "),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("ms after, it lists before every call (2 of 2 uses before the notification came right after a `tools/list`)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("**Verdict: does not react** (Q8: re-listed, not prompted by the notification)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_polls_the_list_relisted_by_polling_not_prompted_by_the_notification() {
    let dir = TempDir::new("poll");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("poller");
    for _ in 0..3 {
        c.request("tools/list", json!({}));
    }
    c.call("witness_probe_alpha");
    c.call("witness_mutate_tools");
    c.request("tools/list", json!({}));
    c.call("witness_probe_beta");
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("ms after, it polls (3 `tools/list` before the notification)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("**Verdict: does not react** (Q8: re-listed, not prompted by the notification)"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_uses_beta_without_relisting_learned_the_change_another_way() {
    let dir = TempDir::new("beta-direct");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("shortcut");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    c.call("witness_mutate_tools");
    c.call("witness_probe_beta");
    c.finish();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("**Verdict: does not react** (Q8: the client used beta without re-listing). The client learned of the change another way"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("keeps the list it fetched"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_modern_client_that_relists_without_a_listen_stream_is_reported_as_such() {
    let dir = TempDir::new("modern-relist");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    let m = |p: Value| modern(p, "2026-07-28");
    c.request("server/discover", m(json!({})));
    c.request("tools/list", m(json!({})));
    c.request(
        "tools/call",
        m(json!({"name": "witness_probe_alpha", "arguments": {}})),
    );
    c.request(
        "tools/call",
        m(json!({"name": "witness_mutate_tools", "arguments": {}})),
    );
    let relist = c.request("tools/list", m(json!({})));
    assert!(
        relist["result"]["tools"]
            .to_string()
            .contains("witness_probe_beta")
    );
    c.request(
        "tools/call",
        m(json!({"name": "witness_probe_beta", "arguments": {}})),
    );
    c.finish();
    let entries = log_lines(&log);
    let session = entries.iter().find(|e| e["dir"] == "session").unwrap();
    assert_eq!(
        session["info"]["era"], "modern",
        "the modern session has its own start entry"
    );

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("(Q6: no listen stream: the client was never told of the change). A successful re-list without a listen stream"),
        "{}",
        run.stdout
    );
}

#[test]
fn serve_enforces_its_own_input_schema() {
    let dir = TempDir::new("schema");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("sloppy");
    let extra = c.request(
        "tools/call",
        json!({"name": "witness_probe_alpha", "arguments": {"x": 1}}),
    );
    assert_eq!(extra["result"]["isError"], true, "{extra}");
    let text = extra["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("unexpected argument(s) `x`"), "{text}");
    assert!(text.contains("additionalProperties: false"), "{text}");
    let not_object = c.request(
        "tools/call",
        json!({"name": "witness_mutate_tools", "arguments": [1]}),
    );
    assert_eq!(not_object["result"]["isError"], true, "{not_object}");
    // Refused calls change nothing: the mutate did not happen.
    let status = c.call("witness_status");
    assert_eq!(status["result"]["structuredContent"]["tools"], "alpha");
    assert!(c.notifications.is_empty());
    c.finish();
}

#[test]
fn a_relist_outside_the_window_is_not_counted_as_a_reaction() {
    let dir = TempDir::new("late");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("late");
    c.request("tools/list", json!({}));
    c.call("witness_probe_alpha");
    c.call("witness_mutate_tools");
    c.request("tools/list", json!({}));
    c.call("witness_probe_beta");
    c.finish();
    // The same session, with everything after the notification stamped a day later.
    let mut seen = false;
    let late: Vec<String> = log_lines(&log)
        .into_iter()
        .map(|mut e| {
            if seen {
                e["ts"] = json!("2099-01-02T00:00:00.000+00:00");
            }
            seen |= e["msg"]["method"] == "notifications/tools/list_changed";
            if seen && e["msg"]["method"] == "notifications/tools/list_changed" {
                e["ts"] = json!("2099-01-01T00:00:00.000+00:00");
            }
            e.to_string()
        })
        .collect();
    std::fs::write(&log, late.join("\n") + "\n").unwrap();

    let run = analyze(&dir, &log, "tools");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "re-listed, not prompted by the notification: 86400000 ms after, outside the 5000 ms window"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn drive_passes_roots_elicitation_and_sampling_in_both_eras() {
    let dir = TempDir::new("drive-flows");
    // `elicitation` is the whole domain: form, URL mode and the undeclared mode, in each era.
    for (domain, method, runs) in [
        ("roots", "roots/list", 2),
        ("elicitation", "elicitation/create", 6),
        ("sampling", "sampling/createMessage", 2),
    ] {
        let run = witness(&dir, &["drive", "--domain", domain, "--era", "both"]);
        assert_eq!(run.code, 0, "{domain}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(
            run.stdout.matches("**Verdict: handled**").count(),
            runs,
            "{}",
            run.stdout
        );
        if domain == "elicitation" {
            for part in ["elicitation", "elicitation-url", "elicitation-undeclared"] {
                for era in ["legacy", "modern"] {
                    assert!(
                        run.stdout.contains(&format!("# drive: {part} ({era} era")),
                        "{part} {era}: {}",
                        run.stdout
                    );
                }
            }
        }
        assert!(
            run.stdout.contains(&format!(
                "Did the server answer `input_required` asking `{method}`? | yes |"
            )),
            "the modern run goes through input_required: {}",
            run.stdout
        );
        assert!(
            run.stdout.contains("new id: yes; requestState back: yes"),
            "{}",
            run.stdout
        );
    }
}

impl Client {
    /// Calls a flow's ask tool (legacy), answers the one request serve sends with `answer`
    /// (`{"result": …}` or `{"error": …}`), and returns the request and the call's reply.
    fn ask_and_answer(&mut self, tool: &str, answer: Value) -> (Value, Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
            "params": {"name": tool, "arguments": {}}}));
        let mut asked = Value::Null;
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "serve closed stdout"
            );
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg.get("method").is_some() && msg.get("id").is_some() {
                let mut reply = answer.clone();
                reply["jsonrpc"] = json!("2.0");
                reply["id"] = msg["id"].clone();
                self.send(&reply);
                asked = msg;
            } else if msg["id"] == 900 {
                return (asked, msg);
            }
        }
    }
}

#[test]
fn a_client_that_answers_roots_with_a_non_file_uri_does_not_handle_roots() {
    let dir = TempDir::new("roots-bad");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    // initialize declares `roots: {}`.
    c.initialize("web-roots");
    let (asked, reply) = c.ask_and_answer(
        "witness_ask_roots",
        json!({"result": {"roots": [{"uri": "https://example.com/repo", "name": "remote"}]}}),
    );
    assert_eq!(asked["method"], "roots/list");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    c.finish();

    let run = analyze(&dir, &log, "roots");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("| no: root 1: `https://example.com/repo` is not a file:// URI"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("**Verdict: not handled** (Q5:"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_did_not_declare_elicitation_is_not_asked_and_the_verdict_says_so() {
    let dir = TempDir::new("elicit-undeclared");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("no-elicitation");
    let r = c.call("witness_ask_elicitation");
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not declare the `elicitation` capability"),
        "{r}"
    );
    c.finish();
    assert!(
        !log_lines(&log)
            .iter()
            .any(|e| e["msg"]["method"] == "elicitation/create"),
        "serve never sends a request the client did not declare"
    );
    let run = analyze(&dir, &log, "elicitation");
    assert_eq!(run.code, 0, "not declared is no failure: {}", run.stdout);
    assert!(run.stdout.contains("**Verdict: not declared**"), "{}", run.stdout);
}

#[test]
fn a_modern_elicitation_answer_that_breaks_the_schema_or_reuses_the_id_is_not_handled() {
    let dir = TempDir::new("elicit-modern");
    for (case, content, reuse_id, expect) in [
        (
            "schema",
            json!({"name": "x", "count": 0}),
            false,
            "(Q5: `count` is not an integer of at least 1)",
        ),
        (
            "id",
            json!({"name": "x"}),
            true,
            "(Q4: the retry reused the JSON-RPC id)",
        ),
    ] {
        let log = dir.join(&format!("{case}.jsonl"));
        let mut c = Client::start(&log);
        let mut params = modern(
            json!({"name": "witness_ask_elicitation", "arguments": {}}),
            "2026-07-28",
        );
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
        let first = c.request("tools/call", params.clone());
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        assert_eq!(
            first["result"]["inputRequests"]["elicitation"]["params"]["mode"],
            "form"
        );
        params["inputResponses"] =
            json!({"elicitation": {"result": {"action": "accept", "content": content}}});
        params["requestState"] = first["result"]["requestState"].clone();
        if reuse_id {
            c.next_id -= 1;
        }
        let second = c.request("tools/call", params);
        assert_eq!(second["result"]["resultType"], "complete", "{second}");
        c.finish();
        let run = analyze(&dir, &log, "elicitation");
        assert_eq!(run.code, 1, "{case}: {}", run.stdout);
        assert!(
            run.stdout.contains(&format!("**Verdict: not handled** {expect}")),
            "{case}: {}",
            run.stdout
        );
    }
}

#[test]
fn a_client_that_denies_sampling_with_an_error_handles_it() {
    let dir = TempDir::new("sampling-denied");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    let r = c.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {"tools": {}}},
               "clientInfo": {"name": "careful", "version": "1"}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    let (asked, reply) = c.ask_and_answer(
        "witness_ask_sampling",
        json!({"error": {"code": -1, "message": "User rejected sampling request"}}),
    );
    assert_eq!(asked["method"], "sampling/createMessage");
    assert_eq!(asked["params"]["maxTokens"], 32);
    assert_eq!(
        reply["result"]["isError"], true,
        "the tool could not sample: {reply}"
    );
    c.finish();

    let run = analyze(&dir, &log, "sampling");
    assert_eq!(run.code, 0, "a denial is a valid answer: {}", run.stdout);
    assert!(
        run.stdout
            .contains("| yes, `sampling` (tools: yes, context: no) |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("with an error, not a result"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("**Verdict: handled**. The client denied `sampling/createMessage`"),
        "{}",
        run.stdout
    );
}

#[test]
fn drive_passes_logging_in_both_eras_with_all_eight_levels() {
    let dir = TempDir::new("drive-logging");
    let run = witness(&dir, &["drive", "--domain", "logging", "--era", "both"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout
            .matches("| 8: debug, info, notice, warning, error, critical, alert, emergency |")
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("| yes, `logging/setLevel` `debug` |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("| yes, per request: `_meta` logLevel `debug` |"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("**Verdict: handled**").count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn logging_follows_the_level_a_legacy_client_set_and_a_modern_client_that_never_opts_in_gets_none() {
    let dir = TempDir::new("logging-levels");
    let log = dir.join("legacy.jsonl");
    let mut c = Client::start(&log);
    c.initialize("errors-only");
    let set = c.request("logging/setLevel", json!({"level": "error"}));
    assert_eq!(set["result"], json!({}), "{set}");
    let bad = c.request("logging/setLevel", json!({"level": "loud"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let r = c.call("witness_log_all_levels");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "sent 4 message(s): error, critical, alert, emergency"
    );
    assert_eq!(c.notifications.len(), 4, "{:?}", c.notifications);
    c.call("witness_status");
    c.finish();
    let run = analyze(&dir, &log, "logging");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("| 4: error, critical, alert, emergency |"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("**Verdict: handled**"), "{}", run.stdout);

    let log = dir.join("modern.jsonl");
    let mut c = Client::start(&log);
    let r = c.request(
        "tools/call",
        modern(
            json!({"name": "witness_log_all_levels", "arguments": {}}),
            "2026-07-28",
        ),
    );
    assert_eq!(
        r["result"]["content"][0]["text"],
        "sent 0 messages: the request did not opt in with a log level"
    );
    assert!(c.notifications.is_empty(), "{:?}", c.notifications);
    c.finish();
    let run = analyze(&dir, &log, "logging");
    assert!(
        run.stdout
            .contains("| no `_meta` logLevel on the request (no opt-in) |"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("**Verdict: not declared**"), "{}", run.stdout);
}

#[test]
fn drive_passes_completion_in_both_eras_with_context_arguments() {
    let dir = TempDir::new("drive-completion");
    let run = witness(&dir, &["drive", "--domain", "completion", "--era", "both"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout
            .matches("| Did a request carry `context.arguments` (the arguments already chosen)? | yes |")
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout
            .matches("| yes: framework=actix, language=rust |")
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("**Verdict: handled**").count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_completes_but_fetches_the_prompt_with_its_own_values_did_not_use_a_suggestion() {
    let dir = TempDir::new("completion-unused");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("own-values");
    let r = c.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "witness_complete_prompt"},
               "argument": {"name": "language", "value": "py"}}),
    );
    assert_eq!(r["result"]["completion"]["values"], json!(["python"]), "{r}");
    // Without context.arguments the framework has nothing to go on.
    let r = c.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "witness_complete_prompt"},
               "argument": {"name": "framework", "value": ""}}),
    );
    assert_eq!(r["result"]["completion"]["values"], json!([]), "{r}");
    let got = c.request(
        "prompts/get",
        json!({"name": "witness_complete_prompt", "arguments": {"language": "cobol", "framework": "none"}}),
    );
    assert_eq!(got["error"]["code"], -32602, "{got}");
    c.finish();

    let run = analyze(&dir, &log, "completion");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("| Did a request carry `context.arguments` (the arguments already chosen)? | no |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("**Verdict: not handled** (Q4: the prompt was fetched without a suggested value)"),
        "{}",
        run.stdout
    );
}

#[test]
fn drive_passes_subscriptions_in_both_eras() {
    let dir = TempDir::new("drive-subscriptions");
    let run = witness(&dir, &["drive", "--domain", "subscriptions", "--era", "both"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("| yes, with `resources/subscribe` |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("| yes, with `subscriptions/listen` |"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("after: `count 1` |").count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("**Verdict: handled**").count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_subscribes_but_ignores_the_update_does_not_handle_subscriptions() {
    let dir = TempDir::new("subscription-ignored");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("deaf");
    let sub = c.request("resources/subscribe", json!({"uri": "probe://counter"}));
    assert_eq!(sub["result"], json!({}), "{sub}");
    let other = c.request("resources/subscribe", json!({"uri": "probe://alpha"}));
    assert_eq!(
        other["error"]["code"], -32602,
        "only the counter changes: {other}"
    );
    c.call("witness_touch_resource");
    c.call("witness_status");
    assert_eq!(c.notifications, ["notifications/resources/updated"]);
    c.finish();
    let run = analyze(&dir, &log, "subscriptions");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "**Verdict: not handled** (Q4: the client went on without re-reading the updated resource)"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn drive_passes_progress_with_cancellation_in_both_eras() {
    let dir = TempDir::new("drive-progress");
    let run = witness(&dir, &["drive", "--domain", "progress", "--era", "both"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout
            .matches("| How many progress notifications came before the client gave up? | 3 |")
            .count(),
        2,
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("**Verdict: handled**").count(),
        2,
        "{}",
        run.stdout
    );
}

#[test]
fn a_client_that_cancels_another_request_id_does_not_handle_progress() {
    let dir = TempDir::new("progress-wrong-id");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("wrong-cancel");
    c.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
        "params": {"name": "witness_slow", "arguments": {}, "_meta": {"progressToken": "p"}}}));
    let mut progress = 0;
    while progress < 3 {
        let mut line = String::new();
        assert!(c.stdout.read_line(&mut line).unwrap() > 0);
        let msg: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(msg["method"], "notifications/progress", "{msg}");
        assert_eq!(msg["params"]["progressToken"], "p");
        progress += 1;
    }
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 49}}));
    c.call("witness_status");
    c.finish();
    let run = analyze(&dir, &log, "progress");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: not handled** (Q4: the cancellation names another request)"),
        "{}",
        run.stdout
    );
}

/// `--record` signs every domain analyze judged: a flow's verdict, question and answers go
/// into the client block as a list_changed domain's do, with the era of the session.
#[test]
fn record_signs_the_flows_with_their_verdicts_answers_and_era() {
    let dir = TempDir::new("record-flow");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize("roots-and-more");
    c.ask_and_answer(
        "witness_ask_roots",
        json!({"result": {"roots": [{"uri": "https://example.com/repo", "name": "remote"}]}}),
    );
    // Declared only `roots`: serve does not ask for sampling.
    c.call("witness_ask_sampling");
    c.finish();
    let evidence = dir.join("clients.jsonl");
    let record = |domain: &str| {
        witness(
            &dir,
            &[
                "analyze",
                log.to_str().unwrap(),
                "--domain",
                domain,
                "--record",
                "-e",
                evidence.to_str().unwrap(),
            ],
        )
    };
    let roots = record("roots");
    assert_eq!(roots.code, 1, "{}{}", roots.stdout, roots.stderr);
    let all = record("all");
    assert_eq!(all.code, 1, "roots is not handled: {}{}", all.stdout, all.stderr);
    let blocks: Vec<Value> = std::fs::read_to_string(&evidence)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(blocks.len(), 2);
    // A flow alone: only roots, not handled.
    assert_eq!(blocks[0]["verdict"], "not handled");
    assert_eq!(blocks[0]["domains"].as_array().unwrap().len(), 1);
    assert_eq!(blocks[0]["domains"][0]["domain"], "roots");
    assert_eq!(blocks[0]["log"]["session"]["era"], "legacy");
    // Everything: the three list domains, then every flow, in the kit's order.
    let b = &blocks[1];
    let names: Vec<&str> = b["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["domain"].as_str().unwrap())
        .collect();
    assert_eq!(names, EVERY_KIT_DOMAIN);
    let domain = |n: &str| {
        b["domains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["domain"] == n)
            .unwrap()
    };
    assert_eq!(domain("roots")["verdict"], "not handled");
    assert_eq!(domain("roots")["question"], 5);
    assert!(
        domain("roots")["answers"][4]["answer"]
            .as_str()
            .unwrap()
            .contains("is not a file:// URI"),
        "{b}"
    );
    assert!(domain("roots")["answers"][4]["evidence_line"].as_u64().is_some());
    assert_eq!(domain("sampling")["verdict"], "not declared");
    assert_eq!(domain("progress")["verdict"], "not exercised");
    // The list domains stopped before the mutation (incomplete); the failed flow decides.
    assert_eq!(domain("tools")["verdict"], "incomplete");
    assert_eq!(b["verdict"], "not handled");
    let verify = witness(&dir, &["verify", evidence.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

// URL mode elicitation, a request in an undeclared mode, and roots that change.

impl Client {
    /// The legacy handshake declaring `capabilities`.
    fn initialize_with(&mut self, name: &str, capabilities: Value) {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": name, "version": "9.9"}}),
        );
        assert!(r.get("result").is_some(), "{r}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Reads lines until the reply to request `id` (answering nothing), keeping notifications.
    fn reply_to(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "serve closed stdout"
            );
            let msg: Value = serde_json::from_str(&line).unwrap();
            if let Some(m) = msg.get("method").and_then(Value::as_str) {
                self.notifications.push(m.to_string());
            } else if msg["id"] == json!(id) {
                return msg;
            }
        }
    }
}

fn verdict_row<'a>(stdout: &'a str, question_start: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.contains(question_start))
        .unwrap_or_else(|| panic!("no row {question_start:?} in:\n{stdout}"))
}

#[test]
fn drive_passes_url_elicitation_the_undeclared_mode_and_a_change_of_roots_in_both_eras() {
    let dir = TempDir::new("drive-modes");
    for (domain, legacy, modern) in [
        (
            "elicitation-url",
            "serve sent notifications/elicitation/complete",
            "retried with the requestState",
        ),
        (
            "elicitation-undeclared",
            "refused undeclared mode",
            "refused undeclared mode",
        ),
        (
            "roots",
            "After `notifications/roots/list_changed` it answered serve's re-ask validly.",
            "added `file:///tmp/mcp-witness-root-2`",
        ),
    ] {
        let run = witness(&dir, &["drive", "--domain", domain, "--era", "both"]);
        assert_eq!(run.code, 0, "{domain}: {}\n{}", run.stdout, run.stderr);
        assert_eq!(
            run.stdout.matches("**Verdict: handled**").count(),
            2,
            "{}",
            run.stdout
        );
        let (first, second) = run.stdout.split_once("(modern era").unwrap();
        assert!(first.contains(legacy), "{domain} legacy: {first}");
        assert!(second.contains(modern), "{domain} modern: {second}");
    }
}

#[test]
fn a_url_elicitation_leaves_the_page_visit_and_the_completion_in_the_log_under_one_id() {
    let dir = TempDir::new("drive-all-modes");
    let run = witness(
        &dir,
        &[
            "drive",
            "--domain",
            "elicitation-url",
            "--era",
            "legacy",
            "--keep-logs",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    // The visit is in the log as a `page` entry, and the completion names the same id.
    let log = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("- Log: `"))
        .and_then(|l| l.split('`').next())
        .unwrap();
    let lines = log_lines(Path::new(log));
    let asked = lines
        .iter()
        .find(|e| e["msg"]["params"]["mode"] == "url")
        .expect("a URL mode request");
    let id = asked["msg"]["params"]["elicitationId"].clone();
    let url = asked["msg"]["params"]["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "loopback only: {url}");
    assert!(
        lines
            .iter()
            .any(|e| e["dir"] == "page" && e["info"]["elicitationId"] == id)
    );
    assert!(
        lines
            .iter()
            .any(|e| e["msg"]["method"] == "notifications/elicitation/complete"
                && e["msg"]["params"]["elicitationId"] == id)
    );
    let _ = std::fs::remove_file(log);
}

#[test]
fn a_client_that_accepts_a_url_elicitation_but_never_opens_it_did_not_complete_the_url_flow() {
    let dir = TempDir::new("url-never-opened");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("url-no-open", json!({"elicitation": {"form": {}, "url": {}}}));
    let (asked, reply) = c.ask_and_answer(
        "witness_ask_url_elicitation",
        json!({"result": {"action": "accept"}}),
    );
    assert_eq!(asked["params"]["mode"], "url", "{asked}");
    assert!(asked["params"]["elicitationId"].is_string(), "{asked}");
    assert_ne!(
        reply["result"]["isError"], true,
        "consent is a valid answer: {reply}"
    );
    c.call(STATUS);
    assert!(
        !c.notifications
            .iter()
            .any(|n| n == "notifications/elicitation/complete")
    );
    c.finish();
    let run = analyze(&dir, &log, "elicitation-url");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: not handled** (Q6: the client accepted but never opened the URL"),
        "{}",
        run.stdout
    );
    assert!(verdict_row(&run.stdout, "Did the client open the URL").contains("| no | absent |"));
}

const STATUS: &str = "witness_status";

#[test]
fn a_modern_client_that_opens_the_url_completes_the_flow_and_one_that_answers_with_content_does_not() {
    let dir = TempDir::new("url-modern");
    for (case, answer, open) in [
        ("good", json!({"action": "accept"}), true),
        (
            "content",
            json!({"action": "accept", "content": {"token": "x"}}),
            true,
        ),
        ("decline", json!({"action": "decline"}), false),
    ] {
        let log = dir.join(&format!("{case}.jsonl"));
        let mut c = Client::start(&log);
        let mut params = modern(
            json!({"name": "witness_ask_url_elicitation", "arguments": {}}),
            "2026-07-28",
        );
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"url": {}}});
        let first = c.request("tools/call", params.clone());
        let request = &first["result"]["inputRequests"]["elicitation-url"];
        assert_eq!(request["params"]["mode"], "url", "{first}");
        assert!(
            request["params"].get("elicitationId").is_none(),
            "2026-07-28 has no elicitationId"
        );
        if open {
            assert_eq!(http_get_status(request["params"]["url"].as_str().unwrap()), 200);
        }
        params["inputResponses"] = json!({"elicitation-url": answer});
        params["requestState"] = first["result"]["requestState"].clone();
        let second = c.request("tools/call", params);
        assert_eq!(second["result"]["resultType"], "complete", "{second}");
        c.finish();
        let run = analyze(&dir, &log, "elicitation-url");
        match case {
            "good" => {
                assert_eq!(run.code, 0, "{}", run.stdout);
                assert!(
                    run.stdout
                        .contains("**Verdict: handled**. The client completed the URL flow"),
                    "{}",
                    run.stdout
                );
            }
            "content" => {
                assert_eq!(run.code, 1, "{}", run.stdout);
                assert!(
                    run.stdout
                        .contains("**Verdict: not handled** (Q5: accepted with `content`"),
                    "{}",
                    run.stdout
                );
            }
            _ => {
                assert_eq!(run.code, 0, "{}", run.stdout);
                assert!(
                    run.stdout
                        .contains("**Verdict: handled**. The user declined or cancelled"),
                    "{}",
                    run.stdout
                );
                assert!(verdict_row(&run.stdout, "Did the client open the URL").contains("| no |"));
            }
        }
    }
}

#[test]
fn a_client_that_declared_form_only_is_never_sent_url_mode_by_the_url_tool() {
    let dir = TempDir::new("url-form-only");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    // `elicitation: {}` means form mode only.
    c.initialize_with("form-only", json!({"elicitation": {}}));
    let r = c.call("witness_ask_url_elicitation");
    assert_eq!(r["result"]["isError"], true, "{r}");
    c.finish();
    assert!(
        !log_lines(&log)
            .iter()
            .any(|e| e["msg"]["method"] == "elicitation/create")
    );
    let run = analyze(&dir, &log, "elicitation-url");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        verdict_row(&run.stdout, "Did the client declare `elicitation`?").contains("modes declared: form |")
    );
    assert!(run.stdout.contains("**Verdict: not declared**"), "{}", run.stdout);
}

#[test]
fn a_client_that_accepts_a_mode_it_never_declared_is_reported_with_the_evidence_line() {
    let dir = TempDir::new("undeclared-accepted");
    // Legacy: the URL mode request answered with accept by a form-only client.
    let log = dir.join("legacy.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("accepts-anything", json!({"elicitation": {"form": {}}}));
    let (asked, reply) = c.ask_and_answer(
        "witness_ask_undeclared_mode",
        json!({"result": {"action": "accept"}}),
    );
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    // The session goes on for it all the same.
    assert!(c.call(STATUS)["result"]["structuredContent"].is_object());
    c.finish();
    let run = analyze(&dir, &log, "elicitation-undeclared");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: not handled** (Q4: accepted a mode it never declared)"),
        "{}",
        run.stdout
    );
    let answer_line = log_lines(&log)
        .iter()
        .position(|e| e["dir"] == "in" && e["msg"]["result"]["action"] == "accept")
        .unwrap()
        + 1;
    assert!(
        verdict_row(&run.stdout, "How did the client answer it").contains(&format!(
            "| with a result: action `accept` | log line {answer_line},"
        )),
        "{}",
        run.stdout
    );

    // Modern: a URL-only client answers the form request it was never declared for.
    let log = dir.join("modern.jsonl");
    let mut c = Client::start(&log);
    let mut params = modern(
        json!({"name": "witness_ask_undeclared_mode", "arguments": {}}),
        "2026-07-28",
    );
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"url": {}}});
    let first = c.request("tools/call", params.clone());
    assert_eq!(
        first["result"]["inputRequests"]["elicitation-undeclared"]["params"]["mode"],
        "form"
    );
    params["inputResponses"] = json!({"elicitation-undeclared": {"action": "decline"}});
    params["requestState"] = first["result"]["requestState"].clone();
    let second = c.request("tools/call", params);
    assert_eq!(second["result"]["isError"], true, "{second}");
    c.finish();
    let run = analyze(&dir, &log, "elicitation-undeclared");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("(Q4: answered `decline` as if it had shown a request"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_legacy_client_that_refuses_the_undeclared_mode_with_an_error_handles_it_and_goes_on() {
    let dir = TempDir::new("undeclared-refused");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("refuses", json!({"elicitation": {}}));
    let (_, reply) = c.ask_and_answer(
        "witness_ask_undeclared_mode",
        json!({"error": {"code": -32602, "message": "url mode not supported"}}),
    );
    assert_ne!(reply["result"]["isError"], true, "{reply}");
    // The one request in an undeclared mode is the only one: the next call is ordinary.
    let id = c.next_id;
    c.next_id += 1;
    c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": STATUS, "arguments": {}}}));
    assert!(c.reply_to(id)["result"]["structuredContent"].is_object());
    c.finish();
    let run = analyze(&dir, &log, "elicitation-undeclared");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: handled**. refused undeclared mode"),
        "{}",
        run.stdout
    );
    assert!(
        verdict_row(&run.stdout, "How did the client answer it").contains("| refused with error -32602 |")
    );
}

#[test]
fn a_client_that_announces_new_roots_but_answers_the_reask_badly_does_not_handle_roots() {
    let dir = TempDir::new("roots-reask");
    for (case, reanswer, expect) in [
        (
            "web",
            json!({"result": {"roots": [{"uri": "https://example.com/repo"}]}}),
            "**Verdict: not handled** (Q8: root 1: `https://example.com/repo` is not a file:// URI",
        ),
        (
            "error",
            json!({"error": {"code": -32603, "message": "no"}}),
            "**Verdict: not handled** (Q8: the client answered the re-ask with an error)",
        ),
    ] {
        let log = dir.join(&format!("{case}.jsonl"));
        let mut c = Client::start(&log);
        c.initialize_with("roots-change", json!({"roots": {"listChanged": true}}));
        let (_, reply) = c.ask_and_answer(
            "witness_ask_roots",
            json!({"result": {"roots": [{"uri": "file:///tmp/one"}]}}),
        );
        assert_ne!(reply["result"]["isError"], true, "{reply}");
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
        // serve asks again at once; answer it, then see the session go on.
        let mut line = String::new();
        c.stdout.read_line(&mut line).unwrap();
        let reask: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(reask["method"], "roots/list", "{reask}");
        let mut answer = reanswer.clone();
        answer["jsonrpc"] = json!("2.0");
        answer["id"] = reask["id"].clone();
        c.send(&answer);
        assert!(c.call(STATUS)["result"]["structuredContent"].is_object());
        c.finish();
        let run = analyze(&dir, &log, "roots");
        assert_eq!(run.code, 1, "{case}: {}", run.stdout);
        assert!(run.stdout.contains(expect), "{case}: {}", run.stdout);
        assert!(verdict_row(&run.stdout, "Did serve ask `roots/list` again").contains("| yes |"));
    }
}

#[test]
fn a_client_that_announces_new_roots_and_answers_the_reask_says_what_changed() {
    let dir = TempDir::new("roots-changed");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("roots-change", json!({"roots": {"listChanged": true}}));
    c.ask_and_answer(
        "witness_ask_roots",
        json!({"result": {"roots": [{"uri": "file:///tmp/one"}, {"uri": "file:///tmp/two"}]}}),
    );
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let mut line = String::new();
    c.stdout.read_line(&mut line).unwrap();
    let reask: Value = serde_json::from_str(&line).unwrap();
    c.send(&json!({"jsonrpc": "2.0", "id": reask["id"], "result": {"roots": [{"uri": "file:///tmp/two"}, {"uri": "file:///tmp/three"}]}}));
    c.call(STATUS);
    c.finish();
    let run = analyze(&dir, &log, "roots");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        verdict_row(&run.stdout, "What changed between")
            .contains("| added `file:///tmp/three`; removed `file:///tmp/one` |"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("it answered serve's re-ask validly"),
        "{}",
        run.stdout
    );
}

#[test]
fn serve_does_not_reask_roots_of_a_client_that_never_declared_them() {
    let dir = TempDir::new("roots-undeclared-change");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("no-roots", json!({}));
    c.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    assert!(c.call(STATUS)["result"]["structuredContent"].is_object());
    c.finish();
    assert!(!log_lines(&log).iter().any(|e| e["msg"]["method"] == "roots/list"));
}

#[test]
fn the_url_page_survives_a_silent_visitor_and_garbage_and_still_completes_the_elicitation() {
    let dir = TempDir::new("url-page-hostile");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    c.initialize_with("url-hostile", json!({"elicitation": {"url": {}}}));
    let (asked, _) = c.ask_and_answer(
        "witness_ask_url_elicitation",
        json!({"result": {"action": "accept"}}),
    );
    let url = asked["params"]["url"].as_str().unwrap().to_string();
    let authority = url["http://".len()..].split('/').next().unwrap().to_string();
    // One visitor that says nothing, one that sends garbage, one POST.
    let _silent = std::net::TcpStream::connect(&authority).unwrap();
    for bytes in [
        &b"\x00\xff garbage\r\n\r\n"[..],
        b"POST /elicitation/x HTTP/1.1\r\n\r\n",
    ] {
        let mut s = std::net::TcpStream::connect(&authority).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        s.write_all(bytes).unwrap();
        let mut reply = String::new();
        let _ = std::io::Read::read_to_string(&mut s, &mut reply);
        assert!(reply.starts_with("HTTP/1.1 405"), "{reply:?}");
    }
    assert_eq!(http_get_status(&url), 200);
    let id = c.next_id;
    c.next_id += 1;
    c.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": STATUS, "arguments": {}}}));
    c.reply_to(id);
    assert!(
        c.notifications
            .iter()
            .any(|n| n == "notifications/elicitation/complete")
    );
    // A second visit completes nothing more.
    assert_eq!(http_get_status(&url), 200);
    c.finish();
    let completions = log_lines(&log)
        .iter()
        .filter(|e| e["msg"]["method"] == "notifications/elicitation/complete")
        .count();
    assert_eq!(completions, 1);
}

#[test]
fn a_modern_client_that_retries_without_opening_the_url_is_asked_again_three_times_then_told_and_not_handled()
{
    let dir = TempDir::new("url-modern-no-open");
    let log = dir.join("serve.jsonl");
    let mut c = Client::start(&log);
    let mut params = modern(
        json!({"name": "witness_ask_url_elicitation", "arguments": {}}),
        "2026-07-28",
    );
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"url": {}}});
    let first = c.request("tools/call", params.clone());
    params["inputResponses"] = json!({"elicitation-url": {"action": "accept"}});
    params["requestState"] = first["result"]["requestState"].clone();
    let mut kinds = Vec::new();
    for _ in 0..4 {
        let r = c.request("tools/call", params.clone());
        kinds.push(r["result"]["resultType"].as_str().unwrap().to_string());
        if r["result"]["resultType"] == "complete" {
            assert_eq!(r["result"]["isError"], true, "{r}");
        }
    }
    assert_eq!(
        kinds,
        ["input_required", "input_required", "input_required", "complete"]
    );
    c.finish();
    let run = analyze(&dir, &log, "elicitation-url");
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("(Q6: the client accepted but never opened the URL"),
        "{}",
        run.stdout
    );
}
