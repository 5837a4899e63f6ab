//! The bundled fixture's HTTP mode (`mcp-witness-fixture http <BEHAVIOUR> 0`) against
//! `check --url` and `probe --url`: the clean server passes every transport check, each
//! misbehaving one is named by exactly the transport check it was built to trip, a 401 is
//! `auth_required` and a redirect is recorded, not followed. Nothing needs installing: the
//! server is ours. Every fixture is killed and reaped, and no connection is left behind.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{Bench, reason_codes, tool_names};
use serde_json::Value;

const TRANSPORT_CHECKS: [&str; 9] = [
    "transport.session.unknown",
    "transport.session.deleted",
    "transport.protocol_version.bad",
    "transport.origin.foreign",
    "transport.host.foreign",
    "transport.accept",
    "transport.content_type",
    "transport.batch",
    "transport.error_body",
];

/// A running `mcp-witness-fixture http MODE 0`, marked in its environment so a test can see
/// it is gone; killed and reaped when dropped.
struct HttpFixture {
    child: Child,
    url: String,
    port: u16,
    log: std::path::PathBuf,
    marker: String,
}

impl HttpFixture {
    fn start(mode: &str, bench: &Bench) -> HttpFixture {
        let log = bench.dir.join(&format!("fixture-{mode}.log"));
        let marker = common::unique_marker(&format!("fixture-http-{mode}"));
        let (key, value) = marker.split_once('=').unwrap();
        let mut child = Command::new(common::fixture())
            .args(["http", mode, "0"])
            .env(key, value)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the fixture starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let url = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line.starts_with("http://127.0.0.1:") => line.trim().to_string(),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the fixture printed no URL: {other:?}");
            }
        };
        let port = url
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/mcp")
            .parse()
            .expect("the URL names a port");
        HttpFixture {
            child,
            url,
            port,
            log,
            marker,
        }
    }

    /// Kills and reaps the fixture; asserts no process of it is left and no connection to it
    /// is still open; returns its request log.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        assert!(
            common::processes_with_env(&self.marker).is_empty(),
            "a fixture process outlived its kill"
        );
        assert_eq!(established_to(self.port), 0, "a connection was left open");
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Client-side sockets still established to `port` (state 01 in /proc/net/tcp).
fn established_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote_port = cols
                .get(2)
                .and_then(|r| r.split(':').nth(1))
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            remote_port == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

/// `check --no-record --json --url URL`: the report.
fn check_report(bench: &Bench, url: &str) -> Value {
    let run = bench.run(&["check", "--no-record", "--json", "--url", url]);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// Each transport check's status, in the registry's order.
fn transport_statuses(report: &Value) -> Vec<(String, String)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("transport."))
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_clean_http_fixture_passes_every_transport_check_and_fails_no_other_check() {
    let bench = Bench::new("fixture-http-clean");
    let fixture = HttpFixture::start("correct", &bench);
    let report = check_report(&bench, &fixture.url);
    let want: Vec<(String, String)> = TRANSPORT_CHECKS
        .iter()
        .map(|id| (id.to_string(), "pass".to_string()))
        .collect();
    assert_eq!(transport_statuses(&report), want, "{report}");
    for r in report["results"].as_array().unwrap() {
        assert!(
            r["status"] == "pass" || r["status"] == "skip",
            "{}: {} ({})",
            r["id"],
            r["status"],
            r["message"]
        );
    }
    let log = fixture.stop();
    assert!(log.contains("POST \"/mcp\" -> 200"), "{log}");
    assert!(log.contains("DELETE \"/mcp\" -> 200"), "{log}");
}

#[test]
fn check_url_names_exactly_the_transport_finding_each_misbehaving_http_fixture_plants() {
    let bench = Bench::new("fixture-http-defects");
    // Each behaviour, the one transport check it trips and how that check grades it.
    let planted = [
        ("session-unknown-400", "transport.session.unknown", "fail"),
        ("session-deleted-200", "transport.session.deleted", "fail"),
        ("version-accepted", "transport.protocol_version.bad", "fail"),
        ("origin-served", "transport.origin.foreign", "fail"),
        ("host-served", "transport.host.foreign", "warn"),
        ("accept-ignored", "transport.accept", "warn"),
        ("content-type-ignored", "transport.content_type", "fail"),
        ("batch-accepted", "transport.batch", "warn"),
        ("error-body-plain", "transport.error_body", "warn"),
    ];
    for (mode, finding, grade) in planted {
        let fixture = HttpFixture::start(mode, &bench);
        let report = check_report(&bench, &fixture.url);
        let want: Vec<(String, String)> = TRANSPORT_CHECKS
            .iter()
            .map(|id| {
                let status = if *id == finding { grade } else { "pass" };
                (id.to_string(), status.to_string())
            })
            .collect();
        assert_eq!(transport_statuses(&report), want, "{mode}: {report}");
        fixture.stop();
    }
}

