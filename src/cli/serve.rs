//! `serve`: the instrumented stdio server of the client kit.

use std::path::PathBuf;

use clap::Args;

use crate::kit::serve;

/// Run an instrumented stdio MCP server that logs every message in both directions, to test
/// how a client handles `notifications/{tools,resources,prompts}/list_changed`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The JSON-lines log to append to.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> u8 {
    let path = serve::log_path(args.log);
    match serve::run(&path) {
        Ok(()) => super::help::exit::OK,
        Err(e) => super::error(format!("serve ({}): {e}", path.display())),
    }
}
