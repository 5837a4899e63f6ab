//! The wire group against the official SDKs: every message of every fixture behaviour and of
//! the reference servers (each server process's stdin and stdout captured during a real
//! `check` run) is judged by
//! `mcp::wire::validate` and by the TypeScript SDK's zod schemas and the Python SDK's pydantic
//! types (tests/sdk-client/wire-verdicts.mjs, wire_verdicts.py, from the pinned reference
//! install). A message is a wire fail exactly when one SDK rejects it, save the deliberate
//! disagreements in `deliberate`, each with the text that decides it (README, wire group).
//! Beside the captured traffic: the methods check does not call yet (prompts/get,
//! resources/read, completion/complete) asked of `wire-defects` directly, and a hand-written
//! corpus of one or more messages per rule in every legacy version.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use mcp_witness::mcp::wire::{self, Kind, Severity, Version};
use serde_json::{Value, json};

/// Behaviours whose traffic is judged, with extra `check` arguments.
const RUNS: &[(&str, &[&str])] = &[
    ("correct", &[]),
    ("modern", &[]),
    ("modern", &["--era", "modern"]),
    ("paginated", &[]),
    ("chatty", &[]),
    ("invalid-tools", &[]),
    ("empty-tools", &[]),
    ("tool-error", &["--call-tools"]),
    ("bad", &["--safe-tool", "shape_bad"]),
    ("bad-init", &[]),
    ("poisoned", &[]),
    ("wire-defects", &[]),
    ("wire-defects", &["--era", "modern"]),
];

/// One message a server sent, with what it answers.
struct Case {
    origin: String,
    kind: &'static str,
    method: Option<String>,
    version: Version,
    message: Value,
}

/// Runs `check` on `command` with every server process's stdin and stdout teed to
/// `dir/cap.<pid>.{in,out}`, and returns the (in, out) file pairs.
fn capture(b: &Bench, command: &[&str], extra: &[&str], dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir).unwrap();
    let prefix = dir.join("cap");
    let script = r#"f="$0.$$"; tee "$f.in" | "$@" | tee "$f.out""#;
    let mut args = vec!["check", "--no-record", "--json", "--timeout", "5"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sh", "-c", script, prefix.to_str().unwrap()]);
    args.extend_from_slice(command);
    b.run(&args);
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "in") {
            pairs.push((path.clone(), path.with_extension("out")));
        }
    }
    pairs.sort();
    pairs
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read(path)
        .unwrap_or_default()
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice::<Value>(l).ok())
        .filter(Value::is_object)
        .collect()
}

/// The cases of one server process: its replies (to the method whose id they carry), its
/// notifications and requests, read against the version its handshake negotiated.
fn cases(origin: &str, input: &Path, output: &Path) -> Vec<Case> {
    let sent = json_lines(input);
    let got = json_lines(output);
    let methods: BTreeMap<String, String> = sent
        .iter()
        .filter_map(|m| Some((m.get("id")?.to_string(), m.get("method")?.as_str()?.to_string())))
        .collect();
    let version = got
        .iter()
        .find_map(|m| {
            m.pointer("/result/protocolVersion")?
                .as_str()
                .and_then(Version::parse)
        })
        .or_else(|| {
            got.iter()
                .any(|m| m.pointer("/result/supportedVersions").is_some())
                .then_some(Version::V2026_07_28)
        });
    let Some(version) = version else { return Vec::new() };
    let mut out = Vec::new();
    for message in got {
        let (kind, method) = match (message.get("method"), message.get("id")) {
            (Some(m), Some(id)) if !id.is_null() => ("request", m.as_str().map(str::to_string)),
            (Some(m), _) => ("notification", m.as_str().map(str::to_string)),
            (None, id) => {
                let method = id.and_then(|id| methods.get(&id.to_string())).cloned();
                // A result is judged only as the answer to a method we know the schema of.
                if message.get("error").is_none()
                    && method.as_deref().and_then(wire::Family::of_method).is_none()
                {
                    continue;
                }
                ("reply", method)
            }
        };
        out.push(Case {
            origin: origin.to_string(),
            kind,
            method,
            version,
            message,
        });
    }
    out
}

/// The methods check does not call (yet), asked of `wire-defects` directly over its pipes: the
/// requests are written, stdin closed, and every reply read until the server exits at EOF.
fn direct_session(b: &Bench) -> Vec<Case> {
    let dir = b.dir.join("direct");
    std::fs::create_dir_all(&dir).unwrap();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "summarize", "arguments": {"text": "x"}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "file:///workspace/README.md"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": {"ref": {"type": "ref/prompt", "name": "summarize"},
            "argument": {"name": "text", "value": "x"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "resources/templates/list"}),
    ];
    let input = dir.join("cap.in");
    let text: String = requests.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&input, &text).unwrap();
    let out = Command::new(fixture())
        .arg("wire-defects")
        .stdin(std::fs::File::open(&input).unwrap())
        .output()
        .unwrap();
    let output = dir.join("cap.out");
    std::fs::write(&output, &out.stdout).unwrap();
    let cases = cases("wire-defects direct", &input, &output);
    for method in ["prompts/get", "resources/read", "completion/complete"] {
        assert!(
            cases.iter().any(|c| c.method.as_deref() == Some(method)),
            "no {method} reply"
        );
    }
    cases
}

