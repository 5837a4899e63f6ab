//! `repair`: the one sanctioned change to an evidence file, for a torn last line.

use std::path::PathBuf;

use clap::Args;

use crate::evidence::repair::{Repaired, repair};

/// Move a torn last line (bytes after the last newline, left by a crash) to FILE.torn and
/// truncate FILE to its last newline. Changes nothing else.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// The evidence file.
    file: PathBuf,
}

pub fn run(args: RepairArgs) -> u8 {
    match repair(&args.file) {
        Ok(Repaired::Clean) => {
            outln!(
                "{}: ends in a complete line; nothing to repair",
                args.file.display()
            );
            super::help::exit::OK
        }
        Ok(Repaired::Moved {
            offset,
            bytes,
            side_file,
        }) => {
            outln!(
                "{}: moved {bytes} torn bytes from offset {offset} to {}; truncated to {offset} bytes",
                args.file.display(),
                side_file.display()
            );
            super::help::exit::OK
        }
        Err(e) => super::error(e),
    }
}
