//! Kind `probe`: one run of `mcp-witness probe` against one stdio server. Its fields and
//! their shapes, its target id and observation digest, the teardown rule, and its diff.

use serde_json::{Value, json};

use super::shape::{COUNT, Field, MILLIS, SHA256, STRINGS, Shape, Syntax};
use super::{Change, Spec, View, array, field_change, list_change, object, server_changes, strings};
use crate::evidence::canonical_scan::Raw;

const SAFE: i64 = crate::evidence::canonical::MAX_SAFE_INTEGER as i64;
const PID: Shape = Shape::Int(1, 4_294_967_295);
const MILLIS_OR_NULL: Shape = Shape::OrNull(&MILLIS);

/// The `target` of probe and check blocks: the server command as it was run, or an HTTP
/// server's redacted URL, transport and header names.
pub const TARGET: Shape = Shape::OneOf(&[STDIO_TARGET, HTTP_TARGET]);

/// An HTTP target: no program, folder or variables; header names only, never values.
const HTTP_TARGET: Shape = Shape::Obj(&[
    Field::req("id", SHA256),
    Field::req("url", Shape::Str),
    Field::req("transport", Shape::Enum(&["streamable_http", "http_sse"])),
    Field::req("headers", STRINGS),
    Field::req("era", Shape::Enum(&["legacy", "modern", "auto"])),
    Field::req("protocol_version", Shape::OrNull(&Shape::Str)),
]);

/// A session id's shape (never its value).
const SESSION_ID: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("length", COUNT),
    Field::req("visible_ascii", Shape::Bool),
]));

const OPT_STR: Shape = Shape::OrNull(&Shape::Str);
const STATUS: Shape = Shape::OrNull(&Shape::Int(0, 999));

/// `http`: what the HTTP transport showed (HTTP targets only): per connection every
/// exchange's method, status, content type, framing, session id shape and how reading
/// ended, the redirects and the DELETE; after a 401 the challenge and resource metadata.
pub const HTTP: Shape = Shape::Obj(&[
    Field::req("transport", Shape::Enum(&["streamable_http", "http_sse"])),
    Field::req(
        "connections",
        Shape::Array(
            &Shape::Obj(&[
                Field::req(
                    "exchanges",
                    Shape::Array(
                        &Shape::Obj(&[
                            Field::req("method", Shape::Enum(&["GET", "POST", "DELETE"])),
                            Field::req("rpc_method", OPT_STR),
                            Field::req("status", STATUS),
                            Field::req("content_type", OPT_STR),
                            Field::req(
                                "framing",
                                Shape::OrNull(&Shape::OneOf(&[
                                    Shape::Enum(&["none", "chunked", "close"]),
                                    Shape::Obj(&[Field::req("length", COUNT)]),
                                ])),
                            ),
                            Field::req("session_id", SESSION_ID),
                            Field::req("location", OPT_STR),
                            Field::req("body_bytes", COUNT),
                            Field::req(
                                "sse",
                                Shape::OrNull(&Shape::Obj(&[
                                    Field::req("events", COUNT),
                                    Field::req("comments", COUNT),
                                    Field::req("priming", COUNT),
                                    Field::req("ids", COUNT),
                                    Field::req("retry_ms", Shape::OrNull(&COUNT)),
                                    Field::req("oversize", COUNT),
                                    Field::req("lf", COUNT),
                                    Field::req("crlf", COUNT),
                                    Field::req("cr", COUNT),
                                ])),
                            ),
                            Field::req(
                                "ended",
                                Shape::OrNull(&Shape::Enum(&[
                                    "body", "reply", "deadline", "cut", "closed", "error",
                                ])),
                            ),
                            Field::req("error", OPT_STR),
                        ]),
                        Some(256),
                    ),
                ),
                Field::req("exchanges_dropped", COUNT),
                Field::req("session_id", SESSION_ID),
                Field::req("session_id_changed", Shape::Bool),
                Field::req(
                    "redirects",
                    Shape::Array(
                        &Shape::Obj(&[
                            Field::req("status", Shape::Int(0, 999)),
                            Field::req("location", OPT_STR),
                        ]),
                        None,
                    ),
                ),
                Field::req(
                    "delete",
                    Shape::Enum(&["no_session", "accepted", "refused", "failed"]),
                ),
                Field::req("delete_status", STATUS),
                Field::req("delete_error", OPT_STR),
                Field::req("readers_left", COUNT),
            ]),
            None,
        ),
    ),
    Field::req(
        "auth",
        Shape::OrNull(&Shape::Obj(&[
            Field::req("challenges", STRINGS),
            Field::req("metadata_url", OPT_STR),
            Field::req("metadata_status", STATUS),
            Field::req("metadata", Shape::OrNull(&Shape::Foreign)),
            Field::req("metadata_note", OPT_STR),
        ])),
    ),
    // https:// only: the SHA-256 of the server's leaf certificate (DER), the counterpart of
    // a stdio target's program digest.
    Field::opt("certificate_sha256", SHA256),
]);

