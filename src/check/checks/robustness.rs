//! Robustness checks. Without opt-in, tools are only ever called with arguments a correct
//! server rejects before doing anything (an unknown name, missing required arguments,
//! wrong types); with `--call-tools` or `--safe-tool`, allowed tools are called with `{}`
//! when they require nothing, to grade their results.

use serde_json::{Map, Value, json};

use super::Outcome;
use crate::check::session::{Ctx, OptInCall};
use crate::rpc::describe;
use crate::rpc::{NoReply, Reply};
use crate::text::truncate;

/// At most this many tools are called per check.
const MAX_CALLED: usize = 12;

fn gone(ctx: &mut Ctx<'_>) -> Option<Outcome> {
    (!ctx.alive()).then(|| Outcome::skip("the server is no longer running (see hygiene.survival)"))
}

/// Rejected means a JSON-RPC error or a result with `isError: true`.
fn rejected(reply: &Result<Reply, NoReply>) -> Option<bool> {
    match reply {
        Ok(Reply::Error { .. }) => Some(true),
        Ok(Reply::Result(r)) => Some(r.get("isError") == Some(&Value::Bool(true))),
        Ok(Reply::Malformed(_)) => Some(false),
        Err(_) => None,
    }
}

fn call(ctx: &mut Ctx<'_>, name: &str, arguments: Value) -> Result<Reply, NoReply> {
    ctx.request("tools/call", Some(call_params(name, arguments)))
}

fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// What came back, as a finding's payload shows it (bounded).
fn received(reply: &Result<Reply, NoReply>) -> String {
    let text = match reply {
        Ok(Reply::Result(r)) => json!({"result": r}).to_string(),
        Ok(Reply::Error { code, message, data }) => {
            json!({"error": {"code": code, "message": message, "data": data}}).to_string()
        }
        Ok(Reply::Malformed(m)) => Value::Object(m.clone()).to_string(),
        Err(_) => format!("(nothing: {})", describe(reply)),
    };
    truncate(&text, 600)
}

/// A finding's payload: what was sent and what came back.
fn exchange(method: &str, params: &Value, reply: &Result<Reply, NoReply>) -> String {
    format!(
        "sent: {method} {}\nreceived: {}",
        truncate(&params.to_string(), 600),
        received(reply)
    )
}

pub fn unknown_tool(ctx: &mut Ctx<'_>) -> Outcome {
    if !ctx.tools.declared {
        return Outcome::skip("`tools` is not declared");
    }
    if let Some(o) = gone(ctx) {
        return o;
    }
    let params = call_params("__mcp_witness_no_such_tool__", json!({}));
    let reply = ctx.request("tools/call", Some(params.clone()));
    let payload = exchange("tools/call", &params, &reply);
    match rejected(&reply) {
        Some(true) => Outcome::pass("rejected"),
        Some(false) => Outcome::fail("tools/call of a tool that does not exist succeeded").with(payload),
        None => Outcome::fail(format!("tools/call of an unknown tool {}", describe(&reply))).with(payload),
    }
}

fn schema_of(tool: &Value) -> Option<&Map<String, Value>> {
    tool.get("inputSchema").and_then(Value::as_object)
}

/// Whether the tool's inputSchema lists any required argument.
fn requires_arguments(tool: &Value) -> bool {
    schema_of(tool)
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
}

fn name_of(tool: &Value) -> Option<String> {
    tool.get("name").and_then(Value::as_str).map(str::to_string)
}

