//! The evidence sees the whole surface: a tool whose description, input schema and
//! annotations change under the same name (a "rug pull") is caught by `probe --if-changed`,
//! named tool by tool and part by part by `diff`, and failed by `probe --expect`.

mod common;

use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

/// Runs `mcp-witness ARGS` in the bench, with the fixture's rug pull on or off.
fn run(b: &Bench, args: &[&str], rug_pull: bool) -> Run {
    let mut cmd = Command::new(WITNESS);
    cmd.args(args)
        .current_dir(b.dir.path())
        .env("MCP_WITNESS_KEY", b.dir.join("signing.key"))
        .env("MCP_WITNESS_DIGEST_CACHE", b.dir.join("digests"))
        .env("MCP_WITNESS_FIXTURE_RUG_PULL", if rug_pull { "1" } else { "" })
        .stdin(Stdio::null());
    Run::from(bounded_output(&mut cmd))
}

#[test]
fn a_rug_pull_is_caught_by_if_changed_by_diff_part_by_part_and_by_expect() {
    let b = Bench::new("rug-pull");
    let ev = b.evidence.to_str().unwrap();
    let probe = |extra: &[&str], rug: bool| {
        let mut args = vec!["probe", "-e", ev];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", fixture(), "correct"]);
        run(&b, &args, rug)
    };

    // The baseline: every tool and part digested, the surface in the observation.
    let first = probe(&[], false);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let block = b.last_block();
    let tools = block["surface"]["tools"]["items"].as_array().unwrap();
    assert_eq!(tools.len(), 3);
    let add = tools.iter().find(|t| t["name"] == "add").unwrap();
    for part in ["description", "input_schema", "sha256"] {
        assert!(add[part].as_str().is_some_and(|d| d.len() == 64), "{part}: {add}");
    }
    assert_eq!(add["annotations"], Value::Null);

    // Unchanged: --if-changed appends nothing; --expect passes and says what it compared with.
    let same = probe(&["--if-changed"], false);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
    assert_eq!(b.blocks().len(), 1, "{}", same.stdout);
    // The gate's own runs go to another file, so the pinned evidence stays the baseline.
    let gate = b.dir.join("gate.jsonl");
    let gate = gate.to_str().unwrap();
    let last_gate = || {
        let text = std::fs::read_to_string(gate).unwrap();
        serde_json::from_str::<Value>(text.lines().last().unwrap()).unwrap()
    };
    let pinned = run(
        &b,
        &["probe", "-e", gate, "--expect", ev, "--", fixture(), "correct"],
        false,
    );
    assert_eq!(pinned.code, 0, "{}{}", pinned.stdout, pinned.stderr);
    assert_eq!(last_gate()["expected"]["seq"], 1);
    assert_eq!(last_gate()["expected"]["changes"], serde_json::json!([]));

    // The rug pull: the same names, so a name list could not tell.
    let pulled = run(
        &b,
        &["probe", "-e", gate, "--expect", ev, "--", fixture(), "correct"],
        true,
    );
    assert_eq!(pulled.code, 1, "{}{}", pulled.stdout, pulled.stderr);
    let block = last_gate();
    assert_eq!(block["verdict"], "fail");
    let reason = &block["reasons"][0];
    assert_eq!(reason["code"], "surface_changed");
    let message = reason["message"].as_str().unwrap();
    assert!(
        message.contains("tool `add`: description, input_schema, annotations changed"),
        "{message}"
    );
    assert_eq!(
        block["expected"]["changes"],
        serde_json::json!([{"change": "changed", "kind": "tool", "name": "add",
                            "parts": ["description", "input_schema", "annotations"]}])
    );

    // --if-changed sees it too.
    let changed = probe(&["--if-changed"], true);
    assert_eq!(changed.code, 0, "{}{}", changed.stdout, changed.stderr);
    let blocks = b.blocks();
    assert_eq!(blocks.len(), 2);
    assert_ne!(blocks[0]["observation_sha256"], blocks[1]["observation_sha256"]);

    // diff names the tool and each part, with the description before and after.
    let diff = run(&b, &["diff", ev], false);
    assert_eq!(diff.code, 1, "{}{}", diff.stdout, diff.stderr);
    assert!(
        diff.stdout
            .contains("tool `add`: description, input_schema, annotations changed"),
        "{}",
        diff.stdout
    );
    assert!(
        diff.stdout
            .contains("Adds two numbers and returns their sum\" ->"),
        "{}",
        diff.stdout
    );
    assert!(diff.stdout.contains("<IMPORTANT>"), "{}", diff.stdout);
    let json = run(&b, &["diff", "--json", ev], false);
    let report: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", json.stdout));
    let text = report.to_string();
    assert!(
        text.contains(r#""parts":["description","input_schema","annotations"]"#),
        "{text}"
    );
    assert_eq!(run(&b, &["verify", ev], false).code, 0);
}

#[test]
fn expect_without_a_baseline_or_on_a_broken_file_records_nothing_and_says_why() {
    let b = Bench::new("expect-baseline");
    let ev = b.evidence.to_str().unwrap();
    let other = b.dir.join("other.jsonl");
    let run1 = run(
        &b,
        &["probe", "-e", other.to_str().unwrap(), "--", fixture(), "correct"],
        false,
    );
    assert_eq!(run1.code, 0);
    // Another target's evidence is no baseline for this one.
    let none = run(
        &b,
        &[
            "probe",
            "-e",
            ev,
            "--expect",
            other.to_str().unwrap(),
            "--",
            fixture(),
            "paginated",
        ],
        false,
    );
    assert_eq!(none.code, 2, "{}{}", none.stdout, none.stderr);
    assert!(
        none.stderr.contains("no passing probe block of this target"),
        "{}",
        none.stderr
    );
    assert!(!b.evidence.exists());
    // A tampered file is not trusted as a baseline.
    let text = std::fs::read_to_string(&other)
        .unwrap()
        .replace("\"echo\"", "\"ech0\"");
    std::fs::write(&other, text).unwrap();
    let broken = run(
        &b,
        &[
            "probe",
            "-e",
            ev,
            "--expect",
            other.to_str().unwrap(),
            "--",
            fixture(),
            "correct",
        ],
        false,
    );
    assert_eq!(broken.code, 2, "{}{}", broken.stdout, broken.stderr);
    assert!(broken.stderr.contains("is broken"), "{}", broken.stderr);
}