/// A stdio target: the server command as it was run.
const STDIO_TARGET: Shape = Shape::Obj(&[
    Field::req("id", SHA256),
    Field::req("command", STRINGS),
    Field::req("program", Shape::OrNull(&Shape::Str)),
    Field::req("program_sha256", Shape::OrNull(&SHA256)),
    Field::opt("program_sha256_source", Shape::Enum(&["computed", "cache"])),
    Field::req("cwd", Shape::Str),
    Field::req("env", STRINGS),
    Field::req("era", Shape::Enum(&["legacy", "modern", "auto"])),
    Field::req("protocol_version", Shape::OrNull(&Shape::Str)),
]);

/// `server`: the server's self-description, or null.
pub const SERVER: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("name", Shape::Str),
    Field::req("version", Shape::OrNull(&Shape::Str)),
]));

/// `silence`: the request that got no reply, or null.
pub const SILENCE: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("step", Shape::Str),
    Field::req("waited_ms", MILLIS),
    Field::req("stdout_bytes", COUNT),
    Field::req("stderr_bytes", COUNT),
    Field::req("alive", Shape::Bool),
]));

/// `stderr`: bytes the server wrote there and their redacted tail.
pub const STDERR: Shape = Shape::Obj(&[
    Field::req("bytes", COUNT),
    Field::req("tail", Shape::OrNull(&Shape::Str)),
]);

/// `bound`: which bound ended the run early.
pub const BOUND: Shape = Shape::OrNull(&Shape::Enum(&["timeout", "deadline"]));

/// The era a handshake used.
pub const ERA: Shape = Shape::Enum(&["legacy", "modern"]);

