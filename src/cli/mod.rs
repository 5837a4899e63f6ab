//! The command line: argument definitions and dispatch. Each subcommand lives in its own
//! module and returns the process exit code.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// `print!` that never panics: a closed stdout (`mcp-witness … | head`) is not an error of
/// ours, and the exit code must still tell the verdict.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

/// `println!` that never panics (see `out!`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod analyze;
mod check;
mod diff;
mod drive;
mod keys;
mod probe;
mod repair;
mod serve;
mod server_args;
mod verify;

/// Exit code for usage errors and for evidence that could not be written or read.
pub const EXIT_USAGE: u8 = 2;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-witness",
    version,
    about = "Probe stdio MCP servers and keep signed, hash-chained evidence of what they did",
    after_help = "Exit codes:\n  probe:  0 pass, 1 fail, 3 inconclusive (the server stayed silent), 2 usage error or evidence not written\n  check:  0 no failures, 1 findings, 2 could not run\n  verify: 0 intact, 1 broken or untrusted, 2 usage error or unreadable file\n  diff:   0 unchanged or baseline, 1 changed, 2 could not run\n  drive, analyze: 0 every domain compliant, 1 not compliant or incomplete, 2 usage error"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Probe(Box<probe::ProbeArgs>),
    Check(Box<check::CheckArgs>),
    Diff(diff::DiffArgs),
    Verify(verify::VerifyArgs),
    Keygen(keys::KeygenArgs),
    Key(keys::KeyArgs),
    Repair(repair::RepairArgs),
    Serve(serve::ServeArgs),
    Drive(drive::DriveArgs),
    Analyze(analyze::AnalyzeArgs),
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Probe(args) => probe::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Diff(args) => diff::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Keygen(args) => keys::keygen(args),
        Command::Key(args) => keys::key(args),
        Command::Repair(args) => repair::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Drive(args) => drive::run(args),
        Command::Analyze(args) => analyze::run(args),
    };
    ExitCode::from(code)
}

/// Prints an error the way every subcommand does. An error is one line, and may quote a
/// server's or a file's text: the whole message is made inert.
pub(crate) fn error(message: impl std::fmt::Display) -> u8 {
    eprintln!(
        "mcp-witness: error: {}",
        crate::inert::inert(&message.to_string())
    );
    EXIT_USAGE
}