#[test]
fn probe_url_passes_on_the_clean_http_fixture_with_the_correct_tools() {
    let bench = Bench::new("fixture-http-probe");
    let fixture = HttpFixture::start("correct", &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--url", &fixture.url]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "pass");
    assert_eq!(b["era"], "legacy");
    assert_eq!(b["target"]["transport"], "streamable_http");
    assert_eq!(tool_names(&b), ["echo", "add", "get_time"]);
    let c = &b["http"]["connections"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(c["delete"], "accepted", "{c}");
    for c in b["http"]["connections"].as_array().unwrap() {
        assert_eq!(c["readers_left"], 0, "{c}");
    }
    fixture.stop();
}

#[test]
fn the_401_http_fixture_is_inconclusive_auth_required_for_probe_and_no_finding_for_check() {
    let bench = Bench::new("fixture-http-401");
    let fixture = HttpFixture::start("unauthorized", &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--url", &fixture.url]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "inconclusive");
    assert_eq!(reason_codes(&b), ["auth_required"]);
    let auth = &b["http"]["auth"];
    let challenge = auth["challenges"][0].as_str().unwrap();
    assert!(challenge.starts_with("Bearer resource_metadata="), "{challenge}");
    assert_eq!(auth["metadata_status"], 200, "{auth}");
    assert_eq!(auth["metadata"]["resource"].as_str(), Some(fixture.url.as_str()));
    // check: it could not run (exit 2), says credentials are needed and how to give them,
    // and finds no defect (the handshake checks skip: a 401 is no fault of the server).
    let run = bench.run(&["check", "--no-record", "--json", "--url", &fixture.url]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let why = report["could_not_run"].as_str().unwrap();
    assert!(why.contains("HTTP 401") && why.contains("--header-env"), "{why}");
    assert_eq!(report["counts"]["fail"], 0, "{report}");
    assert_eq!(report["counts"]["warn"], 0, "{report}");
    let log = fixture.stop();
    assert!(log.contains("-> 401"), "{log}");
    assert!(
        log.contains("GET \"/.well-known/oauth-protected-resource/mcp\" -> 200"),
        "{log}"
    );
}

#[test]
fn the_redirecting_http_fixture_fails_the_probe_and_the_redirect_is_not_followed() {
    let bench = Bench::new("fixture-http-redirect");
    let fixture = HttpFixture::start("redirect", &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--url", &fixture.url]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["http_redirect"]);
    assert_eq!(b["http"]["connections"][0]["redirects"][0]["status"], 307);
    let log = fixture.stop();
    assert!(log.contains("-> 307"), "{log}");
    assert!(!log.contains("/moved"), "the redirect was followed: {log}");
}

#[test]
fn an_unknown_http_behaviour_is_refused_with_the_list_of_behaviours() {
    let out = Command::new(common::fixture())
        .args(["http", "no-such-behaviour"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("session-unknown-400") && stderr.contains("redirect"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "it printed a URL: it listened");
}

/// Sends `bytes` on a fresh connection and reads the reply's status line (bounded waits).
fn status_of(port: u16, bytes: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut reply = Vec::new();
    let _ = s.take(64 * 1024).read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.lines().next().unwrap_or("").to_string()
}

#[test]
fn hostile_requests_to_the_http_fixture_get_their_status_and_it_keeps_serving() {
    let bench = Bench::new("fixture-http-hostile");
    let fixture = HttpFixture::start("correct", &bench);
    let port = fixture.port;
    let mut huge = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 100 * 1024));
    huge.extend_from_slice(b"\r\n\r\n");
    assert_eq!(
        status_of(port, &huge),
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
    assert_eq!(
        status_of(port, b"\xff\xfe garbage\r\n\r\n"),
        "HTTP/1.1 400 Bad Request"
    );
    assert_eq!(
        status_of(
            port,
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999\r\n\r\n"
        ),
        "HTTP/1.1 413 Content Too Large"
    );
    assert_eq!(
        status_of(port, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        "HTTP/1.1 405 Method Not Allowed"
    );
    assert_eq!(
        status_of(port, b"POST /other HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
        "HTTP/1.1 404 Not Found"
    );
    let run = bench.run(&["probe", "--no-record", "--json", "--url", &fixture.url]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    fixture.stop();
}