/// The fields of a probe block beyond the envelope, in the order verify checks them.
pub const FIELDS: &[Field] = &[
    Field::req("target", TARGET),
    Field::req("era", ERA),
    Field::req("era_detection", Shape::OrNull(&Shape::Str)),
    Field::req("protocol_requested", Shape::Str),
    Field::req("protocol_version", Shape::OrNull(&Shape::Str)),
    Field::req("server", SERVER),
    Field::req("capabilities", Shape::Foreign),
    Field::req(
        "tools",
        Shape::OrNull(&Shape::Obj(&[
            Field::req("count", COUNT),
            Field::req("names", STRINGS),
            Field::req("pages", COUNT),
            Field::req("names_complete", Shape::Bool),
        ])),
    ),
    Field::req(
        "call",
        Shape::OrNull(&Shape::Obj(&[
            Field::req("tool", Shape::Str),
            Field::req(
                "outcome",
                Shape::Enum(&[
                    "ok",
                    "tool_error",
                    "rpc_error",
                    "silent",
                    "not_listed",
                    "not_attempted",
                    "exited",
                    "malformed",
                ]),
            ),
            Field::req("argument_names", STRINGS),
            Field::req("content_types", STRINGS),
            Field::req("preview", Shape::OrNull(&Shape::Str)),
            Field::req("result_sha256", Shape::OrNull(&SHA256)),
            Field::req(
                "error",
                Shape::OrNull(&Shape::Obj(&[
                    Field::req(
                        "code",
                        Shape::OneOf(&[Shape::Int(-SAFE, SAFE), Shape::Text(Syntax::IntegerText)]),
                    ),
                    Field::req("message", Shape::Str),
                ])),
            ),
            Field::req("elapsed_ms", MILLIS_OR_NULL),
        ])),
    ),
    Field::req("verdict", Shape::Enum(&["pass", "fail", "inconclusive"])),
    Field::req(
        "reasons",
        Shape::Array(
            &Shape::Obj(&[
                Field::req("code", Shape::Text(Syntax::Code)),
                Field::req("message", Shape::Str),
            ]),
            None,
        ),
    ),
    Field::req("silence", SILENCE),
    Field::req(
        "stdout_noise",
        Shape::Obj(&[
            Field::req("count", COUNT),
            Field::req(
                "lines",
                Shape::Array(
                    &Shape::Obj(&[
                        Field::req("text", Shape::Str),
                        Field::req(
                            "kind",
                            Shape::Enum(&["bom", "invalid_utf8", "blank", "not_json", "not_object"]),
                        ),
                    ]),
                    Some(5),
                ),
            ),
            Field::req("crlf_lines", COUNT),
        ]),
    ),
    Field::req(
        "messages",
        Shape::Obj(&[
            Field::req("count", COUNT),
            Field::req(
                "notifications",
                Shape::Obj(&[
                    Field::req("count", COUNT),
                    Field::req("methods", Shape::Array(&Shape::Str, Some(32))),
                ]),
            ),
            Field::req(
                "server_requests",
                Shape::Obj(&[
                    Field::req("count", COUNT),
                    Field::opt("unanswered", COUNT),
                    Field::req(
                        "requests",
                        Shape::Array(
                            &Shape::Obj(&[
                                Field::req("method", Shape::Str),
                                Field::req(
                                    "answer",
                                    Shape::Enum(&["{}", "-32601", "dropped", "not_answered"]),
                                ),
                            ]),
                            Some(32),
                        ),
                    ),
                ]),
            ),
            Field::req("unmatched_replies", COUNT),
            Field::req("max_line_bytes", COUNT),
        ]),
    ),
    Field::req("stderr", STDERR),
    Field::req(
        "timings_ms",
        Shape::Obj(&[
            Field::req("first_stdout", MILLIS_OR_NULL),
            Field::req("discover", MILLIS_OR_NULL),
            Field::req("initialize", MILLIS_OR_NULL),
            Field::req("tools_list", MILLIS_OR_NULL),
            Field::req("call", MILLIS_OR_NULL),
            Field::req("total", MILLIS),
        ]),
    ),
    Field::req(
        "teardown",
        Shape::OrNull(&Shape::Obj(&[
            Field::req(
                "ended_by",
                Shape::Enum(&["exited_before", "stdin_eof", "sigterm", "sigkill", "unkillable"]),
            ),
            Field::req("after_ms", MILLIS),
            Field::req(
                "exit",
                Shape::OrNull(&Shape::OneOf(&[
                    Shape::Obj(&[Field::req("code", Shape::Int(-2_147_483_648, 2_147_483_647))]),
                    Shape::Obj(&[Field::req("signal", Shape::Int(1, 2_147_483_647))]),
                ])),
            ),
            Field::req(
                "group_signals",
                Shape::Array(&Shape::Enum(&["sigterm", "sigkill"]), Some(2)),
            ),
            Field::opt(
                "escapees",
                Shape::Array(
                    &Shape::Obj(&[
                        Field::req("pid", PID),
                        Field::req("argv", Shape::Array(&Shape::Str, Some(32))),
                        Field::req("left", Shape::Enum(&["group", "session"])),
                        Field::req(
                            "ended",
                            Shape::Enum(&["exited", "sigterm", "sigkill", "survived"]),
                        ),
                    ]),
                    Some(64),
                ),
            ),
            Field::req("survivors", Shape::Array(&PID, None)),
        ])),
    ),
    Field::req("observation_sha256", SHA256),
    Field::opt("bound", BOUND),
    Field::opt("surface", super::surface::PROBE),
    Field::opt("expected", EXPECTED),
    Field::opt("http", HTTP),
];

/// `expected`: with `probe --expect`, the block the surface was compared with and what
/// differed (at most 1000 changes).
const EXPECTED: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("seq", Shape::Int(1, SAFE)),
    Field::req("hash", SHA256),
    Field::req(
        "changes",
        Shape::Array(
            &Shape::Obj(&[
                Field::req("change", Shape::Enum(&["added", "removed", "changed"])),
                Field::req(
                    "kind",
                    Shape::Enum(&["tool", "resource", "resource_template", "prompt", "instructions"]),
                ),
                Field::opt("name", Shape::Str),
                Field::opt("parts", STRINGS),
            ]),
            Some(1000),
        ),
    ),
]));

