//! `probe --url https://…` end to end (cargo feature `https`): the Python SDK's Streamable
//! HTTP server behind TLS on 127.0.0.1, with a certificate authority and a server
//! certificate made by `openssl` for each test. The block records the SHA-256 of the
//! server's certificate (compared with `openssl x509 -fingerprint -sha256`); an untrusted
//! certificate and a plain-http server are `tls_failed`, with what to do.
//!
//! Run with `cargo test --features https --test https_probe` (tests/run does).
#![cfg(feature = "https")]

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Bench, ServerProcess, free_port, reason_codes, tool_names};

/// The Python SDK server of tests/http-servers/py_streamable.py with `args`, once it accepts.
fn python_server(args: &[&str], bench: &Bench) -> ServerProcess {
    let port = free_port();
    let mut cmd = Command::new(common::reference_dir().join("venv/bin/python"));
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/http-servers/py_streamable.py"
    ))
    .arg(port.to_string())
    .args(args);
    ServerProcess::start(cmd, port, bench.dir.path())
}

/// Runs openssl with `args` in `dir`; a missing openssl fails with what to install.
fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("openssl is needed to make test certificates ({e}): install it (apt-get install openssl)")
        });
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Certificates for 127.0.0.1 in `dir`: a test CA, and a server certificate it signed.
struct Certs {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn make_certs(dir: &Path) -> Certs {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    let mut ca = vec!["req", "-x509"];
    ca.extend_from_slice(&ec);
    ca.extend_from_slice(&[
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=mcp-witness test CA",
    ]);
    openssl(dir, &ca);
    let mut csr = vec!["req"];
    csr.extend_from_slice(&ec);
    csr.extend_from_slice(&[
        "-keyout",
        "key.pem",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "cert.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    Certs {
        ca: dir.join("ca.pem"),
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    }
}

/// `openssl x509 -fingerprint -sha256` of `cert`, as lower-case hex without colons.
fn fingerprint(cert: &Path) -> String {
    let out = openssl(
        cert.parent().unwrap(),
        &[
            "x509",
            "-in",
            cert.to_str().unwrap(),
            "-noout",
            "-fingerprint",
            "-sha256",
        ],
    );
    let hex = out.trim().rsplit('=').next().unwrap();
    hex.replace(':', "").to_ascii_lowercase()
}

fn tls_server(certs: &Certs, bench: &Bench) -> ServerProcess {
    python_server(
        &[
            "--json",
            "--tls",
            certs.cert.to_str().unwrap(),
            certs.key.to_str().unwrap(),
        ],
        bench,
    )
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

#[test]
fn https_with_cacert_passes_and_records_the_sha256_of_the_servers_certificate() {
    let bench = Bench::new("https-probe-cacert");
    let certs = make_certs(bench.dir.path());
    let server = tls_server(&certs, &bench);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--era",
        "legacy",
        "--url",
        &url,
        "--cacert",
        certs.ca.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "pass");
    assert_eq!(b["target"]["url"], url.as_str());
    assert_eq!(tool_names(&b), ["add", "echo"]);
    let recorded = b["http"]["certificate_sha256"]
        .as_str()
        .expect("the certificate's digest");
    assert_eq!(recorded, fingerprint(&certs.cert));
    // The CA's own certificate is not the one recorded: the leaf the server presented is.
    assert_ne!(recorded, fingerprint(&certs.ca));
    reverifies(&bench);
    let verify = bench.run(&["verify", &ev]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

#[test]
fn https_without_cacert_fails_tls_failed_naming_cacert_and_records_no_certificate() {
    let bench = Bench::new("https-probe-untrusted");
    let certs = make_certs(bench.dir.path());
    let server = tls_server(&certs, &bench);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&["probe", "-e", &ev, "--era", "legacy", "--url", &url]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["verdict"], "fail");
    assert_eq!(reason_codes(&b), ["tls_failed"]);
    let message = b["reasons"][0]["message"].as_str().unwrap();
    assert!(message.contains("--cacert"), "{message}");
    assert!(b["http"].get("certificate_sha256").is_none(), "{}", b["http"]);
    reverifies(&bench);
}

#[test]
fn a_plain_http_server_given_an_https_url_fails_cleanly_as_tls_failed() {
    let bench = Bench::new("https-probe-plain");
    let certs = make_certs(bench.dir.path());
    let server = python_server(&["--json"], &bench);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--era",
        "legacy",
        "--url",
        &url,
        "--cacert",
        certs.ca.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["tls_failed"]);
    let message = b["reasons"][0]["message"].as_str().unwrap();
    assert!(message.contains("speaks https"), "{message}");
}

#[test]
fn a_cacert_file_without_a_certificate_is_a_usage_error_that_says_what_to_give() {
    let bench = Bench::new("https-probe-bad-cacert");
    let url = format!("https://127.0.0.1:{}/mcp", free_port());
    let not_pem = bench.dir.join("not.pem");
    std::fs::write(&not_pem, "no certificate here\n").unwrap();
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--url",
        &url,
        "--cacert",
        not_pem.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("BEGIN CERTIFICATE"), "{}", run.stderr);
    assert!(bench.blocks().is_empty(), "nothing is recorded for a usage error");
}

#[test]
fn check_over_https_runs_the_transport_checks_through_tls_and_records_the_certificate() {
    let bench = Bench::new("https-check-cacert");
    let certs = make_certs(bench.dir.path());
    let server = tls_server(&certs, &bench);
    let url = format!("https://127.0.0.1:{}/mcp", server.port);
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "check",
        "-e",
        &ev,
        "--era",
        "legacy",
        "--url",
        &url,
        "--cacert",
        certs.ca.to_str().unwrap(),
    ]);
    assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(b["kind"], "check");
    assert_eq!(
        b["session"]["http"]["certificate_sha256"].as_str(),
        Some(fingerprint(&certs.cert).as_str())
    );
    // The transport checks make their own connections: they went through TLS too.
    let status = |id: &str| {
        b["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("transport.session.unknown").as_deref(), Some("pass"));
    assert_eq!(status("transport.protocol_version.bad").as_deref(), Some("pass"));
    reverifies(&bench);
}

#[test]
fn a_server_trickling_its_tls_handshake_is_cut_off_at_the_reply_bound() {
    use std::io::Write;
    let bench = Bench::new("https-probe-trickle");
    let certs = make_certs(bench.dir.path());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A handshake record header announcing 16 KiB, then one byte every 50 ms: each socket
    // read gets a byte well within the reply bound, so only a deadline over the whole
    // handshake ends the wait.
    let server = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let _ = sock.write_all(&[0x16, 0x03, 0x03, 0x40, 0x00]);
        for _ in 0..2000 {
            if sock.write_all(&[0]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let ev = bench.evidence.to_str().unwrap().to_string();
    let run = bench.run(&[
        "probe",
        "-e",
        &ev,
        "--era",
        "legacy",
        "--timeout",
        "0.5",
        "--url",
        &format!("https://127.0.0.1:{port}/mcp"),
        "--cacert",
        certs.ca.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let b = bench.last_block();
    assert_eq!(reason_codes(&b), ["unreachable"]);
    let exchange = &b["http"]["connections"][0]["exchanges"][0];
    assert_eq!(exchange["error"], "timed_out", "{exchange}");
    server.join().unwrap();
}
