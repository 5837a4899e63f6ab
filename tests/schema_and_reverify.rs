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

    // Numbers a block never holds but a digest of foreign JSON (a tool result) may: JCS
    // writes them as ECMAScript does. (Python reads `100000000000000000000` as an int, which
    // rfc8785 refuses; JCS reads every number as a double, so read them as floats.)
    let floats = json!({"f": [1.5, 1e21, 1e20, 1e-7, 0.000001, 0.1, 5e-324, 1.7976931348623157e308,
                              123.456e-10, -2.5e-5, 1.0, -0.0, 333333333.3333333, 4.35]});
    std::fs::write(&path, mcp_witness::evidence::canonical::to_bytes(&floats)).unwrap();
    let out = Command::new(verifier_python())
        .args(["-c", "import sys, json, rfc8785; raw = open(sys.argv[1], 'rb').read(); sys.exit(0 if rfc8785.dumps(json.loads(raw, parse_int=float)) == raw else f'rfc8785: {rfc8785.dumps(json.loads(raw, parse_int=float))!r}, ours: {raw!r}')"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A block body of `kind`: every field as `block`, minus the chain fields sealing adds.
fn body_of(block: &Value) -> serde_json::Map<String, Value> {
    block.as_object().unwrap().clone()
}

/// Seals one body (digests refreshed for its kind, so only its shape can be wrong) as the
/// first block of its own file.
fn sealed_line(mut body: serde_json::Map<String, Value>) -> Vec<u8> {
    use mcp_witness::evidence::block::{GENESIS_PREV, Link, seal};
    use mcp_witness::evidence::kind::BlockKind;
    if let Some(kind) = body["kind"].as_str().and_then(BlockKind::from_name) {
        kind.refresh_digests(&mut body);
    }
    let key = ed25519_dalek::SigningKey::from_bytes(&[23u8; 32]);
    let link = Link {
        seq: 1,
        prev: GENESIS_PREV.into(),
        file_id: "00112233445566778899aabbccddeeff".into(),
    };
    // A body that names its format keeps it (seal writes the current one): an older
    // format is signed as such.
    let format = body.get("format").cloned();
    let mut line = seal(body, &link, &key).line;
    line.pop();
    match format {
        Some(f) if f != mcp_witness::evidence::block::FORMAT => {
            use sha2::Digest;
            let mut v: Value = serde_json::from_slice(&line).unwrap();
            let map = v.as_object_mut().unwrap();
            map.insert("format".into(), f);
            map.remove("hash");
            map.remove("sig");
            let digest: [u8; 32] =
                sha2::Sha256::digest(mcp_witness::evidence::canonical::to_bytes(&v)).into();
            let sig = ed25519_dalek::Signer::sign(&key, &digest);
            let map = v.as_object_mut().unwrap();
            map.insert("hash".into(), mcp_witness::hex::encode(&digest).into());
            map.insert("sig".into(), mcp_witness::hex::encode(&sig.to_bytes()).into());
            mcp_witness::evidence::canonical::to_bytes(&v)
        }
        _ => line,
    }
}

#[test]
fn verify_and_the_json_schema_agree_on_every_good_and_broken_block() {
    let b = Bench::new("corpus");
    let ev = b.evidence.to_str().unwrap().to_string();
    for behaviour in [&["correct"][..], &["escape-setpgid"], &["crash"], &["chatty"]] {
        b.probe_fixture(&[], behaviour);
    }
    b.probe_fixture(
        &["--call", "echo", "--call-args", r#"{"text":"hi"}"#],
        &["tool-error"],
    );
    let run = b.run(&["check", "-e", &ev, "--", fixture(), "correct"]);
    assert!(matches!(run.code, 0 | 1), "{}{}", run.stdout, run.stderr);
    let blocks = b.blocks();
    let probe = body_of(&blocks[0]);
    let escaped = body_of(
        blocks
            .iter()
            .find(|x| x["teardown"]["escapees"][0].is_object())
            .unwrap(),
    );
    let called = body_of(blocks.iter().find(|x| x["call"].is_object()).unwrap());
    let check = body_of(blocks.iter().find(|x| x["kind"] == "check").unwrap());
    let client = {
        let c = json!({"name": "cl", "version": null});
        let mut m = body_of(&json!({
            "kind": "client", "observed_at": "2026-12-02T10:00:00.000+00:00", "tz": null,
            "host": "h", "tool": {"name": "mcp-witness", "version": "0"},
            "target": {"client": c}, "client": c,
            "log": {"path": "/x.log.jsonl", "sha256": "ab".repeat(32), "bytes": 3, "entries": 1},
            "domains": [{"domain": "tools", "verdict": "incomplete", "question": null, "why": "w",
                         "meaning": "m", "answers": [{"question": "q", "answer": "a",
                                                      "evidence_line": 1, "evidence_ts": null}]}],
            "verdict": "incomplete",
        }));
        m.insert("observation_sha256".into(), "".into());
        m
    };

    type Edit = fn(&mut Value);
    let good: Vec<(&str, serde_json::Map<String, Value>)> = blocks
        .iter()
        .enumerate()
        .map(|(i, x)| {
            (
                ["probe 1", "probe 2", "probe 3", "probe 4", "probe 5", "check"][i],
                body_of(x),
            )
        })
        .chain([("client", client.clone())])
        .collect();
    let broken: Vec<(&str, &serde_json::Map<String, Value>, Edit)> = vec![
        ("tools.count as text", &probe, |v| {
            v["tools"]["count"] = "3".into()
        }),
        ("extra field in tools", &probe, |v| v["tools"]["extra"] = 1.into()),
        ("extra field in target", &probe, |v| {
            v["target"]["extra"] = 1.into()
        }),
        ("tools.pages missing", &probe, |v| {
            drop(v["tools"].as_object_mut().unwrap().remove("pages"))
        }),
        ("teardown.ended_by bogus", &probe, |v| {
            v["teardown"]["ended_by"] = "bogus".into()
        }),
        ("group_signals of three", &probe, |v| {
            v["teardown"]["group_signals"] = json!(["sigterm", "sigkill", "sigkill"])
        }),
        ("survivor pid 0", &probe, |v| {
            v["teardown"]["survivors"] = json!([0])
        }),
        ("exit with code and signal", &probe, |v| {
            v["teardown"]["exit"] = json!({"code": 0, "signal": 9})
        }),
        ("escapee left nowhere", &escaped, |v| {
            v["teardown"]["escapees"][0]["left"] = "nowhere".into()
        }),
        ("reason code upper case", &probe, |v| {
            v["reasons"] = json!([{"code": "Bad", "message": "m"}])
        }),
        ("six noise lines", &probe, |v| {
            v["stdout_noise"]["lines"] = Value::Array(vec![json!({"text": "", "kind": "blank"}); 6])
        }),
        ("timings total null", &probe, |v| {
            v["timings_ms"]["total"] = Value::Null
        }),
        ("stderr tail a number", &probe, |v| v["stderr"]["tail"] = 1.into()),
        ("server without version", &probe, |v| {
            v["server"] = json!({"name": "x"})
        }),
        ("target era unknown", &probe, |v| {
            v["target"]["era"] = "future".into()
        }),
        ("program_sha256 short", &probe, |v| {
            v["target"]["program_sha256"] = "abc".into()
        }),
        ("tool with a third field", &probe, |v| {
            v["tool"]["extra"] = "x".into()
        }),
        ("tz a number", &probe, |v| v["tz"] = 0.into()),
        ("verdict maybe", &probe, |v| v["verdict"] = "maybe".into()),
        ("bound unknown", &probe, |v| v["bound"] = "forever".into()),
        ("call outcome unknown", &called, |v| {
            v["call"]["outcome"] = "meh".into()
        }),
        ("call error code text not a number", &called, |v| {
            v["call"]["error"] = json!({"code": "12a", "message": "m"})
        }),
        ("check status bogus", &check, |v| {
            v["results"][0]["status"] = "bogus".into()
        }),
        ("check result extra field", &check, |v| {
            v["results"][0]["extra"] = 1.into()
        }),
        ("check counts negative", &check, |v| {
            v["counts"]["skip"] = (-1).into()
        }),
        ("check session extra", &check, |v| {
            v["session"]["extra"] = 1.into()
        }),
        ("check strict as text", &check, |v| v["strict"] = "yes".into()),
        ("check top-level extra", &check, |v| v["extra"] = 1.into()),
        ("client domain extra", &client, |v| {
            v["domains"][0]["extra"] = 1.into()
        }),
        ("client log bytes negative", &client, |v| {
            v["log"]["bytes"] = (-1).into()
        }),
        ("client verdict unknown", &client, |v| {
            v["verdict"] = "fine".into()
        }),
        ("client answer line text", &client, |v| {
            v["domains"][0]["answers"][0]["evidence_line"] = "1".into()
        }),
        ("client top-level extra", &client, |v| v["extra"] = 1.into()),
        ("a v1 block with a v2 field (surface)", &probe, |v| {
            v["format"] = "mcp-witness/evidence-block/v1".into();
            v["surface"] = Value::Null;
        }),
    ];
    let mut corpus: Vec<(String, bool, Vec<u8>)> = good
        .into_iter()
        .map(|(name, body)| (name.to_string(), true, sealed_line(body)))
        .collect();
    for (name, base, edit) in broken {
        let mut v = Value::Object(base.clone());
        edit(&mut v);
        corpus.push((
            name.to_string(),
            false,
            sealed_line(v.as_object().unwrap().clone()),
        ));
    }

    // Python: jsonschema over every line (reverify.py --each), one verdict per line.
    let all = write_lines(
        &b.dir,
        "corpus.jsonl",
        &corpus.iter().map(|c| c.2.clone()).collect::<Vec<_>>(),
    );
    let (_, out) = reverify(&["--each", &all]);
    let python: Vec<&str> = out.lines().collect();
    assert_eq!(python.len(), corpus.len(), "{out}");
    // mcp-witness: each line as its own file.
    let mut files = Vec::new();
    for (i, c) in corpus.iter().enumerate() {
        files.push(write_lines(
            &b.dir,
            &format!("c{i}.jsonl"),
            std::slice::from_ref(&c.2),
        ));
    }
    let mut args = vec!["verify", "--json"];
    args.extend(files.iter().map(String::as_str));
    let run = b.run(&args);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    for (i, (name, good, _)) in corpus.iter().enumerate() {
        let ours = &report["files"][i];
        let ours_ok = ours["intact"] == true;
        let theirs = python[i].split_once(": ").unwrap().1;
        assert_eq!(ours_ok, *good, "{name}: verify says {ours}");
        assert_eq!(theirs == "ok", *good, "{name}: jsonschema says {theirs}");
        if !good {
            assert!(
                theirs.starts_with("schema:"),
                "{name}: refused by the schema, not by {theirs}"
            );
            assert!(
                matches!(
                    ours["broken"]["code"].as_str(),
                    Some("bad_field" | "unknown_field")
                ),
                "{name}: refused for its shape: {ours}"
            );
        }
    }
}
