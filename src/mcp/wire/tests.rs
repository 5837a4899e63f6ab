use serde_json::{Value, json};

use super::*;

fn reply(version: Version, method: &str, result: Value) -> Vec<Found> {
    validate(
        version,
        Kind::Reply(Some(method)),
        &json!({"jsonrpc": "2.0", "id": 1, "result": result}),
    )
}

fn rules(found: &[Found]) -> Vec<(String, &'static str, Severity)> {
    found
        .iter()
        .map(|f| {
            (
                f.violation.pointer.clone(),
                f.violation.rule,
                f.violation.severity,
            )
        })
        .collect()
}

const V25: Version = Version::V2025_11_25;

#[test]
fn a_clean_tools_list_breaks_no_rule_in_any_version() {
    let result = json!({"tools": [{"name": "echo", "description": "Echoes.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]});
    for version in Version::ALL {
        let mut result = result.clone();
        if version.modern() {
            result["resultType"] = json!("complete");
            result["ttlMs"] = json!(0);
            result["cacheScope"] = json!("public");
        }
        assert_eq!(rules(&reply(version, "tools/list", result)), [], "{version:?}");
    }
}

#[test]
fn null_where_the_schema_allows_a_string_or_nothing_is_rejected() {
    let found = reply(
        V25,
        "tools/list",
        json!({"tools": [{"name": "a", "title": null, "inputSchema": {"type": "object"}}], "nextCursor": null}),
    );
    assert_eq!(
        rules(&found),
        [
            ("/result/nextCursor".to_string(), "null", Severity::Reject),
            ("/result/tools/0/title".to_string(), "null", Severity::Reject),
        ]
    );
    assert!(found.iter().all(|f| f.family == Family::ToolsList));
}

#[test]
fn an_input_schema_whose_required_is_a_string_is_rejected_at_its_pointer() {
    let found = reply(
        V25,
        "tools/list",
        json!({"tools": [{"name": "a", "inputSchema": {"type": "object", "required": "text"}}]}),
    );
    assert_eq!(
        rules(&found),
        [(
            "/result/tools/0/inputSchema/required".to_string(),
            "type",
            Severity::Reject
        )]
    );
}

#[test]
fn an_unknown_content_type_is_rejected_and_a_newer_one_only_tolerated() {
    let found = reply(
        Version::V2024_11_05,
        "tools/call",
        json!({"content": [{"type": "video", "url": "x"}, {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}]}),
    );
    assert_eq!(
        rules(&found),
        [
            (
                "/result/content/0/type".to_string(),
                "unknown-content-type",
                Severity::Reject
            ),
            (
                "/result/content/1/type".to_string(),
                "content-type-newer",
                Severity::Tolerated
            ),
        ]
    );
}

#[test]
fn a_prompt_message_with_role_system_is_rejected() {
    let found = reply(
        V25,
        "prompts/get",
        json!({"messages": [{"role": "system", "content": {"type": "text", "text": "hi"}}]}),
    );
    assert_eq!(
        rules(&found),
        [("/result/messages/0/role".to_string(), "role", Severity::Reject)]
    );
}

#[test]
fn instructions_that_are_not_a_string_are_rejected() {
    let found = reply(
        V25,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"}, "instructions": {"text": "hi"}}),
    );
    assert_eq!(
        rules(&found),
        [("/result/instructions".to_string(), "type", Severity::Reject)]
    );
}

#[test]
fn an_error_reply_without_jsonrpc_breaks_the_envelope_and_a_bad_code_the_error() {
    let found = validate(
        V25,
        Kind::Reply(Some("tools/call")),
        &json!({"id": 1, "error": {"code": "oops", "message": "no"}}),
    );
    let seen: Vec<_> = found
        .iter()
        .map(|f| (f.family, f.violation.pointer.as_str(), f.violation.rule))
        .collect();
    assert_eq!(
        seen,
        [
            (Family::Envelope, "", "jsonrpc"),
            (Family::Errors, "/error/code", "type"),
        ]
    );
}

#[test]
fn a_reply_with_both_result_and_error_is_rejected() {
    let found = validate(
        V25,
        Kind::Reply(Some("ping")),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}),
    );
    assert!(rules(&found).iter().any(|r| r.1 == "result-and-error"));
}

#[test]
fn resource_contents_need_text_or_blob() {
    let found = reply(V25, "resources/read", json!({"contents": [{"uri": "file:///a"}]}));
    assert_eq!(
        rules(&found),
        [("/result/contents/0".to_string(), "text-or-blob", Severity::Reject)]
    );
}

#[test]
fn a_modern_list_without_caching_members_or_with_a_bad_result_type_is_rejected() {
    let found = reply(
        Version::V2026_07_28,
        "tools/list",
        json!({"resultType": "partial", "tools": []}),
    );
    let rules = rules(&found);
    assert!(rules.contains(&("/result/resultType".into(), "enum", Severity::Reject)));
    let missing: Vec<_> = found
        .iter()
        .filter(|f| f.violation.rule == "required")
        .map(|f| f.violation.message.as_str())
        .collect();
    assert_eq!(missing.len(), 2, "{missing:?}");
    assert!(missing[0].starts_with("`ttlMs` is missing"), "{missing:?}");
    assert!(missing[1].starts_with("`cacheScope` is missing"), "{missing:?}");
    let found = reply(Version::V2026_07_28, "tools/call", json!({"content": []}));
    assert_eq!(
        rules_of(&found),
        [("/result".to_string(), "required", Severity::Reject)]
    );
}

fn rules_of(found: &[Found]) -> Vec<(String, &'static str, Severity)> {
    rules(found)
}

#[test]
fn notifications_are_held_to_their_params() {
    let found = validate(
        V25,
        Kind::Notification,
        &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "verbose"}}),
    );
    assert_eq!(
        rules(&found),
        [
            ("/params/level".to_string(), "enum", Severity::Reject),
            ("/params".to_string(), "required", Severity::Reject),
        ]
    );
}

