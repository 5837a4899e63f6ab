//! Tool schemas read as JSON Schema, by the crate's own validator ([`crate::jsonschema`]):
//! each `inputSchema` and `outputSchema` indexed in its dialect (2020-12 unless `$schema`
//! names draft-07), so a schema a client cannot use is a finding that says which keyword,
//! `$ref`, dialect or regex is at fault; the rules clients enforce beyond validity (`items`
//! on every array); keywords the declared dialect ignores (reported, never passed silently);
//! open argument objects (a warning). With opt-in calls, `structuredContent` and the text
//! block that mirrors it are validated against `outputSchema` in full.

use serde_json::{Map, Value};

use super::Outcome;
use crate::check::session::Ctx;
use crate::inert::inert;
use crate::jsonschema::{self, Dialect, RegexError, Registry, SchemaError, Validator};
use crate::rpc::Reply;
use crate::text::truncate;

/// Subschemas the structural walk visits per schema, at most (the validator bounds itself).
const MAX_NODES: usize = 10_000;
/// Deepest subschema the structural walk descends into.
const MAX_DEPTH: usize = 256;
/// Locations named per tool in one finding.
const NAMED_PATHS: usize = 4;
/// A text block longer than this is not parsed as JSON.
const MAX_TEXT_JSON: usize = 1 << 20;
/// Validation errors named per result.
const NAMED_ERRORS: usize = 3;

/// What a schema the validator refuses is about: each is its own check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// A keyword whose value has the wrong shape, or a schema nested too deep.
    Keyword,
    /// A `$ref` that resolves to nothing in the schema (remote documents are never fetched).
    Ref,
    /// An unknown `$schema`, or two dialects in one schema.
    Dialect,
    /// A `pattern` or `patternProperties` key that is not a usable regex.
    Pattern,
}

/// Whose fault a refusal is: the schema's (a fail), or this validator's limit (a warning:
/// the schema may be fine, it just cannot be checked here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    Schema,
    Validator,
}

/// Which check reports `e`, and whose fault it is.
pub fn classify(e: &SchemaError) -> (Defect, Blame) {
    match e {
        SchemaError::BadKeyword { .. } | SchemaError::TooDeep { .. } => (Defect::Keyword, Blame::Schema),
        SchemaError::UnresolvableRef { .. } => (Defect::Ref, Blame::Schema),
        SchemaError::UnknownDialect { .. } | SchemaError::MixedDialects { .. } => {
            (Defect::Dialect, Blame::Schema)
        }
        SchemaError::UnknownVocabulary { .. } => (Defect::Dialect, Blame::Validator),
        SchemaError::Regex {
            error: RegexError::Syntax { .. },
            ..
        } => (Defect::Pattern, Blame::Schema),
        SchemaError::Regex { .. } => (Defect::Pattern, Blame::Validator),
    }
}

/// Indexes `schema` (no registry: nothing outside the schema is ever resolved or fetched).
pub fn index(schema: &Value) -> Result<(), SchemaError> {
    let registry = Registry::new();
    Validator::new(schema, Dialect::default(), &registry).map(|_| ())
}

/// What a structural walk over a schema's subschemas found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// `(location, keyword, why)`: keywords of another dialect that this one ignores.
    pub ignored: Vec<(String, &'static str, &'static str)>,
    /// Array schemas without `items` (or `prefixItems`).
    pub arrays_without_items: Vec<String>,
    /// Object schemas without `additionalProperties: false` (or `unevaluatedProperties: false`).
    pub open_objects: Vec<String>,
    /// Subschemas with `format`: an annotation here, asserted by some clients (ajv-formats).
    pub formats: usize,
    /// The walk left subschemas out: past [`MAX_NODES`] queued or [`MAX_DEPTH`] deep.
    pub cut: bool,
}

