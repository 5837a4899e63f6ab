//! The JSON-RPC 2.0 envelope of every message (`jsonrpc`, `id`, `result` xor `error`,
//! `method`, `params`) and the error object of an error reply.

use serde_json::{Map, Value};

use super::{Kind, Ty, V};

/// The envelope of one message: counted against `wire.envelope`.
pub(super) fn check(v: &mut V, kind: Kind<'_>, m: &Map<String, Value>) {
    v.family = super::Family::Envelope;
    match m.get("jsonrpc") {
        Some(Value::String(s)) if s == "2.0" => {}
        Some(other) => v.at("jsonrpc", |v| {
            v.reject("jsonrpc", "`jsonrpc` must be exactly \"2.0\"", other)
        }),
        None => v.reject(
            "jsonrpc",
            "`jsonrpc` is missing: every JSON-RPC 2.0 message carries \"jsonrpc\": \"2.0\"",
            &super::head(m),
        ),
    }
    match kind {
        Kind::Reply(_) => reply(v, m),
        Kind::Notification | Kind::ServerRequest => {
            if kind == Kind::ServerRequest {
                v.required(m, "id", Ty::Id);
            }
            v.optional(m, "params", Ty::Obj);
            if let Some(Value::Object(p)) = m.get("params") {
                v.at("params", |v| v.meta(p));
            }
        }
    }
}

fn reply(v: &mut V, m: &Map<String, Value>) {
    let (result, error) = (m.get("result"), m.get("error"));
    match (result, error) {
        (Some(_), Some(_)) => v.reject(
            "result-and-error",
            "a reply carries both `result` and `error`; exactly one is allowed",
            &super::head(m),
        ),
        (None, None) => v.reject(
            "no-result-or-error",
            "a reply carries neither `result` nor `error`",
            &super::head(m),
        ),
        _ => {}
    }
    if result.is_some() {
        v.required(m, "id", Ty::Id);
    } else if m.get("id") != Some(&Value::Null) {
        // An error may carry `id: null` when the request's id could not be read (JSON-RPC 2.0
        // section 5; the TypeScript SDK's zod schema says otherwise, see the README), and
        // from 2025-11-25 on it may leave the id out.
        if v.version < super::Version::V2025_11_25 {
            v.required(m, "id", Ty::Id);
        } else {
            v.optional(m, "id", Ty::Id);
        }
    }
}

/// `error`: `{code: integer, message: string, data?: unknown}`.
pub(super) fn error_object(v: &mut V, error: &Value) {
    let Some(e) = v.object(error) else { return };
    v.required(e, "code", Ty::Int);
    v.required(e, "message", Ty::Str);
}
