//! Schema checks on the tool list: names, descriptions, input and output schemas,
//! annotations, and the list's weight in a model's context.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::Outcome;
use crate::check::session::Ctx;
use crate::text::truncate;

/// Offenders named in one message.
const NAMED: usize = 8;

fn tools_or_skip(ctx: &Ctx<'_>) -> Result<Vec<Value>, Outcome> {
    if !ctx.tools.declared {
        return Err(Outcome::skip("`tools` is not declared"));
    }
    if ctx.tools.items.is_empty() {
        return Err(Outcome::skip("no tools were listed"));
    }
    Ok(ctx.tools.items.clone())
}

fn label(i: usize, tool: &Value) -> String {
    match tool.get("name").and_then(Value::as_str) {
        Some(n) => format!("`{}`", truncate(n, 64)),
        None => format!("#{i}"),
    }
}

/// Grades a per-tool predicate: `bad` returns the problem for a tool, if any.
fn per_tool(ctx: &Ctx<'_>, fail: bool, bad: impl Fn(&Value) -> Option<String>) -> Outcome {
    let tools = match tools_or_skip(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let found: Vec<String> = tools
        .iter()
        .enumerate()
        .filter_map(|(i, t)| bad(t).map(|why| format!("{} {why}", label(i, t))))
        .collect();
    if found.is_empty() {
        return Outcome::pass(format!("all {} tools", tools.len()));
    }
    let more = if found.len() > NAMED {
        format!(" (and {} more)", found.len() - NAMED)
    } else {
        String::new()
    };
    let msg = format!(
        "{}{more}",
        found.iter().take(NAMED).cloned().collect::<Vec<_>>().join("; ")
    );
    if fail {
        Outcome::fail(msg)
    } else {
        Outcome::warn(msg)
    }
}

fn name(t: &Value) -> Option<&str> {
    t.get("name").and_then(Value::as_str)
}

pub fn name_missing(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| {
        name(t).is_none().then(|| "has no string name".into())
    })
}

fn spec_name(n: &str) -> bool {
    (1..=128).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

pub fn name_format(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, false, |t| {
        name(t)
            .filter(|n| !spec_name(n))
            .map(|_| "is not 1-128 characters of A-Za-z0-9_.-".into())
    })
}

pub fn name_duplicate(ctx: &mut Ctx<'_>) -> Outcome {
    let tools = match tools_or_skip(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &tools {
        if let Some(n) = name(t) {
            *counts.entry(n).or_default() += 1;
        }
    }
    let mut dups: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c > 1)
        .map(|(n, c)| format!("`{}` ×{c}", truncate(n, 64)))
        .collect();
    dups.sort();
    if dups.is_empty() {
        Outcome::pass(format!("{} unique names", counts.len()))
    } else {
        Outcome::fail(format!(
            "duplicate names: {}",
            dups.into_iter().take(NAMED).collect::<Vec<_>>().join(", ")
        ))
    }
}

pub fn name_host_compat(ctx: &mut Ctx<'_>) -> Outcome {
    let compat = |n: &str| {
        (1..=64).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    per_tool(ctx, false, |t| {
        name(t)
            .filter(|n| spec_name(n) && !compat(n))
            .map(|_| "is valid but rejected by hosts that allow only ^[a-zA-Z0-9_-]{1,64}$".into())
    })
}

fn description(t: &Value) -> Option<&str> {
    t.get("description").and_then(Value::as_str)
}

pub fn description_missing(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, false, |t| {
        description(t)
            .is_none_or(|d| d.trim().is_empty())
            .then(|| "has no description".into())
    })
}

const PLACEHOLDERS: &[&str] = &[
    "todo",
    "tbd",
    "fixme",
    "test",
    "xxx",
    "foo",
    "bar",
    "placeholder",
    "description",
    "lorem ipsum",
];

pub fn description_placeholder(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| {
        let d = description(t)?
            .trim()
            .trim_end_matches(['.', '!'])
            .to_ascii_lowercase();
        (PLACEHOLDERS.contains(&d.as_str()) || d.starts_with("todo"))
            .then(|| format!("has the placeholder description `{d}`"))
    })
}

pub fn description_short(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, false, |t| {
        let d = description(t)?.trim();
        (!d.is_empty() && d.chars().count() < 20)
            .then(|| format!("has a {}-character description", d.chars().count()))
    })
}

