//! Kind `client`: `mcp-witness analyze --record` of a serve log, i.e. how one MCP client
//! handled the list_changed cycle and the flows (roots, elicitation, sampling, logging,
//! completion, subscriptions, progress, elicitation-url, elicitation-undeclared). Its fields and their shapes, its target id and
//! observation digest, and its diff.

use serde_json::{Value, json};

use super::shape::{COUNT, Field, SHA256, Shape};
use super::{Change, Spec, View, field_change, item_changes, object};
use crate::evidence::canonical_scan::Raw;

/// The verdict words, per domain and overall: the spec's terms (re-listing is no MUST in
/// 2025-11-25), the older words of blocks recorded before, and the words of the flows
/// (`handled` overall: only flows were judged, none failed; `not handled` overall: a flow
/// failed while no list_changed domain did).
const VERDICT: Shape = Shape::Enum(&[
    "reacts to list_changed",
    "does not react",
    "server at fault",
    "incomplete",
    "compliant",
    "not compliant",
    "handled",
    "not handled",
    "not declared",
    "not exercised",
]);

/// The domains a block judges: the three list_changed domains, then the flows (blocks
/// recorded before the flows were signed hold only the first three).
pub const DOMAINS: &[&str] = &[
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

/// The era serve marked for the session (absent in blocks recorded before it was kept).
const ERA: Shape = Shape::OrNull(&Shape::Enum(&["legacy", "modern"]));

/// Which session of the log was judged (older blocks judged the whole log).
const SESSION: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("index", COUNT),
    Field::req("of", COUNT),
    Field::req("first_line", COUNT),
    Field::req("last_line", COUNT),
    Field::opt("era", ERA),
]));

/// `client`: the clientInfo name and version the client sent, or null.
const CLIENT: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("name", Shape::Str),
    Field::req("version", Shape::OrNull(&Shape::Str)),
]));

/// The fields of a client block beyond the envelope, in the order verify checks them.
pub const FIELDS: &[Field] = &[
    Field::req(
        "target",
        Shape::Obj(&[Field::req("id", SHA256), Field::req("client", CLIENT)]),
    ),
    Field::req("client", CLIENT),
    Field::req(
        "log",
        Shape::Obj(&[
            Field::req("path", Shape::Str),
            Field::req("sha256", SHA256),
            Field::req("bytes", COUNT),
            Field::req("entries", COUNT),
            Field::opt("session", SESSION),
        ]),
    ),
    Field::req(
        "domains",
        Shape::Array(
            &Shape::Obj(&[
                Field::req("domain", Shape::Enum(DOMAINS)),
                Field::req("verdict", VERDICT),
                Field::req("question", Shape::OrNull(&COUNT)),
                Field::req("why", Shape::OrNull(&Shape::Str)),
                Field::req("meaning", Shape::Str),
                Field::req(
                    "answers",
                    Shape::Array(
                        &Shape::Obj(&[
                            Field::req("question", Shape::Str),
                            Field::req("answer", Shape::Str),
                            Field::req("evidence_line", Shape::OrNull(&COUNT)),
                            Field::req("evidence_ts", Shape::OrNull(&Shape::Str)),
                        ]),
                        None,
                    ),
                ),
            ]),
            None,
        ),
    ),
    Field::req("verdict", VERDICT),
    Field::req("observation_sha256", SHA256),
];

pub const SPEC: Spec = Spec {
    name: "client",
    fields: FIELDS,
    identity,
    observation,
    rules,
    diff,
    run_ms,
};

/// What `target.id` digests: the client as it named itself.
fn identity(target: Raw<'_>) -> Vec<u8> {
    object(&[("client", target.find("client").0)])
}

/// What `observation_sha256` digests: the client, every domain's judgement, the verdict.
fn observation(b: &View<'_>) -> Vec<u8> {
    object(&[
        ("client", b.at("client").0),
        ("domains", b.at("domains").0),
        ("verdict", b.at("verdict").0),
    ])
}

