//! The evidence format checked from outside: `tests/reverify.py`, written from the format's
//! description in Python (PyNaCl, jsonschema, the stdlib) and sharing no code with
//! mcp-witness, must find a file of varied real blocks intact and schema-valid
//! (`schemas/evidence-block.schema.json`), and must put every kind of tampering at its line.
//! Needs the venv that `tests/setup/install-verifier-tools` makes; fails (never skips) without it.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{Value, json};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Runs `reverify.py <args>`; returns its exit code and stdout.
fn reverify(args: &[&str]) -> (i32, String) {
    let out = Command::new(verifier_python())
        .arg(Path::new(MANIFEST_DIR).join("tests").join("reverify.py"))
        .args(args)
        .output()
        .expect("the verifier's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "reverify.py failed to run ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    (out.status.code().unwrap(), stdout)
}

/// Writes `lines` (each without its newline) as an evidence file in `dir`.
fn write_lines(dir: &TempDir, name: &str, lines: &[Vec<u8>]) -> String {
    let path = dir.join(name);
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    }
    std::fs::write(&path, bytes).unwrap();
    path.to_str().unwrap().to_string()
}

fn replace_once(line: &[u8], from: &str, to: &str) -> Vec<u8> {
    let text = std::str::from_utf8(line).unwrap();
    assert!(text.contains(from), "`{from}` not in {text}");
    text.replacen(from, to, 1).into_bytes()
}

