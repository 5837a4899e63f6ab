//! `report`: an auditor's report of one evidence file (verification status and trust, then
//! per target the timeline, surface changes and trends), as text, HTML or Markdown. The
//! collection and the renderers live in `crate::report`.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::evidence::keys;
use crate::report::{self, Status};

/// Write a self-contained report of an evidence file: verification status and trust, then per
/// target the verdicts, the surface changes between blocks, and teardown and timing trends.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The evidence file.
    file: PathBuf,
    /// A trusted public key (`ed25519:<hex>`) or a file of them, as for verify. Repeatable.
    /// A block signed by any other key makes the report UNTRUSTED.
    #[arg(long, value_name = "PUBKEY|FILE")]
    trust: Vec<String>,
    /// Write the report as one HTML page (inline CSS and SVG charts, no script, nothing fetched).
    #[arg(long, value_name = "OUT")]
    html: Option<PathBuf>,
    /// Write the report as Markdown.
    #[arg(long, value_name = "OUT")]
    markdown: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> u8 {
    let trusted = match keys::trusted_keys(&args.trust) {
        Ok(k) => k,
        Err(e) => return super::error(e),
    };
    if let (Some(h), Some(m)) = (&args.html, &args.markdown)
        && h == m
    {
        return super::error(format!(
            "--html and --markdown both name {}: give two files",
            h.display()
        ));
    }
    for out in [&args.html, &args.markdown].into_iter().flatten() {
        if same_file(out, &args.file) {
            return super::error(format!(
                "{} is the evidence file itself: writing the report there would destroy it; name another file",
                out.display()
            ));
        }
        if let Err(e) = crate::files::prepare_output(out) {
            return super::error(e);
        }
    }
    let r = match report::collect(&args.file, trusted) {
        Ok(r) => r,
        Err(e) => return super::error(e),
    };
    if args.html.is_none() && args.markdown.is_none() {
        out!("{}", report::text::render(&r));
    } else {
        outln!("{}", report::text::status_line(&r));
        let outputs = [
            (&args.html, report::html::render as fn(&report::Report) -> String),
            (&args.markdown, report::markdown::render),
        ];
        for (path, render) in outputs {
            let Some(path) = path else { continue };
            if let Err(code) = write(path, &render(&r)) {
                return code;
            }
            outln!("wrote {}", crate::inert::inert(&path.display().to_string()));
        }
    }
    match r.status {
        Status::Intact { .. } => super::help::exit::OK,
        Status::Untrusted(_) | Status::Broken(_) => super::help::exit::NO,
    }
}

/// Whether two paths name one existing file (through links, `..` or another spelling).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

fn write(path: &Path, text: &str) -> Result<(), u8> {
    crate::files::write_whole(path, "report", text.as_bytes()).map_err(super::error)
}
