//! Shared helpers for the integration tests: temporary folders, running the real binaries,
//! reading evidence back.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

pub const WITNESS: &str = env!("CARGO_BIN_EXE_mcp-witness");
pub use fixture::fixture;

pub mod fixture;

/// A temporary folder, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!(
            "mcpw-test-{label}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        // Private (0700): keys live here, and a key in a folder others may write is refused.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&dir)
            .unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The outcome of one `mcp-witness` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Every domain of the client kit as `drive --domain all` runs it and a client block judges
/// it: the three list_changed domains, then the flows.
#[allow(dead_code)]
pub const EVERY_KIT_DOMAIN: [&str; 12] = [
    "tools",
    "resources",
    "prompts",
    "roots",
    "elicitation",
    "sampling",
    "logging",
    "completion",
    "subscriptions",
    "progress",
    "elicitation-url",
    "elicitation-undeclared",
];

/// The longest any one command of a test may run: a hang is a failure with a dump, never a
/// CI job that runs until it is killed.
pub const COMMAND_BOUND: std::time::Duration = std::time::Duration::from_secs(240);

/// Runs `cmd` to its end like `Command::output`, but at most `COMMAND_BOUND`: past it the
/// command is killed and the test fails with the command, its folder and what it printed.
pub fn bounded_output(cmd: &mut Command) -> Output {
    use std::io::Read;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the command") {
            break status;
        }
        if start.elapsed() > COMMAND_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            let stdout = String::from_utf8_lossy(&out.join().unwrap_or_default()).into_owned();
            let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
            panic!(
                "command ran past {COMMAND_BOUND:?} and was killed\ncommand: {cmd:?}\ncwd: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                cmd.get_current_dir()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Runs `mcp-witness` with `args`, in `cwd`, with a private key in `dir`.
pub fn witness(dir: &TempDir, args: &[&str]) -> Run {
    let out = bounded_output(
        Command::new(WITNESS)
            .args(args)
            .current_dir(dir.path())
            .env("MCP_WITNESS_KEY", dir.join("signing.key"))
            .env("MCP_WITNESS_DIGEST_CACHE", dir.join("digests"))
            .stdin(Stdio::null()),
    );
    Run::from(out)
}

/// A test bench: a folder with a key and one evidence file.
pub struct Bench {
    pub dir: TempDir,
    pub evidence: PathBuf,
}

impl Bench {
    pub fn new(label: &str) -> Bench {
        let dir = TempDir::new(label);
        let evidence = dir.join("evidence.jsonl");
        Bench { dir, evidence }
    }

    /// `probe -e <evidence> <extra> -- <fixture> <behaviour...>`
    pub fn probe_fixture(&self, extra: &[&str], behaviour: &[&str]) -> Run {
        let ev = self.evidence.to_str().unwrap().to_string();
        let mut args = vec!["probe", "-e", &ev];
        args.extend_from_slice(extra);
        args.push("--");
        args.push(fixture());
        args.extend_from_slice(behaviour);
        witness(&self.dir, &args)
    }

    pub fn run(&self, args: &[&str]) -> Run {
        witness(&self.dir, args)
    }

    /// Every block in the evidence file.
    pub fn blocks(&self) -> Vec<Value> {
        match std::fs::read_to_string(&self.evidence) {
            Ok(text) => text.lines().map(|l| serde_json::from_str(l).unwrap()).collect(),
            Err(_) => Vec::new(),
        }
    }

    pub fn last_block(&self) -> Value {
        self.blocks().pop().expect("a block was recorded")
    }

    pub fn public_key(&self) -> String {
        let run = self.run(&["key"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout.trim().to_string()
    }
}

/// Pids of live processes whose environment holds `marker` (as `KEY=VALUE`).
pub fn processes_with_env(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')))
            .is_some_and(|zombie| !zombie);
        if live && env.split(|&b| b == 0).any(|kv| kv == marker.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// A marker unique to this test run, for `processes_with_env`.
pub fn unique_marker(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("MCPW_TEST_MARKER={label}-{}-{nanos}", std::process::id())
}

/// Names of the reasons in a block.
pub fn reason_codes(block: &Value) -> Vec<String> {
    block["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap().to_string())
        .collect()
}

pub fn tool_names(block: &Value) -> Vec<String> {
    block["tools"]["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// Where `tests/setup/install-reference-servers` put the real servers. Fails the test with
/// the command to run when they are not installed: a reference test never skips quietly.
pub fn reference_dir() -> PathBuf {
    let dir = install_root();
    let marker = dir.join("node/node_modules/@modelcontextprotocol/server-everything/package.json");
    assert!(
        marker.exists() && dir.join("venv/bin/mcp-server-time").exists(),
        "reference servers are not installed in {}: run tests/setup/install-reference-servers (tests/run does)",
        dir.display()
    );
    dir
}

/// An independent, minimal client: sends initialize, initialized and tools/list over real
/// pipes and returns the tool names exactly as the server replied. It shares no code with
/// mcp-witness, so the probe's record can be checked against it.
pub fn tool_names_by_hand(argv: &[String]) -> Vec<String> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server starts");
    let mut stdin = child.stdin.take().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"by-hand","version":"0"}}}"#;
    writeln!(stdin, "{init}").unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut names = None;
    let mut line = String::new();
    while names.is_none() {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["id"] == 1 && msg.get("result").is_some() {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
            )
            .unwrap();
            writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
        }
        if msg["id"] == 2 {
            names = Some(
                msg["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_string())
                    .collect(),
            );
        }
    }
    drop(stdin);
    let _ = child.wait();
    names.expect("the server answered tools/list")
}

/// The verifier venv's python (PyNaCl, jsonschema). Fails the test with the command to run
/// when it is missing.
pub fn verifier_python() -> PathBuf {
    let dir = install_root();
    let python = dir.join("verifier-venv").join("bin").join("python");
    assert!(
        python.exists(),
        "the Python verifier's venv is not installed at {}: run tests/setup/install-verifier-tools (tests/run does)",
        python.parent().unwrap().parent().unwrap().display()
    );
    python
}

/// Where tests/setup installs things: `$MCP_WITNESS_REFERENCE_DIR`, else target/reference-servers.
fn install_root() -> PathBuf {
    std::env::var_os("MCP_WITNESS_REFERENCE_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target")
                .join("reference-servers")
        })
}

/// A local server process of a test (an HTTP server on 127.0.0.1), killed and reaped when
/// dropped; its stdout and stderr go to `log`.
pub struct ServerProcess {
    pub child: std::process::Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerProcess {
    /// Starts `cmd` (which must listen on `port` at 127.0.0.1), its output to
    /// `dir/server.log`, and waits until it accepts: 60 s at most, and a failure with the log
    /// when it exits first.
    pub fn start(mut cmd: Command, port: u16, dir: &Path) -> ServerProcess {
        use std::time::{Duration, Instant};
        let log = dir.join("server.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("the server starts");
        let mut server = ServerProcess { child, port, log };
        let until = Instant::now() + Duration::from_secs(60);
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!(
                    "the server exited ({status}) before listening:\n{}",
                    std::fs::read_to_string(&server.log).unwrap_or_default()
                );
            }
            assert!(Instant::now() < until, "the server never listened on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One GET of an `http://` URL on its own connection, as a browser opens a page (the client
/// kit's loopback elicitation page): the status code.
pub fn http_get_status(url: &str) -> u16 {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    all.get(9..12)
        .and_then(|c| c.parse().ok())
        .expect("an HTTP status line")
}