/// Calls each candidate with arguments made by `args`; grades acceptances and crashes.
fn probe_calls(
    ctx: &mut Ctx<'_>,
    candidates: Vec<(String, Value)>,
    what: &str,
    accepted_status: fn(String) -> Outcome,
) -> Outcome {
    if candidates.is_empty() {
        return Outcome::skip(format!("no tool has {what}"));
    }
    let mut accepted = Vec::new();
    let mut exchanges = Vec::new();
    for (name, args) in candidates.iter().take(MAX_CALLED) {
        let params = call_params(name, args.clone());
        let reply = ctx.request("tools/call", Some(params.clone()));
        match rejected(&reply) {
            Some(true) => {}
            Some(false) => {
                accepted.push(format!("`{}`", truncate(name, 64)));
                if exchanges.len() < 3 {
                    exchanges.push(exchange("tools/call", &params, &reply));
                }
            }
            None => {
                return Outcome::fail(format!(
                    "calling `{}` with {what} {}",
                    truncate(name, 64),
                    describe(&reply)
                ))
                .with(exchange("tools/call", &params, &reply));
            }
        }
    }
    let n = candidates.len().min(MAX_CALLED);
    if accepted.is_empty() {
        Outcome::pass(format!("{n} tools rejected {what}"))
    } else {
        accepted_status(format!("accepted {what}: {}", accepted.join(", "))).with(exchanges.join("\n"))
    }
}

pub fn missing_required(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(o) = gone(ctx) {
        return o;
    }
    let candidates: Vec<(String, Value)> = ctx
        .tool_list()
        .iter()
        .filter(|t| requires_arguments(t))
        .filter_map(|t| name_of(t).map(|n| (n, json!({}))))
        .collect();
    probe_calls(ctx, candidates, "required arguments missing", Outcome::fail)
}

/// A value of the wrong type for a property schema, or `None` when it has no plain type.
fn wrong_value(prop: &Value) -> Option<Value> {
    Some(match prop.get("type")?.as_str()? {
        "string" => json!(12345),
        "number" | "integer" => json!("not a number"),
        "boolean" => json!("not a boolean"),
        "array" => json!("not an array"),
        "object" => json!("not an object"),
        _ => return None,
    })
}

pub fn wrong_types(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(o) = gone(ctx) {
        return o;
    }
    let candidates: Vec<(String, Value)> = ctx
        .tool_list()
        .iter()
        .filter_map(|t| {
            let props = schema_of(t)?.get("properties")?.as_object()?;
            let args: Map<String, Value> = props
                .iter()
                .filter_map(|(k, p)| wrong_value(p).map(|v| (k.clone(), v)))
                .collect();
            if args.is_empty() {
                None
            } else {
                Some((name_of(t)?, Value::Object(args)))
            }
        })
        .collect();
    probe_calls(ctx, candidates, "wrong-typed arguments", Outcome::warn)
}

/// The opt-in calls, made once for both result checks: tools the user allowed that require
/// no arguments, called with `{}`.
fn opt_in_calls(ctx: &mut Ctx<'_>) -> Result<Vec<OptInCall>, Outcome> {
    if let Some(done) = &ctx.opt_in {
        return Ok(done.clone());
    }
    if !ctx.opts.call_tools && ctx.opts.safe_tools.is_empty() {
        return Err(Outcome::skip(
            "no tool may be called: opt in with --call-tools or --safe-tool NAME",
        ));
    }
    if let Some(o) = gone(ctx) {
        return Err(o);
    }
    let names: Vec<String> = ctx
        .tool_list()
        .iter()
        .filter(|t| !requires_arguments(t))
        .filter_map(name_of)
        .filter(|n| ctx.opts.may_call(n))
        .take(MAX_CALLED)
        .collect();
    let mut done = Vec::new();
    for n in names {
        let reply = call(ctx, &n, json!({}));
        done.push((n, reply));
    }
    ctx.opt_in = Some(done.clone());
    Ok(done)
}

