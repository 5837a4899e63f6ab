//! Adversarial schemas and instances: each one finishes, bounded, with a typed outcome.

use serde_json::{Value, json};

use super::regex::RegexError;
use super::*;

fn validator<'s>(schema: &'s Value, reg: &'s Registry) -> Validator<'s> {
    Validator::new(schema, Dialect::default(), reg).unwrap_or_else(|e| panic!("schema refused: {e}"))
}

/// `inner` wrapped `depth` times as `{"items": inner}` / `[inner]`, built without recursion.
fn nest(depth: usize, wrap: impl Fn(Value) -> Value, inner: Value) -> Value {
    (0..depth).fold(inner, |v, _| wrap(v))
}

#[test]
fn a_schema_nested_deeper_than_the_limit_is_refused_as_too_deep() {
    let schema = nest(1000, |v| json!({ "items": v }), json!(true));
    let reg = Registry::new();
    match Validator::new(&schema, Dialect::default(), &reg) {
        Err(SchemaError::TooDeep { limit, .. }) => assert_eq!(limit, Limits::default().max_depth),
        other => panic!("expected TooDeep, got {:?}", other.err()),
    }
}

#[test]
fn a_recursive_schema_over_a_deeper_instance_stops_at_the_depth_limit() {
    let schema = json!({"type": "array", "items": {"$ref": "#"}});
    let instance = nest(1000, |v| json!([v]), json!([]));
    let reg = Registry::new();
    let v = validator(&schema, &reg);
    assert_eq!(v.validate(&instance), Outcome::TooComplex(Limit::Depth(256)));
    // The same schema over a shallow instance is fine.
    assert_eq!(v.validate(&nest(20, |v| json!([v]), json!([]))), Outcome::Valid);
}

#[test]
fn a_ref_that_loops_without_consuming_the_instance_is_a_ref_cycle() {
    let reg = Registry::new();
    for schema in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}}),
    ] {
        let v = validator(&schema, &reg);
        let at = if schema.get("properties").is_some() {
            "/x"
        } else {
            ""
        };
        assert_eq!(
            v.validate(&json!({"x": 1})),
            Outcome::TooComplex(Limit::RefCycle { at: at.into() }),
            "{schema}"
        );
        assert_eq!(v.is_valid(&json!({"x": 1})), None);
    }
    let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$ref": "#/definitions/a"}}, "$ref": "#/definitions/a"});
    let v = validator(&draft7, &reg);
    assert!(matches!(
        v.validate(&json!(1)),
        Outcome::TooComplex(Limit::RefCycle { .. })
    ));
}

#[test]
fn catastrophic_backtracking_patterns_match_in_linear_time() {
    let reg = Registry::new();
    let long_a = "a".repeat(20_000);
    for (pattern, text, want) in [
        ("^(a+)+$", format!("{long_a}b"), false),
        ("^(a+)+$", long_a.clone(), true),
        ("^(a|aa)+$", format!("{long_a}!"), false),
        ("(x+x+)+y", "x".repeat(20_000), false),
        ("^(.*a){12}$", format!("{long_a}b"), false),
        ("^(a?){25}a{25}$", "a".repeat(25), true),
    ] {
        let schema = json!({ "pattern": pattern });
        // Steps grow with text length × pattern size, never exponentially: 20,000 chars of
        // the largest pattern here fit in 4M steps (a backtracking engine needs ~2^20,000).
        let limits = Limits {
            max_steps: 4_000_000,
            ..Limits::default()
        };
        let v = Validator::with_limits(&schema, Dialect::default(), &reg, limits).unwrap();
        assert_eq!(v.is_valid(&json!(text)), Some(want), "{pattern}");
    }
}

#[test]
fn a_pattern_that_needs_more_steps_than_the_budget_is_too_complex_not_a_hang() {
    let schema = json!({ "pattern": "^(a+)+$" });
    let reg = Registry::new();
    let limits = Limits {
        max_steps: 10_000,
        ..Limits::default()
    };
    let v = Validator::with_limits(&schema, Dialect::default(), &reg, limits).unwrap();
    assert_eq!(
        v.validate(&json!("a".repeat(100_000))),
        Outcome::TooComplex(Limit::Steps(10_000))
    );
}

