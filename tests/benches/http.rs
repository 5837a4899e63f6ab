//! HTTP benchmark (run with `cargo bench --bench http`): one Streamable HTTP session through
//! `HttpWire` (initialize, notifications/initialized, tools/list, DELETE) against the same four
//! requests made with curl, one process per request as a shell script would, on
//! server-everything (`streamableHttp`) and on the Python SDK fixture (JSON replies), both on
//! 127.0.0.1. Medians; `MCP_WITNESS_BENCH_RUNS` changes the 40 runs. Needs the reference
//! servers (`tests/setup/install-reference-servers`) and curl; says so and stops otherwise.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_witness::http::{HttpOptions, HttpUrl, HttpWire, Sent, WireEvent};
use serde_json::Value;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        println!("benchmarks run with `cargo bench`");
        return;
    }
    let dir = std::env::var_os("MCP_WITNESS_REFERENCE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/reference-servers"));
    let everything = dir.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !everything.exists() || Command::new("curl").arg("--version").output().is_err() {
        println!(
            "http bench: needs the reference servers in {} (tests/setup/install-reference-servers) and curl",
            dir.display()
        );
        return;
    }
    let runs: usize = std::env::var("MCP_WITNESS_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    println!("HTTP session, HttpWire against curl ({runs} runs each, medians)");

    let port = free_port();
    let mut node = Command::new("node");
    node.arg("--require")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/http-servers/loopback-listen.cjs"
        ))
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    compare("server-everything (SSE replies)", node, port, runs);

    let port = free_port();
    let mut py = Command::new(dir.join("venv/bin/python"));
    py.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/http-servers/py_streamable.py"
    ))
    .arg(port.to_string())
    .arg("--json");
    compare("Python SDK (JSON replies)", py, port, runs);
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn compare(label: &str, mut cmd: Command, port: u16, runs: usize) {
    let server = Server(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts"),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < until, "{label}: never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    // Warm both paths (JIT, imports) before measuring.
    for _ in 0..3 {
        wire_session(&url);
        curl_session(&url);
    }
    let mut wire = Vec::new();
    let mut curl = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        wire_session(&url);
        wire.push(t.elapsed());
        let t = Instant::now();
        curl_session(&url);
        curl.push(t.elapsed());
    }
    let (w, c) = (median(wire), median(curl));
    println!(
        "  {label}: curl {:.2} ms, HttpWire {:.2} ms: {:+.2} ms",
        ms(c),
        ms(w),
        ms(w) - ms(c)
    );
    drop(server);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn reply(w: &mut HttpWire, id: u64) -> Value {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match w.next(until).expect("a reply in time") {
            WireEvent::Message(m) => {
                let v: Value = serde_json::from_slice(&m).unwrap();
                if v["id"] == id {
                    return v;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn wire_session(url: &str) {
    let deadline = || Instant::now() + Duration::from_secs(10);
    let mut w = HttpWire::connect(HttpUrl::parse(url).unwrap(), vec![], HttpOptions::default()).unwrap();
    assert!(matches!(w.send(INIT.into(), deadline()), Sent::Posted { .. }));
    let init = reply(&mut w, 1);
    w.set_protocol_version(init["result"]["protocolVersion"].as_str().unwrap());
    assert!(matches!(
        w.send(INITIALIZED.into(), deadline()),
        Sent::Posted { .. }
    ));
    assert!(matches!(w.send(LIST.into(), deadline()), Sent::Posted { .. }));
    let tools = reply(&mut w, 2);
    assert!(tools["result"]["tools"].is_array());
    let end = w.close(deadline());
    assert!(end.delete.accepted(), "{:?}", end.delete);
}

fn curl(url: &str, args: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "10"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn curl_session(url: &str) {
    let json = ["-H", "Content-Type: application/json"];
    let accept = ["-H", "Accept: application/json, text/event-stream"];
    let post = |extra: &[&str], body: &str| {
        let mut args: Vec<&str> = vec!["-X", "POST", "--data-binary", body];
        args.extend(json);
        args.extend(accept);
        args.extend(extra);
        curl(url, &args)
    };
    let head = post(&[], INIT);
    let sid = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .expect("a session id");
    let sid_h = format!("Mcp-Session-Id: {sid}");
    let ver = "MCP-Protocol-Version: 2025-11-25";
    post(&["-H", &sid_h, "-H", ver], INITIALIZED);
    let list = post(&["-H", &sid_h, "-H", ver], LIST);
    assert!(list.contains("\"tools\""));
    curl(url, &["-X", "DELETE", "-H", &sid_h, "-H", ver]);
}
