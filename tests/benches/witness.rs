//! Benchmarks that print figures side by side (run with `cargo bench`):
//!
//! 1. probe overhead: `mcp-witness probe` (recording, fsync) of the instant fixture server,
//!    against the same server answering the same three messages fed from a file; the same for
//!    the rmcp example server (tests/rmcp-server, built offline when cargo can; skipped, saying
//!    why, when it cannot).
//! 2. verify of a 100,000-block file, against a bare loop of `verify_strict` over the same
//!    signatures on all cores; and verify's peak memory.
//!    And verify of blocks that each carry a different key, against the same count with one
//!    key (the per-block cost must not grow with the number of distinct keys).
//! 3. append to a 1,000,000-block file, against append to a 1-block file.
//! 4. `check` (the whole suite) against one `probe`, of the instant fixture, of a fixture
//!    that takes 2 s to start, and of server-everything.
//! 5. what the security group adds to `check`: the suite with `--skip security` against the
//!    whole suite, on the poisoned fixture and on 10,000 tools of about 2 KB each.
//! 6. JSON Schema validation (`mcp_witness::jsonschema`) of tool arguments against a typical
//!    MCP tool `inputSchema`, against parsing the same arguments from JSON text.
//! 7. what the checks past the lists, the negative protocol cases and the traffic group add to
//!    a check of server-everything (`--skip` of them against the whole suite).
//! 8. what the wire group (every message validated) adds, measured the same way with
//!    `--skip wire`.
//!
//! `MCP_WITNESS_BENCH_BLOCKS` changes the 100,000 of 2; `MCP_WITNESS_BENCH_APPEND_BLOCKS` the
//! 1,000,000 of 3 (the file is generated, about 2 KB a block); `MCP_WITNESS_BENCH_KEY_BLOCKS`
//! the 20,000 blocks of the distinct-keys comparison; `MCP_WITNESS_BENCH_RUNS` the repetitions;
//! `MCP_WITNESS_BENCH_ONLY=1,3` runs only the numbered comparisons;
//! `MCP_WITNESS_BENCH_KEEP=1` keeps the generated files for a closer look.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use mcp_witness::evidence::append::append;
use mcp_witness::evidence::block::{GENESIS_PREV, Link, seal};
use serde_json::{Map, Value};
use sha2::Digest;

const WITNESS: &str = env!("CARGO_BIN_EXE_mcp-witness");
#[path = "../common/fixture.rs"]
mod fixture_path;
use fixture_path::fixture;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcpw-bench-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    // Private (0700): the probe key lives here, and a key folder others may write is refused.
    std::os::unix::fs::DirBuilderExt::mode(fs::DirBuilder::new().recursive(true), 0o700)
        .create(&dir)
        .unwrap();
    dir
}