/// Keywords no dialect here evaluates, or that only the other dialect does.
fn ignored_in(dialect: Dialect, kw: &str) -> Option<(&'static str, &'static str)> {
    const ONLY_2020: &[&str] = &[
        "prefixItems",
        "$dynamicRef",
        "$dynamicAnchor",
        "$anchor",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedItems",
        "unevaluatedProperties",
        "minContains",
        "maxContains",
    ];
    const ONLY_2019: &[&str] = &["$recursiveRef", "$recursiveAnchor"];
    if let Some(k) = ONLY_2019.iter().find(|k| **k == kw) {
        return Some((
            k,
            "a draft 2019-09 keyword that neither 2020-12 nor draft-07 evaluates",
        ));
    }
    match dialect {
        Dialect::Draft7 => ONLY_2020
            .iter()
            .find(|k| **k == kw)
            .map(|k| (*k, "a 2020-12 keyword, ignored because $schema declares draft-07")),
        Dialect::Draft202012 => (kw == "additionalItems").then_some((
            "additionalItems",
            "a draft-07 keyword, ignored in 2020-12 (use prefixItems and items)",
        )),
    }
}

/// Siblings of a draft-07 `$ref` that change nothing when ignored.
const REF_SIBLINGS_HARMLESS: &[&str] = &[
    "$ref",
    "$id",
    "$schema",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "readOnly",
    "writeOnly",
    "deprecated",
    "definitions",
    "$defs",
];

/// `kw` as a static name if it is a draft-07 assertion or applicator keyword.
fn group_keyword(kw: &str) -> Option<&'static str> {
    const KEYWORDS: &[&str] = &[
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "items",
        "additionalItems",
        "maxItems",
        "minItems",
        "uniqueItems",
        "contains",
        "maxProperties",
        "minProperties",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "dependencies",
        "propertyNames",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "format",
    ];
    KEYWORDS.iter().find(|k| **k == kw).copied()
}

/// The dialect `schema` is read in: its `$schema` when known, else 2020-12.
fn dialect_of(schema: &Value) -> Dialect {
    schema
        .get("$schema")
        .and_then(Value::as_str)
        .and_then(Dialect::from_uri)
        .unwrap_or_default()
}

fn has_type(o: &Map<String, Value>, name: &str) -> bool {
    match o.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(a)) => a.iter().any(|t| t.as_str() == Some(name)),
        _ => false,
    }
}

/// Longest location kept: deeper steps are summarized as `/…`, so the walk's pending
/// locations stay small whatever the schema's keys.
const MAX_PATH: usize = 512;

/// `path` and one more JSON Pointer step (a long key cut at 64 bytes).
fn push_token(path: &str, token: &str) -> String {
    if path.len() > MAX_PATH {
        return path.to_string();
    }
    let cut = crate::text::cut(token, 64);
    if path.len() + cut.len() > MAX_PATH {
        return format!("{path}/…");
    }
    let more = if cut.len() < token.len() { "…" } else { "" };
    format!("{path}/{}{more}", cut.replace('~', "~0").replace('/', "~1"))
}

