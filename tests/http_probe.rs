//! `probe --url` and `check --url` end to end through the CLI: real MCP servers on 127.0.0.1
//! started by the tests (server-everything in `streamableHttp` mode, the Python SDK serving
//! Streamable HTTP with sessions, SSE replies, JSON replies and statelessly), and small
//! servers of our own on a `TcpListener` for what real ones will not do (a 401 with its
//! resource metadata, a redirect). Each asserts the verdict, the block's fields, that the
//! file re-verifies independently, that no header value reaches any output or evidence file,
//! and that nothing is left connected or reading.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{Bench, ServerProcess, free_port, reason_codes, tool_names};
use serde_json::Value;

impl ServerProcess {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn everything(mode: &str, bench: &Bench) -> ServerProcess {
    let dir = common::reference_dir();
    let port = free_port();
    let mut cmd = Command::new("node");
    cmd.arg("--require")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/http-servers/loopback-listen.cjs"
        ))
        .arg(dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
        .arg(mode)
        .env("PORT", port.to_string());
    ServerProcess::start(cmd, port, bench.dir.path())
}

fn python_server(args: &[&str], bench: &Bench) -> ServerProcess {
    let dir = common::reference_dir();
    let port = free_port();
    let mut cmd = Command::new(dir.join("venv/bin/python"));
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/http-servers/py_streamable.py"
    ))
    .arg(port.to_string())
    .args(args);
    ServerProcess::start(cmd, port, bench.dir.path())
}

/// Runs mcp-witness with extra environment variables.
fn witness_env(bench: &Bench, args: &[&str], env: &[(&str, &str)]) -> common::Run {
    let out = Command::new(common::WITNESS)
        .args(args)
        .current_dir(bench.dir.path())
        .env("MCP_WITNESS_KEY", bench.dir.join("signing.key"))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("mcp-witness runs");
    common::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The evidence file re-verifies with the independent Python verifier.
fn reverifies(bench: &Bench) {
    let out = Command::new(common::verifier_python())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reverify.py"))
        .arg(&bench.evidence)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reverify.py: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// No byte of `secret` in the run's output, nor in any file of the bench.
fn never_shown(bench: &Bench, run: &common::Run, secret: &str) {
    assert!(!run.stdout.contains(secret), "stdout shows the secret");
    assert!(!run.stderr.contains(secret), "stderr shows the secret");
    for entry in std::fs::read_dir(bench.dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{} holds the secret",
                path.display()
            );
        }
    }
}

/// Sockets of this machine connected to `port` from the client side and still established
/// (state 01 in /proc/net/tcp): a connection mcp-witness left open would show here.
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

/// Every connection of an HTTP block ended with no reply reader left running.
fn no_reader_left(block: &Value) {
    for c in block["http"]["connections"].as_array().unwrap() {
        assert_eq!(c["readers_left"], 0, "{c}");
    }
}