fn main() {
    // `cargo test --all-targets` runs benches as tests: keep that quick.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        println!("benchmarks run with `cargo bench`");
        return;
    }
    let dir = scratch();
    let runs = env_usize("MCP_WITNESS_BENCH_RUNS", 40);
    let blocks = env_usize("MCP_WITNESS_BENCH_BLOCKS", 100_000);
    println!(
        "mcp-witness benchmarks ({} cores, {runs} runs each, medians)",
        cores()
    );
    let only = std::env::var("MCP_WITNESS_BENCH_ONLY").unwrap_or_default();
    let wanted = |n: &str| only.is_empty() || only.split(',').any(|o| o.trim() == n);
    if wanted("1") {
        probe_overhead(&dir, runs);
    }
    if wanted("2") {
        verify_vs_bare(&dir, blocks);
        verify_distinct_keys(&dir, env_usize("MCP_WITNESS_BENCH_KEY_BLOCKS", 20_000));
    }
    if wanted("3") {
        let append_blocks = env_usize("MCP_WITNESS_BENCH_APPEND_BLOCKS", 1_000_000);
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let big = dir.join("append-big.jsonl");
        let body = sample_body(&dir);
        generate(&big, append_blocks, &body, &|_| key.clone());
        append_cost(&dir, &big, append_blocks, &key, runs.max(20));
        let _ = fs::remove_file(&big);
    }
    if wanted("4") {
        check_vs_probe(&dir, env_usize("MCP_WITNESS_BENCH_CHECK_RUNS", 7));
    }
    if wanted("5") {
        group_cost(
            &dir,
            env_usize("MCP_WITNESS_BENCH_CHECK_RUNS", 7),
            "5",
            "security",
        );
    }
    if wanted("6") {
        schema_validation();
    }
    if wanted("7") {
        past_lists_cost(&dir, env_usize("MCP_WITNESS_BENCH_CHECK_RUNS", 7));
    }
    if wanted("8") {
        group_cost(&dir, env_usize("MCP_WITNESS_BENCH_CHECK_RUNS", 7), "8", "wire");
    }
    if std::env::var_os("MCP_WITNESS_BENCH_KEEP").is_some() {
        println!("   (kept {})", dir.display());
    } else {
        let _ = fs::remove_dir_all(&dir);
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Bench 1: what a probe costs beyond the server's own work, on the fixture and on the
/// rmcp example server (when it builds).
fn probe_overhead(dir: &Path, runs: usize) {
    probe_overhead_of(dir, runs, "fixture", &[fixture(), "correct"]);
    match rmcp_server() {
        Ok(server) => {
            let server = server.display().to_string();
            probe_overhead_of(dir, runs, "rmcp example server", &[server.as_str()]);
        }
        Err(why) => println!("   (rmcp example server skipped: {why})"),
    }
}

/// Builds tests/rmcp-server (the official Rust SDK's shape of server; its own workspace and
/// lock file, never a dependency of mcp-witness) offline, from crates fetched before.
fn rmcp_server() -> Result<PathBuf, String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rmcp-server/Cargo.toml");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
            PathBuf::from,
        )
        .join("rmcp-server");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--offline", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .map_err(|e| format!("cargo could not run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!(
            "it did not build offline ({first}); fetch its crates once with `cargo fetch --manifest-path {}`",
            manifest.display()
        ));
    }
    Ok(target.join("release/mcp-witness-rmcp-server"))
}

fn probe_overhead_of(dir: &Path, runs: usize, label: &str, server: &[&str]) {
    let messages = dir.join("messages.jsonl");
    fs::write(
        &messages,
        concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n"
        ),
    )
    .unwrap();
    let evidence = dir.join(format!("probe-{}.jsonl", label.replace(' ', "-")));
    let key = dir.join("probe.key");
    let fed = || {
        let start = Instant::now();
        let status = Command::new(server[0])
            .args(&server[1..])
            .stdin(fs::File::open(&messages).unwrap())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        start.elapsed()
    };
    let probed = || {
        let start = Instant::now();
        let status = Command::new(WITNESS)
            .args([
                "probe",
                "--key",
                key.to_str().unwrap(),
                "-e",
                evidence.to_str().unwrap(),
                "--",
            ])
            .args(server)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        start.elapsed()
    };
    // Warm up (and create the key).
    fed();
    probed();
    let mut a = Vec::new();
    let mut b = Vec::new();
    for _ in 0..runs {
        a.push(fed());
        b.push(probed());
    }
    let (a, b) = (median(a), median(b));
    println!(
        "1. probe overhead, {label}: the server fed from a file {:.2} ms | mcp-witness probe (recording, fsync) {:.2} ms | overhead {:.2} ms (target <= 1.5 ms)",
        ms(a),
        ms(b),
        ms(b.saturating_sub(a))
    );
}