#[test]
fn a_modern_server_request_is_tolerated_as_clients_answer_it_with_an_error() {
    let found = validate(
        Version::V2026_07_28,
        Kind::ServerRequest,
        &json!({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}),
    );
    assert_eq!(
        rules(&found),
        [(
            "/method".to_string(),
            "modern-server-request",
            Severity::Tolerated
        )]
    );
}

#[test]
fn violations_are_capped_per_message_and_pointers_escaped() {
    let tools: Vec<Value> = (0..100).map(|_| json!({"name": null})).collect();
    let found = reply(V25, "tools/list", json!({"tools": tools}));
    assert_eq!(found.len(), MAX_VIOLATIONS);
    let found = reply(
        V25,
        "tools/list",
        json!({"tools": [{"name": "a", "inputSchema": {"type": "object", "properties": {"a/b~c": 3}}}]}),
    );
    assert_eq!(
        found[0].violation.pointer,
        "/result/tools/0/inputSchema/properties/a~1b~0c"
    );
}

#[test]
fn an_offending_payload_is_inert_and_bounded() {
    let long = "\u{1b}[31m".repeat(1000);
    let found = reply(
        V25,
        "tools/list",
        json!({"tools": [{"name": 1, "title": long, "inputSchema": {"type": "object"}}], "nextCursor": 7}),
    );
    assert!(!found.is_empty());
    for f in &found {
        assert!(!f.violation.payload.contains('\u{1b}'));
        assert!(f.violation.payload.chars().count() <= PAYLOAD_CHARS + 3);
    }
}

#[test]
fn a_huge_object_missing_a_member_is_quoted_by_its_head_only() {
    let big = "x".repeat(1 << 20);
    let tools: Vec<Value> = (0..4)
        .map(|_| json!({"description": big, "inputSchema": {"type": "object", "properties": {"a": {}}}}))
        .collect();
    let found = reply(V25, "tools/list", json!({"tools": tools}));
    assert_eq!(found.len(), 4);
    for f in &found {
        assert_eq!(f.violation.rule, "required");
        assert!(
            f.violation.payload.len() <= PAYLOAD_CHARS + 3,
            "{}",
            f.violation.payload.len()
        );
        assert!(
            f.violation.payload.contains("\"inputSchema\":\"{2 members}\""),
            "{}",
            f.violation.payload
        );
    }
}

#[test]
fn base64_is_read_as_atob_reads_it() {
    for ok in [
        "", "QUJD", "QUJ", "QQ", "QQ==", "QUI=", "Q U J D", "QUJD\n", "+/+/",
    ] {
        assert!(content::forgiving_base64(ok), "{ok:?}");
    }
    for bad in [
        "Q",
        "QUJDQ",
        "not base64!",
        "QQ=",
        "Q=Q=",
        "QUJD===",
        "Q\u{e9}JD",
        "%%%",
    ] {
        assert!(!content::forgiving_base64(bad), "{bad:?}");
    }
    let found = reply(
        V25,
        "tools/call",
        json!({"content": [{"type": "image", "data": "not base64!", "mimeType": "image/png"}]}),
    );
    assert_eq!(
        rules(&found),
        [("/result/content/0/data".to_string(), "base64", Severity::Reject)]
    );
}
