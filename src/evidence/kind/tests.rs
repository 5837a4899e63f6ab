//! The kind descriptions and `schemas/evidence-block.schema.json` say the same thing: for
//! every kind, the same fields at every depth, the same required ones, closed objects, the
//! same types, enums, bounds and string patterns.

use serde_json::{Map, Value, json};

use super::shape::{Field, Shape, normal, normal_object};
use super::{BlockKind, ENVELOPE};

const SCHEMA: &str = include_str!("../../../schemas/evidence-block.schema.json");
const SAFE: i64 = crate::evidence::canonical::MAX_SAFE_INTEGER as i64;

/// Resolves a local `$ref` (`#/$defs/...`).
fn resolve<'a>(root: &'a Value, reference: &str) -> &'a Value {
    let pointer = reference.strip_prefix('#').expect("local $ref");
    root.pointer(pointer)
        .unwrap_or_else(|| panic!("$ref {reference} resolves"))
}

/// A schema node in the normal form `shape::normal` writes.
fn normalize(root: &Value, node: &Value, at: &str) -> Value {
    let Some(obj) = node.as_object() else {
        panic!("{at}: a schema node must be an object, found {node}");
    };
    let mut o: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "description" | "title"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(r) = o.remove("$ref") {
        let r = r.as_str().unwrap();
        assert!(o.is_empty(), "{at}: $ref with siblings {o:?}");
        if r == "#/$defs/foreignJson" {
            return json!({"foreign": true});
        }
        return normalize(root, resolve(root, r), at);
    }
    for word in ["anyOf", "oneOf"] {
        if let Some(alts) = o.remove(word) {
            assert!(o.is_empty(), "{at}: {word} with siblings {o:?}");
            let alts = alts.as_array().unwrap();
            let null = json!({"type": "null"});
            let rest: Vec<Value> = alts
                .iter()
                .filter(|a| **a != null)
                .map(|a| normalize(root, a, at))
                .collect();
            let inner = if rest.len() == 1 {
                rest[0].clone()
            } else {
                let mut rest = rest;
                rest.sort_by_key(|a| a.to_string());
                json!({"oneOf": rest})
            };
            return if rest_len(alts, &null) < alts.len() {
                json!({"nullable": inner})
            } else {
                inner
            };
        }
    }
    // `type: [T, "null"]` (and `null` in an enum): nullable T.
    if let Some(Value::Array(types)) = o.get("type").cloned() {
        let null = Value::from("null");
        assert!(types.contains(&null) && types.len() == 2, "{at}: type {types:?}");
        let t = types.into_iter().find(|t| *t != null).unwrap();
        o.insert("type".into(), t);
        if let Some(Value::Array(words)) = o.get_mut("enum") {
            words.retain(|w| !w.is_null());
        }
        return json!({"nullable": normalize(root, &Value::Object(o), at)});
    }
    if let Some(c) = o.remove("const") {
        return json!({"enum": [c]});
    }
    if let Some(Value::Array(words)) = o.remove("enum") {
        let mut w: Vec<String> = words
            .iter()
            .map(|w| {
                w.as_str()
                    .unwrap_or_else(|| panic!("{at}: enum of strings"))
                    .to_string()
            })
            .collect();
        w.sort_unstable();
        return json!({"enum": w});
    }
    match o.get("type").and_then(Value::as_str) {
        Some("string") => json!({"string": o.get("pattern")}),
        Some("boolean") => json!({"boolean": true}),
        Some("integer") => json!({"integer": [
            o.get("minimum").and_then(Value::as_i64).unwrap_or(-SAFE),
            o.get("maximum").and_then(Value::as_i64).unwrap_or(SAFE),
        ]}),
        Some("array") => json!({
            "array": normalize(root, &o["items"], &format!("{at}[]")),
            "maxItems": o.get("maxItems"),
        }),
        Some("object") => {
            assert_eq!(
                o.get("additionalProperties"),
                Some(&Value::Bool(false)),
                "{at}: every object is closed"
            );
            let props = o["properties"].as_object().unwrap();
            let mut out = Map::new();
            for (k, v) in props {
                out.insert(k.clone(), normalize(root, v, &format!("{at}.{k}")));
            }
            json!({"object": out, "required": sorted(&o["required"])})
        }
        other => panic!("{at}: unexpected type {other:?} in {node}"),
    }
}

fn rest_len(alts: &[Value], null: &Value) -> usize {
    alts.iter().filter(|a| *a != null).count()
}