/// A realistic block body: a real probe of the fixture, recorded once.
fn sample_body(dir: &Path) -> Map<String, Value> {
    let out = Command::new(WITNESS)
        .args([
            "probe",
            "--no-record",
            "--json",
            "--call",
            "echo",
            "--call-args",
            r#"{"text":"bench"}"#,
            "--",
            fixture(),
            "banner",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// 2. verify against the bare signature loop.
fn verify_vs_bare(dir: &Path, blocks: usize) {
    let key = SigningKey::from_bytes(&[7u8; 32]);
    let body = sample_body(dir);
    let path = dir.join("big.jsonl");
    let sigs = generate(&path, blocks, &body, &|_| key.clone());

    let verifying: VerifyingKey = key.verifying_key();
    let bare = bare_loop(&sigs, &verifying);

    // Where one block's time goes, on one core.
    let (per_check, per_sig, per_beyond, size, sha) = per_block(&path, &sigs, &verifying);
    print_per_block(None, per_check, per_sig, per_beyond);
    // The same for a block of about 2 KB, the target's size: this body without its surface
    // and its stdout noise lines.
    let mut small = body.clone();
    small.insert("surface".into(), Value::Null);
    small.insert(
        "stdout_noise".into(),
        serde_json::json!({"count": 0, "crlf_lines": 0, "lines": []}),
    );
    mcp_witness::evidence::kind::BlockKind::Probe.refresh_digests(&mut small);
    let small_path = dir.join("small.jsonl");
    let small_sigs = generate(&small_path, 5000, &small, &|_| key.clone());
    let (per_check, per_sig, per_beyond, small_size, small_sha) =
        per_block(&small_path, &small_sigs, &verifying);
    print_per_block(Some(small_size), per_check, per_sig, per_beyond);
    println!(
        "   (of the work beyond verify_strict, SHA-256 of the line alone, which the hash check cannot skip: {:.1} us a block of {size} bytes, {:.1} us of {small_size} bytes)",
        sha.as_secs_f64() * 1e6,
        small_sha.as_secs_f64() * 1e6
    );

    let public = mcp_witness::evidence::keys::public_text(&verifying);
    // The issue's ratio was of 2.2 KB blocks: the same comparison on those.
    let small_bare = median((0..5).map(|_| bare_loop(&small_sigs, &verifying)).collect());
    let small_full = median(
        (0..5)
            .map(|_| {
                let start = Instant::now();
                let status = Command::new(WITNESS)
                    .args(["verify", "--trust", &public])
                    .arg(&small_path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success(), "verify of the generated file failed");
                start.elapsed()
            })
            .collect(),
    );
    println!(
        "   (the same on {} blocks of {small_size} bytes: bare loop {:.3} s | mcp-witness verify {:.3} s (medians of 5) | ratio {:.2})",
        small_sigs.len(),
        small_bare.as_secs_f64(),
        small_full.as_secs_f64(),
        small_full.as_secs_f64() / small_bare.as_secs_f64()
    );
    let (full, peak_kb) = time_verify(&path, Some(&public));
    println!(
        "2. verify {blocks} blocks: bare verify_strict loop on {} cores {:.2} s | mcp-witness verify {:.2} s | ratio {:.2} (target <= 1.1) | peak RSS {:.1} MiB (sampled; target < 64 MiB)",
        cores(),
        bare.as_secs_f64(),
        full.as_secs_f64(),
        full.as_secs_f64() / bare.as_secs_f64(),
        peak_kb as f64 / 1024.0
    );
}

/// The bare `verify_strict` of every signature, split across the cores.
fn bare_loop(sigs: &[([u8; 32], Signature)], verifying: &VerifyingKey) -> Duration {
    let start = Instant::now();
    std::thread::scope(|s| {
        for chunk in sigs.chunks(sigs.len().div_ceil(cores())) {
            s.spawn(move || {
                for (hash, sig) in chunk {
                    verifying.verify_strict(hash, sig).unwrap();
                }
            });
        }
    });
    start.elapsed()
}

/// One line of per-block figures: the work beyond `verify_strict` measured directly (the
/// whole check but the signature, keys already decoded) and as the difference of the two
/// loops (which carries both loops' noise).
fn print_per_block(size: Option<usize>, check: Duration, sig: Duration, beyond: Duration) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let of = size.map_or(String::new(), |s| format!(" of {s} bytes"));
    println!(
        "   (one core, per block{of}: work beyond verify_strict {:.1} us, target <= 5 us; full line check {:.1} us, verify_strict {:.1} us, difference {:.1} us)",
        us(beyond),
        us(check),
        us(sig),
        us(check) - us(sig)
    );
}

/// One block's full line check, its bare `verify_strict`, and the check without the
/// signature, on one core; the blocks' mean size; and SHA-256 of a whole line: each the
/// fastest of seven rounds over the same 1,000 blocks, taken in turn, so that other work on
/// a shared machine does not land on one side.
fn per_block(
    path: &Path,
    sigs: &[([u8; 32], Signature)],
    verifying: &VerifyingKey,
) -> (Duration, Duration, Duration, usize, Duration) {
    let text = fs::read(path).unwrap();
    let sample: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .take(1000)
        .collect();
    let size = sample.iter().map(|l| l.len()).sum::<usize>() / sample.len();
    let n = sample.len() as u32;
    let (mut per_check, mut per_sig, mut per_sha) = (Duration::MAX, Duration::MAX, Duration::MAX);
    let mut per_beyond = Duration::MAX;
    let mut cache = mcp_witness::evidence::block::KeyCache::default();
    for _ in 0..7 {
        let start = Instant::now();
        for line in &sample {
            mcp_witness::evidence::block::check_line_with(line, &mut cache).unwrap();
        }
        per_check = per_check.min(start.elapsed() / n);
        let start = Instant::now();
        for (hash, sig) in &sigs[..sample.len()] {
            verifying.verify_strict(hash, sig).unwrap();
        }
        per_sig = per_sig.min(start.elapsed() / n);
        let start = Instant::now();
        for line in &sample {
            mcp_witness::evidence::block::check_line_content_with(line, &mut cache).unwrap();
        }
        per_beyond = per_beyond.min(start.elapsed() / n);
        let start = Instant::now();
        let mut fold = 0u8;
        for line in &sample {
            fold ^= sha2::Sha256::digest(line)[0];
        }
        std::hint::black_box(fold);
        per_sha = per_sha.min(start.elapsed() / n);
    }
    (per_check, per_sig, per_beyond, size, per_sha)
}

/// Writes `blocks` sealed blocks of `body`, block i signed by `key_of(i)`; returns each
/// block's hash and signature.
fn generate(
    path: &Path,
    blocks: usize,
    body: &Map<String, Value>,
    key_of: &dyn Fn(usize) -> SigningKey,
) -> Vec<([u8; 32], Signature)> {
    let mut out = std::io::BufWriter::new(fs::File::create(path).unwrap());
    let mut prev = GENESIS_PREV.to_string();
    let mut sigs: Vec<([u8; 32], Signature)> = Vec::with_capacity(blocks.min(200_000));
    let base = time::OffsetDateTime::now_utc();
    let gen_start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..blocks {
        let mut b = body.clone();
        let at = base + time::Duration::milliseconds(i as i64);
        b.insert("observed_at".into(), mcp_witness::clock::format_millis(at).into());
        let link = Link {
            seq: i as u64 + 1,
            prev: prev.clone(),
            file_id: "0123456789abcdef0123456789abcdef".into(),
        };
        let sealed = seal(b, &link, &key_of(i));
        if sigs.len() < 200_000 {
            let v: Value = serde_json::from_slice(&sealed.line).unwrap();
            let hash: [u8; 32] = mcp_witness::hex::decode_exact(&sealed.hash).unwrap();
            let sig =
                Signature::from_bytes(&mcp_witness::hex::decode_exact(v["sig"].as_str().unwrap()).unwrap());
            sigs.push((hash, sig));
        }
        bytes += sealed.line.len();
        out.write_all(&sealed.line).unwrap();
        prev = sealed.hash;
    }
    out.flush().unwrap();
    println!(
        "   (generated {blocks} blocks, {:.0} MB, {:.0} bytes each, in {:.1} s)",
        bytes as f64 / 1e6,
        bytes as f64 / blocks as f64,
        gen_start.elapsed().as_secs_f64()
    );
    sigs
}

/// 2b. verify must stay linear when every block carries its own key.
fn verify_distinct_keys(dir: &Path, blocks: usize) {
    let body = sample_body(dir);
    let one = dir.join("one-key.jsonl");
    let many = dir.join("many-keys.jsonl");
    let key = SigningKey::from_bytes(&[7u8; 32]);
    generate(&one, blocks, &body, &|_| key.clone());
    let key_of = |i: usize| {
        let mut seed = [9u8; 32];
        seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
        SigningKey::from_bytes(&seed)
    };
    generate(&many, blocks, &body, &key_of);
    let half = dir.join("many-keys-half.jsonl");
    generate(&half, blocks / 2, &body, &key_of);
    let (a, _) = time_verify(&one, None);
    let (h, _) = time_verify(&half, None);
    let (b, _) = time_verify(&many, None);
    println!(
        "2b. verify {blocks} blocks, no --trust: one key {:.2} s | a key per block {:.2} s, ratio {:.2} | half as many blocks, a key each {:.2} s (linear: about half)",
        a.as_secs_f64(),
        b.as_secs_f64(),
        b.as_secs_f64() / a.as_secs_f64(),
        h.as_secs_f64()
    );
    if std::env::var_os("MCP_WITNESS_BENCH_KEEP").is_none() {
        for p in [one, many, half] {
            let _ = fs::remove_file(p);
        }
    }
}

/// Runs `mcp-witness verify` on `path`; its wall time and sampled peak RSS (KiB).
fn time_verify(path: &Path, trust: Option<&str>) -> (Duration, u64) {
    let start = Instant::now();
    let mut cmd = Command::new(WITNESS);
    cmd.arg("verify");
    if let Some(t) = trust {
        cmd.args(["--trust", t]);
    }
    let mut child = cmd
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak_kb = 0u64;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "verify of the generated file failed");
            break;
        }
        if let Ok(text) = fs::read_to_string(format!("/proc/{}/status", child.id()))
            && let Some(line) = text.lines().find(|l| l.starts_with("VmHWM:"))
        {
            peak_kb = peak_kb.max(
                line.split_whitespace()
                    .nth(1)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0),
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (start.elapsed(), peak_kb)
}

/// 4. the whole check suite against one probe of the same server.
fn check_vs_probe(dir: &Path, runs: usize) {
    let reference = std::env::var_os("MCP_WITNESS_REFERENCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/reference-servers"),
        PathBuf::from,
    );
    let everything =
        reference.join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut servers: Vec<(&str, Vec<String>, usize)> = vec![
        ("instant fixture", vec![fixture().into(), "correct".into()], runs),
        (
            "a fixture that takes 2 s to start",
            vec![fixture().into(), "slow-start".into(), "2000".into()],
            runs.min(3),
        ),
    ];
    if everything.exists() {
        servers.push((
            "server-everything",
            vec!["node".into(), everything.display().to_string(), "stdio".into()],
            runs,
        ));
    } else {
        println!("   (server-everything not installed: run tests/setup/install-reference-servers)");
    }
    let key = dir.join("check.key");
    for (label, argv, runs) in servers {
        let time = |verb: &str| {
            let start = Instant::now();
            let status = Command::new(WITNESS)
                .arg(verb)
                .args(["--no-record", "--key", key.to_str().unwrap(), "--"])
                .args(&argv)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(
                status.code().is_some_and(|c| c <= 1),
                "{verb} of {label} could not run"
            );
            start.elapsed()
        };
        time("probe");
        let (mut p, mut c) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            p.push(time("probe"));
            c.push(time("check"));
        }
        let (p, c) = (median(p), median(c));
        println!(
            "4. check of {label}: one probe {:.0} ms | whole check suite {:.0} ms | ratio {:.2} (targets: <= 1.5 on server-everything, <= 2 on the 2 s start)",
            ms(p),
            ms(c),
            ms(c) / ms(p)
        );
    }
}

