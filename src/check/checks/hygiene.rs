//! Hygiene checks, last: what stdout carried besides JSON-RPC, how lines were framed,
//! what stderr shows, whether the server survived the suite, and how it shuts down.

use super::Outcome;
use crate::check::session::Ctx;
use crate::wire::EndedBy;
use crate::wire::framing::Noise;
use crate::wire::stdio::ExitInfo;

/// The likely cause of a stdout line that is not a JSON-RPC message.
fn likely_cause(line: &str) -> &'static str {
    let t = line.trim_start_matches('\u{feff}').trim();
    let lower = t.to_ascii_lowercase();
    if lower.starts_with("npm ") || lower.starts_with("npx ") {
        "npm chatter (run the server's binary, or npm with --silent)"
    } else if lower.contains("debugger listening") || lower.contains("for help, see: https://nodejs.org") {
        "a Node debugger line (drop --inspect)"
    } else if t.starts_with("> ") {
        "an npm script echo (call the binary, or npm run --silent)"
    } else if lower.starts_with("content-length:") {
        "LSP framing (MCP over stdio is one JSON object per line, no headers)"
    } else if t == "{" || t == "}" || t == "[" || t == "]" || t.starts_with('"') || t.ends_with(',') {
        "pretty-printed JSON (write compact JSON, one message per line)"
    } else if [
        "info", "debug", "warn", "error", "trace", "[info", "[debug", "[warn", "[error", "[",
    ]
    .iter()
    .any(|p| lower.starts_with(p))
        || t.chars().take(4).all(|c| c.is_ascii_digit()) && t.len() > 4
    {
        "a logger writing to stdout (configure it to write to stderr)"
    } else if [
        "running",
        "listening",
        "started",
        "starting",
        "server",
        "ready",
        "welcome",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        "a startup banner (print it to stderr)"
    } else {
        "output that is not a JSON-RPC message (send it to stderr)"
    }
}

pub fn stdout_purity(ctx: &mut Ctx<'_>) -> Outcome {
    if ctx.rpc.is_none() && ctx.restarts.is_empty() {
        return Outcome::skip("no session");
    }
    let t = &ctx.traffic();
    if t.noise_count == 0 {
        return Outcome::pass(format!("{} messages, no other output", t.messages));
    }
    let lines: Vec<String> = t
        .noise
        .iter()
        .map(|(text, _)| format!("{} ← {}", text.escape_debug(), likely_cause(text)))
        .collect();
    Outcome::fail(format!(
        "{} stdout lines were not JSON-RPC messages",
        t.noise_count
    ))
    .with(lines.join("\n"))
}

pub fn framing(ctx: &mut Ctx<'_>) -> Outcome {
    if ctx.rpc.is_none() && ctx.restarts.is_empty() {
        return Outcome::skip("no session");
    }
    let t = &ctx.traffic();
    let mut fails = Vec::new();
    let mut warns = Vec::new();
    for (text, kind) in &t.noise {
        match *kind {
            Noise::InvalidUtf8 => fails.push("a line is not valid UTF-8".to_string()),
            Noise::Bom => warns.push("a line starts with a byte-order mark".to_string()),
            _ if text.to_ascii_lowercase().starts_with("content-length:") => {
                fails.push("Content-Length headers (LSP framing)".to_string())
            }
            _ => {}
        }
    }
    if t.crlf_lines > 0 {
        warns.push(format!(
            "{} lines end in \\r\\n (strict clients reject the \\r)",
            t.crlf_lines
        ));
    }
    if t.max_line > 1 << 20 {
        warns.push(format!(
            "the longest line is {} bytes, past the 1 MiB some clients allow",
            t.max_line
        ));
    } else if t.max_line > 64 << 10 {
        warns.push(format!(
            "the longest line is {} bytes, past Go's default 64 KiB scanner limit",
            t.max_line
        ));
    }
    fails.dedup();
    warns.dedup();
    if !fails.is_empty() {
        fails.extend(warns);
        Outcome::fail(fails.join("; "))
    } else if !warns.is_empty() {
        Outcome::warn(warns.join("; "))
    } else {
        Outcome::pass(format!("{} lines, longest {} bytes", t.messages, t.max_line))
    }
}

