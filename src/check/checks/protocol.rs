//! Protocol checks: the handshake, capability honesty, JSON-RPC error codes, ping, version
//! negotiation, and the modern era's discover, version error and `_meta` rule.

use serde_json::{Value, json};

use super::Outcome;
use crate::check::session::{Ctx, Probed};
use crate::mcp::{LEGACY_VERSIONS, MODERN_VERSIONS, modern_meta};
use crate::rpc::Reply;
use crate::rpc::describe;
use crate::text::truncate;

fn legacy_only(ctx: &Ctx<'_>) -> Option<Outcome> {
    (ctx.era != crate::mcp::Era::Legacy)
        .then(|| Outcome::skip("legacy era only (the handshake used the modern era)"))
}

fn modern_only(ctx: &Ctx<'_>) -> Option<Outcome> {
    (ctx.era != crate::mcp::Era::Modern)
        .then(|| Outcome::skip("modern era only: run with --era modern or --era auto"))
}

/// Without a handshake: a skip when the server asked for credentials (no defect of it), else
/// a failure saying why.
fn no_handshake(ctx: &Ctx<'_>) -> Outcome {
    let why = ctx
        .could_not_run
        .clone()
        .unwrap_or_else(|| "no handshake reply".into());
    if ctx.auth_required {
        Outcome::skip(why)
    } else {
        Outcome::fail(why)
    }
}

pub fn handshake_version(ctx: &mut Ctx<'_>) -> Outcome {
    let Some(init) = &ctx.init else {
        return no_handshake(ctx);
    };
    if ctx.era == crate::mcp::Era::Modern {
        let versions: Vec<&str> = init
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        return if versions.iter().any(|v| MODERN_VERSIONS.contains(v)) {
            Outcome::pass(format!("supportedVersions {versions:?}"))
        } else {
            Outcome::fail(format!(
                "supportedVersions {versions:?} has no version this tool knows"
            ))
        };
    }
    match init.get("protocolVersion") {
        Some(Value::String(v)) if LEGACY_VERSIONS.contains(&v.as_str()) => {
            Outcome::pass(format!("protocolVersion {v}"))
        }
        Some(Value::String(v)) => Outcome::fail(format!(
            "protocolVersion `{}` is not a known version",
            truncate(v, 64)
        )),
        _ => Outcome::fail("the initialize result has no string protocolVersion"),
    }
}

pub fn handshake_serverinfo(ctx: &mut Ctx<'_>) -> Outcome {
    if ctx.init.is_none() {
        return no_handshake(ctx);
    }
    match &ctx.server {
        None => Outcome::fail("no serverInfo with a string name"),
        Some(s) if s.version.as_deref().is_none_or(str::is_empty) => {
            Outcome::warn(format!("serverInfo `{}` has no version", s.name))
        }
        Some(s) => Outcome::pass(format!("{} {}", s.name, s.version.as_deref().unwrap_or_default())),
    }
}

fn capability(ctx: &mut Ctx<'_>, cap: &str) -> Outcome {
    let listing = match cap {
        "tools" => &ctx.tools,
        "resources" => &ctx.resources,
        _ => &ctx.prompts,
    };
    if !listing.declared {
        return Outcome::skip(format!("`{cap}` is not declared"));
    }
    match listing.problem(&format!("{cap}/list")) {
        Some(p) if listing.pages == 0 => Outcome::fail(format!("`{cap}` is declared but {p}")),
        Some(p) => Outcome::fail(p),
        None if listing.cut => Outcome::pass(format!(
            "{cap}/list answered {} items (the checks read the first {}: more would not fit the bounds)",
            listing.items_seen,
            listing.items.len()
        )),
        None => Outcome::pass(format!("{cap}/list answered {} items", listing.items_seen)),
    }
}

pub fn capability_tools(ctx: &mut Ctx<'_>) -> Outcome {
    capability(ctx, "tools")
}

pub fn capability_resources(ctx: &mut Ctx<'_>) -> Outcome {
    capability(ctx, "resources")
}

pub fn capability_prompts(ctx: &mut Ctx<'_>) -> Outcome {
    capability(ctx, "prompts")
}

pub fn unknown_method(ctx: &mut Ctx<'_>) -> Outcome {
    let reply = ctx.request("mcpWitness/definitelyNotAMethod", None);
    match reply {
        Ok(Reply::Error { code: -32601, .. }) => Outcome::pass("error -32601"),
        Ok(Reply::Error { code, .. }) => Outcome::warn(format!("error {code}, not -32601")),
        other => Outcome::fail(format!("an unknown method {}", describe(&other))),
    }
}

/// Grades the reply to a deliberately broken line: the right error code passes; another
/// code or no reply at all (the official TypeScript and Python SDKs drop such lines) is a
/// warning, since clients never send them; a success result fails.
fn grade_broken_line(
    ctx: &mut Ctx<'_>,
    line: &[u8],
    want: i64,
    what: &str,
    accept: &dyn Fn(Option<&Value>) -> bool,
) -> Outcome {
    let payload = String::from_utf8_lossy(line).into_owned();
    match ctx.probe_line(line, accept) {
        Probed::Reply(Reply::Error { code, .. }) if code == want => Outcome::pass(format!("error {want}")),
        Probed::Reply(Reply::Error { code, .. }) => {
            Outcome::warn(format!("{what} got error {code}, not {want}")).with(payload)
        }
        Probed::Reply(_) => Outcome::fail(format!("{what} got a result, not error {want}")).with(payload),
        Probed::Ignored => Outcome::warn(format!(
            "{what} got no reply (JSON-RPC 2.0 requires error {want}); the server answered the next request"
        ))
        .with(payload),
        Probed::NoReply(e) => Outcome::fail(format!("{what} {}", describe(&Err(e)))).with(payload),
    }
}