/// 5 and 6. a group's share of a check run (security: a second tools/list and the lint's
/// scans; wire: the validation of every message).
fn group_cost(dir: &Path, runs: usize, number: &str, group: &str) {
    let key = dir.join("security.key");
    let servers: [(&str, &[&str], usize); 2] = [
        ("the poisoned fixture", &["poisoned"], runs),
        (
            "10,000 tools of ~2 KB",
            &["invalid-tools-flood", "2000"],
            runs.min(3),
        ),
    ];
    for (label, behaviour, runs) in servers {
        let time = |skip: bool| {
            let start = Instant::now();
            let status = Command::new(WITNESS)
                .args([
                    "check",
                    "--no-record",
                    "--deadline",
                    "300",
                    "--key",
                    key.to_str().unwrap(),
                ])
                .args(if skip { vec!["--skip", group] } else { vec![] })
                .arg("--")
                .arg(fixture())
                .args(behaviour)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(
                status.code().is_some_and(|c| c <= 1),
                "check of {label} could not run"
            );
            start.elapsed()
        };
        let (mut without, mut with) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            without.push(time(true));
            with.push(time(false));
        }
        let (a, b) = (median(without), median(with));
        println!(
            "{number}. check of {label}: without the {group} group {:.0} ms | with it {:.0} ms | added {:.0} ms",
            ms(a),
            ms(b),
            ms(b) - ms(a)
        );
    }
}

