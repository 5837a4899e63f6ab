//! `serve`: the instrumented server of the client kit, on stdio or (`--http`) Streamable HTTP.

use std::path::PathBuf;

use clap::Args;

use crate::kit::{serve, serve_http};

/// Run an instrumented MCP server that logs every message in both directions, to test
/// how a client handles `notifications/{tools,resources,prompts}/list_changed`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The JSON-lines log to append to.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Serve Streamable HTTP on ADDR (a port, bound on 127.0.0.1, or IP:PORT; 0 for any free
    /// port) at path /mcp instead of stdio; the URL is printed on stdout.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Let --http listen on an address other than loopback.
    #[arg(long, requires = "http")]
    allow_remote: bool,
}

pub fn run(args: ServeArgs) -> u8 {
    let path = serve::log_path(args.log);
    if let Some(addr) = args.http {
        let addr = match serve_http::parse_addr(&addr, args.allow_remote) {
            Ok(a) => a,
            Err(e) => return super::error(format!("serve: {e}")),
        };
        return match serve_http::run(addr, &path) {
            Ok(()) => super::help::exit::OK,
            Err(e) => super::error(format!("serve ({}): {e}", path.display())),
        };
    }
    match serve::run(&path) {
        Ok(()) => super::help::exit::OK,
        Err(e) => super::error(format!("serve ({}): {e}", path.display())),
    }
}
