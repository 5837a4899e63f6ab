//! The lifecycle: what every result carries (`_meta`, the modern `resultType`), the
//! `initialize` result (legacy) and the `server/discover` result (2026-07-28).

use serde_json::{Map, Value};

use super::{Ty, V, Version};

/// Members every result may carry.
pub(super) fn result_common(v: &mut V, r: &Map<String, Value>) {
    v.meta(r);
    if v.version.modern() {
        // The schema requires it and the Python SDK rejects a result without it, though the
        // specification asks clients to read an absent one as "complete" (see the README);
        // an unknown value MUST be considered invalid.
        v.required(r, "resultType", Ty::Str);
        v.optional_enum(r, "resultType", &["complete", "input_required"]);
    }
}

/// `ttlMs` (an integer, at least 0) and `cacheScope` (public or private), which every
/// cacheable 2026-07-28 result carries: discover, the lists, resources/read.
pub(super) fn cacheable(v: &mut V, r: &Map<String, Value>) {
    if !v.version.modern() {
        return;
    }
    if let Some(ttl) = v.required(r, "ttlMs", Ty::Int)
        && ttl.as_i64().is_some_and(|t| t < 0)
    {
        v.at("ttlMs", |v| v.reject("range", "`ttlMs` is at least 0", ttl));
    }
    if r.contains_key("cacheScope") {
        v.optional_enum(r, "cacheScope", &["public", "private"]);
    } else {
        v.required(r, "cacheScope", Ty::Str);
    }
}

/// `InitializeResult`: protocolVersion, capabilities, serverInfo, instructions?.
pub(super) fn initialize(v: &mut V, r: &Map<String, Value>) {
    v.required(r, "protocolVersion", Ty::Str);
    if let Some(Value::Object(caps)) = v.required(r, "capabilities", Ty::Obj) {
        v.at("capabilities", |v| capabilities(v, caps));
    }
    if let Some(Value::Object(info)) = v.required(r, "serverInfo", Ty::Obj) {
        v.at("serverInfo", |v| implementation(v, info));
    }
    v.optional(r, "instructions", Ty::Str);
}

/// `DiscoverResult` (2026-07-28): supportedVersions, capabilities, instructions?, and the
/// server's name in `_meta`.
pub(super) fn discover(v: &mut V, r: &Map<String, Value>) {
    cacheable(v, r);
    v.each(r, "supportedVersions", true, |v, item| {
        if !item.is_string() {
            v.reject("type", "a supported version is not a string", item);
        }
    });
    if let Some(Value::Object(caps)) = v.required(r, "capabilities", Ty::Obj) {
        v.at("capabilities", |v| capabilities(v, caps));
    }
    v.optional(r, "instructions", Ty::Str);
    if let Some(Value::Object(meta)) = r.get("_meta")
        && let Some(info) = meta.get(crate::mcp::meta::SERVER_INFO)
    {
        v.at("_meta", |v| {
            v.at(crate::mcp::meta::SERVER_INFO, |v| {
                if let Some(info) = v.object(info) {
                    implementation(v, info);
                }
            })
        });
    }
}

/// `ServerCapabilities`: each declared capability is an object, its flags booleans.
fn capabilities(v: &mut V, caps: &Map<String, Value>) {
    for key in ["logging", "completions", "tasks", "extensions"] {
        v.optional(caps, key, Ty::Obj);
    }
    if let Some(Value::Object(experimental)) = v.optional(caps, "experimental", Ty::Obj) {
        v.at("experimental", |v| {
            for (name, value) in experimental.iter().take(super::MAX_ITEMS) {
                if !value.is_object() && !v.full() {
                    v.at(name, |v| {
                        v.reject("type", "an experimental capability is not an object", value)
                    });
                }
            }
        });
    }
    for (key, flags) in [
        ("tools", &["listChanged"][..]),
        ("prompts", &["listChanged"][..]),
        ("resources", &["subscribe", "listChanged"][..]),
    ] {
        if let Some(Value::Object(cap)) = v.optional(caps, key, Ty::Obj) {
            v.at(key, |v| {
                for flag in flags {
                    v.optional(cap, flag, Ty::Bool);
                }
            });
        }
    }
}

/// `Implementation`: name and version strings; title (2025-06-18+), icons, websiteUrl and
/// description (2025-11-25+) when given.
pub(super) fn implementation(v: &mut V, info: &Map<String, Value>) {
    v.required(info, "name", Ty::Str);
    v.required(info, "version", Ty::Str);
    for key in ["title", "websiteUrl", "description"] {
        v.optional(info, key, Ty::Str);
    }
    icons(v, info);
}

/// `icons?: Icon[]`, each `{src: string, mimeType?: string, sizes?: string[]}`.
pub(super) fn icons(v: &mut V, m: &Map<String, Value>) {
    if v.version < Version::V2025_11_25 && !m.contains_key("icons") {
        return;
    }
    v.each(m, "icons", false, |v, icon| {
        let Some(icon) = v.object(icon) else { return };
        v.required(icon, "src", Ty::Str);
        v.optional(icon, "mimeType", Ty::Str);
        v.each(icon, "sizes", false, |v, size| {
            if !size.is_string() {
                v.reject("type", "an icon size is not a string", size);
            }
        });
    });
}