/// The checks past the lists, the negative protocol cases and the traffic group (issue 12,
/// parts 3 and 4), as `--skip` prefixes.
const PAST_LISTS: &[&str] = &[
    "protocol.capabilities.client_only",
    "protocol.resources",
    "protocol.prompts",
    "protocol.completion",
    "protocol.logging",
    "protocol.batch",
    "protocol.second_initialize",
    "protocol.invalid_cursor",
    "protocol.meta",
    "protocol.notification",
    "traffic",
];

/// 7. what the checks past the lists and the negative cases add to a check of server-everything.
fn past_lists_cost(dir: &Path, runs: usize) {
    let everything = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "target/reference-servers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if !everything.exists() {
        println!("   (server-everything not installed: run tests/setup/install-reference-servers)");
        return;
    }
    let key = dir.join("past.key");
    let skips: Vec<&str> = PAST_LISTS.iter().flat_map(|id| ["--skip", id]).collect();
    let time = |skip: bool| {
        let start = Instant::now();
        let status = Command::new(WITNESS)
            .args(["check", "--no-record", "--key", key.to_str().unwrap()])
            .args(if skip { &skips[..] } else { &[][..] })
            .arg("--")
            .args(["node", &everything.display().to_string(), "stdio"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(
            status.code().is_some_and(|c| c <= 1),
            "check of server-everything could not run"
        );
        start.elapsed()
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        without.push(time(true));
        with.push(time(false));
    }
    let (a, b) = (median(without), median(with));
    println!(
        "7. check of server-everything: without the checks past the lists and the negative cases {:.0} ms | with them {:.0} ms | added {:.0} ms",
        ms(a),
        ms(b),
        ms(b) - ms(a)
    );
}

/// 3. append cost must not grow with the file.
fn append_cost(dir: &Path, big: &Path, blocks: usize, key: &SigningKey, runs: usize) {
    let body = sample_body(dir);
    let small = dir.join("small.jsonl");
    let mut first = body.clone();
    first.insert("observed_at".into(), "2020-01-01T00:00:00.000+00:00".into());
    append(&small, first, key, false).unwrap();
    let base = time::OffsetDateTime::now_utc() + time::Duration::days(1);
    let time_one = |path: &Path, i: usize| {
        let mut b = body.clone();
        b.insert(
            "observed_at".into(),
            mcp_witness::clock::format_millis(base + time::Duration::milliseconds(i as i64)).into(),
        );
        let start = Instant::now();
        append(path, b, key, false).unwrap();
        start.elapsed()
    };
    let mut s = Vec::new();
    let mut l = Vec::new();
    for i in 0..runs {
        s.push(time_one(&small, 2 * i));
        l.push(time_one(big, 2 * i + 1));
    }
    let (s, l) = (median(s), median(l));
    println!(
        "3. append (lock, tail check, sign, write, fsync): to a 1-block file {:.3} ms | to a {blocks}-block file {:.3} ms | ratio {:.2} (target <= 1.1)",
        ms(s),
        ms(l),
        ms(l) / ms(s)
    );
}

/// 6. What validating one tool call's arguments costs, beside parsing them.
fn schema_validation() {
    use mcp_witness::jsonschema::{Dialect, Registry, Validator};
    // Shaped like the tools of server-filesystem and server-everything: nested objects, an
    // enum, a pattern, a $ref to $defs, required members, additionalProperties false.
    let schema: Value = serde_json::from_str(
        r##"{"type":"object","properties":{
            "path":{"type":"string","minLength":1,"pattern":"^[^\\u0000]+$"},
            "edits":{"type":"array","items":{"$ref":"#/$defs/edit"},"maxItems":100},
            "mode":{"enum":["text","json","binary"]},
            "depth":{"type":"integer","minimum":0,"maximum":32},
            "dryRun":{"type":"boolean","default":false}},
          "required":["path","edits"],"additionalProperties":false,
          "$defs":{"edit":{"type":"object","properties":{
            "oldText":{"type":"string"},"newText":{"type":"string"}},
            "required":["oldText","newText"],"additionalProperties":false}}}"##,
    )
    .unwrap();
    let text = r#"{"path":"/srv/data/notes.txt","edits":[{"oldText":"a","newText":"b"},{"oldText":"hello world","newText":"bye"},{"oldText":"x","newText":"y"}],"mode":"text","depth":3,"dryRun":true}"#;
    let args: Value = serde_json::from_str(text).unwrap();
    let bad: Value = serde_json::from_str(
        r#"{"path":"","edits":[{"oldText":"a"},{"oldText":1,"newText":"b","x":0}],"mode":"xml","depth":-1,"extra":true}"#,
    )
    .unwrap();
    let registry = Registry::new();
    let n = 20_000u32;
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(n);
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(Validator::new(&schema, Dialect::default(), &registry).unwrap());
    }
    let index = per(start.elapsed());
    let v = Validator::new(&schema, Dialect::default(), &registry).unwrap();
    let time = |f: &dyn Fn()| {
        let start = Instant::now();
        for _ in 0..n {
            f();
        }
        per(start.elapsed())
    };
    assert!(v.validate(&args).is_valid() && !v.validate(&bad).is_valid());
    let parse = time(&|| {
        std::hint::black_box(serde_json::from_str::<Value>(std::hint::black_box(text)).unwrap());
    });
    let valid = time(&|| {
        std::hint::black_box(v.validate(std::hint::black_box(&args)));
    });
    let invalid = time(&|| {
        std::hint::black_box(v.validate(std::hint::black_box(&bad)));
    });
    let quick = time(&|| {
        std::hint::black_box(v.is_valid(std::hint::black_box(&bad)));
    });
    println!(
        "6. JSON Schema, typical tool inputSchema: parse the arguments {parse:.2} µs (baseline) | validate valid {valid:.2} µs | invalid with errors {invalid:.2} µs | yes/no of invalid {quick:.2} µs | index the schema {index:.2} µs"
    );
}