#[test]
fn huge_enums_and_unique_items_are_bounded_by_the_step_budget() {
    let reg = Registry::new();
    // 100k enum entries, each a nested object equal to the instance but for the last leaf.
    let entry = |n: i64| json!({"a": {"b": [1, 2, 3, {"c": n}]}});
    let schema = json!({ "enum": (0..100_000).map(entry).collect::<Vec<_>>() });
    // A smaller budget than the default keeps this debug-build test quick; the bound is the same.
    let limits = Limits {
        max_steps: 100_000,
        ..Limits::default()
    };
    let v = Validator::with_limits(&schema, Dialect::default(), &reg, limits).unwrap();
    assert_eq!(v.validate(&entry(-1)), Outcome::TooComplex(Limit::Steps(100_000)));
    // A small enum is answered.
    let small = json!({ "enum": (0..100).map(entry).collect::<Vec<_>>() });
    let v = validator(&small, &reg);
    assert!(v.validate(&entry(99)).is_valid());
    assert!(matches!(v.validate(&entry(100)), Outcome::Invalid { .. }));

    let schema = json!({"uniqueItems": true});
    let v = Validator::with_limits(&schema, Dialect::default(), &reg, limits).unwrap();
    let distinct = Value::Array((0..20_000).map(|i| json!([i])).collect());
    assert!(matches!(
        v.validate(&distinct),
        Outcome::TooComplex(Limit::Steps(_))
    ));
}

