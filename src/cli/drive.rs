//! `drive`: the control client of the client kit.

use clap::Args;

use crate::kit::{Domain, drive};

/// Run the list_changed cycle as a correct client would against a fresh `mcp-witness serve`
/// per domain, print the analysis, and exit 0 only if every expected answer holds.
#[derive(Debug, Args)]
#[command(after_help = "Exit codes: 0 every expected answer holds, 1 something did not, 2 usage error.")]
pub struct DriveArgs {
    /// Which domain to drive.
    #[arg(long, default_value = "all", value_parser = ["tools", "resources", "prompts", "all"])]
    domain: String,
    /// Which handshake era the control client speaks (`both` runs each domain twice).
    #[arg(long, default_value = "legacy", value_parser = ["legacy", "modern", "both"])]
    era: String,
    /// Keep the serve logs of passing runs too (failing runs always keep theirs).
    #[arg(long)]
    keep_logs: bool,
}

pub fn run(args: DriveArgs) -> u8 {
    let Some(domains) = Domain::parse_list(&args.domain) else {
        return super::error(format!("unknown domain {}", args.domain));
    };
    let eras = match args.era.as_str() {
        "modern" => vec![drive::Era::Modern],
        "both" => vec![drive::Era::Legacy, drive::Era::Modern],
        _ => vec![drive::Era::Legacy],
    };
    let runs: Vec<_> = eras
        .iter()
        .flat_map(|&era| domains.iter().map(move |&d| drive::drive_domain(d, era)))
        .collect();
    outln!("{}", drive::report(&runs));
    let passed = runs.iter().all(drive::DomainRun::passed);
    outln!("drive: {}", if passed { "PASS" } else { "FAIL" });
    if passed {
        if !args.keep_logs {
            for r in &runs {
                let _ = std::fs::remove_file(&r.log);
            }
            outln!("(the logs of passing runs were removed; --keep-logs keeps them)");
        }
        0
    } else {
        1
    }
}
