//! `check`: run the conformance suite, print the report in the asked formats, record a block.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use super::server_args::{RecordArgs, Recorded, Recorder, ServerArgs};
use crate::check::{CheckOptions, check, record, report};

/// Check a stdio MCP server for conformance, robustness and security (hidden text, lookalike
/// names, hidden instructions, leaks in error replies, a tool list that changes), validate every
/// message it sends against the MCP schema of the negotiated version (the wire group), and
/// record the results as a signed evidence block. Tools are called with valid arguments only when allowed (--call-tools,
/// --safe-tool); otherwise only with invalid ones, which a correct server rejects.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("target").required(true).args(["command", "config"])),
    after_help = "Exit codes: 0 no failures (and no warnings with --strict), 1 findings, 2 could not run (or evidence not written)."
)]
pub struct CheckArgs {
    #[command(flatten)]
    server: ServerArgs,
    #[command(flatten)]
    record: RecordArgs,
    /// Run only this check id and the ids below it (repeatable), e.g. `--only schema`.
    #[arg(long, value_name = "ID")]
    only: Vec<String>,
    /// Skip this check id and the ids below it (repeatable), e.g. `--skip robustness` or
    /// `--skip security.hidden_instructions` (a heuristic).
    #[arg(long, value_name = "ID")]
    skip: Vec<String>,
    /// Warnings count as failures.
    #[arg(long)]
    strict: bool,
    /// Explain warnings too.
    #[arg(long)]
    verbose: bool,
    /// Print the JSON report (schemas/check-report.schema.json) instead of the text report.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write a SARIF 2.1.0 report.
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Also write a Markdown report.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Print GitHub workflow annotations; with GITHUB_STEP_SUMMARY set, append the report to it.
    #[arg(long)]
    github: bool,
    /// Allow calling every tool with valid arguments (to check results). Tools can have side effects.
    #[arg(long)]
    call_tools: bool,
    /// Allow calling this tool with valid arguments (repeatable).
    #[arg(long, value_name = "NAME")]
    safe_tool: Vec<String>,
    /// Append only if the results differ from the latest check block of the same target.
    #[arg(long, conflicts_with = "no_record")]
    if_changed: bool,
}

pub fn run(args: CheckArgs) -> u8 {
    let known = |id: &String| {
        crate::check::checks::ALL
            .iter()
            .any(|c| c.id == id || c.id.starts_with(&format!("{id}.")))
    };
    if let Some(bad) = args.only.iter().chain(&args.skip).find(|id| !known(id)) {
        return super::error(format!("`{bad}` names no check; see the check ids in the README"));
    }
    let server = match args.server.options("check") {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let recorder = match Recorder::new(&args.record, "checks.jsonl") {
        Ok(r) => r,
        Err(e) => return super::error(e),
    };
    let mut opts = CheckOptions::new(Vec::new());
    opts.server = server;
    opts.only = args.only.clone();
    opts.skip = args.skip.clone();
    opts.strict = args.strict;
    opts.call_tools = args.call_tools;
    opts.safe_tools = args.safe_tool.clone();

    let report = check(&opts);
    let mut code = report.exit_code();

    if args.json {
        outln!("{}", crate::inert::json(&report.to_json()));
    } else {
        let colour =
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        out!("{}", report::human(&report, colour, args.verbose));
    }
    let writes = [
        (&args.junit, report::junit(&report)),
        (&args.sarif, format!("{:#}\n", report::sarif(&report))),
        (&args.markdown, report::markdown(&report)),
    ];
    for (path, text) in writes {
        if let Some(path) = path
            && let Err(e) = std::fs::write(path, text)
        {
            super::error(format!("cannot write {}: {e}", path.display()));
            code = super::EXIT_USAGE;
        }
    }
    if args.github {
        out!("{}", report::annotations(&report));
        if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&summary)
                .and_then(|mut f| f.write_all(report::job_summary(&report).as_bytes()));
            if let Err(e) = appended {
                super::error(format!("cannot append to GITHUB_STEP_SUMMARY: {e}"));
            }
        }
    }
    match recorder.record(record::block_body(&report), args.if_changed) {
        Ok(Recorded::Off) => {}
        Ok(Recorded::Appended { seq, hash, .. }) => {
            let msg = format!("recorded: {} seq {seq} head {hash}", recorder.path().display());
            if args.json {
                eprintln!("mcp-witness: {msg}")
            } else {
                outln!("{msg}")
            }
        }
        Ok(Recorded::NotAppended(msg)) => eprintln!("mcp-witness: {msg}"),
        Err(e) => code = super::error(e),
    }
    code
}