/// The target names the block's client (canonical bytes are equal exactly when the values are).
fn rules(b: &View<'_>) -> Result<(), (String, String)> {
    if View::of(b.at("target")).at("client") != b.at("client") {
        return Err(("target.client".into(), "must equal the block's `client`".into()));
    }
    Ok(())
}

fn domains(v: &Value) -> Vec<(String, String)> {
    v["domains"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["domain"].as_str().unwrap_or_default().to_string(),
                d["verdict"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// How long the run took.
fn run_ms(_b: &View<'_>) -> u64 {
    0
}

fn diff(old: &Value, new: &Value, out: &mut Vec<Change>) {
    field_change(
        out,
        "client name",
        "client.name",
        &old["client"]["name"],
        &new["client"]["name"],
    );
    field_change(
        out,
        "client version",
        "client.version",
        &old["client"]["version"],
        &new["client"]["version"],
    );
    field_change(out, "verdict", "verdict", &old["verdict"], &new["verdict"]);
    item_changes(out, "domains", &domains(old), &domains(new));
    let answers = |v: &Value| -> Value {
        v["domains"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                json!([
                    d["domain"],
                    d["answers"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| json!([a["question"], a["answer"]]))
                        .collect::<Vec<_>>()
                ])
            })
            .collect()
    };
    field_change(out, "answers", "domains.answers", &answers(old), &answers(new));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::kind::BlockKind;

    fn block(version: &str, verdict: &str) -> Value {
        let client = json!({"name": "c", "version": version});
        json!({
            "target": {"client": client}, "client": client, "verdict": verdict,
            "domains": [{"domain": "tools", "verdict": verdict, "answers": []}],
        })
    }

    #[test]
    fn two_different_client_blocks_are_never_unchanged() {
        let a = block("1", "compliant");
        let b = block("1", "incomplete");
        let texts: Vec<String> = BlockKind::Client.diff(&a, &b).iter().map(Change::text).collect();
        assert_eq!(
            texts,
            [
                r#"verdict: "compliant" -> "incomplete""#,
                "tools: compliant -> incomplete"
            ]
        );
        let c = block("2", "compliant");
        assert_ne!(
            BlockKind::Client.target_id(&a["target"]),
            BlockKind::Client.target_id(&c["target"])
        );
        assert!(BlockKind::Client.diff(&a, &a).is_empty());
    }

    fn rules_of(v: &Value) -> Result<(), (String, String)> {
        let bytes = crate::evidence::canonical::to_bytes(v);
        rules(&View::of(crate::evidence::canonical_scan::Raw(&bytes)))
    }

    /// Every word analyze gives a domain or a flow may stand in a block.
    #[test]
    fn every_verdict_word_of_analyze_is_a_block_word() {
        use crate::kit::analyze::Verdict;
        use crate::kit::flow::FlowVerdict;
        let Shape::Enum(words) = VERDICT else {
            panic!("the verdict is an enum")
        };
        let why = || String::from("w");
        let list = [
            Verdict::Reacts,
            Verdict::DoesNotReact {
                question: 1,
                why: why(),
            },
            Verdict::ServerFault {
                question: 1,
                why: why(),
            },
            Verdict::Incomplete { missing: why() },
        ];
        let flows = [
            FlowVerdict::Handled,
            FlowVerdict::NotHandled {
                question: 1,
                why: why(),
            },
            FlowVerdict::NotDeclared,
            FlowVerdict::NotExercised,
            FlowVerdict::Incomplete { missing: why() },
        ];
        for w in list
            .iter()
            .map(Verdict::word)
            .chain(flows.iter().map(FlowVerdict::word))
        {
            assert!(words.contains(&w), "{w}");
        }
    }

    #[test]
    fn the_target_names_the_block_s_client() {
        let mut b = block("1", "compliant");
        assert!(rules_of(&b).is_ok());
        b["target"]["client"]["name"] = "other".into();
        assert_eq!(rules_of(&b).unwrap_err().0, "target.client");
    }
}