/// Walks every subschema of `schema` (bounded), collecting what [`Walk`] holds.
pub fn walk(schema: &Value) -> Walk {
    let dialect = dialect_of(schema);
    let d7 = dialect == Dialect::Draft7;
    let mut w = Walk::default();
    let mut stack: Vec<(&Value, String, usize)> = vec![(schema, String::new(), 0)];
    // Subschemas queued so far: the walk queues at most MAX_NODES, whatever the width.
    let mut queued = 1usize;
    while let Some((node, path, depth)) = stack.pop() {
        let Value::Object(o) = node else { continue };
        if depth > MAX_DEPTH {
            w.cut = true;
            continue;
        }
        if d7 && o.contains_key("$ref") {
            // Draft-07: `$ref` hides its siblings (they are no schema positions); an
            // assertion or applicator among them is named, annotations are harmless.
            for kw in o.keys().filter(|k| !REF_SIBLINGS_HARMLESS.contains(&k.as_str())) {
                if let Some(k) = group_keyword(kw) {
                    w.ignored.push((
                        path.clone(),
                        k,
                        "beside $ref in draft-07, which hides its siblings",
                    ));
                }
            }
            continue;
        }
        for kw in o.keys() {
            if let Some((k, why)) = ignored_in(dialect, kw) {
                w.ignored.push((path.clone(), k, why));
            }
        }
        w.formats += usize::from(o.contains_key("format"));
        if has_type(o, "array") && !o.contains_key("items") && !o.contains_key("prefixItems") {
            w.arrays_without_items.push(path.clone());
        }
        // Closed: any other schema than `true` or `{}` (a typed map counts as closed).
        let closed = |k: &str| match o.get(k) {
            None | Some(Value::Bool(true)) => false,
            Some(Value::Object(m)) => !m.is_empty(),
            Some(_) => true,
        };
        if (has_type(o, "object") || o.contains_key("properties"))
            && !closed("additionalProperties")
            && !closed("unevaluatedProperties")
        {
            w.open_objects.push(path.clone());
        }
        for (k, v) in o {
            if queued > MAX_NODES {
                w.cut = true;
                break;
            }
            let here = push_token(&path, k);
            match k.as_str() {
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
                | "dependencies" => {
                    if let Value::Object(m) = v {
                        for (name, sub) in m.iter().take(MAX_NODES.saturating_sub(queued)) {
                            stack.push((sub, push_token(&here, name), depth + 1));
                        }
                        queued += m.len();
                    }
                }
                "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" if v.is_array() => {
                    let items = v.as_array().map_or(&[][..], Vec::as_slice);
                    for (i, sub) in items.iter().enumerate().take(MAX_NODES.saturating_sub(queued)) {
                        stack.push((sub, push_token(&here, &i.to_string()), depth + 1));
                    }
                    queued += items.len();
                }
                "items"
                | "additionalProperties"
                | "propertyNames"
                | "contains"
                | "not"
                | "if"
                | "then"
                | "else"
                | "additionalItems"
                | "unevaluatedItems"
                | "unevaluatedProperties" => {
                    stack.push((v, here, depth + 1));
                    queued += 1;
                }
                _ => {}
            }
        }
    }
    w
}

/// A location for a message: `(root)` for the whole schema.
fn at(path: &str) -> String {
    if path.is_empty() {
        "(root)".into()
    } else {
        truncate(path, 120)
    }
}

fn named(paths: &[String]) -> String {
    let mut s: Vec<String> = paths.iter().take(NAMED_PATHS).map(|p| at(p)).collect();
    if paths.len() > NAMED_PATHS {
        s.push(format!("and {} more", paths.len() - NAMED_PATHS));
    }
    s.join(", ")
}

/// Grades every tool's schema under `member` (`inputSchema` or `outputSchema`): `bad`
/// returns (is a fail, why) for a schema, if anything; tools without such an object schema
/// are left to `schema.input_schema.malformed` and `schema.output_schema`.
fn per_schema(ctx: &Ctx<'_>, member: &str, bad: impl Fn(&Value) -> Option<(bool, String)>) -> Outcome {
    if !ctx.tools.declared {
        return Outcome::skip("`tools` is not declared");
    }
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    let mut seen = 0;
    for (i, t) in ctx.tools.items.iter().enumerate() {
        let Some(schema) = t.get(member).filter(|s| s.is_object()) else {
            continue;
        };
        seen += 1;
        let label = match t.get("name").and_then(Value::as_str) {
            Some(n) => format!("`{}`", truncate(n, 64)),
            None => format!("#{i}"),
        };
        if let Some((fail, why)) = bad(schema) {
            let line = format!("{label} {why}");
            if fail { fails.push(line) } else { warns.push(line) }
        }
    }
    if seen == 0 {
        return Outcome::skip(format!("no tool has an object {member}"));
    }
    let list = |v: &[String]| {
        let mut s: Vec<String> = v.iter().take(8).cloned().collect();
        if v.len() > 8 {
            s.push(format!("and {} more", v.len() - 8));
        }
        s.join("; ")
    };
    match (fails.is_empty(), warns.is_empty()) {
        (true, true) => Outcome::pass(format!("all {seen} {member}s")),
        (true, false) => Outcome::warn(list(&warns)),
        (false, true) => Outcome::fail(list(&fails)),
        (false, false) => Outcome::fail(format!("{}; also: {}", list(&fails), list(&warns))),
    }
}

