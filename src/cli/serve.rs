//! `serve`: the instrumented stdio server of the client kit.

use std::path::PathBuf;

use clap::Args;

use crate::kit::serve;

/// Run an instrumented stdio MCP server that logs every message in both directions, to test
/// how a client handles `notifications/{tools,resources,prompts}/list_changed`.
#[derive(Debug, Args)]
#[command(
    after_help = "Log path: --log, else $MCP_WITNESS_LOG, else ./mcp-witness-serve.log.jsonl (appended to).\nExit codes: 0 on stdin end of file, 2 if the log cannot be opened."
)]
pub struct ServeArgs {
    /// The JSON-lines log to append to.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
}

pub fn run(args: ServeArgs) -> u8 {
    let path = serve::log_path(args.log);
    match serve::run(&path) {
        Ok(()) => 0,
        Err(e) => super::error(format!("serve ({}): {e}", path.display())),
    }
}
