//! Kind `check`: one run of `mcp-witness check` against one server. Its fields and their
//! shapes, its target id (a probe's) and observation digest, and its diff.

use serde_json::Value;

use super::probe;
use super::shape::{COUNT, Field, MILLIS, SHA256, Shape};
use super::{Change, Spec, View, array, field_change, item_changes, object, server_changes};

/// The fields of a check block beyond the envelope, in the order verify checks them.
pub const FIELDS: &[Field] = &[
    Field::req("target", probe::TARGET),
    Field::req("era", probe::ERA),
    Field::req("protocol_version", Shape::OrNull(&Shape::Str)),
    Field::req("server", probe::SERVER),
    Field::req(
        "results",
        Shape::Array(
            &Shape::Obj(&[
                Field::req("id", Shape::Str),
                Field::req("status", Shape::Enum(&["pass", "warn", "fail", "skip"])),
                Field::req("message", Shape::Str),
            ]),
            None,
        ),
    ),
    Field::req(
        "counts",
        Shape::Obj(&[
            Field::req("pass", COUNT),
            Field::req("warn", COUNT),
            Field::req("fail", COUNT),
            Field::req("skip", COUNT),
        ]),
    ),
    Field::req("could_not_run", Shape::OrNull(&Shape::Str)),
    Field::req("strict", Shape::Bool),
    Field::req("duration_ms", MILLIS),
    Field::req("observation_sha256", SHA256),
    Field::opt("bound", probe::BOUND),
    Field::opt(
        "session",
        Shape::Obj(&[
            Field::req("stdout_bytes", COUNT),
            Field::req("stderr", probe::STDERR),
            Field::req("silence", probe::SILENCE),
            Field::req("restarts", Shape::Array(&Shape::Str, None)),
            // HTTP targets only: the main sessions' HTTP facts, as a probe block's `http`.
            Field::opt("http", probe::HTTP),
        ]),
    ),
    Field::opt("surface", super::surface::CHECK),
];

pub const SPEC: Spec = Spec {
    name: "check",
    fields: FIELDS,
    identity: probe::identity,
    observation,
    rules,
    diff,
    run_ms,
};

/// What `observation_sha256` digests: the program, handshake, server and every result's
/// id and status, and whether the suite ran.
fn observation(b: &View<'_>) -> Vec<u8> {
    let target = b.at("target");
    let results: Vec<Vec<u8>> = b
        .at("results")
        .items()
        .unwrap_or_default()
        .into_iter()
        .map(|x| array([x.find("id").0, x.find("status").0]))
        .collect();
    let results = array(results.iter().map(Vec::as_slice));
    let could_not_run: &[u8] = if b.at("could_not_run").is_null() {
        b"false"
    } else {
        b"true"
    };
    let mut members: Vec<(&str, &[u8])> = vec![
        ("program_sha256", target.find("program_sha256").0),
        ("era", b.at("era").0),
        ("protocol_version", b.at("protocol_version").0),
        ("server", b.at("server").0),
        ("results", &results),
        ("could_not_run", could_not_run),
    ];
    let surface = super::surface::observed(b);
    if let Some(s) = &surface {
        members.push(("surface", s.0));
    }
    object(&members)
}

/// Each status is counted in `counts`.
fn rules(b: &View<'_>) -> Result<(), (String, String)> {
    let results = b.at("results").items().unwrap_or_default();
    let statuses: Vec<Option<std::borrow::Cow<'_, str>>> =
        results.iter().map(|x| View::of(*x).at("status").str()).collect();
    let counts = View::of(b.at("counts"));
    for status in ["pass", "warn", "fail", "skip"] {
        let n = statuses.iter().filter(|s| s.as_deref() == Some(status)).count() as i64;
        if counts.at(status).int() != Some(n) {
            return Err((
                format!("counts.{status}"),
                format!("must be {n}, the number of results with status {status}"),
            ));
        }
    }
    Ok(())
}

fn statuses(v: &Value) -> Vec<(String, String)> {
    v["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| {
            (
                x["id"].as_str().unwrap_or_default().to_string(),
                x["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// How long the run took.
fn run_ms(b: &View<'_>) -> u64 {
    b.at("duration_ms").int().map_or(0, |n| n.max(0) as u64)
}

fn diff(old: &Value, new: &Value, out: &mut Vec<Change>) {
    server_changes(old, new, out);
    item_changes(out, "results", &statuses(old), &statuses(new));
    field_change(
        out,
        "could not run",
        "could_not_run",
        &old["could_not_run"],
        &new["could_not_run"],
    );
    super::surface::diff(old, new, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::kind::BlockKind;
    use serde_json::json;

    fn block(results: &[(&str, &str)]) -> Value {
        let mut counts = json!({"pass": 0, "warn": 0, "fail": 0, "skip": 0});
        for (_, s) in results {
            counts[*s] = (counts[*s].as_u64().unwrap() + 1).into();
        }
        json!({
            "target": {"program_sha256": null}, "era": "legacy", "protocol_version": null, "server": null,
            "results": results.iter().map(|(id, s)| json!({"id": id, "status": s, "message": ""})).collect::<Vec<_>>(),
            "counts": counts, "could_not_run": null,
        })
    }

    #[test]
    fn diff_names_each_result_that_changed_appeared_or_went() {
        let old = block(&[("a", "pass"), ("b", "warn")]);
        let new = block(&[("a", "fail"), ("c", "pass")]);
        let texts: Vec<String> = BlockKind::Check
            .diff(&old, &new)
            .iter()
            .map(Change::text)
            .collect();
        assert_eq!(
            texts,
            ["a: pass -> fail", "c: new (pass)", "b: no longer run (was warn)"]
        );
        assert_ne!(
            BlockKind::Check.observation_sha256(&old),
            BlockKind::Check.observation_sha256(&new)
        );
    }

    fn rules_of(v: &Value) -> Result<(), (String, String)> {
        let bytes = crate::evidence::canonical::to_bytes(v);
        rules(&View::of(crate::evidence::canonical_scan::Raw(&bytes)))
    }

    #[test]
    fn counts_must_count_the_results() {
        let mut b = block(&[("a", "pass")]);
        assert!(rules_of(&b).is_ok());
        b["counts"]["pass"] = 2.into();
        assert_eq!(rules_of(&b).unwrap_err().0, "counts.pass");
    }
}
