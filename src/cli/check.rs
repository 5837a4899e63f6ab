//! `check`: run the conformance suite, print the report in the asked formats, record a block.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{ArgGroup, Args};

use super::server_args::{RecordArgs, Recorded, Recorder, ServerArgs};
use crate::check::{CheckOptions, record, report};

/// Check a stdio MCP server for conformance, robustness and security (hidden text, lookalike
/// names, hidden instructions, leaks in error replies, a tool list that changes), and record the
/// results as a signed evidence block; validate every message it receives against the MCP
/// schema of the negotiated version (the wire group). Tools are called with valid arguments only when allowed (--call-tools,
/// --safe-tool); otherwise only with invalid ones, which a correct server rejects. Resources and
/// prompts, read-only by the specification, are read: the first 3 of each (resources/read,
/// prompts/get), with one completion/complete and logging/setLevel info when declared.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["command", "config", "list", "url"])))]
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
    /// Print the JSON report (schemas/check-report.schema.json) instead of the text report;
    /// `--json FILE` writes it to FILE and keeps the text report on stdout.
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    json: Option<PathBuf>,
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
    /// Print every check id with its group, when it runs and what it asserts, and exit.
    #[arg(long)]
    list: bool,
    /// Append only if the results differ from the latest check block of the same target.
    #[arg(long, conflicts_with = "no_record")]
    if_changed: bool,
}

