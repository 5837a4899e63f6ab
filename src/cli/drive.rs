//! `drive`: the control client of the client kit.

use clap::{Args, ValueEnum};

use super::analyze::KitDomain;
use crate::kit::drive;
use crate::kit::through::Cmd;
use crate::mcp::Era;

/// `--era` of `drive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DriveEra {
    Legacy,
    Modern,
    /// Each domain once per era.
    Both,
}

/// Run the list_changed cycle as a correct client would against a fresh `mcp-witness serve`
/// per domain, print the analysis, and exit 0 only if every expected answer holds.
///
/// With --through, a proxy or bridge stands between drive and serve, and drive also judges,
/// per domain, what crossed it: each message drive sent or received against what serve's log
/// shows it received or sent (dropped, altered, delayed, answered by the bridge itself).
#[derive(Debug, Args)]
pub struct DriveArgs {
    /// Which domain to drive.
    #[arg(long, value_enum, default_value = "all")]
    domain: KitDomain,
    /// Which handshake era the control client speaks (`both` runs each domain twice).
    #[arg(long, value_enum, default_value = "legacy")]
    era: DriveEra,
    /// Keep the serve logs of passing runs too (failing runs always keep theirs).
    #[arg(long)]
    keep_logs: bool,
    /// Put a proxy or bridge between drive and serve and judge what reaches the other side.
    /// CMD is one command line (split like a shell's words, no shell runs) holding {serve}
    /// (the serve command line, for stdio-to-stdio proxies: unquoted it becomes several
    /// arguments, quoted one) or {url} (the URL of a `serve --http` drive starts on a free
    /// loopback port, for stdio-to-HTTP bridges). A domain passes only if the bridge
    /// forwards everything intact; rewritten ids are allowed.
    #[arg(long, value_name = "CMD")]
    through: Option<String>,
}

pub fn run(args: DriveArgs) -> u8 {
    let through = match args.through.as_deref().map(Cmd::parse).transpose() {
        Ok(t) => t,
        Err(e) => return super::error(format!("drive: {e}")),
    };
    if let Some(Err(e)) = through.as_ref().map(Cmd::find_program) {
        return super::error(format!("drive --through: {e}"));
    }
    let through = through.as_ref();
    let (domains, flows) = args.domain.split();
    let eras = match args.era {
        DriveEra::Legacy => vec![Era::Legacy],
        DriveEra::Modern => vec![Era::Modern],
        DriveEra::Both => vec![Era::Legacy, Era::Modern],
    };
    let runs: Vec<_> = eras
        .iter()
        .flat_map(|&era| {
            let lists = domains.iter().map(move |&d| drive::drive_domain(d, era, through));
            lists.chain(flows.iter().map(move |&f| drive::drive_flow(f, era, through)))
        })
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
        super::help::exit::OK
    } else {
        super::help::exit::NO
    }
}
