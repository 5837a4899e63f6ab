//! Past the lists: the read-only methods a declared capability promises, each sent a bounded
//! number of times (`resources/read` of the first listed resources, the walk of
//! `resources/templates/list`, `prompts/get` with placeholder arguments and without a required
//! one, `completion/complete`, `logging/setLevel`), and the client-only capabilities a server
//! must not declare. A declared capability whose method fails is a finding.

use serde_json::{Map, Value, json};

use super::Outcome;
use crate::check::session::Ctx;
use crate::mcp::Era;
use crate::mcp::code::{INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::rpc::{Reply, describe};
use crate::text::truncate;

/// Resources read, prompts got: the first this many of each list.
pub(crate) const READS: usize = 3;
/// A resource listed with a `size` above this is not read (the reply would be that big).
const READ_MAX_BYTES: u64 = 1 << 20;
/// The value given to every required prompt argument.
pub(crate) const PLACEHOLDER: &str = "mcp-witness";
/// Characters of a server string shown in a message.
const SHOWN: usize = 120;

fn declared(ctx: &Ctx<'_>, cap: &str) -> bool {
    ctx.capabilities().is_some_and(|c| c.contains_key(cap))
}

/// A server string, cut for a message.
fn shown(s: &str) -> String {
    truncate(s, SHOWN)
}

/// What is wrong with one item of a `ReadResourceResult.contents`, if anything.
fn content_problem(item: &Value) -> Option<&'static str> {
    let Some(item) = item.as_object() else {
        return Some("a contents item is not an object");
    };
    if !item.get("uri").is_some_and(Value::is_string) {
        return Some("a contents item has no string `uri`");
    }
    let text = item.get("text").is_some_and(Value::is_string);
    let blob = item.get("blob").is_some_and(Value::is_string);
    if !(text || blob) {
        return Some("a contents item has neither a string `text` nor a string `blob`");
    }
    None
}

pub fn resources_read(ctx: &mut Ctx<'_>) -> Outcome {
    if !ctx.resources.declared {
        return Outcome::skip("`resources` is not declared");
    }
    let uris: Vec<String> = ctx
        .resources
        .items
        .iter()
        .filter(|r| {
            r.get("size")
                .and_then(Value::as_u64)
                .is_none_or(|s| s <= READ_MAX_BYTES)
        })
        .filter_map(|r| r.get("uri").and_then(Value::as_str).map(str::to_string))
        .take(READS)
        .collect();
    if uris.is_empty() {
        return Outcome::skip("no listed resource to read (none, or each larger than 1 MiB)");
    }
    let mut problems = Vec::new();
    for uri in &uris {
        let reply = ctx.request("resources/read", Some(json!({"uri": uri})));
        let problem = match &reply {
            Ok(Reply::Result(r)) => match r.get("contents").and_then(Value::as_array) {
                None => Some("the result has no `contents` array".to_string()),
                Some(items) => items.iter().find_map(content_problem).map(str::to_string),
            },
            other => Some(describe(other)),
        };
        if let Some(p) = problem {
            problems.push(format!("resources/read of listed `{}`: {p}", shown(uri)));
        }
    }
    if problems.is_empty() {
        Outcome::pass(format!(
            "read {} listed resource(s), each with well-formed contents",
            uris.len()
        ))
    } else {
        Outcome::fail(problems.join("; "))
    }
}

pub fn resource_templates(ctx: &mut Ctx<'_>) -> Outcome {
    let listing = &ctx.templates;
    if !listing.declared {
        return Outcome::skip("`resources` is not declared");
    }
    if listing.method_not_found() {
        return Outcome::pass("resources/templates/list is -32601: the server has no templates");
    }
    if let Some(c) = listing.repeated_cursor() {
        return Outcome::fail(format!(
            "resources/templates/list page {} repeated the cursor `{}`",
            listing.pages,
            shown(c)
        ));
    }
    if let Some(p) = listing.problem("resources/templates/list") {
        return Outcome::fail(p);
    }
    let bad: Vec<String> = listing
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let missing: Vec<&str> = ["uriTemplate", "name"]
                .into_iter()
                .filter(|k| !t.get(*k).is_some_and(Value::is_string))
                .collect();
            (!missing.is_empty()).then(|| format!("template {i} has no string {}", missing.join(" or ")))
        })
        .take(10)
        .collect();
    if bad.is_empty() {
        Outcome::pass(format!(
            "resources/templates/list answered {} template(s)",
            listing.items_seen
        ))
    } else {
        Outcome::fail(bad.join("; ")).with(truncate(&Value::Array(listing.items.clone()).to_string(), 1000))
    }
}

