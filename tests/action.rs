//! The GitHub Action's check step runs as written: its shell script, taken from action.yml,
//! runs under bash with the environment a runner gives it, against the bundled fixture,
//! with and without recording evidence.

mod common;

use std::process::{Command, Stdio};

use common::*;

/// The `run:` script of the step with `id: check`, dedented.
fn check_step() -> String {
    let action = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml")).unwrap();
    let lines: Vec<&str> = action.lines().collect();
    let id = lines
        .iter()
        .position(|l| l.trim() == "id: check")
        .expect("a step with id check");
    let run = id
        + lines[id..]
            .iter()
            .position(|l| l.trim() == "run: |")
            .expect("its run script");
    let indent = lines[run + 1].len() - lines[run + 1].trim_start().len();
    lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_step(dir: &TempDir, env: &[(&str, String)]) -> (i32, String) {
    let bin = dir.join("runner/mcp-witness/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let _ = std::os::unix::fs::symlink(WITNESS, bin.join("mcp-witness"));
    let output = dir.join("github_output");
    std::fs::write(&output, "").unwrap();
    let mut cmd = Command::new("bash");
    cmd.args(["-e", "-c", &check_step()])
        .current_dir(dir.path())
        .env("RUNNER_TEMP", dir.join("runner"))
        .env("GITHUB_OUTPUT", &output)
        .env("MCP_WITNESS_COMMAND", format!("{} correct", fixture()))
        .env("MCP_WITNESS_URL", "")
        .env("MCP_WITNESS_ARGS", "--timeout 10")
        .env("MCP_WITNESS_STRICT", "false")
        .env("MCP_WITNESS_EVIDENCE", "")
        .env("MCP_WITNESS_SIGNING_KEY", "")
        .env("MCP_WITNESS_TRUST", "")
        .env("MCP_WITNESS_DIGEST_CACHE", dir.join("digests"))
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = bounded_output(&mut cmd);
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0,
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (code, std::fs::read_to_string(&output).unwrap())
}

#[test]
fn the_action_checks_a_server_and_sets_its_outputs() {
    let dir = TempDir::new("action");
    let (_, outputs) = run_step(&dir, &[]);
    assert!(
        outputs.contains("failures=0\n") && outputs.contains("warnings=0\n"),
        "{outputs}"
    );
    let report = outputs.lines().find_map(|l| l.strip_prefix("report=")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(json["counts"]["fail"], 0);
}

#[test]
fn the_action_records_signed_evidence_and_verifies_it_against_the_trusted_key() {
    let dir = TempDir::new("action-evidence");
    let key = dir.join("ci.key");
    let made = bounded_output(Command::new(WITNESS).args(["keygen", "--key", key.to_str().unwrap()]));
    assert!(made.status.success());
    let public = String::from_utf8(made.stdout).unwrap().trim().to_string();
    let (_, outputs) = run_step(
        &dir,
        &[
            ("MCP_WITNESS_EVIDENCE", "evidence/checks.jsonl".into()),
            ("MCP_WITNESS_SIGNING_KEY", std::fs::read_to_string(&key).unwrap()),
            ("MCP_WITNESS_TRUST", public),
        ],
    );
    assert!(outputs.contains("failures=0"), "{outputs}");
    let evidence = std::fs::read_to_string(dir.join("evidence/checks.jsonl")).unwrap();
    assert_eq!(evidence.lines().count(), 1);
    assert!(
        !dir.join("runner/mcp-witness-signing.key").exists(),
        "the key file is removed"
    );
}
