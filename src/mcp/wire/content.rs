//! Content: `ContentBlock` (text, image, audio, resource_link, embedded resource) and
//! resource contents (text or blob), in `CallToolResult` and `ReadResourceResult`.

use serde_json::{Map, Value};

use super::lists::{annotations, resource};
use super::{Ty, V, Version};

/// `CallToolResult`: `content` (required), `structuredContent?`, `isError?`.
pub(super) fn call_result(v: &mut V, r: &Map<String, Value>) {
    if v.version.modern() && r.get("resultType").and_then(Value::as_str) == Some("input_required") {
        v.required(r, "inputRequests", Ty::Any);
        return;
    }
    v.each(r, "content", true, content_block);
    if !v.version.modern() {
        v.optional(r, "structuredContent", Ty::Obj);
    }
    v.optional(r, "isError", Ty::Bool);
}

/// `ReadResourceResult`: `contents`, each text or blob resource contents.
pub(super) fn read_result(v: &mut V, r: &Map<String, Value>) {
    super::lifecycle::cacheable(v, r);
    v.each(r, "contents", true, |v, item| {
        if let Some(c) = v.object(item) {
            resource_contents(v, c);
        }
    });
}

/// One content item. Its `type` decides its members; a type the negotiated version does not
/// define yet is tolerated (the SDKs know it), one no version defines is rejected.
pub(super) fn content_block(v: &mut V, item: &Value) {
    let Some(c) = v.object(item) else { return };
    let Some(Value::String(kind)) = v.required(c, "type", Ty::Str) else {
        return;
    };
    let since = match kind.as_str() {
        "text" => {
            v.required(c, "text", Ty::Str);
            Version::V2024_11_05
        }
        "image" => {
            base64(v, c, "data", true);
            v.required(c, "mimeType", Ty::Str);
            Version::V2024_11_05
        }
        "audio" => {
            base64(v, c, "data", true);
            v.required(c, "mimeType", Ty::Str);
            Version::V2025_03_26
        }
        "resource_link" => {
            resource(v, c);
            Version::V2025_06_18
        }
        "resource" => {
            if let Some(Value::Object(res)) = v.required(c, "resource", Ty::Obj) {
                v.at("resource", |v| resource_contents(v, res));
            }
            Version::V2024_11_05
        }
        _ => {
            let value = &c["type"];
            v.at("type", |v| {
                v.reject(
                    "unknown-content-type",
                    "a content item of a type no MCP version defines (text, image, audio, resource_link, resource)",
                    value,
                )
            });
            return;
        }
    };
    if v.version < since {
        let value = &c["type"];
        let version = v.version.as_str();
        v.at("type", |v| {
            v.tolerate(
                "content-type-newer",
                format!("this content type came after {version}, the version this session negotiated"),
                value,
            )
        });
    }
    annotations(v, c);
    v.meta(c);
}

/// `TextResourceContents | BlobResourceContents`: `uri`, `mimeType?`, and `text` or `blob`.
fn resource_contents(v: &mut V, c: &Map<String, Value>) {
    v.required(c, "uri", Ty::Str);
    v.optional(c, "mimeType", Ty::Str);
    let text = v.optional(c, "text", Ty::Str);
    let blob = c.get("blob").is_some_and(Value::is_string);
    base64(v, c, "blob", false);
    if text.is_none() && !blob && !c.contains_key("text") && !c.contains_key("blob") {
        v.reject(
            "text-or-blob",
            "resource contents carry neither `text` nor `blob`",
            &super::head(c),
        );
    }
    v.meta(c);
}

/// Member `key`, base64 text: a string the WHATWG forgiving-base64 decode (`atob`, which the
/// TypeScript SDK applies) takes.
fn base64(v: &mut V, c: &Map<String, Value>, key: &str, required: bool) {
    let value = if required {
        v.required(c, key, Ty::Str)
    } else {
        v.optional(c, key, Ty::Str)
    };
    if let Some(Value::String(text)) = value
        && !forgiving_base64(text)
    {
        let value = &c[key];
        v.at(key, |v| {
            v.reject("base64", format!("`{key}` is not base64"), value)
        });
    }
}

/// Whether `atob` decodes `text`: ASCII whitespace is ignored, one or two `=` may end a text
/// whose length is a multiple of 4, a length of 1 modulo 4 is refused, and every other
/// character is of `A-Z a-z 0-9 + /`.
pub(super) fn forgiving_base64(text: &str) -> bool {
    let bytes: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | b' '))
        .collect();
    let mut body = &bytes[..];
    if body.len().is_multiple_of(4) {
        for _ in 0..2 {
            if let [rest @ .., b'='] = body {
                body = rest;
            }
        }
    }
    body.len() % 4 != 1
        && body
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
}