/// The finding for `defect`, if indexing the schema refused it for that reason.
fn refused(schema: &Value, defect: Defect) -> Option<(bool, String)> {
    let e = index(schema).err()?;
    let (d, blame) = classify(&e);
    (d == defect).then(|| match blame {
        Blame::Schema => (true, format!("is not a usable JSON Schema: {e}")),
        Blame::Validator => (
            false,
            format!("cannot be validated here (not necessarily wrong): {e}"),
        ),
    })
}

pub fn input_keywords(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", |s| refused(s, Defect::Keyword))
}

pub fn input_refs(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", |s| refused(s, Defect::Ref))
}

pub fn input_patterns(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", |s| refused(s, Defect::Pattern))
}

/// Unknown dialect (fail), or keywords the declared dialect ignores (warn).
fn dialect_finding(schema: &Value) -> Option<(bool, String)> {
    if let Some(found) = refused(schema, Defect::Dialect) {
        return Some(found);
    }
    let w = walk(schema);
    let first: Vec<String> = w
        .ignored
        .iter()
        .take(NAMED_PATHS)
        .map(|(p, k, why)| format!("`{k}` at {} ({why})", at(p)))
        .collect();
    (!first.is_empty()).then(|| {
        let more = w.ignored.len().saturating_sub(NAMED_PATHS);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        (
            false,
            format!(
                "has keywords the validator does not apply: {}{more}",
                first.join(", ")
            ),
        )
    })
}

pub fn input_dialect(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", dialect_finding)
}

pub fn input_array_items(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", |s| {
        let w = walk(s);
        (!w.arrays_without_items.is_empty()).then(|| {
            (
                true,
                format!("has arrays without `items` at {}", named(&w.arrays_without_items)),
            )
        })
    })
}

pub fn input_open_object(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "inputSchema", |s| {
        let w = walk(s);
        (!w.open_objects.is_empty()).then(|| {
            (
                false,
                format!(
                    "accepts properties it does not declare at {}",
                    named(&w.open_objects)
                ),
            )
        })
    })
}

/// Every refusal and ignored keyword of an outputSchema, in one check.
pub fn output_json_schema(ctx: &mut Ctx<'_>) -> Outcome {
    per_schema(ctx, "outputSchema", |s| match index(s) {
        Err(e) => Some(match classify(&e).1 {
            Blame::Schema => (true, format!("is not a usable JSON Schema: {e}")),
            Blame::Validator => (
                false,
                format!("cannot be validated here (not necessarily wrong): {e}"),
            ),
        }),
        Ok(()) => dialect_finding(s),
    })
}

/// What validating one value against an outputSchema found: None when valid.
fn violations(v: &Validator<'_>, value: &Value) -> Option<(bool, String)> {
    match v.validate(value) {
        jsonschema::Outcome::Valid => None,
        jsonschema::Outcome::Invalid { errors, truncated } => {
            let mut s: Vec<String> = errors
                .iter()
                .take(NAMED_ERRORS)
                .map(|e| {
                    let text = format!("{}: {} (at {})", at(&e.instance_path), e.kind, e.keyword_path);
                    inert(&text).into_owned()
                })
                .collect();
            if errors.len() > NAMED_ERRORS || truncated {
                s.push(format!(
                    "{}{} errors in all",
                    errors.len(),
                    if truncated { "+" } else { "" }
                ));
            }
            Some((true, s.join("; ")))
        }
        jsonschema::Outcome::TooComplex(limit) => Some((false, format!("could not be validated: {limit}"))),
    }
}

/// Texts of the result's text blocks that parse as JSON.
fn json_texts(result: &Value) -> Vec<Value> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter(|t| t.len() <= MAX_TEXT_JSON)
        .filter_map(|t| serde_json::from_str::<Value>(t).ok())
        .collect()
}