#[test]
fn varied_real_blocks_reverify_and_each_tampering_is_caught_at_its_line() {
    let b = Bench::new("reverify");
    let echo = r#"{"text":"hi"}"#;
    let probes: &[(&[&str], &[&str])] = &[
        (&[], &["correct"]),
        (&["--timeout", "0.3"], &["silent"]),
        (&[], &["crash"]),
        (&[], &["banner"]),
        (&[], &["chatty"]),
        (&["--call", "echo", "--call-args", echo], &["correct"]),
        (&["--call", "echo", "--call-args", echo], &["tool-error"]),
        (&["--call", "nope"], &["correct"]),
        (&["--era", "modern"], &["modern"]),
        (&["--era", "auto"], &["correct"]),
        (&["--env", "FIXTURE_TOKEN=s3cr3t-value"], &["grandchild"]),
        (&[], &["escape-setpgid"]),
    ];
    for (extra, behaviour) in probes {
        let run = b.probe_fixture(extra, behaviour);
        assert!(
            matches!(run.code, 0 | 1 | 3),
            "{behaviour:?}: {}{}",
            run.stdout,
            run.stderr
        );
    }
    let ev = b.evidence.to_str().unwrap().to_string();
    let run = b.run(&["probe", "-e", &ev, "--", "/nonexistent/x"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);

    // The file holds every shape: nulls and non-nulls of each optional part.
    let blocks = b.blocks();
    let n = probes.len() + 1;
    assert_eq!(blocks.len(), n);
    let has = |f: &dyn Fn(&Value) -> bool| blocks.iter().any(f);
    assert!(has(&|b| b["silence"].is_object()) && has(&|b| b["teardown"].is_null()));
    assert!(has(&|b| b["call"]["outcome"] == "ok") && has(&|b| b["call"]["outcome"] == "not_listed"));
    assert!(has(&|b| b["era"] == "modern") && has(&|b| b["era_detection"].is_string()));
    assert!(has(&|b| b["stdout_noise"]["count"].as_u64() > Some(0)));
    assert!(has(
        &|b| b["messages"]["server_requests"]["count"].as_u64() > Some(0)
    ));
    assert!(has(&|b| b["teardown"]["group_signals"] == json!(["sigterm"])));
    assert!(has(&|b| b["teardown"]["escapees"][0]["ended"] == "sigterm"));
    assert!(has(&|b| b["target"]["env"] == json!(["FIXTURE_TOKEN"])));

    let key = b.public_key();
    let (code, out) = reverify(&["--trust", &key, &ev]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.trim(), format!("intact: {n} blocks"));
    let (code, out) = reverify(&[&ev]);
    assert_eq!(code, 0, "{out}");
    // mcp-witness's own verify agrees.
    let run = b.run(&["verify", "--trust", &key, &ev]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    let text = std::fs::read(&b.evidence).unwrap();
    let lines: Vec<Vec<u8>> = text
        .strip_suffix(b"\n")
        .unwrap()
        .split(|&c| c == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let broken_at = |name: &str, lines: &[Vec<u8>], expect: &str| {
        let path = write_lines(&b.dir, name, lines);
        let (code, out) = reverify(&["--trust", &key, &path]);
        assert_eq!(code, 1, "{name}: {out}");
        assert!(
            out.starts_with(expect),
            "{name}: expected `{expect}…`, got: {out}"
        );
    };

    // Line 3 (crash) turned from fail into pass: its observation digest no longer matches.
    let mut t = lines.clone();
    t[2] = replace_once(&t[2], r#""verdict":"fail""#, r#""verdict":"pass""#);
    broken_at("edited.jsonl", &t, "line 3: observation_sha256 does not match");
    // A field no digest but the hash covers: the hash no longer matches.
    let mut t = lines.clone();
    t[2] = replace_once(&t[2], r#""name":"mcp-witness""#, r#""name":"mcp-witnesz""#);
    broken_at("edited-tool.jsonl", &t, "line 3: hash does not match");

    // One hex digit of line 7's signature changed.
    let mut t = lines.clone();
    let sig_at = std::str::from_utf8(&t[6]).unwrap().find(r#""sig":""#).unwrap() + 7;
    t[6][sig_at] = if t[6][sig_at] == b'0' { b'1' } else { b'0' };
    broken_at("sig.jsonl", &t, "line 7: signature does not verify");

    // Lines 5 and 6 swapped; line 2 deleted.
    let mut t = lines.clone();
    t.swap(4, 5);
    broken_at("swapped.jsonl", &t, "line 5: seq is 6 where 5 was expected");
    let mut t = lines.clone();
    t.remove(1);
    broken_at("deleted.jsonl", &t, "line 2: seq is 3 where 2 was expected");

    // Line 4 re-encoded with whitespace: same content, not canonical.
    let mut t = lines.clone();
    t[3] = serde_json::to_vec_pretty(&blocks[3])
        .unwrap()
        .into_iter()
        .filter(|&c| c != b'\n')
        .collect();
    broken_at("spaced.jsonl", &t, "line 4: not in canonical form");

    // A line from another file put at the end.
    let other = Bench::new("reverify-other");
    other.probe_fixture(&[], &["correct"]);
    let mut t = lines.clone();
    t.push(
        std::fs::read(&other.evidence)
            .unwrap()
            .strip_suffix(b"\n")
            .unwrap()
            .to_vec(),
    );
    let path = write_lines(&b.dir, "foreign.jsonl", &t);
    let (code, out) = reverify(&[&path]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with(&format!("line {}: seq is 1", n + 1)), "{out}");

    // A key other than the signer's is trusted.
    let (code, out) = reverify(&["--trust", &other.public_key(), &ev]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with(&format!("line 1: signed by {key}")), "{out}");

    // A torn last line.
    let path = b.dir.join("torn.jsonl");
    std::fs::write(&path, &text[..text.len() - 1]).unwrap();
    let (code, out) = reverify(&["--trust", &key, path.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with(&format!("line {n}: torn last line")), "{out}");
}

/// Keys drawn across the whole Unicode range (every plane; no surrogates, which a Rust
/// string cannot hold), with the characters where UTF-8 and UTF-16 orders disagree
/// (U+E000..U+FFFF against astral ones) drawn often.
fn unicode_keys(count: usize) -> Vec<String> {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut keys = Vec::new();
    while keys.len() < count {
        let len = 1 + (next() % 4) as usize;
        let key: String = (0..len)
            .filter_map(|_| {
                let cp = match next() % 4 {
                    0 => 0xe000 + (next() % 0x2000) as u32,
                    1 => 0x10000 + (next() % 0x10_0000) as u32,
                    2 => 0x20 + (next() % 0x60) as u32,
                    _ => (next() % 0x11_0000) as u32,
                };
                char::from_u32(cp)
            })
            .collect();
        if !key.is_empty() {
            keys.push(key);
        }
    }
    keys
}

#[test]
fn the_canonical_form_is_rfc_8785_byte_for_byte_as_two_python_implementations_write_it() {
    // Every escaping case a block can hold (control characters, quotes, backslashes, DEL,
    // non-ASCII up to astral planes, U+2028/9, BOM, the replacement character), integers at
    // the safe bounds, and objects whose keys come from across the whole Unicode range.
    let all_low: String = (0u32..0x100).filter_map(char::from_u32).collect();
    let mut keyed = serde_json::Map::new();
    for (i, k) in unicode_keys(3000).into_iter().enumerate() {
        keyed.insert(k, json!(i));
    }
    let value = json!({
        "z": [all_low, "\u{2028}\u{2029}\u{feff}\u{fffd}é€𝄞😀", "\\\"/"],
        "\u{ffff}": 1, "\u{10000}": 2, "\u{e000}": 7, "😀": 8, "é": 3, "Z": 4, "a b": 5, "": 6,
        "ints": [0, -1, 9007199254740991i64, -9007199254740991i64, i32::MIN],
        "nested": {"b": {}, "a": [[], {}, null, true, false]},
        "keys": keyed,
    });
    let dir = TempDir::new("canonical");
    let path = dir.join("value.json");
    let ours = mcp_witness::evidence::canonical::to_bytes(&value);
    std::fs::write(&path, &ours).unwrap();
    // The UTF-8 byte order would differ here: the test is not vacuous.
    assert_ne!(serde_json::to_vec(&value).unwrap(), ours);
    let script = r#"
import sys, json
sys.path.insert(0, sys.argv[1])
import rfc8785
from reverify import canonical
raw = open(sys.argv[2], "rb").read()
value = json.loads(raw)
jcs = rfc8785.dumps(value)
if jcs != raw:
    sys.exit(f"rfc8785 differs at byte {next(i for i, (a, b) in enumerate(zip(jcs, raw)) if a != b)}")
if canonical(value) != raw:
    sys.exit("reverify.canonical differs")
"#;
    let out = Command::new(verifier_python())
        .args(["-c", script])
        .arg(Path::new(MANIFEST_DIR).join("tests"))
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // And verify's scanner takes exactly that form as canonical.
    assert!(mcp_witness::evidence::canonical_scan::scan(&ours).is_ok());
}
