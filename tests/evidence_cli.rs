//! The evidence file through the CLI: tampering of every kind is caught and the first broken
//! line named, concurrent writers chain correctly, torn lines are refused and repaired, keys
//! are private, and the probe options that decide what gets written behave.

mod common;

use std::fs;
use std::io::Write;

use common::*;
use serde_json::Value;

/// A bench with four blocks from four different probes.
fn four_blocks(label: &str) -> Bench {
    let b = Bench::new(label);
    for behaviour in [&["correct"][..], &["paginated"], &["banner"], &["empty-tools"]] {
        let run = b.probe_fixture(&[], behaviour);
        assert!(run.code == 0 || run.code == 1, "{}{}", run.stdout, run.stderr);
    }
    assert_eq!(b.blocks().len(), 4);
    b
}

fn lines(b: &Bench) -> Vec<String> {
    fs::read_to_string(&b.evidence)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(b: &Bench, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    fs::write(&b.evidence, text).unwrap();
}

fn verify(b: &Bench, extra: &[&str]) -> Run {
    let mut args = vec!["verify"];
    args.extend_from_slice(extra);
    args.push(b.evidence.to_str().unwrap());
    b.run(&args)
}

fn assert_broken_at(run: &Run, line: u64, code: &str) {
    assert_eq!(run.code, 1, "verify must fail: {}{}", run.stdout, run.stderr);
    let needle = format!("line {line}");
    assert!(
        run.stdout.contains(&needle),
        "expected {needle} in: {}",
        run.stdout
    );
    assert!(run.stdout.contains(code), "expected {code} in: {}", run.stdout);
}

#[test]
fn an_untouched_file_verifies_and_pins_to_its_key() {
    let b = four_blocks("intact");
    let run = verify(&b, &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("intact") && run.stdout.contains("4 blocks"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("only self-consistent"),
        "without --trust, say so: {}",
        run.stderr
    );

    let key = b.public_key();
    let run = verify(&b, &["--trust", &key]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stderr.contains("self-consistent"));

    let keyfile = b.dir.join("trusted.txt");
    fs::write(&keyfile, format!("# the CI signer\n{key}\n")).unwrap();
    assert_eq!(verify(&b, &["--trust", keyfile.to_str().unwrap()]).code, 0);
}

#[test]
fn a_flipped_byte_is_caught_at_its_line() {
    let b = four_blocks("flip");
    let mut all = lines(&b);
    // Flip one hex digit inside the hash of block 3.
    let digest = serde_json::from_str::<Value>(&all[2]).unwrap()["hash"]
        .as_str()
        .unwrap()
        .to_string();
    let flipped = format!(
        "{}{}",
        if digest.starts_with('0') { "1" } else { "0" },
        &digest[1..]
    );
    all[2] = all[2].replace(&digest, &flipped);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 3, "hash_mismatch");
}

#[test]
fn a_deleted_line_is_caught() {
    let b = four_blocks("delete");
    let mut all = lines(&b);
    all.remove(1);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 2, "seq_gap");
}

#[test]
fn swapped_lines_are_caught() {
    let b = four_blocks("swap");
    let mut all = lines(&b);
    all.swap(1, 2);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 2, "seq_gap");
}

#[test]
fn a_duplicated_line_is_caught() {
    let b = four_blocks("dupline");
    let mut all = lines(&b);
    let copy = all[1].clone();
    all.insert(2, copy);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 3, "seq_gap");
}

#[test]
fn appended_garbage_is_caught() {
    let b = four_blocks("garbage");
    fs::OpenOptions::new()
        .append(true)
        .open(&b.evidence)
        .unwrap()
        .write_all(b"not a block\n")
        .unwrap();
    assert_broken_at(&verify(&b, &[]), 5, "not_json");
}