fn input(t: &Value) -> Option<&Value> {
    t.get("inputSchema")
}

pub fn input_malformed(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| match input(t) {
        None => Some("has no inputSchema".into()),
        Some(Value::Object(_)) => None,
        Some(other) => Some(format!(
            "has an inputSchema that is not an object: {}",
            truncate(&other.to_string(), 80)
        )),
    })
}

pub fn input_root_type(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| {
        let schema = input(t)?.as_object()?;
        match schema.get("type") {
            Some(Value::String(s)) if s == "object" => None,
            other => Some(format!(
                "has root type {}",
                other.map_or("(none)".into(), |v| truncate(&v.to_string(), 40))
            )),
        }
    })
}

fn properties(schema: &Map<String, Value>) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

pub fn input_orphan_required(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| {
        let schema = input(t)?.as_object()?;
        let required = schema.get("required")?.as_array()?;
        let props = properties(schema);
        let orphans: Vec<String> = required
            .iter()
            .filter_map(Value::as_str)
            .filter(|r| !props.is_some_and(|p| p.contains_key(*r)))
            .map(|r| format!("`{}`", truncate(r, 40)))
            .collect();
        (!orphans.is_empty()).then(|| format!("requires {} not in properties", orphans.join(", ")))
    })
}

pub fn input_undescribed(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, false, |t| {
        let props = properties(input(t)?.as_object()?)?;
        let bare: Vec<String> = props
            .iter()
            .filter(|(_, v)| {
                v.get("description")
                    .and_then(Value::as_str)
                    .is_none_or(|d| d.trim().is_empty())
            })
            .map(|(k, _)| format!("`{}`", truncate(k, 40)))
            .collect();
        (!bare.is_empty()).then(|| format!("has undescribed parameters {}", bare.join(", ")))
    })
}

pub fn output_schema(ctx: &mut Ctx<'_>) -> Outcome {
    let modern = ctx.era == crate::mcp::Era::Modern;
    per_tool(ctx, true, |t| match t.get("outputSchema") {
        None => None,
        Some(Value::Object(o)) if modern || o.get("type").and_then(Value::as_str) == Some("object") => None,
        Some(Value::Object(o)) => Some(format!(
            "has an outputSchema of root type {}",
            o.get("type")
                .map_or("(none)".into(), |v| truncate(&v.to_string(), 40))
        )),
        Some(other) => Some(format!(
            "has an outputSchema that is not an object: {}",
            truncate(&other.to_string(), 80)
        )),
    })
}

pub fn annotations(ctx: &mut Ctx<'_>) -> Outcome {
    per_tool(ctx, true, |t| {
        let ann = t.get("annotations")?;
        let Some(ann) = ann.as_object() else {
            return Some("has annotations that are not an object".into());
        };
        let bad: Vec<&str> = [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ]
        .into_iter()
        .filter(|k| ann.get(*k).is_some_and(|v| !v.is_boolean()))
        .collect();
        (!bad.is_empty()).then(|| format!("has non-boolean {}", bad.join(", ")))
    })
}

/// About four characters a token, as the usual estimate.
fn tokens(v: &Value) -> usize {
    v.to_string().len().div_ceil(4)
}

pub fn context_weight(ctx: &mut Ctx<'_>) -> Outcome {
    let tools = match tools_or_skip(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let total: usize = tools.iter().map(tokens).sum();
    let mut heavy: Vec<(usize, String)> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| (tokens(t), label(i, t)))
        .collect();
    heavy.sort_by_key(|h| std::cmp::Reverse(h.0));
    let top: Vec<String> = heavy.iter().take(5).map(|(n, l)| format!("{l} ~{n}")).collect();
    let msg = format!(
        "about {total} tokens for {} tools; heaviest: {}",
        tools.len(),
        top.join(", ")
    );
    // A size heuristic, not a defect: at most a warning (which `--strict` makes count).
    if total > 4_000 {
        Outcome::warn(msg)
    } else {
        Outcome::pass(msg)
    }
}

pub fn tool_count(ctx: &mut Ctx<'_>) -> Outcome {
    let tools = match tools_or_skip(ctx) {
        Ok(t) => t,
        Err(o) => return o,
    };
    if tools.len() > 128 {
        Outcome::warn(format!(
            "{} tools: VS Code and Copilot refuse requests with more than 128",
            tools.len()
        ))
    } else {
        Outcome::pass(format!("{} tools", tools.len()))
    }
}