#[test]
fn probe_url_of_server_everything_passes_and_records_the_session_by_shape_never_by_value() {
    let bench = Bench::new("http-probe-everything");
    let server = everything("streamableHttp", &bench);
    let url = server.url("/mcp");
    let ev = bench.evidence.to_str().unwrap().to_string();
    let secret = "tok-d41d8cd98f00b204e9800998ecf8427e";
    let bearer = format!("Bearer {secret}");
    let run = witness_env(
        &bench,
        &[
            "probe",
            "-e",
            &ev,
            "--url",
            &url,
            "--header-env",
            "Authorization=MCPW_TEST_TOKEN",
        ],
        &[("MCPW_TEST_TOKEN", &bearer)],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "pass");
    assert_eq!(b["era"], "legacy");
    assert_eq!(b["protocol_version"], "2025-11-25");
    assert_eq!(tool_names(&b).len(), 13);
    let t = &b["target"];
    assert_eq!(t["url"], url.as_str());
    assert_eq!(t["transport"], "streamable_http");
    assert_eq!(t["headers"], serde_json::json!(["Authorization"]));
    for absent in ["program_sha256", "program", "command", "cwd", "env"] {
        assert!(t.get(absent).is_none(), "target has {absent}: {t}");
    }
    assert!(b["teardown"].is_null());

    let http = &b["http"];
    assert_eq!(http["transport"], "streamable_http");
    assert!(http["auth"].is_null());
    let conns = http["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1);
    let c = &conns[0];
    assert_eq!(c["session_id"]["length"], 36); // a UUID, its value never kept
    assert_eq!(c["session_id"]["visible_ascii"], true);
    assert_eq!(
        (c["delete"].as_str(), c["delete_status"].as_u64()),
        (Some("accepted"), Some(200))
    );
    let shape: Vec<(String, u64)> = c["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["rpc_method"]
                    .as_str()
                    .unwrap_or(x["method"].as_str().unwrap())
                    .to_string(),
                x["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("initialize".to_string(), 200),
            ("notifications/initialized".to_string(), 202),
            ("tools/list".to_string(), 200),
            ("DELETE".to_string(), 200),
        ]
    );
    assert_eq!(c["exchanges"][0]["content_type"], "text/event-stream");
    no_reader_left(&b);
    assert_eq!(established_to(server.port), 0, "a connection was left open");

    reverifies(&bench);
    never_shown(&bench, &run, secret);
    let verify = bench.run(&["verify", &ev]);
    assert_eq!(verify.code, 0, "{}", verify.stderr);
}

#[test]
fn auto_against_server_everything_falls_back_to_legacy_on_a_fresh_connection() {
    let bench = Bench::new("http-probe-auto");
    let server = everything("streamableHttp", &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--era", "auto", "--url", &server.url("/mcp")]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["era"], "legacy");
    let detection = b["era_detection"].as_str().unwrap();
    assert!(
        detection.contains("-32000") && detection.contains("fresh connection"),
        "{detection}"
    );
    let conns = b["http"]["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 2);
    // The modern attempt: a 400 whose JSON-RPC body was read; no session, nothing deleted.
    assert_eq!(conns[0]["exchanges"][0]["rpc_method"], "server/discover");
    assert_eq!(conns[0]["exchanges"][0]["status"], 400);
    assert_eq!(conns[0]["delete"], "no_session");
    assert_eq!(conns[1]["delete"], "accepted");
    no_reader_left(&b);
    reverifies(&bench);
}

#[test]
fn the_python_sdk_passes_in_every_reply_mode_and_statelessly_in_the_modern_era() {
    for (args, era, want_era, sessions) in [
        (&["--json"][..], "legacy", "legacy", true),
        (&[][..], "legacy", "legacy", true),
        (&["--json", "--stateless"][..], "modern", "modern", false),
        (&[][..], "auto", "modern", true),
    ] {
        let bench = Bench::new("http-probe-python");
        let server = python_server(args, &bench);
        let ev = bench.evidence.to_str().unwrap().to_string();
        let run = bench.run(&["probe", "-e", &ev, "--era", era, "--url", &server.url("/mcp")]);
        assert_eq!(run.code, 0, "{args:?} {era}: {}{}", run.stdout, run.stderr);
        let b = bench.last_block();
        assert_eq!(b["era"], want_era, "{args:?} {era}");
        assert_eq!(tool_names(&b), ["add", "echo"]);
        let c = &b["http"]["connections"][0];
        if want_era == "modern" {
            // Stateless: no initialize, no session, nothing to delete.
            assert_eq!(c["exchanges"][0]["rpc_method"], "server/discover");
            assert_eq!(c["delete"], "no_session");
            assert_eq!(b["protocol_version"], "2026-07-28");
        } else {
            assert_eq!(c["session_id"]["length"], 32, "{args:?}");
            assert_eq!(c["delete"], if sessions { "accepted" } else { "no_session" });
        }
        no_reader_left(&b);
        reverifies(&bench);
    }
}

#[test]
fn check_url_runs_the_suite_over_http_and_skips_the_stdio_only_checks() {
    let bench = Bench::new("http-check-everything");
    let server = everything("streamableHttp", &bench);
    let ev = bench.dir.join("checks.jsonl");
    let run = bench.run(&[
        "check",
        "-e",
        ev.to_str().unwrap(),
        "--url",
        &server.url("/mcp"),
        "--json",
    ]);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let status = |id: &str| -> String {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(status("protocol.handshake.version"), "pass", "{report}");
    assert_eq!(status("pagination.tools"), "pass");
    // The truncated body got a 400 whose body is a -32700 error: that is its answer.
    assert_eq!(status("protocol.parse_error"), "pass");
    assert_eq!(status("hygiene.stdout_purity"), "skip");
    assert_eq!(report["target"]["url"], server.url("/mcp").as_str());
    // The report matches its schema, HTTP target and transport group included.
    let json = bench.dir.join("report.json");
    std::fs::write(&json, &run.stdout).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(common::verifier_python())
        .args([
            "-c",
            "import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))",
            json.to_str().unwrap(),
            root.join("schemas/check-report.schema.json").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&ev).unwrap();
    let block: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(block["target"]["transport"], "streamable_http");
    assert!(block["target"].get("program_sha256").is_none());
    // The main session's HTTP facts: its initialize, the shape of its session id, its DELETE.
    let c = &block["session"]["http"]["connections"][0];
    assert_eq!(c["exchanges"][0]["rpc_method"], "initialize");
    assert_eq!(c["session_id"]["length"], 36);
    assert_eq!(c["delete"], "accepted");
    let out = Command::new(common::verifier_python())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reverify.py"))
        .arg(&ev)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

// ---------------------------------------------------------------- servers of our own

/// A one-thread HTTP server on 127.0.0.1 answering each request with `answer(head)` until
/// `requests` have been served; returns the request heads it saw.
fn serve(
    requests: usize,
    answer: impl Fn(&str, u16) -> String + Send + 'static,
) -> (u16, JoinHandle<Vec<String>>) {
    serve_bodies(requests, move |head, _, port| answer(head, port))
}

/// [`serve`] with the request body handed to `answer` too; an empty answer closes the
/// connection without a reply.
fn serve_bodies(
    requests: usize,
    answer: impl Fn(&str, &str, u16) -> String + Send + 'static,
) -> (u16, JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        listener.set_nonblocking(false).unwrap();
        for stream in listener.incoming().take(requests) {
            let Ok(mut s) = stream else { continue };
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let _ = s.write_all(answer(&head, &String::from_utf8_lossy(&body), port).as_bytes());
            seen.push(head);
        }
        seen
    });
    (port, handle)
}

fn reply(status: &str, extra: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{extra}Content-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn a_401_is_inconclusive_auth_required_with_its_challenge_and_same_origin_metadata() {
    let bench = Bench::new("http-probe-401");
    let (port, server) = serve(2, |head, port| {
        if head.starts_with("GET /.well-known/oauth-protected-resource/mcp ") {
            let doc = format!(
                r#"{{"resource":"http://127.0.0.1:{port}/mcp","authorization_servers":["https://auth.example"]}}"#
            );
            reply("200 OK", "", "application/json", &doc)
        } else {
            let challenge = format!(
                "WWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp\"\r\n"
            );
            reply("401 Unauthorized", &challenge, "text/plain", "unauthorized")
        }
    });
    let ev = bench.evidence.to_str().unwrap().to_string();
    let secret = "sk-live-0123456789abcdef0123";
    let url = format!("http://127.0.0.1:{port}/mcp");
    let header = format!("X-Api-Key: {secret}");
    let run = bench.run(&["probe", "-e", &ev, "--url", &url, "--header", &header]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "inconclusive");
    assert_eq!(reason_codes(&b), ["auth_required"]);
    let auth = &b["http"]["auth"];
    let challenge = auth["challenges"][0].as_str().unwrap();
    assert!(challenge.starts_with("Bearer resource_metadata="), "{challenge}");
    assert_eq!(auth["metadata_status"], 200);
    assert_eq!(
        auth["metadata"]["authorization_servers"][0],
        "https://auth.example"
    );
    assert_eq!(b["target"]["headers"], serde_json::json!(["X-Api-Key"]));
    let heads = server.join().unwrap();
    // The credential went to the endpoint, never to the metadata document.
    assert!(heads[0].contains(secret));
    assert!(heads[1].starts_with("GET /.well-known/") && !heads[1].contains(secret));
    reverifies(&bench);
    never_shown(&bench, &run, secret);
}

#[test]
fn metadata_on_another_origin_is_named_but_never_fetched() {
    let bench = Bench::new("http-probe-401-foreign");
    let (port, server) = serve(1, |_, _| {
        reply(
            "401 Unauthorized",
            "WWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.2:9/.well-known/oauth-protected-resource\"\r\n",
            "text/plain",
            "",
        )
    });
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    let auth = &b["http"]["auth"];
    assert!(auth["metadata_status"].is_null());
    assert!(auth["metadata_note"].as_str().unwrap().contains("another origin"));
    assert_eq!(server.join().unwrap().len(), 1);
}

#[test]
fn a_redirect_fails_the_probe_and_is_recorded_redacted_not_followed() {
    let bench = Bench::new("http-probe-redirect");
    let (port, server) = serve(1, |_, _| {
        reply(
            "307 Temporary Redirect",
            "Location: http://127.0.0.1:9/mcp?api_key=hunter2hunter2\r\n",
            "text/plain",
            "",
        )
    });
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["http_redirect"]);
    let redirects = &b["http"]["connections"][0]["redirects"];
    assert_eq!(redirects[0]["status"], 307);
    assert_eq!(server.join().unwrap().len(), 1, "the redirect was followed");
    never_shown(&bench, &run, "hunter2hunter2");
}

#[test]
fn a_url_given_as_the_command_is_pointed_to_url() {
    let bench = Bench::new("http-probe-hint");
    let run = bench.run(&["probe", "--no-record", "--", "http://127.0.0.1:9/mcp"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--url"), "{}", run.stderr);
    let run = bench.run(&[
        "probe",
        "--no-record",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--",
        "x",
    ]);
    assert_eq!(run.code, 2, "--url and a command together are refused");
}

#[test]
fn a_missing_header_variable_and_a_malformed_header_are_usage_errors_that_do_not_echo_values() {
    let bench = Bench::new("http-probe-header-usage");
    let run = bench.run(&[
        "probe",
        "--no-record",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--header-env",
        "Authorization=MCPW_SURELY_UNSET_VAR",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("MCPW_SURELY_UNSET_VAR is not set"),
        "{}",
        run.stderr
    );
    let run = bench.run(&[
        "probe",
        "--no-record",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--header",
        "no colon s3cr3tv4lue",
    ]);
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("s3cr3tv4lue"), "{}", run.stderr);
    // A line break in a value (from the environment) and a header mcp-witness sets itself.
    let run = witness_env(
        &bench,
        &[
            "probe",
            "--no-record",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--header-env",
            "X-Key=MCPW_TEST_CRLF",
        ],
        &[("MCPW_TEST_CRLF", "s3cr3t\r\nX-Injected: 1")],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("X-Key") && !run.stderr.contains("s3cr3t"),
        "{}",
        run.stderr
    );
    let run = bench.run(&[
        "probe",
        "--no-record",
        "--url",
        "http://127.0.0.1:9/mcp",
        "--header",
        "Mcp-Session-Id: x",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn a_config_url_entry_is_probed_with_its_headers_and_no_value_is_recorded() {
    let bench = Bench::new("http-probe-config");
    let server = python_server(&["--json"], &bench);
    let secret = "cfg-secret-9f86d081884c7d65";
    let config = bench.dir.join("mcp.json");
    std::fs::write(
        &config,
        format!(
            r#"{{"mcpServers": {{"remote": {{"type": "http", "url": "{}", "headers": {{"X-Token": "{secret}"}}}}}}}}"#,
            server.url("/mcp")
        ),
    )
    .unwrap();
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--config",
        config.to_str().unwrap(),
        "--server",
        "remote",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["target"]["headers"], serde_json::json!(["X-Token"]));
    assert_eq!(b["target"]["url"], server.url("/mcp").as_str());
    assert_eq!(tool_names(&b), ["add", "echo"]);
    std::fs::remove_file(&config).unwrap(); // the config itself holds the value, by design
    never_shown(&bench, &run, secret);
}

#[test]
fn a_closed_port_fails_as_unreachable_with_what_to_check() {
    let bench = Bench::new("http-probe-closed");
    let port = free_port();
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["unreachable"]);
    assert!(b["reasons"][0]["message"].as_str().unwrap().contains("running"));
}

#[test]
fn a_refused_initialize_post_falls_back_to_http_sse_against_server_everything_sse_mode() {
    let bench = Bench::new("http-probe-sse");
    let server = everything("sse", &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--url", &server.url("/sse")]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "pass");
    assert_eq!(tool_names(&b).len(), 13);
    assert_eq!(b["target"]["transport"], "http_sse");
    assert_eq!(b["http"]["transport"], "http_sse");
    let detection = b["era_detection"].as_str().unwrap();
    assert!(
        detection.contains("HTTP 404") && detection.contains("HTTP+SSE"),
        "{detection}"
    );
    let conns = b["http"]["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 2);
    assert_eq!(conns[0]["exchanges"][0]["status"], 404);
    let second: Vec<(String, u64)> = conns[1]["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["rpc_method"]
                    .as_str()
                    .unwrap_or(x["method"].as_str().unwrap())
                    .to_string(),
                x["status"].as_u64().unwrap(),
            )
        })
        .collect();
    // The stream first, then every message POSTed to the endpoint it named (202 each).
    assert_eq!(
        second,
        [
            ("GET".to_string(), 200),
            ("initialize".to_string(), 202),
            ("notifications/initialized".to_string(), 202),
            ("tools/list".to_string(), 202),
        ]
    );
    no_reader_left(&b);
    assert_eq!(established_to(server.port), 0, "a connection was left open");
    reverifies(&bench);
}

/// `check --url --json` on `url` with `extra` flags: each transport check's status.
fn transport_statuses(bench: &Bench, url: &str, extra: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["check", "--no-record", "--json", "--url", url];
    args.extend_from_slice(extra);
    let run = bench.run(&args);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
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

fn expect(got: &[(String, String)], want: &[(&str, &str)]) {
    let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, want);
}

#[test]
fn transport_checks_find_what_server_everything_gets_wrong_and_the_python_sdk_gets_right() {
    let bench = Bench::new("http-transport-checks");
    let everything = everything("streamableHttp", &bench);
    // HTTP-NOTES: everything answers 400 for an unknown or deleted session (the spec says
    // 404), serves a foreign Origin and Host, and accepts a batch.
    expect(
        &transport_statuses(&bench, &everything.url("/mcp"), &[]),
        &[
            ("transport.session.unknown", "fail"),
            ("transport.session.deleted", "fail"),
            ("transport.protocol_version.bad", "pass"),
            ("transport.origin.foreign", "fail"),
            ("transport.host.foreign", "warn"),
            ("transport.accept", "pass"),
            ("transport.content_type", "pass"),
            ("transport.batch", "warn"),
            ("transport.error_body", "pass"),
        ],
    );
    drop(everything);
    let python = python_server(&["--json"], &bench);
    // The Python SDK: 404 sessions, 403 Origin, 421 Host, 400 (not 415) for text/plain.
    expect(
        &transport_statuses(&bench, &python.url("/mcp"), &[]),
        &[
            ("transport.session.unknown", "pass"),
            ("transport.session.deleted", "pass"),
            ("transport.protocol_version.bad", "pass"),
            ("transport.origin.foreign", "pass"),
            ("transport.host.foreign", "pass"),
            ("transport.accept", "pass"),
            ("transport.content_type", "warn"),
            ("transport.batch", "pass"),
            ("transport.error_body", "pass"),
        ],
    );
    // The modern era has no sessions: those two are skipped, the rest still apply.
    expect(
        &transport_statuses(&bench, &python.url("/mcp"), &["--era", "modern"]),
        &[
            ("transport.session.unknown", "skip"),
            ("transport.session.deleted", "skip"),
            ("transport.protocol_version.bad", "pass"),
            ("transport.origin.foreign", "pass"),
            ("transport.host.foreign", "pass"),
            ("transport.accept", "pass"),
            ("transport.content_type", "warn"),
            ("transport.batch", "pass"),
            ("transport.error_body", "pass"),
        ],
    );
}

#[test]
fn transport_checks_are_skipped_over_stdio_and_say_why() {
    let bench = Bench::new("http-transport-stdio");
    let run = bench.run(&[
        "check",
        "--no-record",
        "--json",
        "--",
        common::fixture(),
        "correct",
    ]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let transport: Vec<&Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["id"].as_str().unwrap().starts_with("transport."))
        .collect();
    assert_eq!(transport.len(), 9);
    for r in transport {
        assert_eq!(r["status"], "skip", "{r}");
        assert!(r["message"].as_str().unwrap().contains("http"), "{r}");
    }
}

/// A legacy server over JSON replies that drops the connection of the request or
/// notification whose method is `drop_on`, and answers the rest.
fn dropping_server(drop_on: &'static str) -> (u16, JoinHandle<Vec<String>>) {
    serve_bodies(3, move |_, body, _| {
        let msg: Value = serde_json::from_str(body).unwrap_or_default();
        let method = msg["method"].as_str().unwrap_or("");
        if method == drop_on {
            return String::new();
        }
        let result = match method {
            "initialize" => {
                serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "dropper", "version": "1"}})
            }
            "tools/list" => serde_json::json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            _ => return "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
        };
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}).to_string();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
            reply.len()
        )
    })
}

#[test]
fn a_dropped_notification_costs_nothing_and_a_dropped_request_is_reply_lost() {
    let bench = Bench::new("http-probe-dropped");
    let ev = bench.evidence.to_str().unwrap().to_string();
    let (port, server) = dropping_server("notifications/initialized");
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(tool_names(&bench.last_block()), ["t"]);
    server.join().unwrap();

    let (port, server) = dropping_server("tools/list");
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["reply_lost"]);
    let x = &b["http"]["connections"][0]["exchanges"][2];
    assert_eq!(
        (x["rpc_method"].as_str(), x["status"].as_u64()),
        (Some("tools/list"), None)
    );
    server.join().unwrap();
}