pub fn run(args: CheckArgs) -> u8 {
    if args.list {
        outln!("{}", list());
        return super::help::exit::OK;
    }
    let known = |id: &String| {
        crate::check::checks::ALL
            .iter()
            .any(|c| c.id == id || c.id.starts_with(&format!("{id}.")))
    };
    if let Some(bad) = args.only.iter().chain(&args.skip).find(|id| !known(id)) {
        let hint = match nearest_id(bad) {
            Some(id) => format!("did you mean `{id}`? (`mcp-witness check --list` lists them all)"),
            None => "`mcp-witness check --list` lists every check id".to_string(),
        };
        return super::error(format!("`{bad}` names no check; {hint}"));
    }
    if args.server.all {
        return run_all(&args);
    }
    let server = match args.server.options("check") {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    let recorder = match Recorder::new(&args.record, "checks.jsonl") {
        Ok(r) => r,
        Err(e) => return super::error(e),
    };
    let origin = server.origin.clone();
    let mut opts = CheckOptions::new(Vec::new());
    opts.server = server;
    opts.only = args.only.clone();
    opts.skip = args.skip.clone();
    opts.strict = args.strict;
    opts.call_tools = args.call_tools;
    opts.safe_tools = args.safe_tool.clone();

    // Output files are made ready before the run: a bad path fails now, not after it.
    let json_file = args.json.as_ref().filter(|p| p.as_os_str() != "-");
    let json_stdout = args.json.is_some() && json_file.is_none();
    for path in [&args.junit, &args.sarif, &args.markdown, &json_file.cloned()]
        .into_iter()
        .flatten()
    {
        if let Err(e) = crate::files::prepare_output(path) {
            return super::error(e);
        }
    }
    let terminal = std::io::stdout().is_terminal();
    let colour = super::colour();
    // On a terminal the text report comes as the results do, a group at a time.
    let stream = terminal && !json_stdout;
    let mut group = String::new();
    let mut show = |r: &crate::check::CheckResult| {
        if !stream || (r.status == crate::check::Status::Skip && r.message.starts_with("not run: ")) {
            return;
        }
        if r.group() != group {
            group = r.group().to_string();
            outln!("\n{group}");
        }
        out!("{}", report::result_lines(r, colour, args.verbose, args.strict));
    };
    let report = crate::check::check_with(&opts, &mut show);
    let mut code = report.exit_code();
    // A --safe-tool the server does not list was never called: say so, it is likely a typo.
    if let Some(surface) = &report.surface {
        for tool in &args.safe_tool {
            if !surface.tools.items.iter().any(|t| &t.name == tool) {
                eprintln!(
                    "mcp-witness: warning: --safe-tool `{}` names no tool the server lists; it was not called",
                    crate::inert::inert(tool)
                );
            }
        }
    }

    if json_stdout {
        outln!("{}", crate::inert::json(&report.to_json()));
    } else if stream {
        out!("{}", report::human_tail(&report, colour));
    } else {
        out!("{}", report::human(&report, colour, args.verbose));
    }
    let writes = [
        (&args.junit, report::junit(&report)),
        (
            &args.sarif,
            format!("{:#}\n", report::sarif(&report, origin.as_ref())),
        ),
        (&args.markdown, report::markdown(&report)),
        (
            &json_file.cloned(),
            format!("{}\n", crate::inert::json(&report.to_json())),
        ),
    ];
    for (path, text) in writes {
        if let Some(path) = path
            && let Err(e) = crate::files::write_whole(path, "report", text.as_bytes())
        {
            super::error(e);
            code = super::EXIT_USAGE;
        }
    }
    if args.github {
        out!("{}", report::annotations(&report));
        if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
            let appended = crate::files::open_append(std::path::Path::new(&summary), "GITHUB_STEP_SUMMARY")
                .map_err(|e| e.to_string())
                .and_then(|mut f| {
                    f.write_all(report::job_summary(&report).as_bytes())
                        .map_err(|e| e.to_string())
                });
            if let Err(e) = appended {
                super::error(format!("cannot append to GITHUB_STEP_SUMMARY: {e}"));
            }
        }
    }
    match recorder.record(record::block_body(&report), args.if_changed) {
        Ok(Recorded::Off) => {}
        Ok(Recorded::Appended { seq, hash, .. }) => {
            let msg = format!("recorded: {} seq {seq} head {hash}", recorder.path().display());
            if json_stdout {
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

/// `check --config FILE --all`: every server of the config, at most as many at once as there
/// are cores; then each server's tools are compared with the others' (`security.tool_shadowing`);
/// one block each, a summary table, and the worst exit code.
fn run_all(args: &CheckArgs) -> u8 {
    use crate::check::{CheckReport, Status};
    let servers = match args.server.options_all("check") {
        Ok(s) => s,
        Err(e) => return super::error(e),
    };
    if servers.is_empty() {
        return super::error("the config lists no server");
    }
    if args.json.is_some() || args.junit.is_some() || args.sarif.is_some() || args.markdown.is_some() {
        return super::error(
            "--all prints a text report per server and a summary; run one server (--server NAME) for --json, --junit, --sarif or --markdown",
        );
    }
    let recorder = match Recorder::new(&args.record, "checks.jsonl") {
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
                    let report = server.map(|server| {
                        let mut opts = CheckOptions::new(Vec::new());
                        opts.server = server;
                        opts.only = args.only.clone();
                        opts.skip = args.skip.clone();
                        opts.strict = args.strict;
                        opts.call_tools = args.call_tools;
                        opts.safe_tools = args.safe_tool.clone();
                        crate::check::check(&opts)
                    });
                    if let Ok(mut d) = done.lock() {
                        d.push((i, name, report));
                    }
                }
            });
        }
    });
    let mut done: Vec<(usize, String, Result<CheckReport, String>)> = done.into_inner().unwrap_or_default();
    done.sort_by_key(|(i, _, _)| *i);
    // Tool names per server, from the surface each run saw.
    let tools: Vec<(String, Vec<String>)> = done
        .iter()
        .filter_map(|(_, name, r)| {
            let s = r.as_ref().ok()?.surface.as_ref()?;
            Some((
                name.clone(),
                s.tools.items.iter().map(|t| t.name.clone()).collect(),
            ))
        })
        .collect();
    let shadow = crate::check::checks::ALL
        .iter()
        .find(|c| c.id == "security.tool_shadowing")
        .expect("in the registry");
    let mut worst = super::help::exit::OK;
    let mut rows = Vec::new();
    for (_, name, report) in &mut done {
        let mut report = match report {
            Ok(r) => r.clone(),
            Err(e) => {
                rows.push(format!(
                    "  {:<24} could not run: {}",
                    crate::inert::inert(name),
                    crate::inert::inert(e)
                ));
                worst = worst.max(super::EXIT_USAGE);
                continue;
            }
        };
        let mine = tools.iter().find(|(n, _)| n == name).map(|(_, t)| t.clone());
        let others: Vec<(String, Vec<String>)> = tools.iter().filter(|(n, _)| n != name).cloned().collect();
        if let (Some(mine), Some(slot)) = (mine, report.results.iter_mut().find(|r| r.id == shadow.id)) {
            let found = crate::check::checks::security::shadowing(&mine, &others);
            let outcome = if found.is_empty() {
                crate::check::checks::Outcome::pass(format!(
                    "none of its {} tools is named like a tool of the other {} servers",
                    mine.len(),
                    others.len()
                ))
            } else {
                let list: Vec<String> = found
                    .iter()
                    .take(20)
                    .map(|(t, s)| format!("`{t}` (also in {})", s.join(", ")))
                    .collect();
                crate::check::checks::Outcome::fail(format!(
                    "{} tools have the name of another server's tool: {}",
                    found.len(),
                    list.join("; ")
                ))
            };
            *slot = shadow.result(outcome, &crate::redact::Redactor::default());
        }
        outln!("== {} ==", crate::inert::inert(name));
        out!("{}", report::human(&report, super::colour(), args.verbose));
        let code = match recorder.record(record::block_body(&report), args.if_changed) {
            Ok(Recorded::Appended { seq, hash, .. }) => {
                outln!("recorded: {} seq {seq} head {hash}", recorder.path().display());
                report.exit_code()
            }
            Ok(Recorded::NotAppended(msg)) => {
                outln!("{msg}");
                report.exit_code()
            }
            Ok(Recorded::Off) => report.exit_code(),
            Err(e) => {
                super::error(e);
                super::EXIT_USAGE
            }
        };
        worst = worst.max(code);
        let c = report.counts();
        let shadowing = report.results.iter().find(|r| r.id == shadow.id).map_or("", |r| {
            if r.status == Status::Fail {
                " (shadows a tool)"
            } else {
                ""
            }
        });
        rows.push(format!(
            "  {:<24} {:>4} pass {:>4} warn {:>4} fail {:>4} skip{}{}",
            crate::inert::inert(name),
            c.pass,
            c.warn,
            c.fail,
            c.skip,
            report.could_not_run.as_ref().map_or(String::new(), |w| format!(
                "  could not run: {}",
                crate::inert::inert(w)
            )),
            shadowing
        ));
    }
    outln!("\nsummary of {} servers:", rows.len());
    for row in rows {
        outln!("{row}");
    }
    worst
}

