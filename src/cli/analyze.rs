//! `analyze`: the evidence table from a `serve` log.

use std::path::PathBuf;

use clap::Args;

use crate::kit::{Domain, analyze};

/// Read an `mcp-witness serve` log and answer, per domain, how the client handled the
/// list_changed cycle, each answer with the log line that proves it.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 every analysed domain compliant, 1 a domain not compliant or incomplete, 2 usage error or unreadable log."
)]
pub struct AnalyzeArgs {
    /// The serve log (JSON lines).
    log: PathBuf,
    /// Which domain to analyse.
    #[arg(long, default_value = "all", value_parser = ["tools", "resources", "prompts", "all"])]
    domain: String,
    /// Also write the analysis as markdown to this file.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

pub fn run(args: AnalyzeArgs) -> u8 {
    let Some(domains) = Domain::parse_list(&args.domain) else {
        return super::error(format!("unknown domain {}", args.domain));
    };
    let log = match analyze::read_log(&args.log) {
        Ok(l) => l,
        Err(e) => return super::error(format!("cannot read {}: {e}", args.log.display())),
    };
    let a = analyze::analyze(&log, &domains);
    let text = analyze::markdown(&a, &args.log.display().to_string());
    out!("{text}");
    if let Some(path) = &args.markdown
        && let Err(e) = std::fs::write(path, &text)
    {
        return super::error(format!("cannot write {}: {e}", path.display()));
    }
    if a.domains.iter().all(|d| d.verdict == analyze::Verdict::Compliant) {
        0
    } else {
        1
    }
}
