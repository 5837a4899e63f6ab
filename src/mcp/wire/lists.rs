//! The list results: `tools/list` (`Tool`, its input and output schemas, annotations),
//! `resources/list` (`Resource`), `resources/templates/list` (`ResourceTemplate`) and
//! `prompts/list` (`Prompt`, its arguments), with `nextCursor` and, in 2026-07-28, the caching
//! members every list result carries.

use serde_json::{Map, Value};

use super::lifecycle::icons;
use super::{Ty, V, Version};

/// What every paginated result carries.
fn paginated(v: &mut V, r: &Map<String, Value>) {
    v.optional(r, "nextCursor", Ty::Str);
    super::lifecycle::cacheable(v, r);
}

pub(super) fn tools(v: &mut V, r: &Map<String, Value>) {
    paginated(v, r);
    v.each(r, "tools", true, tool);
}

fn tool(v: &mut V, item: &Value) {
    let Some(t) = v.object(item) else { return };
    v.required(t, "name", Ty::Str);
    v.optional(t, "title", Ty::Str);
    v.optional(t, "description", Ty::Str);
    if let Some(schema) = v.required(t, "inputSchema", Ty::Obj) {
        v.at("inputSchema", |v| object_schema(v, schema, true));
    }
    if let Some(schema) = v.optional(t, "outputSchema", Ty::Obj) {
        // 2026-07-28 allows any JSON Schema here; before, the root is an object schema.
        let root_object = !v.version.modern();
        v.at("outputSchema", |v| object_schema(v, schema, root_object));
    }
    if let Some(Value::Object(a)) = v.optional(t, "annotations", Ty::Obj) {
        v.at("annotations", |v| {
            v.optional(a, "title", Ty::Str);
            for hint in [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ] {
                v.optional(a, hint, Ty::Bool);
            }
        });
    }
    if let Some(Value::Object(e)) = v.optional(t, "execution", Ty::Obj) {
        v.at("execution", |v| {
            v.optional_enum(e, "taskSupport", &["forbidden", "optional", "required"])
        });
    }
    v.meta(t);
    icons(v, t);
}

/// The shape clients hold a tool's schema to: `type: "object"`, `properties` an object of
/// schemas, `required` an array of strings. (Full JSON Schema validity is not judged here.)
fn object_schema(v: &mut V, schema: &Value, root_object: bool) {
    let Some(s) = schema.as_object() else { return };
    if root_object {
        match s.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => v.at("type", |v| {
                v.reject(
                    "schema-root-type",
                    "the schema's root `type` is not \"object\"",
                    other,
                )
            }),
            None => v.reject(
                "schema-root-type",
                "the schema has no `type`: its root must be `\"type\": \"object\"`",
                schema,
            ),
        }
    }
    if let Some(Value::Object(props)) = v.optional(s, "properties", Ty::Obj) {
        v.at("properties", |v| {
            for (name, prop) in props.iter().take(super::MAX_ITEMS) {
                if !prop.is_object() && !v.full() {
                    v.at(name, |v| {
                        v.reject("type", "a property's schema is not an object", prop)
                    });
                }
            }
        });
    }
    v.each(s, "required", false, |v, name| {
        if !name.is_string() {
            v.reject(
                "type",
                "`required` names a property with something not a string",
                name,
            );
        }
    });
}

pub(super) fn resources(v: &mut V, r: &Map<String, Value>) {
    paginated(v, r);
    v.each(r, "resources", true, |v, item| {
        if let Some(res) = v.object(item) {
            resource(v, res);
        }
    });
}

/// `Resource` (also the body of a `resource_link` content item).
pub(super) fn resource(v: &mut V, res: &Map<String, Value>) {
    v.required(res, "uri", Ty::Str);
    v.required(res, "name", Ty::Str);
    described(v, res);
    v.optional(res, "size", Ty::Num);
}

/// The members `Resource` and `ResourceTemplate` share beside their address.
fn described(v: &mut V, m: &Map<String, Value>) {
    for key in ["title", "description", "mimeType"] {
        v.optional(m, key, Ty::Str);
    }
    annotations(v, m);
    v.meta(m);
    icons(v, m);
}

/// `annotations?: {audience?: Role[], priority?: 0..1, lastModified?: string}`.
pub(super) fn annotations(v: &mut V, m: &Map<String, Value>) {
    let Some(Value::Object(a)) = v.optional(m, "annotations", Ty::Obj) else {
        return;
    };
    v.at("annotations", |v| {
        v.each(a, "audience", false, |v, role| {
            if !matches!(role.as_str(), Some("user" | "assistant")) {
                v.reject("enum", "an audience is \"user\" or \"assistant\"", role);
            }
        });
        if let Some(p) = v.optional(a, "priority", Ty::Num)
            && !p.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p))
        {
            v.at("priority", |v| {
                v.reject("range", "`priority` is between 0 and 1", p)
            });
        }
        if v.version >= Version::V2025_06_18 || a.contains_key("lastModified") {
            v.optional(a, "lastModified", Ty::Str);
        }
    });
}

pub(super) fn templates(v: &mut V, r: &Map<String, Value>) {
    paginated(v, r);
    v.each(r, "resourceTemplates", true, |v, item| {
        let Some(t) = v.object(item) else { return };
        v.required(t, "uriTemplate", Ty::Str);
        v.required(t, "name", Ty::Str);
        described(v, t);
    });
}

pub(super) fn prompts(v: &mut V, r: &Map<String, Value>) {
    paginated(v, r);
    v.each(r, "prompts", true, |v, item| {
        let Some(p) = v.object(item) else { return };
        v.required(p, "name", Ty::Str);
        v.optional(p, "title", Ty::Str);
        v.optional(p, "description", Ty::Str);
        v.each(p, "arguments", false, |v, arg| {
            let Some(a) = v.object(arg) else { return };
            v.required(a, "name", Ty::Str);
            v.optional(a, "title", Ty::Str);
            v.optional(a, "description", Ty::Str);
            v.optional(a, "required", Ty::Bool);
        });
        v.meta(p);
        icons(v, p);
    });
}