/// Grades one result of a tool with an object outputSchema: (is a fail, why) per problem.
pub fn grade_structured(schema: &Value, result: &Value) -> Vec<(bool, String)> {
    let Some(sc) = result.get("structuredContent") else {
        // No structuredContent is robustness.result_shape's finding (or an isError result).
        return vec![];
    };
    let registry = Registry::new();
    let Ok(v) = Validator::new(schema, Dialect::default(), &registry) else {
        return vec![(
            false,
            "outputSchema cannot be used to validate (see schema.output_schema.json_schema)".into(),
        )];
    };
    let mut out = Vec::new();
    if let Some((fail, why)) = violations(&v, sc) {
        out.push((fail, format!("structuredContent violates outputSchema: {why}")));
    }
    let texts = json_texts(result);
    if texts.iter().any(|t| t == sc) {
        return out;
    }
    match texts.first() {
        None => out.push((
            false,
            "no text block carries the serialized structuredContent (the spec says SHOULD, for clients that read only content)".into(),
        )),
        Some(t) => match violations(&v, t) {
            Some((fail, why)) => out.push((fail, format!("the JSON text block violates outputSchema: {why}"))),
            None => out.push((false, "the JSON text block differs from structuredContent".into())),
        },
    }
    out
}

/// The opt-in calls' results graded against their tools' outputSchema.
pub fn structured_content(ctx: &Ctx<'_>, calls: &[crate::check::session::OptInCall]) -> Outcome {
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    let mut payloads = Vec::new();
    let mut graded = 0;
    let mut formats = 0;
    for (name, reply) in calls {
        let Some(schema) = ctx
            .tool_list()
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|t| t.get("outputSchema"))
            .filter(|s| s.is_object())
        else {
            continue;
        };
        let Ok(Reply::Result(r)) = reply else { continue };
        if r.get("isError") == Some(&Value::Bool(true)) {
            continue;
        }
        graded += 1;
        formats += walk(schema).formats;
        let found = grade_structured(schema, r);
        if found.iter().any(|(f, _)| *f) && payloads.len() < 3 {
            payloads.push(format!(
                "`{}` returned: {}",
                truncate(name, 64),
                truncate(&r.to_string(), 600)
            ));
        }
        for (fail, why) in found {
            let line = format!("`{}`: {why}", truncate(name, 64));
            if fail { fails.push(line) } else { warns.push(line) }
        }
    }
    if graded == 0 {
        return Outcome::skip("no called tool with an outputSchema returned a result");
    }
    match (fails.is_empty(), warns.is_empty()) {
        (true, true) if formats > 0 => Outcome::pass(format!(
            "{graded} structured results match their outputSchema (its {formats} `format` keywords are annotations here, not asserted: a client that asserts formats may still refuse a value)"
        )),
        (true, true) => Outcome::pass(format!("{graded} structured results match their outputSchema")),
        (true, false) => Outcome::warn(warns.join("; ")),
        (false, _) => {
            let mut all = fails;
            all.extend(warns);
            Outcome::fail(all.join("; ")).with(payloads.join("\n"))
        }
    }
}