/// A prompt's name and its arguments as listed: (name, required).
fn prompt_arguments(prompt: &Value) -> Vec<(String, bool)> {
    prompt
        .get("arguments")
        .and_then(Value::as_array)
        .map(|args| {
            args.iter()
                .filter_map(|a| {
                    let name = a.get("name")?.as_str()?;
                    let required = a.get("required") == Some(&Value::Bool(true));
                    Some((name.to_string(), required))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What is wrong with a `GetPromptResult`, if anything.
fn prompt_result_problem(result: &Value) -> Option<String> {
    let Some(messages) = result.get("messages").and_then(Value::as_array) else {
        return Some("the result has no `messages` array".into());
    };
    for (i, m) in messages.iter().enumerate() {
        match m.get("role").and_then(Value::as_str) {
            Some("user" | "assistant") => {}
            Some(role) => {
                return Some(format!(
                    "message {i} has role `{}` (only user and assistant exist)",
                    shown(role)
                ));
            }
            None => return Some(format!("message {i} has no string role")),
        }
        if !m
            .get("content")
            .and_then(|c| c.get("type"))
            .is_some_and(Value::is_string)
        {
            return Some(format!("message {i} has no content object with a string type"));
        }
    }
    None
}

pub fn prompts_get(ctx: &mut Ctx<'_>) -> Outcome {
    if !ctx.prompts.declared {
        return Outcome::skip("`prompts` is not declared");
    }
    let prompts: Vec<(String, Vec<(String, bool)>)> = ctx
        .prompts
        .items
        .iter()
        .filter_map(|p| Some((p.get("name")?.as_str()?.to_string(), prompt_arguments(p))))
        .take(READS)
        .collect();
    if prompts.is_empty() {
        return Outcome::skip("no listed prompt to get");
    }
    let (mut problems, mut refused, mut got) = (Vec::new(), 0, 0);
    for (name, args) in &prompts {
        let arguments: Map<String, Value> = args
            .iter()
            .filter(|(_, required)| *required)
            .map(|(a, _)| (a.clone(), json!(PLACEHOLDER)))
            .collect();
        let reply = ctx.request("prompts/get", Some(json!({"name": name, "arguments": arguments})));
        match &reply {
            Ok(Reply::Result(r)) => match prompt_result_problem(r) {
                Some(p) => problems.push(format!("prompts/get `{}`: {p}", shown(name))),
                None => got += 1,
            },
            // Our placeholder may not be a value the prompt takes: its refusal is no fault.
            Ok(Reply::Error {
                code: INVALID_PARAMS, ..
            }) if !arguments.is_empty() => refused += 1,
            other => problems.push(format!(
                "prompts/get of listed `{}` {}",
                shown(name),
                describe(other)
            )),
        }
    }
    if !problems.is_empty() {
        return Outcome::fail(problems.join("; "));
    }
    let mut message = format!("{got} listed prompt(s) returned well-formed messages");
    if refused > 0 {
        message.push_str(&format!(
            "; {refused} refused the placeholder arguments (\"{PLACEHOLDER}\") with -32602"
        ));
    }
    Outcome::pass(message)
}

pub fn prompt_missing_argument(ctx: &mut Ctx<'_>) -> Outcome {
    if !ctx.prompts.declared {
        return Outcome::skip("`prompts` is not declared");
    }
    let Some((name, arg)) = ctx
        .prompts
        .items
        .iter()
        .filter_map(|p| {
            let name = p.get("name")?.as_str()?;
            let (arg, _) = prompt_arguments(p).into_iter().find(|(_, required)| *required)?;
            Some((name.to_string(), arg))
        })
        .next()
    else {
        return Outcome::skip("no listed prompt has a required argument");
    };
    let reply = ctx.request("prompts/get", Some(json!({"name": name, "arguments": {}})));
    let what = format!(
        "prompts/get `{}` without its required argument `{}`",
        shown(&name),
        shown(&arg)
    );
    match reply {
        Ok(Reply::Error {
            code: INVALID_PARAMS, ..
        }) => Outcome::pass(format!("{what}: error -32602")),
        Ok(Reply::Error { code, .. }) => Outcome::warn(format!("{what} got error {code}, not -32602")),
        other => Outcome::fail(format!("{what} {}", describe(&other))),
    }
}

/// The first variable of an RFC 6570 URI template (`{+path}` gives `path`).
fn template_variable(template: &str) -> Option<&str> {
    let start = template.find('{')? + 1;
    let end = start + template[start..].find('}')?;
    let expr = template[start..end].trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
    let var = expr.split([',', ':', '*']).next()?;
    (!var.is_empty()).then_some(var)
}

pub fn completion(ctx: &mut Ctx<'_>) -> Outcome {
    if !declared(ctx, "completions") {
        return Outcome::skip("`completions` is not declared");
    }
    let from_prompt = ctx.prompts.items.iter().find_map(|p| {
        let name = p.get("name")?.as_str()?;
        let (arg, _) = prompt_arguments(p).into_iter().next()?;
        Some((json!({"type": "ref/prompt", "name": name}), arg))
    });
    let from_template = || {
        ctx.templates.items.iter().find_map(|t| {
            let uri = t.get("uriTemplate")?.as_str()?;
            let var = template_variable(uri)?;
            Some((json!({"type": "ref/resource", "uri": uri}), var.to_string()))
        })
    };
    let Some((reference, argument)) = from_prompt.or_else(from_template) else {
        return Outcome::skip("no listed prompt argument or template variable to complete");
    };
    let what = format!(
        "completion/complete of `{}` ({})",
        shown(&argument),
        reference.get("type").and_then(Value::as_str).unwrap_or_default()
    );
    let params = json!({"ref": reference, "argument": {"name": argument, "value": ""}});
    match ctx.request("completion/complete", Some(params)) {
        Ok(Reply::Result(r)) => {
            let values = r.get("completion").and_then(|c| c.get("values"));
            match values.and_then(Value::as_array) {
                None => Outcome::fail(format!("{what}: the result has no completion.values array")),
                Some(v) if v.len() > 100 => {
                    Outcome::fail(format!("{what}: {} values (the limit is 100)", v.len()))
                }
                Some(v) if !v.iter().all(Value::is_string) => {
                    Outcome::fail(format!("{what}: a value is not a string"))
                }
                Some(v) => Outcome::pass(format!("{what}: {} value(s)", v.len())),
            }
        }
        other => Outcome::fail(format!(
            "`completions` is declared but {what} {}",
            describe(&other)
        )),
    }
}

pub fn logging_set_level(ctx: &mut Ctx<'_>) -> Outcome {
    if !declared(ctx, "logging") {
        return Outcome::skip("`logging` is not declared");
    }
    if ctx.era == Era::Modern {
        return Outcome::skip("the modern era has no logging/setLevel (the level rides in _meta)");
    }
    match ctx.request("logging/setLevel", Some(json!({"level": "info"}))) {
        Ok(Reply::Result(r)) if r.is_object() => Outcome::pass("logging/setLevel info: a result"),
        Ok(Reply::Error {
            code: METHOD_NOT_FOUND,
            ..
        }) => Outcome::fail("`logging` is declared but logging/setLevel is -32601 (Method not found)"),
        other => Outcome::fail(format!(
            "`logging` is declared but logging/setLevel {}",
            describe(&other)
        )),
    }
}

/// Client capabilities: a server that declares one claims what only a client offers.
const CLIENT_ONLY: &[&str] = &["sampling", "roots", "elicitation"];

pub fn client_only_capabilities(ctx: &mut Ctx<'_>) -> Outcome {
    let Some(caps) = ctx.capabilities() else {
        return Outcome::skip("no capabilities object");
    };
    let found: Vec<&str> = CLIENT_ONLY
        .iter()
        .copied()
        .filter(|c| caps.contains_key(*c))
        .collect();
    if found.is_empty() {
        Outcome::pass("no client capability among the server's")
    } else {
        Outcome::fail(format!(
            "the server declares the client capabilit{} `{}`",
            if found.len() == 1 { "y" } else { "ies" },
            found.join("`, `")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_variable_is_read_past_its_operator_and_modifiers() {
        assert_eq!(template_variable("file:///{path}"), Some("path"));
        assert_eq!(template_variable("file://{+path*}/x"), Some("path"));
        assert_eq!(template_variable("test://{?a,b}"), Some("a"));
        assert_eq!(template_variable("test://{id:3}"), Some("id"));
        assert_eq!(template_variable("test://none"), None);
        assert_eq!(template_variable("test://{}"), None);
        assert_eq!(template_variable("test://{unclosed"), None);
    }

    #[test]
    fn a_prompt_message_outside_user_and_assistant_is_a_problem() {
        let ok = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]});
        assert_eq!(prompt_result_problem(&ok), None);
        let system = json!({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]});
        assert!(prompt_result_problem(&system).unwrap().contains("system"));
        assert!(prompt_result_problem(&json!({})).is_some());
    }

    #[test]
    fn resource_contents_need_a_uri_and_text_or_blob() {
        assert_eq!(content_problem(&json!({"uri": "a", "text": ""})), None);
        assert_eq!(content_problem(&json!({"uri": "a", "blob": "AA=="})), None);
        assert!(content_problem(&json!({"uri": "a"})).is_some());
        assert!(content_problem(&json!({"text": "x"})).is_some());
        assert!(content_problem(&json!(3)).is_some());
    }
}