/// Hand-written messages, one or more per rule and version, beside what the servers sent.
fn synthetic() -> Vec<Case> {
    let reply = |method: &str, version: Version, result: Value| Case {
        origin: "synthetic".into(),
        kind: "reply",
        method: Some(method.into()),
        version,
        message: json!({"jsonrpc": "2.0", "id": 1, "result": result}),
    };
    let v = Version::ALL;
    let mut out = Vec::new();
    for version in v.into_iter().filter(|v| !v.modern()) {
        for item in [
            json!({"type": "text", "text": "a"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "a"}}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "AAAA"}}),
            json!({"type": "resource", "resource": {"uri": "file:///a"}}),
            json!({"type": "text"}),
            json!({"type": "image", "data": "AAAA"}),
            json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}),
            json!({"type": "image", "data": "QUJ", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "QQ=", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "%%%"}}),
            json!({"type": "video", "url": "x"}),
            json!({"type": "text", "text": "a", "annotations": {"audience": ["user"], "priority": 0.5}}),
            json!({"type": "text", "text": "a", "annotations": {"priority": 2}}),
            json!({"type": "text", "text": "a", "annotations": {"audience": ["system"]}}),
        ] {
            out.push(reply("tools/call", version, json!({"content": [item]})));
        }
        out.extend([
            reply("tools/call", version, json!({"content": [], "isError": "yes"})),
            reply("tools/call", version, json!({"isError": true})),
            reply("tools/call", version, json!({"content": [], "structuredContent": [1]})),
            reply("tools/list", version, json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": "no"}}]})),
            reply("tools/list", version, json!({"tools": [{"name": "a", "inputSchema": {"type": "string"}}]})),
            reply("tools/list", version, json!({"tools": [{"name": "a", "inputSchema": {"type": "object", "properties": {"x": true}}}]})),
            reply("tools/list", version, json!({"tools": [{"name": "a", "description": null, "inputSchema": {"type": "object"}}]})),
            reply("tools/list", version, json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}}]})),
            reply("resources/list", version, json!({"resources": [{"uri": "file:///a", "name": "a", "size": "1"}]})),
            reply("resources/templates/list", version, json!({"resourceTemplates": [{"name": "a"}]})),
            reply("prompts/list", version, json!({"prompts": [{"name": "a", "arguments": [{"description": "x"}]}]})),
            reply("prompts/get", version, json!({"messages": [{"role": "assistant", "content": {"type": "text", "text": "a"}}]})),
            reply("prompts/get", version, json!({"messages": [{"role": "user"}]})),
            reply("completion/complete", version, json!({"completion": {"values": ["a"], "total": 1.5}})),
            reply("completion/complete", version, json!({"completion": {"values": vec!["a"; 101]}})),
            reply("initialize", version, json!({"protocolVersion": version.as_str(), "capabilities": {"tools": {"listChanged": "yes"}},
                "serverInfo": {"name": "s", "version": "1"}})),
            reply("initialize", version, json!({"protocolVersion": version.as_str(), "capabilities": {},
                "serverInfo": {"name": "s"}})),
            reply("ping", version, json!({})),
            reply("initialize", version, json!({"protocolVersion": version.as_str(),
                "capabilities": {"experimental": {"x": 1}}, "serverInfo": {"name": "s", "version": "1"}})),
        ]);
        for params in [
            json!({"level": "info", "data": {"a": 1}}),
            json!({"level": "info"}),
            json!({"progressToken": 1, "progress": 1}),
            json!({"progressToken": 1.5, "progress": 1}),
        ] {
            let method = if params.get("level").is_some() {
                "notifications/message"
            } else {
                "notifications/progress"
            };
            out.push(Case {
                origin: "synthetic".into(),
                kind: "notification",
                method: Some(method.into()),
                version,
                message: json!({"jsonrpc": "2.0", "method": method, "params": params}),
            });
        }
    }
    out
}

/// The SDK script's verdicts (`accepted`: true, false, or null for no opinion) on `cases`.
fn sdk_verdicts(program: &Path, script: &str, cases: &[Value]) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk-client")
        .join(script);
    let mut cmd = Command::new(program);
    cmd.arg(path)
        .env("MCP_WITNESS_SDK_DIR", reference_dir().join("node/node_modules"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    let input = serde_json::to_vec(cases).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdicts.len(), cases.len(), "{script}");
    verdicts
}