#[test]
fn an_edited_field_is_caught_even_when_the_line_stays_canonical() {
    let b = four_blocks("edit");
    let mut all = lines(&b);
    let mut v: Value = serde_json::from_str(&all[3]).unwrap();
    v["verdict"] = "pass".into();
    v["reasons"] = serde_json::json!([]);
    all[3] = serde_json::to_string(&v).unwrap();
    write_lines(&b, &all);
    // The verdict is part of the observation: its digest no longer matches.
    assert_broken_at(&verify(&b, &[]), 4, "digest_mismatch");
    // Both digests recomputed: the hash no longer matches.
    let mut body = v.as_object().unwrap().clone();
    mcp_witness::evidence::kind::BlockKind::Probe.refresh_digests(&mut body);
    let mut all = lines(&b);
    all[3] = serde_json::to_string(&body).unwrap();
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 4, "hash_mismatch");

    let mut all = lines(&b);
    all[3] = all[3].replacen("{\"call\"", "{ \"call\"", 1);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 4, "not_canonical");
}

#[test]
fn a_file_re_signed_with_another_key_fails_against_the_trusted_key() {
    use mcp_witness::evidence::block::{Link, seal};
    let b = four_blocks("resign");
    let trusted = b.public_key();
    // An attacker with their own key rewrites and re-chains the whole file consistently.
    let other = ed25519_dalek::SigningKey::from_bytes(&[42u8; 32]);
    let mut prev = mcp_witness::evidence::block::GENESIS_PREV.to_string();
    let mut out = Vec::new();
    for line in lines(&b) {
        let v: Value = serde_json::from_str(&line).unwrap();
        let mut body = v.as_object().unwrap().clone();
        body.insert("verdict".into(), "pass".into());
        mcp_witness::evidence::kind::BlockKind::Probe.refresh_digests(&mut body);
        let link = Link {
            seq: v["seq"].as_u64().unwrap(),
            prev: prev.clone(),
            file_id: v["file_id"].as_str().unwrap().to_string(),
        };
        let sealed = seal(body, &link, &other);
        prev = sealed.hash.clone();
        out.push(String::from_utf8(sealed.line).unwrap().trim_end().to_string());
    }
    write_lines(&b, &out);
    let run = verify(&b, &[]);
    assert_eq!(
        run.code, 0,
        "self-consistent, which is why pinning matters: {}",
        run.stdout
    );
    assert_broken_at(&verify(&b, &["--trust", &trusted]), 1, "untrusted_key");
}

#[test]
fn a_block_from_another_file_is_caught_by_its_file_id() {
    use mcp_witness::evidence::block::{Link, seal};
    let b = four_blocks("foreign");
    let key = mcp_witness::evidence::keys::load(&b.dir.join("signing.key")).unwrap();
    let all = lines(&b);
    let last: Value = serde_json::from_str(&all[3]).unwrap();
    let mut body = last.as_object().unwrap().clone();
    body.insert("observed_at".into(), "2030-01-01T00:00:00.000+00:00".into());
    let link = Link {
        seq: 5,
        prev: last["hash"].as_str().unwrap().into(),
        file_id: "ffffffffffffffffffffffffffffffff".into(),
    };
    let sealed = seal(body, &link, &key);
    fs::OpenOptions::new()
        .append(true)
        .open(&b.evidence)
        .unwrap()
        .write_all(&sealed.line)
        .unwrap();
    assert_broken_at(&verify(&b, &[]), 5, "foreign_block");
}

#[test]
fn truncation_past_an_anchored_head_is_caught() {
    let b = four_blocks("head");
    let all = lines(&b);
    let head: Value = serde_json::from_str(&all[3]).unwrap();
    let head = head["hash"].as_str().unwrap().to_string();
    assert_eq!(verify(&b, &["--head", &head]).code, 0);
    write_lines(&b, &all[..3]);
    let run = verify(&b, &[]);
    assert_eq!(run.code, 0, "a clean truncation is invisible without an anchor");
    assert_broken_at(&verify(&b, &["--head", &head]), 4, "head_missing");
    assert_eq!(verify(&b, &["--head", "nothex"]).code, 2);
}

#[test]
fn verify_json_names_the_first_broken_line() {
    let b = four_blocks("json");
    let mut all = lines(&b);
    all.remove(2);
    write_lines(&b, &all);
    let run = verify(&b, &["--json"]);
    assert_eq!(run.code, 1);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["intact"], false);
    let file = &report["files"][0];
    assert_eq!(file["broken"]["line"], 3);
    assert_eq!(file["broken"]["seq"], 4);
    assert_eq!(file["broken"]["code"], "seq_gap");
    assert_eq!(file["blocks"], 2);
    assert_eq!(file["trust"], "self-consistent");
}

