//! `probe`: run one probe, print the verdict, append the evidence block.

use std::time::Duration;

use clap::{ArgGroup, Args};
use serde_json::Value;

use super::server_args::{RecordArgs, Recorded, Recorder, ServerArgs, parse_call_secs};
use crate::probe::outcome::{Observation, Verdict};
use crate::probe::{CallRequest, ProbeOptions, probe, record};
use crate::wire::stdio::ExitInfo;

/// Probe an MCP server (a stdio command, or a Streamable HTTP endpoint with --url):
/// handshake, list every page of tools, optionally call one tool, tear the server down (HTTP:
/// DELETE the session), record a signed evidence block.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["command", "config", "url"])))]
pub struct ProbeArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    record: RecordArgs,
    /// Call this tool once after the list (only if the list contains it). Never done unless asked.
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,
    /// Arguments for --call, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}", requires = "call")]
    call_args: String,
    /// Bound on the wait for the --call reply, in seconds.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_call_secs)]
    call_timeout: Duration,
    /// Print the appended block (one JSON object) instead of the summary.
    #[arg(long)]
    json: bool,
    /// Append only if the observation differs from the latest block of the same target.
    #[arg(long, conflicts_with = "no_record")]
    if_changed: bool,
    /// Pin the surface: compare it with the latest passing block of the same target in FILE
    /// (which must verify intact); any changed tool or part is a fail (`surface_changed`).
    #[arg(long, value_name = "FILE")]
    expect: Option<std::path::PathBuf>,
}

pub fn run(args: ProbeArgs) -> u8 {
    if args.server.all {
        return run_all(&args);
    }
    let opts = match options(&args) {
        Ok(o) => o,
        Err(e) => return super::error(e),
    };
    let recorder = match Recorder::new(&args.record, "probes.jsonl") {
        Ok(r) => r,
        Err(e) => return super::error(e),
    };
    if let Some(file) = &args.expect
        && let Err(e) = crate::files::open_read(file, "--expect file")
    {
        return super::error(e);
    }
    let mut obs = probe(&opts);
    if let Some(file) = &args.expect {
        match crate::probe::expect::expect(&mut obs, file) {
            Ok(expected) => obs.expected = Some(expected),
            Err(e) => {
                if !args.json {
                    print_summary(&obs);
                }
                return super::error(e);
            }
        }
    }
    let body = record::block_body(&obs);
    let verdict_code = obs.verdict.exit_code();
    match recorder.record(body.clone(), args.if_changed) {
        Ok(Recorded::Off) => {
            if args.json {
                outln!("{}", crate::inert::json(&Value::Object(body)));
            } else {
                print_summary(&obs);
                outln!("not recorded (--no-record)");
            }
            verdict_code
        }
        Ok(Recorded::Appended { seq, hash, line }) => {
            let file = recorder.path().display();
            if args.json {
                // The block as JSON, hazards escaped: the same value as the line in the file.
                let block: Value = serde_json::from_slice(&line).unwrap_or_default();
                outln!("{}", crate::inert::json(&block));
                eprintln!("mcp-witness: recorded {file} seq {seq} head {hash}");
            } else {
                print_summary(&obs);
                outln!("recorded: {file} seq {seq} head {hash}");
            }
            verdict_code
        }
        Ok(Recorded::NotAppended(msg)) => {
            if args.json {
                outln!("{}", crate::inert::json(&Value::Object(body)));
                eprintln!("mcp-witness: {msg}");
            } else {
                print_summary(&obs);
                outln!("{msg}");
            }
            verdict_code
        }
        Err(e) => {
            if !args.json {
                print_summary(&obs);
            }
            super::error(e)
        }
    }
}

