//! `probe`: run one probe, print the verdict, append the evidence block.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgGroup, Args, ValueEnum};
use serde_json::Value;

use crate::config;
use crate::evidence::append::{Outcome, append};
use crate::evidence::keys;
use crate::framing::DEFAULT_MAX_LINE;
use crate::probe::outcome::{Observation, Verdict};
use crate::probe::{CallRequest, EraChoice, ProbeOptions, probe, record};
use crate::transport::ExitInfo;

/// Probe a stdio MCP server: handshake, list every page of tools, optionally call one tool,
/// tear the server down, record a signed evidence block.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("target").required(true).args(["command", "config"])),
    after_help = "Exit codes: 0 pass, 1 fail, 3 inconclusive (the server stayed silent while alive), 2 usage error or evidence not written."
)]
pub struct ProbeArgs {
    /// Evidence file to append to [default: evidence/probes.jsonl under the current folder].
    #[arg(short = 'e', long, value_name = "FILE")]
    evidence: Option<PathBuf>,
    /// Bound on each wait for a reply, in seconds (fractions allowed).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    timeout: Duration,
    /// Call this tool once after the list (only if the list contains it). Never done unless asked.
    #[arg(long, value_name = "TOOL")]
    call: Option<String>,
    /// Arguments for --call, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}", requires = "call")]
    call_args: String,
    /// Bound on the wait for the --call reply, in seconds.
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    call_timeout: Duration,
    /// Handshake era: legacy (initialize), modern (server/discover), or auto (try modern, fall back).
    #[arg(long, value_enum, default_value = "legacy")]
    era: EraArg,
    /// Protocol version to request [default: 2025-11-25 legacy, 2026-07-28 modern].
    #[arg(long, value_name = "V")]
    protocol_version: Option<String>,
    /// Environment variable for the server (repeatable). Only names are recorded.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Working folder for the server.
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Signing key [default: $MCP_WITNESS_KEY, $XDG_CONFIG_HOME/mcp-witness/signing.key or ~/.config/mcp-witness/signing.key; created on first use].
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Print the appended block (one JSON object) instead of the summary.
    #[arg(long)]
    json: bool,
    /// Probe and report; write nothing.
    #[arg(long)]
    no_record: bool,
    /// Append only if the observation differs from the latest block of the same target.
    #[arg(long, conflicts_with = "no_record")]
    if_changed: bool,
    /// Client config file (mcpServers or servers shape) to take the server from.
    #[arg(long, value_name = "FILE", requires = "server")]
    config: Option<PathBuf>,
    /// Name of the server in --config.
    #[arg(long, value_name = "NAME", requires = "config")]
    server: Option<String>,
    /// Bound on one stdout line, in bytes; a longer line is a fail.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    max_line: usize,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EraArg {
    Legacy,
    Modern,
    Auto,
}