#[test]
fn verify_of_a_missing_file_is_a_usage_error() {
    let b = Bench::new("missing");
    assert_eq!(verify(&b, &[]).code, 2);
}

#[test]
fn eight_concurrent_probes_yield_eight_chained_blocks() {
    let b = Bench::new("concurrent");
    let ev = b.evidence.to_str().unwrap().to_string();
    // Create the key first so the eight do not race to create it.
    assert_eq!(b.run(&["keygen"]).code, 0);
    let children: Vec<_> = (0..8)
        .map(|i| {
            std::process::Command::new(WITNESS)
                .args([
                    "probe",
                    "-e",
                    &ev,
                    "--env",
                    &format!("WRITER={i}"),
                    "--",
                    fixture(),
                    "correct",
                ])
                .current_dir(b.dir.path())
                .env("MCP_WITNESS_KEY", b.dir.join("signing.key"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let seqs: Vec<u64> = b.blocks().iter().map(|v| v["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=8).collect::<Vec<_>>());
    let run = verify(&b, &["--trust", &b.public_key()]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn a_torn_last_line_is_refused_then_repaired_exactly() {
    let b = four_blocks("torn");
    let good = fs::read(&b.evidence).unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(&b.evidence)
        .unwrap()
        .write_all(b"{\"seq\":5,\"half")
        .unwrap();

    assert_broken_at(&verify(&b, &[]), 5, "torn_tail");
    let run = b.probe_fixture(&[], &["correct"]);
    assert_eq!(run.code, 2, "never chain onto a torn line: {}", run.stdout);
    assert!(
        run.stderr.contains(&format!("offset {}", good.len())),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("mcp-witness repair"), "{}", run.stderr);

    let run = b.run(&["repair", b.evidence.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        fs::read(&b.evidence).unwrap(),
        good,
        "repair changes nothing but the torn bytes"
    );
    let side = format!("{}.torn", b.evidence.display());
    assert_eq!(fs::read(side).unwrap(), b"{\"seq\":5,\"half");
    assert_eq!(b.probe_fixture(&[], &["correct"]).code, 0);
    assert_eq!(verify(&b, &[]).code, 0);
    assert_eq!(b.blocks().len(), 5);
}

#[test]
fn keys_are_created_private_on_first_use_and_a_readable_key_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let b = Bench::new("keys");
    let run = b.probe_fixture(&[], &["correct"]);
    assert_eq!(run.code, 0);
    assert!(run.stderr.contains("created signing key"), "{}", run.stderr);
    let key_path = b.dir.join("signing.key");
    assert_eq!(
        fs::metadata(&key_path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let public = b.public_key();
    assert!(public.starts_with("ed25519:") && public.len() == 8 + 64);
    assert_eq!(b.last_block()["key"], public.as_str());

    assert_eq!(
        b.run(&["keygen"]).code,
        2,
        "keygen never replaces a key without --force"
    );
    fs::set_permissions(&key_path, fs::Permissions::from_mode(0o644)).unwrap();
    let run = b.probe_fixture(&[], &["correct"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("chmod 600"), "{}", run.stderr);
    assert_eq!(b.blocks().len(), 1, "nothing written with a refused key");
}

#[test]
fn if_changed_skips_an_unchanged_observation_and_names_the_block() {
    let b = Bench::new("ifchanged");
    assert_eq!(b.probe_fixture(&["--if-changed"], &["correct"]).code, 0);
    let run = b.probe_fixture(&["--if-changed"], &["correct"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("matches block seq 1"), "{}", run.stdout);
    assert_eq!(b.blocks().len(), 1);
    assert_eq!(b.probe_fixture(&["--if-changed"], &["paginated"]).code, 0);
    assert_eq!(b.blocks().len(), 2, "another target is always new");
}

#[test]
fn json_output_is_the_appended_block() {
    let b = Bench::new("jsonout");
    let run = b.probe_fixture(&["--json"], &["correct"]);
    assert_eq!(run.code, 0);
    let printed: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(printed, b.last_block());
    assert!(
        run.stderr.contains("seq 1 head"),
        "the head goes to stderr in --json mode: {}",
        run.stderr
    );
}

#[test]
fn no_record_writes_nothing() {
    let b = Bench::new("norecord");
    let run = b.probe_fixture(&["--no-record"], &["correct"]);
    assert_eq!(run.code, 0);
    assert!(!b.evidence.exists());
    assert!(
        !b.dir.join("signing.key").exists(),
        "no key is created when nothing is signed"
    );
}

#[test]
fn the_default_evidence_file_is_under_the_current_folder() {
    let b = Bench::new("default");
    let run = b.run(&["probe", "--", fixture(), "correct"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let path = b.dir.join("evidence").join("probes.jsonl");
    assert!(run.stdout.contains(path.to_str().unwrap()), "{}", run.stdout);
    assert_eq!(fs::read_to_string(path).unwrap().lines().count(), 1);
}

#[test]
fn servers_come_from_client_configs_of_both_shapes() {
    let b = Bench::new("config");
    let claude = b.dir.join("claude.json");
    fs::write(
        &claude,
        serde_json::json!({"mcpServers": {"fx": {"command": fixture(), "args": ["paginated"], "env": {"API_TOKEN": "abc12345"}}}})
            .to_string(),
    )
    .unwrap();
    let ev = b.evidence.to_str().unwrap();
    let run = b.run(&[
        "probe",
        "-e",
        ev,
        "--config",
        claude.to_str().unwrap(),
        "--server",
        "fx",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let block = b.last_block();
    assert_eq!(block["tools"]["count"], 7);
    assert_eq!(block["target"]["env"], serde_json::json!(["API_TOKEN"]));
    assert!(!fs::read_to_string(&b.evidence).unwrap().contains("abc12345"));

    let vscode = b.dir.join("mcp.json");
    fs::write(
        &vscode,
        "{ // VS Code\n \"servers\": {\"web\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:1\"}, \"old\": {\"type\": \"websocket\", \"url\": \"ws://127.0.0.1:1\"},}}",
    )
    .unwrap();
    let probe = |name: &str| {
        b.run(&[
            "probe",
            "-e",
            ev,
            "--config",
            vscode.to_str().unwrap(),
            "--server",
            name,
        ])
    };
    // An HTTP entry is probed at its URL (nothing listens on port 1: unreachable).
    let run = probe("web");
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(b.last_block()["target"]["url"], "http://127.0.0.1:1/");
    assert_eq!(common::reason_codes(&b.last_block()), ["unreachable"]);
    let run = probe("old");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("type `websocket`"), "{}", run.stderr);
}

#[test]
fn workspace_sets_the_folder_workspace_folder_stands_for_in_probe_and_check() {
    let b = Bench::new("workspace");
    // A VS Code config in proj/.vscode: by default ${workspaceFolder} is proj, which has no
    // bin/fx; the server and its envFile are in the folder --workspace names.
    let vscode = b.dir.join("proj").join(".vscode");
    let ws = b.dir.join("ws");
    fs::create_dir_all(&vscode).unwrap();
    fs::create_dir_all(ws.join("bin")).unwrap();
    std::os::unix::fs::symlink(fixture(), ws.join("bin/fx")).unwrap();
    fs::write(ws.join(".env"), "FROM_ENV_FILE=1\n").unwrap();
    let config = vscode.join("mcp.json");
    fs::write(
        &config,
        r#"{"servers": {"fx": {"command": "${workspaceFolder}/bin/fx", "args": ["correct"],
            "envFile": "${workspaceFolder}/.env"}}}"#,
    )
    .unwrap();
    let (ev, config, ws) = (
        b.evidence.to_str().unwrap(),
        config.to_str().unwrap(),
        ws.to_str().unwrap(),
    );
    let probe = b.run(&[
        "probe",
        "-e",
        ev,
        "--config",
        config,
        "--server",
        "fx",
        "--workspace",
        ws,
    ]);
    assert_eq!(probe.code, 0, "{}{}", probe.stdout, probe.stderr);
    let block = b.last_block();
    assert_eq!(block["target"]["command"][0], format!("{ws}/bin/fx"));
    assert_eq!(block["target"]["env"], serde_json::json!(["FROM_ENV_FILE"]));

    let check = b.run(&[
        "check",
        "--no-record",
        "--config",
        config,
        "--server",
        "fx",
        "--workspace",
        ws,
        "--only",
        "protocol.handshake",
    ]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);

    // Without it, the workspace is proj: its envFile is not there.
    let default = b.run(&["check", "--no-record", "--config", config, "--server", "fx"]);
    assert_eq!(default.code, 2, "{}{}", default.stdout, default.stderr);
    assert!(default.stderr.contains("proj/.env"), "{}", default.stderr);

    let missing = b.dir.join("nowhere");
    let missing = missing.to_str().unwrap();
    let run = b.run(&[
        "probe",
        "-e",
        ev,
        "--config",
        config,
        "--server",
        "fx",
        "--workspace",
        missing,
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains(&format!("--workspace {missing}: not a folder")),
        "{}",
        run.stderr
    );
    let run = b.run(&["probe", "-e", ev, "--workspace", ws, "--", fixture(), "correct"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--workspace go with --config FILE"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    let b = Bench::new("usage");
    assert_eq!(b.run(&["probe"]).code, 2);
    assert_eq!(b.run(&["probe", "--timeout", "-1", "--", fixture()]).code, 2);
    assert_eq!(b.run(&["probe", "--env", "NOEQUALS", "--", fixture()]).code, 2);
    assert_eq!(b.run(&["verify"]).code, 2);
    let help = b.run(&["--help"]);
    assert!(
        help.stdout.contains("3 inconclusive"),
        "exit codes are documented in --help"
    );
}

#[test]
fn time_going_backwards_is_a_warning_not_a_failure() {
    use mcp_witness::evidence::append::append;
    let b = Bench::new("backwards");
    let key = ed25519_dalek::SigningKey::from_bytes(&[5u8; 32]);
    let run = b.probe_fixture(&["--json", "--no-record"], &["correct"]);
    let body: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    for at in ["2026-12-02T10:00:05.000+00:00", "2026-12-02T10:00:01.000+00:00"] {
        let mut body = body.as_object().unwrap().clone();
        body.insert("observed_at".into(), at.into());
        append(&b.evidence, body, &key, false).unwrap();
    }
    let run = verify(&b, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stderr.contains("line 2: observed_at goes back in time"),
        "{}",
        run.stderr
    );
}

/// Seals `bodies` (digests refreshed for their kind) as a fresh chained file at `path`.
fn seal_file(path: &std::path::Path, bodies: Vec<serde_json::Map<String, Value>>) {
    use mcp_witness::evidence::block::{GENESIS_PREV, Link, seal};
    use mcp_witness::evidence::kind::BlockKind;
    let key = ed25519_dalek::SigningKey::from_bytes(&[11u8; 32]);
    let mut prev = GENESIS_PREV.to_string();
    let mut text = Vec::new();
    for (i, mut body) in bodies.into_iter().enumerate() {
        if let Some(kind) = body["kind"].as_str().and_then(BlockKind::from_name) {
            kind.refresh_digests(&mut body);
        }
        let link = Link {
            seq: i as u64 + 1,
            prev: prev.clone(),
            file_id: "0123456789abcdef0123456789abcdef".into(),
        };
        let sealed = seal(body, &link, &key);
        prev = sealed.hash;
        text.extend_from_slice(&sealed.line);
    }
    fs::write(path, text).unwrap();
}

/// A `client` block body: `name` judged `verdict` on its tools domain, at second `at`.
fn client_body(name: &str, verdict: &str, at: u32) -> serde_json::Map<String, Value> {
    use mcp_witness::evidence::kind::BlockKind;
    let client = serde_json::json!({"name": name, "version": "1.0"});
    let fields = serde_json::json!({
        "target": {"client": client},
        "client": client,
        "log": {"path": "/tmp/serve.log.jsonl", "sha256": "00".repeat(32), "bytes": 10, "entries": 2},
        "domains": [{"domain": "tools", "verdict": verdict, "question": null, "why": null,
                     "meaning": "m", "answers": []}],
        "verdict": verdict,
    });
    let stamp = mcp_witness::clock::Stamp {
        rfc3339: format!("2026-12-02T10:00:{at:02}.000+00:00"),
        tz: None,
    };
    mcp_witness::evidence::block::body(BlockKind::Client, &stamp, "test", fields)
}

#[test]
fn diff_of_a_target_s_first_block_is_a_baseline_and_exits_0() {
    let b = Bench::new("diff-baseline");
    b.probe_fixture(&[], &["correct"]);
    let ev = b.evidence.to_str().unwrap();
    let run = b.run(&["diff", ev]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(": baseline"), "{}", run.stdout);
    let run = b.run(&["diff", "--json", ev]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["baseline"], true);
    assert_eq!(v["changed"], false);
    assert_eq!(v["from_seq"], Value::Null);
    assert_eq!(v["to_seq"], 1);
    // The README's gate recipe: probe, then diff, passes on the first run.
    let empty = b.dir.join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    let run = b.run(&["diff", empty.to_str().unwrap()]);
    assert_eq!(run.code, 2, "no blocks: could not run: {}", run.stderr);
}

#[test]
fn diff_json_gives_each_change_as_fields() {
    let b = Bench::new("diff-json");
    b.probe_fixture(&[], &["correct"]);
    b.probe_fixture(&[], &["correct"]);
    let ev = b.evidence.to_str().unwrap();
    let run = b.run(&["diff", "--json", ev]);
    assert_eq!(run.code, 0, "unchanged: {}{}", run.stdout, run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        (v["changed"].clone(), v["baseline"].clone()),
        (false.into(), false.into())
    );
    assert_eq!(v["changes"], serde_json::json!([]));

    // One target (a script that reads its behaviour from a file), two behaviours.
    let script = b.dir.join("server.sh");
    let mode = b.dir.join("mode");
    fs::write(
        &script,
        format!("#!/bin/sh\nexec {} \"$(cat {})\"\n", fixture(), mode.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let ev2 = b.dir.join("two.jsonl");
    let ev2 = ev2.to_str().unwrap();
    for behaviour in ["correct", "paginated"] {
        fs::write(&mode, behaviour).unwrap();
        let run = b.run(&["probe", "-e", ev2, "--", script.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    }
    let run = b.run(&["diff", "--json", ev2]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["changed"], true);
    let added = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["change"] == "added")
        .expect("an `added` change");
    assert_eq!(added["list"], "tools");
    assert_eq!(
        added["items"],
        serde_json::json!(["reverse", "uppercase", "lowercase", "length"])
    );
}

#[test]
fn diff_target_takes_the_short_id_diff_prints_and_refuses_an_ambiguous_or_short_one() {
    let b = Bench::new("diff-prefix");
    b.probe_fixture(&[], &["correct"]);
    b.probe_fixture(&[], &["paginated"]);
    let ev = b.evidence.to_str().unwrap();
    let first = b.blocks()[0]["target"]["id"].as_str().unwrap().to_string();
    // diff prints 12 digits; those, 8, and all 64 name the first target.
    for given in [
        &first[..12],
        &first[..8],
        first.as_str(),
        &first[..8].to_uppercase(),
    ] {
        let run = b.run(&["diff", "--target", given, ev]);
        assert_eq!(run.code, 0, "{given}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(&first[..12]), "{}", run.stdout);
    }
    for given in [&first[..7], "nothex12", "ffffffffffff"] {
        let run = b.run(&["diff", "--target", given, ev]);
        assert_eq!(run.code, 2, "{given}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("--target"), "{}", run.stderr);
    }

    // Two targets whose ids share their first 8 hex digits (found by search): ambiguous.
    use mcp_witness::evidence::kind::BlockKind;
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    let (a, z) = (0u64..)
        .find_map(|i| {
            let target = serde_json::json!({"command": [format!("s{i}")], "cwd": "/", "env": [],
                                            "era": "legacy", "protocol_version": null});
            let id = BlockKind::Probe.target_id(&target);
            let cmd = format!("s{i}");
            seen.insert(id[..8].to_string(), cmd.clone())
                .map(|other| (other, cmd))
        })
        .unwrap();
    let mut bodies = Vec::new();
    for (n, cmd) in [a, z].iter().enumerate() {
        let mut body = serde_json::from_str::<Value>(&lines(&b)[0])
            .unwrap()
            .as_object()
            .unwrap()
            .clone();
        for (k, v) in [
            ("command", serde_json::json!([cmd])),
            ("cwd", "/".into()),
            ("env", serde_json::json!([])),
            ("era", "legacy".into()),
            ("protocol_version", Value::Null),
        ] {
            body["target"][k] = v;
        }
        body.insert(
            "observed_at".into(),
            format!("2026-12-02T10:00:0{n}.000+00:00").into(),
        );
        bodies.push(body);
    }
    let twin = b.dir.join("twin.jsonl");
    seal_file(&twin, bodies);
    let shared = serde_json::from_str::<Value>(fs::read_to_string(&twin).unwrap().lines().next().unwrap())
        .unwrap()["target"]["id"]
        .as_str()
        .unwrap()[..8]
        .to_string();
    let run = b.run(&["diff", "--target", &shared, twin.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("matches 2 targets"), "{}", run.stderr);
}

#[test]
fn diff_compares_client_blocks_and_refuses_an_unknown_kind() {
    let b = Bench::new("diff-client");
    let path = b.dir.join("clients.jsonl");
    let p = path.to_str().unwrap();
    seal_file(
        &path,
        vec![client_body("c", "compliant", 1), client_body("c", "compliant", 2)],
    );
    let run = b.run(&["diff", p]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("client block seq 1 -> seq 2"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("unchanged"), "{}", run.stdout);

    seal_file(
        &path,
        vec![
            client_body("c", "compliant", 1),
            client_body("c", "not compliant", 2),
        ],
    );
    let run = b.run(&["diff", p]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("verdict: \"compliant\" -> \"not compliant\""),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("tools: compliant -> not compliant"),
        "{}",
        run.stdout
    );
    let run = b.run(&["diff", "--json", p]);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        v["changes"].as_array().unwrap().contains(&serde_json::json!(
            {"change": "item", "list": "domains", "id": "tools", "from": "compliant", "to": "not compliant"}
        )),
        "{v}"
    );

    // A validly signed block of a kind this version does not know is an error, not a check.
    let mut other = client_body("c", "compliant", 3);
    other.insert("kind".into(), "audit".into());
    seal_file(&path, vec![client_body("c", "compliant", 1), other]);
    let run = b.run(&["diff", p]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("is not a kind this version knows"),
        "{}",
        run.stderr
    );
}

#[test]
fn verify_head_takes_a_unique_prefix_of_at_least_eight_hex_digits() {
    let b = four_blocks("head-prefix");
    let head = b.blocks()[2]["hash"].as_str().unwrap().to_string();
    let run = verify(&b, &["--head", &head[..8]]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = verify(&b, &["--head", &head[..7]]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("at least 8"), "{}", run.stderr);
    let mut all = lines(&b);
    all.truncate(2);
    write_lines(&b, &all);
    let run = verify(&b, &["--head", &head[..12]]);
    assert_broken_at(&run, 3, "head_missing");
}

#[test]
fn a_serve_log_gets_its_own_suffix_and_verify_says_what_it_is() {
    use std::process::{Command, Stdio};
    let b = Bench::new("serve-log");
    let mut child = Command::new(WITNESS)
        .arg("serve")
        .current_dir(b.dir.path())
        .env_remove("MCP_WITNESS_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let log = b.dir.join("mcp-witness-serve.log.jsonl");
    assert!(log.exists(), "the default serve log is *.log.jsonl");
    let run = b.run(&["verify", log.to_str().unwrap()]);
    assert_broken_at(&run, 1, "serve_log_line");
    assert!(run.stdout.contains("`mcp-witness serve` log"), "{}", run.stdout);
    assert!(run.stdout.contains("mcp-witness analyze"), "{}", run.stdout);
}

#[test]
fn a_small_order_key_is_refused_in_trust_values_trust_files_and_blocks() {
    // The identity point: an ordinary Ed25519 library accepts forged signatures under it.
    let weak = format!("ed25519:01{}", "00".repeat(31));
    let b = four_blocks("weak-key");
    let run = verify(&b, &["--trust", &weak]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("small-order (weak)"), "{}", run.stderr);
    let trust = b.dir.join("trust.txt");
    fs::write(&trust, format!("# pinned\n{}\n\n{weak}\n", b.public_key())).unwrap();
    let run = verify(&b, &["--trust", trust.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("small-order (weak)"), "{}", run.stderr);

    let mut all = lines(&b);
    let key = b.public_key();
    all[1] = all[1].replace(&key, &weak);
    write_lines(&b, &all);
    assert_broken_at(&verify(&b, &[]), 2, "weak_key");
}