/// `check --list`: one line per check, grouped.
fn list() -> String {
    use crate::check::checks::{ALL, Input};
    let width = ALL.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut group = "";
    for c in ALL {
        let g = c.id.split('.').next().unwrap_or_default();
        if g != group {
            if !group.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{g}\n"));
            group = g;
        }
        let mut when = Vec::new();
        if c.needs.calls {
            when.push("only with --call-tools or --safe-tool".to_string());
        }
        if let Some(t) = c.needs.transport {
            when.push(format!("{} only", t.as_str()));
        }
        if !c.needs.session {
            when.push("also without a session".to_string());
        }
        match c.input {
            Input::Valid => {}
            Input::Rejected => when.push("sends requests a server must reject".to_string()),
            Input::Malformed => when.push("sends malformed input".to_string()),
        }
        let when = if when.is_empty() {
            "runs by default".to_string()
        } else {
            when.join("; ")
        };
        out.push_str(&format!("  {:<width$}  {}  [{when}]\n", c.id, c.title));
    }
    out.push_str(&format!(
        "\n{} checks. Select with --only ID and --skip ID (an id and every id below it).",
        ALL.len()
    ));
    out
}

/// The check id (or group) closest to a mistyped one, when one is close enough.
fn nearest_id(given: &str) -> Option<String> {
    let mut candidates: Vec<String> = Vec::new();
    for c in crate::check::checks::ALL {
        let parts: Vec<&str> = c.id.split('.').collect();
        for n in 1..=parts.len() {
            let prefix = parts[..n].join(".");
            if !candidates.contains(&prefix) {
                candidates.push(prefix);
            }
        }
    }
    let (best, distance) = candidates
        .into_iter()
        .map(|c| {
            let d = edit_distance(given, &c);
            (c, d)
        })
        .min_by_key(|(_, d)| *d)?;
    (distance <= given.chars().count().div_ceil(3).max(2)).then_some(best)
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_id_gets_the_nearest_one_and_a_far_one_gets_none() {
        assert_eq!(
            nearest_id("schema.tool_descripton").as_deref(),
            Some("schema.tool_description")
        );
        assert_eq!(nearest_id("hygeine").as_deref(), Some("hygiene"));
        assert_eq!(nearest_id("completely-unrelated-words"), None);
    }

    #[test]
    fn the_list_names_every_check_once() {
        let text = list();
        for c in crate::check::checks::ALL {
            assert_eq!(text.matches(&format!("  {} ", c.id)).count(), 1, "{}", c.id);
        }
    }
}