/// Whether `arguments` are invalid for the tool's inputSchema as far as the validator can
/// tell: false only when it can use the schema and finds them valid.
pub fn confirmed_invalid(tool: &Value, arguments: &Value) -> bool {
    let Some(schema) = tool.get("inputSchema").filter(|s| s.is_object()) else {
        return true;
    };
    let registry = Registry::new();
    match Validator::new(schema, Dialect::default(), &registry) {
        Ok(v) => v.is_valid(arguments) != Some(true),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_refusal_is_reported_by_the_check_of_its_kind_and_blamed_right() {
        let cases = [
            (
                json!({"type": "object", "required": "q"}),
                Defect::Keyword,
                Blame::Schema,
            ),
            (
                json!({"type": "object", "properties": {"q": {"type": "text"}}}),
                Defect::Keyword,
                Blame::Schema,
            ),
            (
                json!({"type": "object", "properties": []}),
                Defect::Keyword,
                Blame::Schema,
            ),
            (
                json!({"properties": {"q": {"$ref": "#/$defs/Nope"}}}),
                Defect::Ref,
                Blame::Schema,
            ),
            (
                json!({"properties": {"q": {"$ref": "http://127.0.0.1:9/s.json"}}}),
                Defect::Ref,
                Blame::Schema,
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-04/schema#"}),
                Defect::Dialect,
                Blame::Schema,
            ),
            (
                json!({"properties": {"q": {"pattern": "(unclosed"}}}),
                Defect::Pattern,
                Blame::Schema,
            ),
            (
                json!({"properties": {"q": {"pattern": "^(?!admin)"}}}),
                Defect::Pattern,
                Blame::Validator,
            ),
        ];
        for (schema, defect, blame) in cases {
            let e = index(&schema).expect_err(&schema.to_string());
            assert_eq!(classify(&e), (defect, blame), "{schema}: {e}");
        }
    }

    #[test]
    fn the_walk_names_arrays_without_items_open_objects_and_keywords_the_dialect_ignores() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "tags": {"type": "array"},
                "pair": {"type": "array", "items": [{"type": "number"}]},
                "opts": {"type": "object", "properties": {"a/b": {"type": "string"}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "anything": {"type": "object", "additionalProperties": {}},
                "row": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
                "properties": {"type": "string"},
                "when": {"type": "string", "format": "date-time"}
            }
        });
        let w = walk(&schema);
        assert_eq!(w.arrays_without_items, ["/properties/tags"]);
        assert_eq!(w.open_objects, ["/properties/opts", "/properties/anything"]);
        assert_eq!(
            w.ignored,
            [(
                "/properties/row".to_string(),
                "prefixItems",
                "a 2020-12 keyword, ignored because $schema declares draft-07"
            )]
        );
        assert_eq!(w.formats, 1);
        assert!(!w.cut);
    }

    #[test]
    fn the_walk_of_a_very_wide_or_very_deep_schema_stops_at_its_bounds() {
        let props: serde_json::Map<String, Value> = (0..50_000)
            .map(|i| (format!("p{i}"), json!({"type": "array"})))
            .collect();
        let wide = json!({"type": "object", "additionalProperties": false, "properties": props});
        let w = walk(&wide);
        assert!(w.cut);
        let named = w.arrays_without_items.len();
        assert!((MAX_NODES - 10..MAX_NODES).contains(&named), "{named}");

        let mut deep = json!({"type": "array"});
        for _ in 0..MAX_DEPTH + 20 {
            deep = json!({"not": deep});
        }
        let w = walk(&deep);
        assert!(w.cut);
        assert!(w.arrays_without_items.is_empty());
        assert!(w.open_objects.is_empty());

        let long_key = "k".repeat(100_000);
        let w = walk(&json!({"properties": {long_key: {"type": "array"}}, "additionalProperties": false}));
        assert_eq!(
            w.arrays_without_items,
            [format!("/properties/{}…", "k".repeat(64))]
        );
    }

    #[test]
    fn structured_content_is_validated_with_instance_path_and_keyword_and_its_text_mirror_too() {
        let schema = json!({"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]});
        let good =
            json!({"structuredContent": {"t": 1}, "content": [{"type": "text", "text": "{\"t\": 1}"}]});
        assert_eq!(grade_structured(&schema, &good), vec![]);
        let bad = json!({"structuredContent": {"t": "warm"}, "content": [{"type": "text", "text": "{\"t\":\"warm\"}"}]});
        let found = grade_structured(&schema, &bad);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].0);
        assert!(
            found[0]
                .1
                .contains("/t: expected number, found string (at /properties/t/type)"),
            "{found:?}"
        );
        let mirror = json!({"structuredContent": {"t": 1}, "content": [{"type": "text", "text": "{}"}]});
        let found = grade_structured(&schema, &mirror);
        assert!(
            found[0].0 && found[0].1.contains("text block violates") && found[0].1.contains("\"t\""),
            "{found:?}"
        );
        let unmirrored = json!({"structuredContent": {"t": 1}, "content": [{"type": "text", "text": "one"}]});
        assert_eq!(
            grade_structured(&schema, &unmirrored)
                .iter()
                .filter(|f| !f.0)
                .count(),
            1
        );
    }

    #[test]
    fn arguments_the_schema_accepts_are_not_counted_as_invalid() {
        let tool =
            json!({"inputSchema": {"type": "object", "properties": {"n": {"type": ["string", "number"]}}}});
        assert!(!confirmed_invalid(&tool, &json!({"n": 1})));
        assert!(confirmed_invalid(&tool, &json!({"n": true})));
        let unusable = json!({"inputSchema": {"type": "object", "required": "n"}});
        assert!(confirmed_invalid(&unusable, &json!({})));
    }
}