pub fn parse_error(ctx: &mut Ctx<'_>) -> Outcome {
    let line = br#"{"jsonrpc": "2.0", "id": 1, "method": "#;
    grade_broken_line(ctx, line, -32700, "a truncated JSON line", &|id| {
        id.is_none_or(Value::is_null)
    })
}

pub fn invalid_request(ctx: &mut Ctx<'_>) -> Outcome {
    let line = br#"{"jsonrpc":"2.0","id":"mcpw-invalid-1","method":42}"#;
    grade_broken_line(ctx, line, -32600, "a request with a non-string method", &|id| {
        id.is_none_or(|v| v.is_null() || v == "mcpw-invalid-1")
    })
}

pub fn ping(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = legacy_only(ctx) {
        return skip;
    }
    let started = std::time::Instant::now();
    match ctx.request("ping", None) {
        Ok(Reply::Result(Value::Object(m))) if m.is_empty() => {
            Outcome::pass(format!("{{}} in {} ms", started.elapsed().as_millis()))
        }
        Ok(Reply::Result(r)) => Outcome::warn(format!(
            "ping answered a non-empty result {}",
            truncate(&r.to_string(), 200)
        )),
        other => Outcome::warn(format!("ping {}", describe(&other))),
    }
}

pub fn version_unknown(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = legacy_only(ctx) {
        return skip;
    }
    let Some(run) = ctx.side_run("1999-01-01") else {
        return Outcome::skip("the fresh process did not run");
    };
    if let Some(why) = &run.unreadable {
        return Outcome::skip(format!("initialize with 1999-01-01 was not read: {why}"));
    }
    match (&run.answered, &run.error) {
        (Some(v), _) if v == "1999-01-01" => {
            Outcome::fail("initialize with 1999-01-01 was echoed back as supported")
        }
        (Some(v), _) if LEGACY_VERSIONS.contains(&v.as_str()) => Outcome::pass(format!("answered {v}")),
        (Some(v), _) => Outcome::warn(format!("answered `{v}`, which is not a known version")),
        (None, Some((code, msg))) => Outcome::pass(format!("refused with error {code}: {msg}")),
        (None, None) if run.silent => Outcome::fail("no reply to initialize with 1999-01-01"),
        (None, None) => Outcome::fail(format!(
            "initialize with 1999-01-01: the server {}",
            run.exited.as_deref().unwrap_or("did not reply")
        )),
    }
}

pub fn version_older(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = legacy_only(ctx) {
        return skip;
    }
    let Some(run) = ctx.side_run("2024-11-05") else {
        return Outcome::skip("the fresh process did not run");
    };
    if let Some(why) = &run.unreadable {
        return Outcome::skip(format!("initialize with 2024-11-05 was not read: {why}"));
    }
    if let Some(exit) = &run.exited {
        return Outcome::fail(format!(
            "initialize with 2024-11-05 took the server down: it {exit}"
        ));
    }
    match (&run.answered, &run.error) {
        (Some(v), _) => Outcome::pass(format!("answered {v}")),
        (None, Some((code, msg))) => Outcome::warn(format!("refused 2024-11-05 with error {code}: {msg}")),
        _ => Outcome::fail("no reply to initialize with 2024-11-05"),
    }
}

pub fn modern_discover(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = modern_only(ctx) {
        return skip;
    }
    let init = ctx.init.clone().unwrap_or_default();
    let mut problems = Vec::new();
    if !init.get("capabilities").is_some_and(Value::is_object) {
        problems.push("no capabilities object");
    }
    if ctx.server.is_none() {
        problems.push("no _meta[\"io.modelcontextprotocol/serverInfo\"] with a name");
    }
    if init.get("resultType").is_some_and(|r| r != "complete") {
        problems.push("resultType is not \"complete\"");
    }
    if problems.is_empty() {
        Outcome::pass("supportedVersions, capabilities and serverInfo present")
    } else {
        Outcome::fail(problems.join("; ")).with(truncate(&Value::Object(init).to_string(), 1000))
    }
}

pub fn modern_bad_version(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = modern_only(ctx) {
        return skip;
    }
    let params = json!({"_meta": modern_meta("1999-01-01")});
    match ctx.request_with("server/discover", Some(params), false) {
        Ok(Reply::Error {
            code: -32022, data, ..
        }) => {
            if data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .is_some_and(Value::is_array)
            {
                Outcome::pass("error -32022 with data.supported")
            } else {
                Outcome::fail("error -32022 without a data.supported array")
            }
        }
        other => Outcome::fail(format!(
            "server/discover with version 1999-01-01 {}",
            describe(&other)
        )),
    }
}

pub fn modern_missing_meta(ctx: &mut Ctx<'_>) -> Outcome {
    if let Some(skip) = modern_only(ctx) {
        return skip;
    }
    // `_meta` with the version but without the required clientCapabilities: unmistakably a
    // modern request (a dual-era server may answer a request with no `_meta` the legacy way).
    let version = ctx.protocol_version.clone().unwrap_or_default();
    let params = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": version}});
    match ctx.request_with("tools/list", Some(params), false) {
        Ok(Reply::Error { code: -32602, .. }) => Outcome::pass("error -32602"),
        Ok(Reply::Error { code, .. }) => Outcome::warn(format!("error {code}, not -32602")),
        other => Outcome::fail(format!(
            "tools/list with _meta lacking clientCapabilities {}",
            describe(&other)
        )),
    }
}