/// `probe --config FILE --all`: every server of the config, at most as many at once as
/// there are cores; one block each, a summary table, and the worst exit code (a usage error,
/// then fail, then inconclusive, then pass).
fn run_all(args: &ProbeArgs) -> u8 {
    if args.call.is_some() || args.expect.is_some() || args.json {
        return super::error(
            "--all probes every server of the config alike: --call, --expect and --json are for one server (--server NAME)",
        );
    }
    let servers = match args.server.options_all("probe") {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    if servers.is_empty() {
        return super::error("the config lists no server");
    }
    let recorder = match Recorder::new(&args.record, "probes.jsonl") {
        Ok(r) => r,
        Err(e) => return super::error(e),
    };
    // Several servers at once would interleave their progress lines.
    crate::progress::enable(false);
    let queue = std::sync::Mutex::new(servers.into_iter().enumerate().collect::<Vec<_>>());
    let done = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, usize::from).max(1);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let next = queue.lock().map(|mut q| q.pop()).unwrap_or(None);
                    let Some((i, (name, server))) = next else { break };
                    let seen = server.map(|server| probe(&ProbeOptions { server, call: None }));
                    if let Ok(mut d) = done.lock() {
                        d.push((i, name, seen));
                    }
                }
            });
        }
    });
    let mut done: Vec<_> = done.into_inner().unwrap_or_default();
    done.sort_by_key(|(i, _, _)| *i);
    // How bad an exit code is: usage error, then fail, then inconclusive, then pass.
    let rank = |code: u8| match code {
        2 => 3,
        1 => 2,
        3 => 1,
        _ => 0,
    };
    let mut worst = super::help::exit::OK;
    let mut rows = Vec::new();
    for (_, name, seen) in done {
        let name = crate::inert::inert(&name).into_owned();
        let obs = match seen {
            Ok(obs) => obs,
            Err(e) => {
                rows.push(format!("  {name:<24} could not run: {}", crate::inert::inert(&e)));
                worst = if rank(super::EXIT_USAGE) > rank(worst) {
                    super::EXIT_USAGE
                } else {
                    worst
                };
                continue;
            }
        };
        outln!("== {name} ==");
        print_summary(&obs);
        let mut code = obs.verdict.exit_code();
        match recorder.record(record::block_body(&obs), args.if_changed) {
            Ok(Recorded::Appended { seq, hash, .. }) => {
                outln!("recorded: {} seq {seq} head {hash}", recorder.path().display())
            }
            Ok(Recorded::NotAppended(msg)) => outln!("{msg}"),
            Ok(Recorded::Off) => {}
            Err(e) => code = super::error(e),
        }
        if rank(code) > rank(worst) {
            worst = code;
        }
        let tools = obs.tools.as_ref().map_or(0, |t| t.count);
        let reasons: Vec<&str> = obs.reasons.iter().map(|r| r.code.as_str()).collect();
        rows.push(format!(
            "  {name:<24} {:<12} {tools:>5} tools  {}",
            obs.verdict.as_str(),
            reasons.join(", ")
        ));
    }
    outln!("\nsummary of {} servers:", rows.len());
    for row in rows {
        outln!("{row}");
    }
    worst
}

fn options(args: &ProbeArgs) -> Result<ProbeOptions, String> {
    let server = args.server.options("probe")?;
    let call = match &args.call {
        None => None,
        Some(tool) => {
            let arguments: Value = serde_json::from_str(&args.call_args)
                .map_err(|e| format!("--call-args is not valid JSON: {e}"))?;
            if !arguments.is_object() {
                return Err("--call-args must be a JSON object, e.g. '{\"text\":\"hi\"}'".into());
            }
            Some(CallRequest {
                tool: tool.clone(),
                arguments,
                timeout: args.call_timeout,
            })
        }
    };
    Ok(ProbeOptions { server, call })
}

fn print_summary(obs: &Observation) {
    out!("{}", summary(obs));
}

