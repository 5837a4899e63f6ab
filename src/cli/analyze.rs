//! `analyze`: the evidence table from a `serve` log.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::kit::analyze;
use crate::kit::{Domain, flow::Flow};

/// `--domain` of analyze and drive: the list_changed domains and the flows, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KitDomain {
    Tools,
    Resources,
    Prompts,
    Roots,
    /// Elicitation in every part: form mode, URL mode, and refusal of an undeclared mode.
    Elicitation,
    Sampling,
    Logging,
    Completion,
    Subscriptions,
    Progress,
    /// Only the URL mode part of elicitation (the loopback page, its completion).
    ElicitationUrl,
    /// Only the undeclared-mode part of elicitation: a request in a mode the client did not
    /// declare, which it must refuse.
    ElicitationUndeclared,
    All,
}

impl KitDomain {
    /// The list_changed domains and the flows this choice covers, in the kit's order.
    pub fn split(self) -> (Vec<Domain>, Vec<Flow>) {
        match self {
            KitDomain::Tools => (vec![Domain::Tools], vec![]),
            KitDomain::Resources => (vec![Domain::Resources], vec![]),
            KitDomain::Prompts => (vec![Domain::Prompts], vec![]),
            KitDomain::Roots => (vec![], vec![Flow::Roots]),
            // The elicitation domain is all of it: form mode, URL mode and the refusal of a
            // mode the client did not declare; the two narrower names pick one part.
            KitDomain::Elicitation => (
                vec![],
                vec![Flow::Elicitation, Flow::ElicitationUrl, Flow::UndeclaredMode],
            ),
            KitDomain::Sampling => (vec![], vec![Flow::Sampling]),
            KitDomain::Logging => (vec![], vec![Flow::Logging]),
            KitDomain::Completion => (vec![], vec![Flow::Completion]),
            KitDomain::Subscriptions => (vec![], vec![Flow::Subscriptions]),
            KitDomain::Progress => (vec![], vec![Flow::Progress]),
            KitDomain::ElicitationUrl => (vec![], vec![Flow::ElicitationUrl]),
            KitDomain::ElicitationUndeclared => (vec![], vec![Flow::UndeclaredMode]),
            KitDomain::All => (Domain::ALL.to_vec(), Flow::ALL.to_vec()),
        }
    }
}

/// Read an `mcp-witness serve` log and answer, per session and per domain, whether the client
/// reacted to list_changed, each answer with the log line that proves it.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The serve log (JSON lines).
    log: PathBuf,
    /// Which domain to analyse (`all`: a flow no call exercised is reported as such).
    #[arg(long, value_enum, default_value = "all")]
    domain: KitDomain,
    /// Also write the analysis as markdown to this file.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Append the result as signed blocks of kind `client` to the evidence file, one per
    /// session of the log, each with every domain judged (list_changed domains and flows).
    #[arg(long)]
    record: bool,
    /// Evidence file for --record [default: evidence/clients/clients.jsonl under the current folder].
    #[arg(short = 'e', long, value_name = "FILE", requires = "record")]
    evidence: Option<PathBuf>,
    /// Signing key for --record [default: as for probe].
    #[arg(long, value_name = "FILE", requires = "record")]
    key: Option<PathBuf>,
}

pub fn run(args: AnalyzeArgs) -> u8 {
    let (domains, flows) = args.domain.split();
    let log = match analyze::read_log(&args.log) {
        Ok(l) => l,
        Err(e) => return super::error(e),
    };
    let analyses = analyze::analyze(&log, &domains, &flows);
    if args.record {
        let record_args = super::server_args::RecordArgs {
            evidence: args.evidence.clone(),
            key: args.key.clone(),
            no_record: false,
        };
        let recorder = match super::server_args::Recorder::new(&record_args, "clients/clients.jsonl") {
            Ok(r) => r,
            Err(e) => return super::error(e),
        };
        let path = std::path::absolute(&args.log).unwrap_or_else(|_| args.log.clone());
        // One block per session: a verdict is never signed over mixed sessions.
        for a in &analyses {
            let body = crate::kit::record::block_body(a, &path.display().to_string(), &log);
            let which = a
                .session
                .as_ref()
                .map_or(String::new(), |s| format!(" (session {} of {})", s.index, s.of));
            match recorder.record(body, false) {
                Ok(super::server_args::Recorded::Appended { seq, hash, .. }) => {
                    eprintln!(
                        "mcp-witness: recorded {} seq {seq} head {hash}{which}",
                        recorder.path().display()
                    )
                }
                Ok(super::server_args::Recorded::NotAppended(msg)) => eprintln!("mcp-witness: {msg}"),
                Ok(super::server_args::Recorded::Off) => {}
                Err(e) => return super::error(e),
            }
        }
    }
    let text = analyze::markdown(&analyses, &args.log.display().to_string());
    out!("{text}");
    if let Some(path) = &args.markdown {
        // Only a regular file (or nothing yet) is written: a FIFO would block, a device or
        // folder is a mistake.
        if let Err(e) = crate::files::check_write_target(path, "--markdown") {
            return super::error(e);
        }
        if let Err(e) = crate::files::write_whole(path, "--markdown", text.as_bytes()) {
            return super::error(e);
        }
    }
    if analyze::all_react(&analyses) {
        super::help::exit::OK
    } else {
        super::help::exit::NO
    }
}
