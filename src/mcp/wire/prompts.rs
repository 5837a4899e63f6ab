//! `prompts/get` (`GetPromptResult`: messages whose role is user or assistant) and
//! `completion/complete` (`CompleteResult`).

use serde_json::{Map, Value};

use super::{Ty, V};

/// `GetPromptResult`: `description?`, `messages: PromptMessage[]`.
pub(super) fn get_result(v: &mut V, r: &Map<String, Value>) {
    v.optional(r, "description", Ty::Str);
    v.each(r, "messages", true, |v, item| {
        let Some(m) = v.object(item) else { return };
        if let Some(role) = v.required(m, "role", Ty::Str)
            && !matches!(role.as_str(), Some("user" | "assistant"))
        {
            v.at("role", |v| {
                v.reject(
                    "role",
                    "a prompt message's role is \"user\" or \"assistant\"",
                    role,
                )
            });
        }
        if let Some(content) = v.required(m, "content", Ty::Obj) {
            v.at("content", |v| super::content::content_block(v, content));
        }
    });
}

/// Most values a completion may hold.
const COMPLETION_VALUES: usize = 100;

/// `CompleteResult`: `completion: {values: string[] (at most 100), total?, hasMore?}`.
pub(super) fn complete_result(v: &mut V, r: &Map<String, Value>) {
    let Some(Value::Object(c)) = v.required(r, "completion", Ty::Obj) else {
        return;
    };
    v.at("completion", |v| {
        v.each(c, "values", true, |v, value| {
            if !value.is_string() {
                v.reject("type", "a completion value is not a string", value);
            }
        });
        if let Some(Value::Array(values)) = c.get("values")
            && values.len() > COMPLETION_VALUES
        {
            let n = Value::from(values.len());
            v.at("values", |v| {
                v.reject("max-items", "a completion holds at most 100 values", &n)
            });
        }
        v.optional(c, "total", Ty::Int);
        v.optional(c, "hasMore", Ty::Bool);
    });
}