fn sorted(list: &Value) -> Vec<String> {
    let mut v: Vec<String> = list
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// A kind's whole block as the schema states it: the envelope's properties (those the
/// kind's definition leaves `true`) and the kind's own, closed.
fn schema_kind(root: &Value, name: &str) -> Value {
    let def = &root["$defs"][name];
    assert_eq!(def["additionalProperties"], false, "$defs/{name} is closed");
    let mut props = Map::new();
    for (k, v) in def["properties"].as_object().unwrap() {
        let node = if *v == Value::Bool(true) {
            &root["properties"][k]
        } else {
            v
        };
        assert!(node.is_object(), "$defs/{name}.{k}: no definition");
        props.insert(k.clone(), normalize(root, node, &format!("{name}.{k}")));
    }
    let mut required = sorted(&def["required"]);
    required.extend(sorted(&root["required"]));
    required.sort_unstable();
    required.dedup();
    json!({"object": props, "required": required})
}

#[test]
fn the_schema_describes_exactly_the_kinds_verify_enforces() {
    let root: Value = serde_json::from_str(SCHEMA).unwrap();
    let names: Vec<&str> = BlockKind::ALL.iter().map(|k| k.name()).collect();
    let mut schema_names: Vec<String> = sorted(&root["properties"]["kind"]["enum"]);
    let mut ours: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    schema_names.sort_unstable();
    ours.sort_unstable();
    assert_eq!(schema_names, ours, "the schema's kind enum is BlockKind::ALL");
    // Each kind's branch of allOf points at its own definition.
    for name in &names {
        let branch = root["allOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["if"]["properties"]["kind"]["const"] == *name)
            .unwrap_or_else(|| panic!("allOf has a branch for kind {name}"));
        assert_eq!(branch["then"]["$ref"], format!("#/$defs/{name}"));
    }
    for kind in BlockKind::ALL {
        let ours = normal_object(&[ENVELOPE, kind.spec().fields]);
        let theirs = schema_kind(&root, kind.name());
        let (o, t) = (
            ours["object"].as_object().unwrap(),
            theirs["object"].as_object().unwrap(),
        );
        let only_ours: Vec<&String> = o.keys().filter(|k| !t.contains_key(*k)).collect();
        let only_schema: Vec<&String> = t.keys().filter(|k| !o.contains_key(*k)).collect();
        assert!(
            only_ours.is_empty() && only_schema.is_empty(),
            "kind {}: fields only in Rust {only_ours:?}, only in the schema {only_schema:?}",
            kind.name()
        );
        for (field, shape) in o {
            assert_eq!(
                shape,
                &t[field],
                "kind {} field `{field}`: Rust (left) and schema (right) differ",
                kind.name()
            );
        }
        assert_eq!(
            ours["required"],
            theirs["required"],
            "kind {}: required",
            kind.name()
        );
    }
}

#[test]
fn the_shape_walk_refuses_what_the_schema_refuses() {
    use super::shape::{COUNT, Field, Shape, check};
    const S: Shape = Shape::Obj(&[
        Field::req("n", COUNT),
        Field::opt("e", Shape::OrNull(&Shape::Enum(&["a", "b"]))),
        Field::req("l", Shape::Array(&Shape::Str, Some(1))),
    ]);
    let ok = |v: Value| {
        let bytes = crate::evidence::canonical::to_bytes(&v);
        check(
            &S,
            crate::evidence::canonical_scan::Raw(&bytes),
            super::shape::At::Top,
        )
        .is_ok()
    };
    assert!(ok(json!({"n": 0, "l": []})));
    assert!(ok(json!({"n": 0, "e": null, "l": ["x"]})));
    assert!(!ok(json!({"n": "0", "l": []})));
    assert!(!ok(json!({"n": -1, "l": []})));
    assert!(!ok(json!({"n": 0, "e": "c", "l": []})));
    assert!(!ok(json!({"n": 0, "l": ["x", "y"]})));
    assert!(!ok(json!({"n": 0, "l": [], "extra": 1})));
    assert!(!ok(json!({"l": []})));
    assert_eq!(normal(&S)["required"], json!(["l", "n"]));
}

#[test]
fn the_readme_lists_every_kind_s_fields_as_verify_holds_them() {
    use super::shape::describe_fields;
    let readme = include_str!("../../../README.md");
    let mut tables = vec![("envelope", describe_fields(ENVELOPE))];
    for kind in BlockKind::ALL {
        tables.push((kind.name(), describe_fields(kind.spec().fields)));
    }
    let missing: Vec<String> = tables
        .into_iter()
        .filter(|(_, table)| !readme.contains(table.as_str()))
        .map(|(name, table)| format!("README.md must list the {name} fields exactly as:\n{table}"))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// SHA-256 of the canonical bytes of a value, built here from the format's text (README,
/// "Digests"), not by the kinds' own digest code.
fn digest_of(v: Value) -> String {
    super::sha256_hex(&crate::evidence::canonical::to_bytes(&v))
}

#[test]
fn each_kind_digests_exactly_the_objects_the_format_states() {
    let hex = |c: &str| c.repeat(32);
    let stdio = json!({"id": hex("00"), "command": ["srv", "é"], "program": null,
        "program_sha256": hex("ab"), "cwd": "/w", "env": ["TOKEN"], "era": "legacy",
        "protocol_version": null});
    let http = json!({"id": hex("00"), "url": "https://h.test/mcp", "transport": "streamable_http",
        "headers": ["authorization"], "era": "modern", "protocol_version": "2025-11-25"});
    let surfaces = [
        None,
        Some(Value::Null),
        Some(json!({"sha256": hex("cd"), "tools": []})),
    ];
    let server = json!({"name": "s\u{0}\"", "version": null});
    let mut probes = 0;
    for target in [&stdio, &http] {
        let identity = if target.get("url").is_some() {
            json!({"url": target["url"], "headers": target["headers"], "era": target["era"],
                   "protocol_version": target["protocol_version"]})
        } else {
            json!({"command": target["command"], "cwd": target["cwd"], "env": target["env"],
                   "era": target["era"], "protocol_version": target["protocol_version"]})
        };
        for kind in [BlockKind::Probe, BlockKind::Check] {
            assert_eq!(
                kind.target_id(target),
                digest_of(identity.clone()),
                "{kind:?} {target}"
            );
        }
        for surface in &surfaces {
            // A block's surface, and its digest in the observation when it is not null.
            let add_surface = |block: &mut Value, observed: &mut Value| {
                if let Some(s) = surface {
                    block["surface"] = s.clone();
                    if !s.is_null() {
                        observed["surface"] = s["sha256"].clone();
                    }
                }
            };
            for (tools, call) in [
                (Value::Null, Value::Null),
                (
                    json!({"count": 2, "names": ["b", "a"], "pages": 1, "names_complete": true}),
                    json!({"tool": "echo", "outcome": "ok", "result_sha256": hex("ef"), "elapsed_ms": 3}),
                ),
            ] {
                let mut block = json!({"target": target, "era": "auto", "protocol_version": "p",
                    "server": server, "capabilities": {"tools": {"é": 1}}, "tools": tools,
                    "call": call, "verdict": "pass",
                    "reasons": [{"code": "a_b", "message": "m"}, {"code": "c", "message": ""}],
                    "timings_ms": {"total": 9}});
                let mut observed = json!({"program_sha256": target.get("program_sha256"),
                    "era": "auto", "protocol_version": "p", "server": server,
                    "capabilities": {"tools": {"é": 1}},
                    "tools": if tools.is_null() { Value::Null } else { json!({"count": 2, "names": ["b", "a"]}) },
                    "call": if call.is_null() { Value::Null } else {
                        json!({"tool": "echo", "outcome": "ok", "result_sha256": hex("ef")}) },
                    "verdict": "pass", "reasons": ["a_b", "c"]});
                add_surface(&mut block, &mut observed);
                assert_eq!(
                    BlockKind::Probe.observation_sha256(&block),
                    digest_of(observed),
                    "{block}"
                );
                probes += 1;
            }
            for could_not_run in [Value::Null, json!({"reason": "x"})] {
                let mut block = json!({"target": target, "era": "auto", "protocol_version": "p",
                    "server": server, "could_not_run": could_not_run,
                    "results": [{"id": "a.b", "status": "pass", "message": "ok"},
                                {"id": "c", "status": "warn", "message": "w"}]});
                let mut observed = json!({"program_sha256": target.get("program_sha256"),
                    "era": "auto", "protocol_version": "p", "server": server,
                    "results": [["a.b", "pass"], ["c", "warn"]],
                    "could_not_run": !could_not_run.is_null()});
                add_surface(&mut block, &mut observed);
                assert_eq!(
                    BlockKind::Check.observation_sha256(&block),
                    digest_of(observed),
                    "{block}"
                );
            }
        }
    }
    assert_eq!(probes, 12);
    let client = json!({"name": "cl", "version": null});
    let domains = json!([{"domain": "tools", "verdict": "incomplete"}]);
    assert_eq!(
        BlockKind::Client.target_id(&json!({"id": hex("00"), "client": client})),
        digest_of(json!({"client": client}))
    );
    assert_eq!(
        BlockKind::Client.observation_sha256(
            &json!({"target": {"client": client}, "client": client, "domains": domains,
                    "verdict": "incomplete", "log": {"bytes": 3}})
        ),
        digest_of(json!({"client": client, "domains": domains, "verdict": "incomplete"}))
    );
}

/// Every table names a field once, with a name that needs no escape: the one pass compiles
/// only such tables (on any other it would give up, and every block would take the slow
/// path), and the walk would check a field named twice against each.
#[test]
fn no_table_names_a_field_twice() {
    fn walk(shape: &Shape) {
        match shape {
            Shape::Obj(fields) => tables(&[fields]),
            Shape::Array(item, _) | Shape::OrNull(item) => walk(item),
            Shape::OneOf(shapes) => shapes.iter().for_each(walk),
            _ => {}
        }
    }
    fn tables(t: &[&[Field]]) {
        let mut names = std::collections::HashSet::new();
        for f in t.iter().flat_map(|t| t.iter()) {
            assert!(names.insert(f.name), "{} named twice", f.name);
            assert!(!f.name.contains(['"', '\\']) && !f.name.contains(char::is_control));
            walk(&f.shape);
        }
    }
    for kind in BlockKind::ALL {
        tables(&[ENVELOPE, kind.spec().fields]);
    }
}