/// The human summary; every `println!` below writes into it. Each string the server chose is
/// made inert where it is interpolated, so none can start a line or act on a terminal.
fn summary(obs: &Observation) -> String {
    use crate::inert::{inert, inert_lines};
    use std::fmt::Write;
    let mut out = String::new();
    macro_rules! println {
        ($($arg:tt)*) => {{
            let _ = writeln!(out, $($arg)*);
        }};
    }
    let who = match &obs.server {
        Some(s) => format!(
            "{} {}",
            inert(&s.name),
            inert(s.version.as_deref().unwrap_or("(no version)"))
        ),
        None => "(no serverInfo)".to_string(),
    };
    let proto = inert(obs.protocol_version.as_deref().unwrap_or("(none)"));
    println!(
        "{}: {who}, protocol {proto} ({})",
        obs.verdict.as_str(),
        obs.era.as_str()
    );
    if let Some(d) = &obs.era_detection {
        println!("  era: {}", inert(d));
    }
    for r in &obs.reasons {
        println!("  reason {}: {}", r.code, inert(&r.message));
    }
    if let Some(s) = &obs.silence {
        if obs.target.url.is_some() {
            // Over HTTP: reply bodies received; there is no process to be alive.
            println!(
                "  silence: waited {} ms at {}; {} bytes of replies received",
                s.waited_ms, s.step, s.stdout_bytes
            );
        } else {
            println!(
                "  silence: waited {} ms at {}; stdout {} bytes, stderr {} bytes; server {}",
                s.waited_ms,
                s.step,
                s.stdout_bytes,
                s.stderr_bytes,
                if s.alive { "alive" } else { "exited" }
            );
        }
    }
    if let Some(t) = &obs.tools {
        let names = t.names.iter().map(|n| inert(n)).collect::<Vec<_>>().join(", ");
        println!("  tools: {} ({names})", t.count);
    }
    if let Some(c) = &obs.call {
        let preview = c
            .preview
            .as_deref()
            .map(|p| format!(": {}", inert(&p.replace('\n', " "))))
            .unwrap_or_default();
        let error = c
            .error
            .as_ref()
            .map(|(code, m)| format!(": error {code} {}", inert(m)))
            .unwrap_or_default();
        println!(
            "  call {}: {}{preview}{error}",
            inert(&c.tool),
            c.outcome.as_str()
        );
    }
    if obs.traffic.noise_count > 0 {
        println!(
            "  stdout noise: {} lines that are not JSON-RPC",
            obs.traffic.noise_count
        );
        for (text, kind) in &obs.traffic.noise {
            println!("    [{}] {}", kind.code(), inert(text));
        }
    }
    if obs.verdict != Verdict::Pass
        && let Some(tail) = &obs.stderr_tail
        && !tail.trim().is_empty()
    {
        println!("  stderr ({} bytes), last lines:", obs.stderr_bytes);
        let lines: Vec<_> = inert_lines(tail.trim_end_matches('\n')).collect();
        for line in &lines[lines.len().saturating_sub(8)..] {
            println!("    {line}");
        }
    }
    if let Some(td) = &obs.teardown {
        let exit = match td.exit {
            Some(ExitInfo::Code(c)) => format!("exit code {c}"),
            Some(ExitInfo::Signal(s)) => format!("signal {s}"),
            None => "not reaped".to_string(),
        };
        let group = if td.group_signals.is_empty() {
            String::new()
        } else {
            format!("; group needed {}", td.group_signals.join(", "))
        };
        println!(
            "  teardown: {} after {} ms, {exit}{group}",
            td.ended_by, td.after_ms
        );
        for e in &td.escapees {
            println!(
                "  escaped the server's {}: pid {} ({}), {}",
                e.left.as_str(),
                e.pid,
                crate::inert::inert(&e.argv.join(" ")),
                e.ended.as_str()
            );
        }
        if !td.survivors.is_empty() {
            println!(
                "  WARNING: processes the server started survived: {:?}",
                td.survivors
            );
        }
    }
    if let Some(h) = &obs.http {
        for end in &h.sessions {
            let statuses: Vec<String> = end
                .facts
                .exchanges
                .iter()
                .map(|x| {
                    let what = x.rpc_method.as_deref().unwrap_or(x.method.as_str());
                    let status = x.status.map_or_else(|| "-".to_string(), |s| s.to_string());
                    format!("{} {status}", inert(what))
                })
                .collect();
            let session = end.facts.session_id.map_or_else(
                || "no session id".to_string(),
                |s| format!("session id of {} bytes", s.length),
            );
            println!(
                "  http ({}): {}; {session}",
                obs.target.transport.as_str(),
                statuses.join(", ")
            );
        }
        if let Some(a) = &h.auth {
            for c in &a.challenges {
                println!("  www-authenticate: {}", inert(c));
            }
            if let Some(url) = &a.metadata_url {
                let got = match (&a.metadata_status, &a.metadata_note) {
                    (_, Some(note)) => inert(note).to_string(),
                    (Some(s), None) => format!("HTTP {s}"),
                    (None, None) => String::new(),
                };
                println!("  resource metadata: {} ({got})", inert(url));
            }
        }
    }
    let t = &obs.timings;
    let part = |name: &str, v: Option<u64>| v.map(|v| format!("{name} {v} ms, ")).unwrap_or_default();
    println!(
        "  time: {}{}{}{}total {} ms",
        part("discover", t.discover),
        part("initialize", t.initialize),
        part("tools/list", t.tools_list),
        part("call", t.call),
        t.total
    );
    out
}
