//! Requests from the server to the client: `ping`, `roots/list`, `sampling/createMessage`,
//! `elicitation/create`. In 2026-07-28 a server sends none (it asks through
//! `input_required` results instead): one that does is tolerated, since clients answer it
//! with an error rather than drop the session.

use serde_json::{Map, Value};

use super::{Ty, V, Version};

pub(super) fn check(v: &mut V, m: &Map<String, Value>) {
    let Some(method) = m.get("method").and_then(Value::as_str) else {
        return;
    };
    if v.version.modern() {
        v.at("method", |v| {
            v.tolerate(
                "modern-server-request",
                "a 2026-07-28 server MUST NOT send requests to the client (clients answer it with an error)",
                &Value::from(method),
            )
        });
        return;
    }
    let params = m.get("params").and_then(Value::as_object);
    match method {
        "sampling/createMessage" => {
            let Some(p) = params else {
                v.reject("required", "`params` is missing", &super::head(m));
                return;
            };
            v.at("params", |v| {
                v.each(p, "messages", true, |v, msg| {
                    let Some(msg) = v.object(msg) else { return };
                    if let Some(role) = v.required(msg, "role", Ty::Str)
                        && !matches!(role.as_str(), Some("user" | "assistant"))
                    {
                        v.at("role", |v| {
                            v.reject("role", "a role is \"user\" or \"assistant\"", role)
                        });
                    }
                    v.required(msg, "content", Ty::Any);
                });
                v.required(p, "maxTokens", Ty::Int);
            });
        }
        "elicitation/create" => {
            if v.version < Version::V2025_06_18 {
                v.at("method", |v| {
                    v.tolerate(
                        "method-newer",
                        "elicitation came with 2025-06-18, after the version this session negotiated",
                        &Value::from(method),
                    )
                });
            }
            let Some(p) = params else {
                v.reject("required", "`params` is missing", &super::head(m));
                return;
            };
            v.at("params", |v| {
                v.required(p, "message", Ty::Str);
                if p.get("mode").and_then(Value::as_str) != Some("url") {
                    v.required(p, "requestedSchema", Ty::Obj);
                }
            });
        }
        _ => {}
    }
}