#[test]
fn exponential_fan_out_through_refs_hits_the_step_budget() {
    // Each level applies the next one twice: 2^40 applications if nothing stopped it.
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/l{}", i + 1);
        defs.insert(
            format!("l{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("l40".into(), json!({"type": "integer"}));
    let schema = json!({"$defs": defs, "$ref": "#/$defs/l0"});
    let reg = Registry::new();
    // A smaller budget than the default keeps this debug-build test quick; the bound is the same.
    let limits = Limits {
        max_steps: 100_000,
        ..Limits::default()
    };
    let v = Validator::with_limits(&schema, Dialect::default(), &reg, limits).unwrap();
    assert_eq!(v.validate(&json!(1)), Outcome::TooComplex(Limit::Steps(100_000)));
}

#[test]
fn unusable_schemas_are_typed_errors_at_construction() {
    let reg = Registry::new();
    let refuse = |schema: Value| match Validator::new(&schema, Dialect::default(), &reg) {
        Err(e) => e,
        Ok(_) => panic!("accepted {schema}"),
    };
    assert!(matches!(
        refuse(json!({"$ref": "#/$defs/missing"})),
        SchemaError::UnresolvableRef { .. }
    ));
    // Remote documents are never fetched.
    assert!(matches!(
        refuse(json!({"$ref": "https://example.com/schema.json"})),
        SchemaError::UnresolvableRef { resolved, .. } if resolved == "https://example.com/schema.json"
    ));
    assert!(matches!(
        refuse(json!({"$schema": "https://json-schema.org/draft/2019-09/schema"})),
        SchemaError::UnknownDialect { .. }
    ));
    assert!(matches!(
        refuse(json!({"pattern": "^(?=a)"})),
        SchemaError::Regex {
            error: RegexError::Unsupported { feature: "lookahead" },
            ..
        }
    ));
    assert!(matches!(
        refuse(json!({"pattern": "(a"})),
        SchemaError::Regex {
            error: RegexError::Syntax { .. },
            ..
        }
    ));
    assert!(matches!(
        refuse(json!({"patternProperties": {"\\1": {}}})),
        SchemaError::Regex {
            error: RegexError::Unsupported {
                feature: "backreferences"
            },
            ..
        }
    ));
    assert!(matches!(
        refuse(json!({"pattern": "(a{1000}){1000}"})),
        SchemaError::Regex {
            error: RegexError::TooLarge,
            ..
        }
    ));
    // Many distinct large patterns: refused once their programs add up, not gigabytes.
    let many: serde_json::Map<String, Value> = (0..1000)
        .map(|i| (format!("(a{{1000}}){{19}}{i}"), json!({})))
        .collect();
    assert!(matches!(
        refuse(json!({ "patternProperties": many })),
        SchemaError::Regex {
            error: RegexError::TooLarge,
            ..
        }
    ));
    // Huge keys and references are cut in what is reported.
    let long = "k".repeat(100_000);
    let e = refuse(json!({"properties": {long.clone(): {"$ref": format!("#/{long}")}}}));
    assert!(e.to_string().len() < 2000, "{}", e.to_string().len());
    // One validator, one dialect: an embedded draft-07 resource is refused, not misread.
    assert!(matches!(
        refuse(
            json!({"$defs": {"old": {"$id": "http://x/old", "$schema": "http://json-schema.org/draft-07/schema#"}}})
        ),
        SchemaError::MixedDialects { .. }
    ));
    // The shapes clients enforce: `required` an array of strings, known type names.
    assert_eq!(
        refuse(json!({"properties": {"a": {"required": "a"}}})),
        SchemaError::BadKeyword {
            at: "/properties/a/required".into(),
            expected: "an array of strings"
        }
    );
    assert!(matches!(
        refuse(json!({"type": "strnig"})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(
        refuse(json!({"properties": []})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(
        refuse(json!({"items": [{}]})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(
        refuse(json!({"allOf": 3})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(
        refuse(json!({"minLength": -1})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(
        refuse(json!({"$schema": 7})),
        SchemaError::BadKeyword { .. }
    ));
    assert!(matches!(refuse(json!(3)), SchemaError::BadKeyword { .. }));
}

#[test]
fn errors_name_the_instance_location_and_the_keyword_path_and_are_bounded() {
    let schema = json!({
        "type": "object",
        "properties": {"list": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
        "required": ["name"],
        "additionalProperties": false,
        "$defs": {"item": {"type": "integer", "maximum": 9}}
    });
    let reg = Registry::new();
    let v = validator(&schema, &reg);
    let Outcome::Invalid { errors, truncated } = v.validate(&json!({"list": [1, "x", 12], "a/b~": 0})) else {
        panic!("expected invalid");
    };
    assert!(!truncated);
    let got: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| (e.instance_path.as_str(), e.keyword_path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("/a~1b~0", "/additionalProperties"),
            ("/list/1", "/properties/list/items/$ref/type"),
            ("/list/2", "/properties/list/items/$ref/maximum"),
            ("", "/required"),
        ]
    );
    assert_eq!(errors[0].kind, ErrorKind::FalseSchema);
    assert_eq!(
        errors[3].kind,
        ErrorKind::Required {
            property: "name".into()
        }
    );

    let many = Value::Array((0..1000).map(|_| json!("x")).collect());
    let ints = json!({"items": {"type": "integer"}});
    let v = validator(&ints, &reg);
    let Outcome::Invalid { errors, truncated } = v.validate(&many) else {
        panic!("expected invalid");
    };
    assert_eq!(errors.len(), Limits::default().max_errors);
    assert!(truncated);
}

#[test]
fn error_text_from_the_instance_is_printed_inert() {
    let schema = json!({"required": ["\u{1b}[31mred"]});
    let reg = Registry::new();
    let v = validator(&schema, &reg);
    let Outcome::Invalid { errors, .. } = v.validate(&json!({})) else {
        panic!("expected invalid");
    };
    let shown = errors[0].to_string();
    assert!(!shown.contains('\u{1b}'), "{shown}");
    assert!(shown.contains("required property"), "{shown}");
}

#[test]
fn a_typical_tool_input_schema_accepts_good_arguments_and_rejects_bad_ones() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "pattern": "^[^\\u0000]+$"},
            "mode": {"enum": ["read", "write"]},
            "depth": {"type": "integer", "minimum": 0, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
        },
        "required": ["path"],
        "additionalProperties": false
    });
    let reg = Registry::new();
    let v = validator(&schema, &reg);
    assert_eq!(
        v.validate(&json!({"path": "/tmp", "mode": "read", "depth": 2, "tags": ["a", "b"]})),
        Outcome::Valid
    );
    for bad in [
        json!({}),
        json!({"path": ""}),
        json!({"path": "x", "mode": "exec"}),
        json!({"path": "x", "depth": 2.5}),
        json!({"path": "x", "tags": ["a", "a"]}),
        json!({"path": "x", "extra": 1}),
        json!("not an object"),
    ] {
        assert_eq!(v.is_valid(&bad), Some(false), "{bad}");
        assert!(matches!(v.validate(&bad), Outcome::Invalid { .. }), "{bad}");
    }
}

#[test]
fn draft_07_is_chosen_by_schema_and_the_default_is_2020_12() {
    let reg = Registry::new();
    // Tuple form: draft-07 `items` array; 2020-12 would refuse it.
    let d7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": false});
    let v = validator(&d7, &reg);
    assert_eq!(v.dialect(), Dialect::Draft7);
    assert!(v.validate(&json!(["a"])).is_valid());
    assert!(!v.validate(&json!(["a", 1])).is_valid());
    let plain = json!({"prefixItems": [{"type": "string"}], "items": false});
    let v = validator(&plain, &reg);
    assert_eq!(v.dialect(), Dialect::Draft202012);
    assert!(!v.validate(&json!(["a", 1])).is_valid());
    // The caller's default applies when $schema is absent.
    let tuple = json!({"items": [{"type": "string"}]});
    let v = Validator::new(&tuple, Dialect::Draft7, &reg).unwrap();
    assert_eq!(v.dialect(), Dialect::Draft7);
}