#[test]
fn an_https_url_or_one_with_credentials_is_a_usage_error_that_says_what_to_do() {
    let bench = Bench::new("http-probe-bad-url");
    let ev = bench.evidence.to_str().unwrap().to_string();
    // The default build has no TLS and names the feature (tests/https_probe.rs covers it).
    if cfg!(not(feature = "https")) {
        let run = bench.run(&["probe", "-e", &ev, "--url", "https://127.0.0.1:9/mcp"]);
        assert_eq!(run.code, 2);
        assert!(
            run.stderr.contains("cargo install mcp-witness --features https"),
            "{}",
            run.stderr
        );
    }
    let run = bench.run(&["probe", "-e", &ev, "--url", "http://me:pa55word@127.0.0.1:9/mcp"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("--header-env"), "{}", run.stderr);
    assert!(!run.stderr.contains("pa55word"), "{}", run.stderr);
    assert!(bench.blocks().is_empty(), "a usage error records nothing");
}

#[test]
fn the_python_sdk_sse_server_is_probed_and_checked_over_the_http_sse_fallback() {
    let bench = Bench::new("http-probe-python-sse");
    let server = python_server(&["--sse"], &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--url", &server.url("/sse")]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["target"]["transport"], "http_sse");
    assert_eq!(tool_names(&b), ["add", "echo"]);
    // The Python SDK answers the initialize POST to its stream URL with 405.
    assert_eq!(b["http"]["connections"][0]["exchanges"][0]["status"], 405);
    no_reader_left(&b);
    reverifies(&bench);

    let run = bench.run(&["check", "--no-record", "--json", "--url", &server.url("/sse")]);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let status = |id: &str| -> String {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(report["target"]["transport"], "http_sse");
    assert_eq!(status("pagination.tools"), "pass");
    // The side runs take the same fallback.
    assert_eq!(status("protocol.version_negotiation.unknown"), "pass", "{report}");
    assert_eq!(status("protocol.version_negotiation.older"), "pass");
    // The Streamable HTTP transport checks do not apply.
    assert_eq!(status("transport.session.unknown"), "skip");
    assert_eq!(status("transport.origin.foreign"), "skip");
}

#[test]
fn probe_and_check_agree_over_http_on_era_version_and_server_in_every_era_choice() {
    let bench = Bench::new("http-agreement");
    let everything = everything("streamableHttp", &bench);
    let python = python_server(&["--json", "--stateless"], &bench);
    for url in [everything.url("/mcp"), python.url("/mcp")] {
        for era in ["legacy", "modern", "auto"] {
            let probe = bench.run(&["probe", "--no-record", "--json", "--era", era, "--url", &url]);
            let check = bench.run(&["check", "--no-record", "--json", "--era", era, "--url", &url]);
            let p: Value = serde_json::from_str(&probe.stdout).unwrap();
            let c: Value = serde_json::from_str(&check.stdout).unwrap();
            let seen = |v: &Value| {
                (
                    v["era"].clone(),
                    v["protocol_version"].clone(),
                    v["server"]["name"].clone(),
                )
            };
            assert_eq!(
                seen(&p),
                seen(&c),
                "{url} {era}: probe {} / check {}",
                probe.stdout,
                check.stdout
            );
        }
    }
}

#[test]
fn a_modern_tool_call_mirrors_its_method_and_name_in_headers_the_python_sdk_validates() {
    let bench = Bench::new("http-probe-modern-call");
    let server = python_server(&["--json", "--stateless"], &bench);
    let ev = bench.evidence.to_str().unwrap().to_string();
    // The SDK answers -32020 when Mcp-Method or Mcp-Name is missing or differs (HTTP-NOTES).
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--era",
        "modern",
        "--url",
        &server.url("/mcp"),
        "--call",
        "echo",
        "--call-args",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["call"]["outcome"], "ok", "{}", b["call"]);
    let x = &b["http"]["connections"][0]["exchanges"][2];
    assert_eq!(
        (x["rpc_method"].as_str(), x["status"].as_u64()),
        (Some("tools/call"), Some(200))
    );
}

/// Reads one request (head and body) from `s`.
fn read_request(s: &mut TcpStream) -> (String, String) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (head, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn a_server_request_inside_a_reply_stream_is_answered_by_a_post_of_its_own() {
    use std::sync::mpsc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (answered_tx, answered_rx) = mpsc::channel::<String>();
    let answered_rx = std::sync::Arc::new(std::sync::Mutex::new(answered_rx));
    let server = std::thread::spawn(move || {
        let mut handlers = Vec::new();
        // initialize, initialized, tools/list, the ping's answer, DELETE (none: no session).
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            let answered_tx = answered_tx.clone();
            let answered_rx = answered_rx.clone();
            handlers.push(std::thread::spawn(move || {
                let (_, body) = read_request(&mut s);
                let msg: Value = serde_json::from_str(&body).unwrap_or_default();
                let json = |v: Value| {
                    let t = v.to_string();
                    format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{t}", t.len())
                };
                match msg["method"].as_str() {
                    Some("initialize") => {
                        let r = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "asker", "version": "1"}}});
                        let _ = s.write_all(json(r).as_bytes());
                    }
                    Some("tools/list") => {
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
                        let _ = s.write_all(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n\n");
                        let _ = s.flush();
                        // The list comes once the ping was answered (or after 10 s, failing).
                        let got = answered_rx.lock().unwrap().recv_timeout(Duration::from_secs(10));
                        let tools = if got.is_ok() { r#"[{"name":"t","inputSchema":{"type":"object"}}]"# } else { "[]" };
                        let event = format!(
                            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"tools\":{tools}}}}}\n\n",
                            msg["id"]
                        );
                        let _ = s.write_all(event.as_bytes());
                    }
                    _ => {
                        if msg["id"] == "s1" && msg.get("result").is_some() {
                            let _ = answered_tx.send(body.clone());
                        }
                        let _ = s.write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    }
                }
            }));
        }
        for h in handlers {
            let _ = h.join();
        }
    });
    let bench = Bench::new("http-probe-server-request");
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(tool_names(&b), ["t"]);
    let requests = &b["messages"]["server_requests"];
    assert_eq!(requests["requests"][0]["method"], "ping");
    assert_eq!(requests["requests"][0]["answer"], "{}");
    server.join().unwrap();
}

#[test]
fn a_server_that_never_answers_is_inconclusive_no_reply_and_its_reader_is_stopped() {
    let bench = Bench::new("http-probe-silent");
    // Holds the initialize POST open, answering nothing, until the probe has given up.
    let (port, server) = serve_bodies(1, |_, _, _| {
        std::thread::sleep(Duration::from_secs(3));
        String::new()
    });
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--timeout",
        "0.5",
        "--url",
        &format!("http://127.0.0.1:{port}/mcp"),
    ]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["no_reply"]);
    assert!(!b["reasons"][0]["message"].as_str().unwrap().contains("alive"));
    assert_eq!(b["silence"]["step"], "initialize");
    no_reader_left(&b);
    server.join().unwrap();
}
