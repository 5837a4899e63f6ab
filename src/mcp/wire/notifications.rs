//! Notifications from the server: `notifications/message` (logging), `progress`,
//! `cancelled`, `resources/updated` and the `list_changed` family. Unknown methods are
//! allowed (clients ignore them).

use serde_json::{Map, Value};

use super::{Ty, V};

const LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

pub(super) fn check(v: &mut V, m: &Map<String, Value>) {
    let Some(method) = m.get("method").and_then(Value::as_str) else {
        return;
    };
    let params = m.get("params").and_then(Value::as_object);
    let need = |v: &mut V| {
        if params.is_none() {
            v.reject(
                "required",
                format!("`params` is missing: {method} carries them"),
                &super::head(m),
            );
        }
        params
    };
    match method {
        "notifications/message" => {
            if let Some(p) = need(v) {
                v.at("params", |v| {
                    if let Some(level) = v.required(p, "level", Ty::Str)
                        && !LEVELS.contains(&level.as_str().unwrap_or(""))
                    {
                        v.at("level", |v| {
                            v.reject("enum", "not a logging level (debug … emergency)", level)
                        });
                    }
                    v.optional(p, "logger", Ty::Str);
                    v.required(p, "data", Ty::Any);
                });
            }
        }
        "notifications/progress" => {
            if let Some(p) = need(v) {
                v.at("params", |v| {
                    v.required(p, "progressToken", Ty::Id);
                    v.required(p, "progress", Ty::Num);
                    v.optional(p, "total", Ty::Num);
                    v.optional(p, "message", Ty::Str);
                });
            }
        }
        "notifications/cancelled" => {
            if let Some(p) = need(v) {
                v.at("params", |v| {
                    if v.version < super::Version::V2025_11_25 {
                        v.required(p, "requestId", Ty::Id);
                    } else {
                        v.optional(p, "requestId", Ty::Id);
                    }
                    v.optional(p, "reason", Ty::Str);
                });
            }
        }
        "notifications/resources/updated" => {
            if let Some(p) = need(v) {
                v.at("params", |v| {
                    v.required(p, "uri", Ty::Str);
                });
            }
        }
        "notifications/initialized" | "notifications/roots/list_changed" => {
            v.at("method", |v| {
                v.tolerate(
                    "client-notification",
                    "a notification only a client sends",
                    &Value::from(method),
                )
            });
        }
        _ => {}
    }
}
