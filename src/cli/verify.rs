//! `verify`: checks evidence files and reports the first broken line of each.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use crate::evidence::id;
use crate::evidence::keys;
use crate::evidence::verify::{Expectations, verify_file};

/// Check every hash, link and signature of evidence files, naming the first broken line.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A trusted public key (`ed25519:<hex>`, as `mcp-witness key` prints) or a file of them,
    /// one per line. Repeatable. A block signed by any other key is a failure.
    #[arg(long, value_name = "PUBKEY|FILE")]
    trust: Vec<String>,
    /// Fail unless a block with this hash is in the file (detects truncation and rollback
    /// past an anchored head). A unique prefix of at least 8 hex digits will do.
    #[arg(long, value_name = "HASH")]
    head: Option<String>,
    /// Print a machine-readable report.
    #[arg(long)]
    json: bool,
    /// Evidence files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

pub fn run(args: VerifyArgs) -> u8 {
    let trusted = match keys::trusted_keys(&args.trust) {
        Ok(k) => k,
        Err(e) => return super::error(e),
    };
    let head = match args.head.as_deref().map(|h| id::parse("--head", h)).transpose() {
        Ok(h) => h,
        Err(e) => return super::error(e),
    };
    let expect = Expectations { trusted, head };
    let mut reports = Vec::new();
    let mut code = 0u8;
    for file in &args.files {
        match verify_file(file, &expect) {
            Ok(report) if report.ambiguous_head.is_some() => {
                let n = report.ambiguous_head.unwrap_or_default();
                let message = format!(
                    "--head `{}` matches {n} blocks of {}: give more hex digits",
                    expect.head.as_deref().unwrap_or_default(),
                    file.display()
                );
                code = super::EXIT_USAGE;
                if !args.json {
                    super::error(&message);
                }
                reports.push(json!({"file": file.display().to_string(), "unreadable": message}));
            }
            Ok(report) => {
                if !report.intact() && code == 0 {
                    code = 1;
                }
                if !args.json {
                    print_human(&report);
                }
                reports.push(report.to_json());
            }
            Err(e) => {
                code = super::EXIT_USAGE;
                if !args.json {
                    super::error(&e);
                }
                reports.push(json!({"file": file.display().to_string(), "unreadable": e.to_string()}));
            }
        }
    }
    if args.json {
        outln!(
            "{}",
            crate::inert::json(&json!({"intact": code == 0, "files": reports}))
        );
    }
    code
}

fn print_human(r: &crate::evidence::verify::Report) {
    let file = r.path.display();
    match &r.broken {
        None => {
            let head = r
                .head
                .as_ref()
                .map(|(s, h)| format!(", head seq {s} {h}"))
                .unwrap_or_default();
            let trust = if r.pinned {
                "trusted key"
            } else {
                "self-consistent signatures"
            };
            outln!("intact: {file}: {}{head} ({trust})", super::count(r.blocks, "block"));
        }
        Some(b) => {
            let seq = b.seq.map(|s| format!(" (seq {s})")).unwrap_or_default();
            // The message may quote the file's own text.
            let message = crate::inert::inert(&b.message);
            outln!("BROKEN: {file}: line {}{seq}: {}: {message}", b.line, b.code);
            if r.blocks > 0 {
                match r.blocks {
                    1 => outln!("  the block before it checks"),
                    n => outln!("  the {n} blocks before it check"),
                }
            }
        }
    }
    for w in &r.warnings {
        eprintln!("warning: {file}: {}", crate::inert::inert(w));
    }
}