pub const SPEC: Spec = Spec {
    name: "probe",
    fields: FIELDS,
    identity,
    observation,
    rules,
    diff,
    run_ms,
};

/// What `target.id` digests: the command, folder, variable names, era and version asked
/// for (not the program's content), so runs of one server compare across hosts; for an HTTP
/// server, its redacted URL and header names instead of the command, folder and variables.
pub fn identity(target: Raw<'_>) -> Vec<u8> {
    const KEYS: [&str; 7] = [
        "url",
        "headers",
        "era",
        "protocol_version",
        "command",
        "cwd",
        "env",
    ];
    let mut v = [Raw(b"null"); KEYS.len()];
    target.find_all(&KEYS, &mut v);
    let [url, headers, era, protocol_version, command, cwd, env] = v;
    if !url.is_null() {
        return object(&[
            ("era", era.0),
            ("headers", headers.0),
            ("protocol_version", protocol_version.0),
            ("url", url.0),
        ]);
    }
    object(&[
        ("command", command.0),
        ("cwd", cwd.0),
        ("env", env.0),
        ("era", era.0),
        ("protocol_version", protocol_version.0),
    ])
}

/// What `observation_sha256` digests: what was observed, without when or how fast.
fn observation(b: &View<'_>) -> Vec<u8> {
    // Members are read in place (`Raw::find`), without listing the objects they are in.
    let target = b.at("target");
    let pick = |v: Raw<'_>, keys: &[&'static str]| -> Vec<u8> {
        if v.is_null() {
            return b"null".to_vec();
        }
        let mut values = [Raw(b"null"); 3];
        let values = &mut values[..keys.len()];
        v.find_all(keys, values);
        let members: Vec<(&str, &[u8])> = keys.iter().zip(values.iter()).map(|(k, x)| (*k, x.0)).collect();
        object(&members)
    };
    let tools = pick(b.at("tools"), &["count", "names"]);
    let call = pick(b.at("call"), &["tool", "outcome", "result_sha256"]);
    let reasons = b.at("reasons").items().unwrap_or_default();
    let codes: Vec<Raw<'_>> = reasons.iter().map(|r| r.find("code")).collect();
    let codes = array(codes.iter().map(|c| c.0));
    // In key order, `surface` only when observed.
    let surface = super::surface::observed(b);
    let members = [
        ("call", Some(&call[..])),
        ("capabilities", Some(b.at("capabilities").0)),
        ("era", Some(b.at("era").0)),
        ("program_sha256", Some(target.find("program_sha256").0)),
        ("protocol_version", Some(b.at("protocol_version").0)),
        ("reasons", Some(&codes[..])),
        ("server", Some(b.at("server").0)),
        ("surface", surface.map(|s| s.0)),
        ("tools", Some(&tools[..])),
        ("verdict", Some(b.at("verdict").0)),
    ];
    let mut present = [("", &b""[..]); 10];
    let mut n = 0;
    for (k, v) in members {
        if let Some(v) = v {
            present[n] = (k, v);
            n += 1;
        }
    }
    object(&present[..n])
}

/// An escapee that survived the teardown is among the survivors.
fn rules(b: &View<'_>) -> Result<(), (String, String)> {
    let mut td = [Raw(b"null"); 2];
    b.at("teardown").find_all(&["survivors", "escapees"], &mut td);
    let [survivors, escapees] = td;
    let survivors = survivors.items().unwrap_or_default();
    for (i, e) in escapees.items().unwrap_or_default().into_iter().enumerate() {
        let e = View::of(e);
        if e.at("ended").str().as_deref() == Some("survived") && !survivors.contains(&e.at("pid")) {
            return Err((
                format!("teardown.escapees[{i}]"),
                "survived but its pid is not among teardown.survivors".into(),
            ));
        }
    }
    Ok(())
}

/// How long the run took.
fn run_ms(b: &View<'_>) -> u64 {
    View::of(b.at("timings_ms"))
        .at("total")
        .int()
        .map_or(0, |n| n.max(0) as u64)
}