/// A disagreement the README documents, with the reason; `None` when there is none.
fn deliberate(case: &Case, ours: bool, ts: &Value, py: &Value) -> Option<&'static str> {
    let m = &case.message;
    if ours
        && ts["accepted"] == false
        && py["accepted"] != false
        && m.get("error").is_some()
        && m["id"].is_null()
    {
        return Some("an error with id null: JSON-RPC 2.0 section 5 (the Python SDK agrees)");
    }
    None
}

#[test]
fn the_wire_verdict_matches_the_official_sdks_on_every_message_of_the_fixtures_and_reference_servers() {
    let b = Bench::new("wire-differential");
    let mut all = Vec::new();
    for (i, (behaviour, extra)) in RUNS.iter().enumerate() {
        let dir = b.dir.join(&format!("run-{i}"));
        for (input, output) in capture(&b, &[fixture(), behaviour], extra, &dir) {
            all.extend(cases(&format!("{behaviour} {extra:?}"), &input, &output));
        }
    }
    let reference = reference_dir();
    let node = reference.join("node/node_modules/@modelcontextprotocol");
    let everything = node.join("server-everything/dist/index.js");
    let filesystem = node.join("server-filesystem/dist/index.js");
    let time = reference.join("venv/bin/mcp-server-time");
    let scratch = b.dir.join("fs");
    std::fs::create_dir_all(&scratch).unwrap();
    let servers: [(&str, Vec<&str>, &[&str]); 4] = [
        (
            "server-everything",
            vec!["node", everything.to_str().unwrap(), "stdio"],
            &[],
        ),
        (
            "server-filesystem",
            vec!["node", filesystem.to_str().unwrap(), scratch.to_str().unwrap()],
            &[],
        ),
        (
            "mcp-server-time",
            vec![time.to_str().unwrap(), "--local-timezone", "UTC"],
            &[],
        ),
        (
            "mcp-server-time auto",
            vec![time.to_str().unwrap(), "--local-timezone", "UTC"],
            &["--era", "auto"],
        ),
    ];
    for (i, (label, command, extra)) in servers.iter().enumerate() {
        let dir = b.dir.join(&format!("ref-{i}"));
        for (input, output) in capture(&b, command, extra, &dir) {
            all.extend(cases(label, &input, &output));
        }
    }
    all.extend(direct_session(&b));
    all.extend(synthetic());
    assert!(all.len() > 200, "only {} messages captured", all.len());
    let payloads: Vec<Value> = all
        .iter()
        .map(|c| json!({"kind": c.kind, "method": c.method, "version": c.version.as_str(), "message": c.message}))
        .collect();
    let ts = sdk_verdicts(Path::new("node"), "wire-verdicts.mjs", &payloads);
    let py = sdk_verdicts(
        &reference_dir().join("venv/bin/python"),
        "wire_verdicts.py",
        &payloads,
    );
    let (mut mismatches, mut rejected, mut documented) = (Vec::new(), 0, 0);
    for ((case, ts), py) in all.iter().zip(&ts).zip(&py) {
        let kind = match case.kind {
            "reply" => Kind::Reply(case.method.as_deref()),
            "notification" => Kind::Notification,
            _ => Kind::ServerRequest,
        };
        let found = wire::validate(case.version, kind, &case.message);
        let ours_accepts = !found.iter().any(|f| f.violation.severity == Severity::Reject);
        let sdks_accept = ts["accepted"] != false && py["accepted"] != false;
        if !ours_accepts {
            rejected += 1;
        }
        if ours_accepts == sdks_accept {
            continue;
        }
        if deliberate(case, ours_accepts, ts, py).is_some() {
            documented += 1;
            continue;
        }
        let rules: Vec<String> = found
            .iter()
            .map(|f| format!("{} [{}]", f.violation.pointer, f.violation.rule))
            .collect();
        mismatches.push(format!(
            "{} {} {:?} ({}): ours {} {rules:?}; ts {}; python {}\n  {}",
            case.origin,
            case.kind,
            case.method,
            case.version.as_str(),
            if ours_accepts { "accepts" } else { "rejects" },
            ts,
            py,
            crate::truncate(&case.message.to_string(), 400)
        ));
    }
    let silent = |v: &[Value]| v.iter().filter(|v| v["accepted"].is_null()).count();
    eprintln!(
        "{} messages judged, {rejected} rejected by the wire group, {documented} documented disagreements; no opinion: TypeScript {}, Python {}",
        all.len(),
        silent(&ts),
        silent(&py)
    );
    assert!(
        rejected > 10,
        "the defect fixtures should give rejections: {rejected}"
    );
    assert!(
        mismatches.is_empty(),
        "{} disagreements:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}
