//! `check` reads tool schemas as JSON Schema: against the fixture's `schema-defects` server,
//! each planted defect is a finding under its own id, naming the tool and what is wrong, a
//! remote `$ref` is reported without being fetched, and (with opt-in calls) structuredContent
//! that violates its outputSchema fails with the instance path and keyword.

mod common;

use std::net::TcpListener;

use common::*;
use serde_json::Value;

/// Runs `check --json` on `schema-defects` and returns (exit code, report).
fn check(b: &Bench, extra: &[&str]) -> (i32, Value) {
    let ev = b.evidence.to_str().unwrap().to_string();
    let mut args = vec!["check", "--json", "-e", &ev];
    args.extend_from_slice(extra);
    args.extend(["--", fixture(), "schema-defects"]);
    let run = b.run(&args);
    let report =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    (run.code, report)
}

fn result<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}: {report:#}"))
}

/// Asserts `id` has `status` and its message names every one of `named`, and none of `not`.
fn finds(report: &Value, id: &str, status: &str, named: &[&str], not: &[&str]) {
    let r = result(report, id);
    assert_eq!(r["status"], status, "{id}: {r:#}");
    let message = r["message"].as_str().unwrap();
    for n in named {
        assert!(message.contains(n), "{id} does not name {n:?}: {message}");
    }
    for n in not {
        assert!(!message.contains(n), "{id} names {n:?}: {message}");
    }
}

#[test]
fn each_planted_schema_defect_is_a_finding_under_its_own_id() {
    let b = Bench::new("check-schemas");
    // A real listener the remote $ref points to: nothing may connect to it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/query.json", listener.local_addr().unwrap());
    let env = format!("SCHEMA_DEFECTS_REF_URL={url}");
    let (code, report) = check(&b, &["--env", &env]);
    assert_eq!(code, 1, "{report:#}");

    finds(
        &report,
        "schema.input_schema.keywords",
        "fail",
        &[
            "`required_string`",
            "/required must be an array of strings",
            "`unknown_type`",
            "/properties/query/type must be a type name",
            // draft-07's tuple form read as 2020-12, where it is an error...
            "`tuple_2020`",
            "prefixItems",
        ],
        // ...but not where the schema declares draft-07.
        &["`tuple_draft7`", "`open_args`"],
    );
    finds(
        &report,
        "schema.input_schema.refs",
        "fail",
        &[
            "`missing_ref`",
            "#/$defs/Query",
            "`remote_ref`",
            &url,
            "never fetched",
        ],
        &["`required_string`"],
    );
    finds(
        &report,
        "schema.input_schema.dialect",
        "fail",
        &[
            "`old_dialect`",
            "draft-04",
            // A draft-07 `type` beside `$ref` is not applied: said, never passed silently.
            "`hidden_type` has keywords the validator does not apply: `type` at /properties/n (beside $ref in draft-07",
        ],
        &["`tuple_draft7`"],
    );
    finds(
        &report,
        "schema.input_schema.patterns",
        "fail",
        &["`bad_pattern`", "(unclosed", "regex syntax error"],
        &[],
    );
    finds(
        &report,
        "schema.input_schema.array_items",
        "fail",
        &["`list_tags`", "/properties/tags"],
        &["`tuple_draft7`"],
    );
    finds(
        &report,
        "schema.input_schema.open_object",
        "warn",
        &["`open_args`", "(root)"],
        &["`list_tags`", "`weather`"],
    );
    finds(
        &report,
        "schema.output_schema.json_schema",
        "fail",
        &["`bad_output`", "/properties/n/type"],
        &["`weather`", "`forecast`"],
    );
    // `hidden_type` accepts any value (its `type` hides behind a draft-07 `$ref`), so no
    // "wrong-typed" value is sent to it, and the server that refuses the others passes.
    finds(
        &report,
        "robustness.wrong_types",
        "pass",
        &["tools rejected wrong-typed arguments"],
        &["hidden_type"],
    );
    assert_eq!(
        result(&report, "robustness.structured_content")["status"],
        "skip",
        "no tool is called without opt-in"
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the remote $ref was fetched: {other:?}"),
    }
}

#[test]
fn structured_content_violating_its_output_schema_fails_with_instance_path_and_keyword() {
    let b = Bench::new("check-structured");
    let (code, report) = check(
        &b,
        &[
            "--only",
            "robustness",
            "--safe-tool",
            "weather",
            "--safe-tool",
            "forecast",
        ],
    );
    assert_eq!(code, 1, "{report:#}");
    finds(
        &report,
        "robustness.structured_content",
        "fail",
        &[
            "`weather`: structuredContent violates outputSchema: /temperature: expected number, found string (at /properties/temperature/type)",
            "`forecast`: the JSON text block violates outputSchema",
            "(root): required property \"days\" is missing (at /required)",
        ],
        &["`forecast`: structuredContent"],
    );
    let payload = result(&report, "robustness.structured_content")["payload"]
        .as_str()
        .unwrap();
    assert!(payload.contains("\"temperature\":\"warm\""), "{payload}");
    // The shape itself is fine: the mismatch is one finding, not two.
    assert_eq!(result(&report, "robustness.result_shape")["status"], "pass");
}