fn diff(old: &Value, new: &Value, out: &mut Vec<Change>) {
    server_changes(old, new, out);
    field_change(out, "verdict", "verdict", &old["verdict"], &new["verdict"]);
    list_change(
        out,
        "tools",
        &strings(&old["tools"]["names"]),
        &strings(&new["tools"]["names"]),
    );
    let codes = |v: &Value| -> Value {
        v["reasons"]
            .as_array()
            .map(|r| r.iter().map(|x| x["code"].clone()).collect())
            .unwrap_or_default()
    };
    field_change(out, "reasons", "reasons", &codes(old), &codes(new));
    field_change(out, "era", "era", &old["era"], &new["era"]);
    field_change(
        out,
        "capabilities",
        "capabilities",
        &old["capabilities"],
        &new["capabilities"],
    );
    let call = |v: &Value| json!({"tool": v["call"]["tool"], "outcome": v["call"]["outcome"], "result_sha256": v["call"]["result_sha256"]});
    field_change(out, "call", "call", &call(old), &call(new));
    super::surface::diff(old, new, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::kind::BlockKind;

    fn block(names: &[&str], verdict: &str, total: u64, program: &str) -> Value {
        json!({
            "target": {"command": ["srv"], "cwd": "/", "env": [], "era": "legacy",
                       "protocol_version": null, "program_sha256": program},
            "era": "legacy", "protocol_version": "2025-11-25", "server": {"name": "s", "version": "1"},
            "capabilities": {}, "tools": {"count": names.len(), "names": names, "pages": 1, "names_complete": true},
            "call": null, "verdict": verdict, "reasons": [], "timings_ms": {"total": total},
        })
    }

    #[test]
    fn the_target_id_ignores_the_program_and_the_observation_ignores_timings() {
        let a = block(&["x"], "pass", 1, "aa");
        let b = block(&["x"], "pass", 999, "bb");
        assert_eq!(
            BlockKind::Probe.target_id(&a["target"]),
            BlockKind::Probe.target_id(&b["target"])
        );
        assert_ne!(
            BlockKind::Probe.observation_sha256(&a),
            BlockKind::Probe.observation_sha256(&b),
            "another program is another observation"
        );
        let c = block(&["x"], "pass", 999, "aa");
        assert_eq!(
            BlockKind::Probe.observation_sha256(&a),
            BlockKind::Probe.observation_sha256(&c)
        );
    }

    #[test]
    fn diff_names_tools_added_and_removed_and_the_verdict() {
        let old = block(&["a", "b"], "pass", 1, "aa");
        let new = block(&["b", "c"], "fail", 1, "aa");
        let texts: Vec<String> = BlockKind::Probe
            .diff(&old, &new)
            .iter()
            .map(Change::text)
            .collect();
        assert_eq!(
            texts,
            [
                r#"verdict: "pass" -> "fail""#,
                "tools added: c",
                "tools removed: a"
            ]
        );
        assert!(BlockKind::Probe.diff(&old, &old).is_empty());
    }

    #[test]
    fn a_long_changed_value_is_cut_in_text_and_kept_whole_in_json() {
        let mut old = block(&["a"], "pass", 1, "aa");
        let mut new = old.clone();
        old["capabilities"] = json!({"x": "y".repeat(1000)});
        new["capabilities"] = json!({});
        let changes = BlockKind::Probe.diff(&old, &new);
        let text = changes[0].text();
        assert!(
            text.starts_with("capabilities: ") && text.chars().count() < 260,
            "{text}"
        );
        assert_eq!(changes[0].to_json()["from"], old["capabilities"]);
    }

    fn rules_of(v: &Value) -> Result<(), (String, String)> {
        let bytes = crate::evidence::canonical::to_bytes(v);
        rules(&View::of(Raw(&bytes)))
    }

    #[test]
    fn a_surviving_escapee_must_be_among_the_survivors() {
        let mut b = json!({"teardown": {"escapees": [{"pid": 7, "ended": "survived"}], "survivors": []}});
        assert!(rules_of(&b).is_err());
        b["teardown"]["survivors"] = json!([7]);
        assert!(rules_of(&b).is_ok());
    }
}