pub fn result_shape(ctx: &mut Ctx<'_>) -> Outcome {
    let calls = match opt_in_calls(ctx) {
        Ok(c) => c,
        Err(o) => return o,
    };
    if calls.is_empty() {
        return Outcome::skip("no allowed tool can be called without arguments");
    }
    let mut problems = Vec::new();
    let mut exchanges = Vec::new();
    for (name, reply) in &calls {
        let before = problems.len();
        let output_schema = ctx
            .tool_list()
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|t| t.get("outputSchema"))
            .cloned();
        match reply {
            Ok(Reply::Result(r)) => {
                if !r.get("content").is_some_and(Value::is_array) {
                    problems.push(format!("`{name}`: no content array"));
                }
                if r.get("isError").is_some_and(|v| !v.is_boolean()) {
                    problems.push(format!("`{name}`: isError is not a boolean"));
                }
                if let Some(schema) = output_schema.as_ref().and_then(Value::as_object) {
                    match r.get("structuredContent") {
                        None if r.get("isError") != Some(&Value::Bool(true)) => problems.push(format!(
                            "`{name}`: has an outputSchema but returned no structuredContent"
                        )),
                        Some(sc) => {
                            let missing: Vec<&str> = schema
                                .get("required")
                                .and_then(Value::as_array)
                                .map(|r| {
                                    r.iter()
                                        .filter_map(Value::as_str)
                                        .filter(|k| sc.get(*k).is_none())
                                        .collect()
                                })
                                .unwrap_or_default();
                            if !sc.is_object() || !missing.is_empty() {
                                problems.push(format!("`{name}`: structuredContent does not match outputSchema (missing {missing:?})"));
                            }
                        }
                        None => {}
                    }
                }
            }
            Ok(Reply::Error { .. }) => {}
            other => problems.push(format!("`{name}`: {}", describe(other))),
        }
        if problems.len() > before && exchanges.len() < 3 {
            exchanges.push(exchange("tools/call", &call_params(name, json!({})), reply));
        }
    }
    if problems.is_empty() {
        Outcome::pass(format!("{} results well-formed", calls.len()))
    } else {
        Outcome::fail(problems.join("; ")).with(exchanges.join("\n"))
    }
}

pub fn result_size(ctx: &mut Ctx<'_>) -> Outcome {
    let calls = match opt_in_calls(ctx) {
        Ok(c) => c,
        Err(o) => return o,
    };
    let sizes: Vec<(usize, &String)> = calls
        .iter()
        .filter_map(|(n, r)| match r {
            Ok(Reply::Result(v)) => Some((v.to_string().len().div_ceil(4), n)),
            _ => None,
        })
        .collect();
    let Some((max, name)) = sizes.iter().max_by_key(|(s, _)| *s) else {
        return Outcome::skip("no allowed tool returned a result");
    };
    let msg = format!("largest result: `{name}`, about {max} tokens");
    let payload = || {
        calls
            .iter()
            .find(|(n, _)| n == *name)
            .map(|(n, r)| exchange("tools/call", &call_params(n, json!({})), r))
            .unwrap_or_default()
    };
    match max {
        m if *m > 25_000 => Outcome::fail(msg).with(payload()),
        m if *m > 8_000 => Outcome::warn(msg).with(payload()),
        _ => Outcome::pass(msg),
    }
}

pub fn malformed_input(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(o) = gone(ctx) {
        return o;
    }
    let lines: [&[u8]; 3] = [
        b"this is not json at all",
        br#"{"jsonrpc":"2.0","id":"#,
        br#"{"jsonrpc":"2.0","id":"mcpw-malformed-1","method":"tools/list","params":[1,2]}"#,
    ];
    if let Some(rpc) = ctx.rpc.as_mut() {
        for line in lines {
            rpc.send_raw(line);
        }
    }
    // Replies to those are allowed and ignored; the request after them shows whether the
    // server is still there and still answering (a crash ends the wait at once).
    let reply = if ctx.tools.declared {
        ctx.request("tools/list", None)
    } else {
        ctx.request("ping", None)
    };
    let payload = format!(
        "sent: {}\nthen: {}\nreceived: {}",
        lines
            .iter()
            .map(|l| String::from_utf8_lossy(l))
            .collect::<Vec<_>>()
            .join("\n      "),
        if ctx.tools.declared { "tools/list" } else { "ping" },
        received(&reply)
    );
    match reply {
        Ok(Reply::Result(_)) => Outcome::pass("still answering after three malformed lines"),
        Ok(Reply::Error { code, .. }) => Outcome::warn(format!(
            "after malformed input, the next request got error {code}"
        ))
        .with(payload),
        Err(NoReply::Exited | NoReply::StdoutClosed | NoReply::StdinClosed) => {
            Outcome::fail("the server exited after malformed input").with(payload)
        }
        other => Outcome::fail(format!(
            "after malformed input, the next request {}",
            describe(&other)
        ))
        .with(payload),
    }
}