fn parse_secs(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!("`{text}` must be more than 0 and at most 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

pub fn run(args: ProbeArgs) -> u8 {
    let mut opts = match options(&args) {
        Ok(o) => o,
        Err(e) => return super::error(e),
    };
    opts.max_line = args.max_line.max(1024);
    // Load (or create) the key before probing: a bad key must not cost a probe.
    let signer = if args.no_record {
        None
    } else {
        match signing_key(args.key.clone()) {
            Ok(k) => Some(k),
            Err(e) => return super::error(e),
        }
    };
    let evidence = match &args.evidence {
        Some(p) => std::path::absolute(p),
        None => std::env::current_dir().map(|d| d.join("evidence").join("probes.jsonl")),
    };
    let evidence = match evidence {
        Ok(p) => p,
        Err(e) => return super::error(format!("cannot resolve the evidence path: {e}")),
    };

    let obs = probe(&opts);
    let body = record::block_body(&obs);
    let verdict_code = obs.verdict.exit_code();

    let Some(signer) = signer else {
        if args.json {
            println!("{}", Value::Object(body));
        } else {
            print_summary(&obs);
            println!("not recorded (--no-record)");
        }
        return verdict_code;
    };
    let outcome = append(&evidence, body.clone(), &signer, args.if_changed);
    let file = evidence.display();
    match outcome {
        Ok(Outcome::Appended(sealed)) => {
            if args.json {
                print!("{}", String::from_utf8_lossy(&sealed.line));
                eprintln!(
                    "mcp-witness: recorded {file} seq {} head {}",
                    sealed.seq, sealed.hash
                );
            } else {
                print_summary(&obs);
                println!("recorded: {file} seq {} head {}", sealed.seq, sealed.hash);
            }
            verdict_code
        }
        Ok(Outcome::Duplicate { ref seq, ref hash }) | Ok(Outcome::Unchanged { ref seq, ref hash }) => {
            let why = if matches!(outcome, Ok(Outcome::Duplicate { .. })) {
                "an identical block (same target and time) is already there"
            } else {
                "the observation is unchanged"
            };
            if args.json {
                println!("{}", Value::Object(body));
            } else {
                print_summary(&obs);
            }
            let msg = format!("not appended to {file}: {why}; it matches block seq {seq} hash {hash}");
            if args.json {
                eprintln!("mcp-witness: {msg}");
            } else {
                println!("{msg}");
            }
            verdict_code
        }
        Err(e) => {
            if !args.json {
                print_summary(&obs);
            }
            super::error(format!("evidence not written: {e}"))
        }
    }
}

fn options(args: &ProbeArgs) -> Result<ProbeOptions, String> {
    let (command, mut env, mut cwd) = match (&args.config, &args.server) {
        (Some(path), Some(name)) => {
            if !args.command.is_empty() {
                return Err("give either --config/--server or a command after --, not both".into());
            }
            let entry = config::load(path, name).map_err(|e| e.to_string())?;
            let mut command = vec![entry.command];
            command.extend(entry.args);
            (command, entry.env, entry.cwd)
        }
        _ => (args.command.clone(), Vec::new(), None),
    };
    if command.is_empty() {
        return Err(
            "no server command: put it after `--`, e.g. `mcp-witness probe -- npx -y my-server`".into(),
        );
    }
    env.extend(args.env.iter().cloned());
    if args.cwd.is_some() {
        cwd = args.cwd.clone();
    }
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
    let mut opts = ProbeOptions::new(command);
    opts.env = env;
    opts.cwd = cwd;
    opts.era = match args.era {
        EraArg::Legacy => EraChoice::Legacy,
        EraArg::Modern => EraChoice::Modern,
        EraArg::Auto => EraChoice::Auto,
    };
    opts.protocol_version = args.protocol_version.clone();
    opts.timeout = args.timeout;
    opts.call = call;
    Ok(opts)
}

fn signing_key(explicit: Option<PathBuf>) -> Result<ed25519_dalek::SigningKey, keys::KeyError> {
    let path = super::keys::key_path(explicit)?;
    let (key, created) = keys::load_or_create(&path)?;
    if created {
        eprintln!(
            "mcp-witness: created signing key {}; public key {}",
            path.display(),
            keys::public_text(&key.verifying_key())
        );
    }
    Ok(key)
}

fn print_summary(obs: &Observation) {
    let who = match &obs.server {
        Some(s) => format!("{} {}", s.name, s.version.as_deref().unwrap_or("(no version)")),
        None => "(no serverInfo)".to_string(),
    };
    let proto = obs.protocol_version.as_deref().unwrap_or("(none)");
    println!(
        "{}: {who}, protocol {proto} ({})",
        obs.verdict.as_str(),
        obs.era.as_str()
    );
    if let Some(d) = &obs.era_detection {
        println!("  era: {d}");
    }
    for r in &obs.reasons {
        println!("  reason {}: {}", r.code, r.message);
    }
    if let Some(s) = &obs.silence {
        println!(
            "  silence: waited {} ms at {}; stdout {} bytes, stderr {} bytes; server {}",
            s.waited_ms,
            s.step,
            s.stdout_bytes,
            s.stderr_bytes,
            if s.alive { "alive" } else { "exited" }
        );
    }
    if let Some(t) = &obs.tools {
        let names = t.names.join(", ");
        println!("  tools: {} ({names})", t.count);
    }
    if let Some(c) = &obs.call {
        let preview = c
            .preview
            .as_deref()
            .map(|p| format!(": {}", p.replace('\n', " ")))
            .unwrap_or_default();
        let error = c
            .error
            .as_ref()
            .map(|(code, m)| format!(": error {code} {m}"))
            .unwrap_or_default();
        println!("  call {}: {}{preview}{error}", c.tool, c.outcome);
    }
    if obs.traffic.noise_count > 0 {
        println!(
            "  stdout noise: {} lines that are not JSON-RPC",
            obs.traffic.noise_count
        );
        for (text, kind) in &obs.traffic.noise {
            println!("    [{kind}] {}", text.escape_debug());
        }
    }
    if obs.verdict != Verdict::Pass
        && let Some(tail) = &obs.stderr_tail
        && !tail.trim().is_empty()
    {
        println!("  stderr ({} bytes), last lines:", obs.stderr_bytes);
        for line in tail.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev() {
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
        if !td.survivors.is_empty() {
            println!(
                "  WARNING: processes of the server's group survived: {:?}",
                td.survivors
            );
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
}