/// The kind of unhandled failure a stderr line shows, if any.
fn failure_in(text: &str) -> Option<&'static str> {
    text.lines().find_map(|l| {
        let t = l.trim_start();
        if t.starts_with("Traceback (most recent call last)") {
            Some("a Python traceback")
        } else if t.contains("UnhandledPromiseRejection") || t.contains("Unhandled promise rejection") {
            Some("an unhandled Node promise rejection")
        } else if l.starts_with("    at ") && t.ends_with(')') && t.contains(':') {
            Some("a Node stack trace")
        } else if t.contains("panicked at") {
            Some("a Rust panic")
        } else if t.starts_with("panic: ") || t.starts_with("goroutine ") && t.contains("[running]") {
            Some("a Go panic")
        } else {
            None
        }
    })
}

/// stderr, step by step: a failure logged while a check was sending input meant to be
/// rejected is the server reporting that input (often its SDK logging the broken line), not
/// a defect of its own; only failures in the other steps are held against it.
pub fn stderr(ctx: &mut Ctx<'_>) -> Outcome {
    ctx.end_step();
    let mut provoked = Vec::new();
    let mut own = None;
    let mut bytes = 0;
    for s in &ctx.stderr_steps {
        bytes += s.text.len();
        let Some(what) = failure_in(&s.text) else {
            continue;
        };
        if s.provoked {
            provoked.push(format!("{what} during {}", s.step));
        } else if own.is_none() {
            own = Some((what, s.step, s.text.clone()));
        }
    }
    provoked.dedup();
    let provoked_note = if provoked.is_empty() {
        String::new()
    } else {
        format!(
            "; not counted, as the checks' own input provoked them: {}",
            provoked.join(", ")
        )
    };
    match own {
        Some((what, step, text)) => {
            let tail: Vec<&str> = text
                .lines()
                .rev()
                .take(10)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Outcome::warn(format!("stderr shows {what} during {step}{provoked_note}")).with(tail.join("\n"))
        }
        None => Outcome::pass(format!("{bytes} bytes, no unhandled exception{provoked_note}")),
    }
}

pub fn survival(ctx: &mut Ctx<'_>) -> Outcome {
    let restarted = match ctx.restarts.as_slice() {
        [] => String::new(),
        after => format!(" (restarted after {}, which reported the exit)", after.join(", ")),
    };
    if ctx.alive() {
        return Outcome::pass(format!("still running{restarted}"));
    }
    let how = ctx
        .rpc
        .as_ref()
        .and_then(|r| r.wire().exit())
        .map(|s| match s {
            ExitInfo::Code(c) => format!("exited with code {c}"),
            ExitInfo::Signal(s) => format!("was killed by signal {s}"),
        })
        .unwrap_or_else(|| "is gone".into());
    Outcome::fail(format!("the server {how} during the suite{restarted}"))
}

pub fn shutdown(ctx: &mut Ctx<'_>) -> Outcome {
    let was_alive = ctx.alive();
    let Some(td) = ctx.stop_main().cloned() else {
        return Outcome::skip("no session");
    };
    // Processes that left its group or session are ended and named whether or not the
    // server itself was still up.
    let escaped: Vec<String> = td
        .escapees
        .iter()
        .map(|e| {
            format!(
                "pid {} ({}) left its {}, ended: {}",
                e.pid,
                ctx.redactor.argv(&e.argv).join(" "),
                e.left.as_str(),
                e.ended.as_str()
            )
        })
        .collect();
    let escaped = if escaped.is_empty() {
        String::new()
    } else {
        format!("; processes it started outside its group: {}", escaped.join("; "))
    };
    if !td.survivors.is_empty() {
        return Outcome::fail(format!(
            "processes it started survived even SIGKILL: {:?}{escaped}",
            td.survivors
        ));
    }
    if !was_alive {
        if !escaped.is_empty() {
            return Outcome::warn(format!("the server had already exited{escaped}"));
        }
        return Outcome::skip("the server had already exited (see hygiene.survival)");
    }
    if !escaped.is_empty() {
        return Outcome::warn(format!("ended by {}{escaped}", td.ended_by));
    }
    let left = if td.group_signals.is_empty() {
        String::new()
    } else {
        format!(
            "; it left other processes of its group running, which needed {}",
            td.group_signals.join(" and ")
        )
    };
    match td.ended_by {
        EndedBy::StdinEof if left.is_empty() => {
            Outcome::pass(format!("exited {} ms after stdin closed", td.after_ms))
        }
        EndedBy::StdinEof => Outcome::warn(format!("exited {} ms after stdin closed{left}", td.after_ms)),
        EndedBy::Sigterm => Outcome::warn(format!(
            "did not exit on stdin EOF within 2 s; SIGTERM ended it{left}"
        )),
        other => Outcome::fail(format!(
            "did not exit on stdin EOF or SIGTERM; ended by {other}{left}"
        )),
    }
}
