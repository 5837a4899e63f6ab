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
mod colour;
mod complete;
mod diff;
mod drive;
mod help;
mod keys;
mod probe;
mod repair;
mod report;
mod serve;
mod server_args;
mod verify;

/// Exit code for usage errors and for evidence that could not be written or read.
pub const EXIT_USAGE: u8 = help::exit::USAGE;

#[derive(Debug, Parser)]
#[command(
    name = "mcp-witness",
    version,
    about = "Probe stdio MCP servers and keep signed, hash-chained evidence of what they did",
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Colour: auto (on a terminal, unless NO_COLOR or TERM=dumb; CLICOLOR_FORCE forces it),
    /// always, or never.
    #[arg(long, value_enum, global = true, default_value = "auto")]
    color: colour::ColorChoice,
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
    Report(report::ReportArgs),
    Serve(serve::ServeArgs),
    Drive(drive::DriveArgs),
    Analyze(analyze::AnalyzeArgs),
    /// Print a shell completion script (bash, zsh or fish) on stdout.
    Completions {
        #[arg(value_enum)]
        shell: complete::Shell,
    },
    /// Print the man page, mcp-witness(1), in roff on stdout.
    Manpage,
    /// Print the help of mcp-witness or of one command.
    Help {
        /// The command to explain.
        command: Option<String>,
    },
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let parsed = help::apply(Cli::command())
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            if let Some(tip) = help::tip(&e, &args) {
                eprintln!("\n{tip}");
            }
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE));
        }
    };
    COLOUR.store(colour::stdout(cli.color), std::sync::atomic::Ordering::Relaxed);
    let code = match cli.command {
        Command::Probe(args) => probe::run(*args),
        Command::Check(args) => check::run(*args),
        Command::Diff(args) => diff::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Keygen(args) => keys::keygen(args),
        Command::Key(args) => keys::key(args),
        Command::Repair(args) => repair::run(args),
        Command::Report(args) => report::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Drive(args) => drive::run(args),
        Command::Analyze(args) => analyze::run(args),
        Command::Help { command } => print_help(command.as_deref()),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            outln!(
                "{}",
                complete::script(&help::apply(Cli::command()), shell).trim_end()
            );
            help::exit::OK
        }
        Command::Manpage => {
            use clap::CommandFactory;
            out!("{}", complete::man(&help::apply(Cli::command())));
            help::exit::OK
        }
    };
    ExitCode::from(code)
}

/// Whether reports on stdout are coloured (`--color` and the environment, decided once).
static COLOUR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether to colour what goes to stdout.
pub(crate) fn colour() -> bool {
    COLOUR.load(std::sync::atomic::Ordering::Relaxed)
}

/// `1 block`, `2 blocks`: a count with its noun.
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `mcp-witness help [COMMAND]`.
fn print_help(command: Option<&str>) -> u8 {
    use clap::CommandFactory;
    let mut cmd = help::apply(Cli::command());
    let target = match command {
        None => Some(&mut cmd),
        Some(name) => cmd.find_subcommand_mut(name),
    };
    match target {
        Some(c) => {
            let _ = c.print_help();
            help::exit::OK
        }
        None => error(format!(
            "no command `{}`; run `mcp-witness help` for the list",
            command.unwrap_or_default()
        )),
    }
}

/// Prints an error the way every subcommand does. An error is one line, and may quote a
/// server's or a file's text: the whole message is made inert.
pub(crate) fn error(message: impl std::fmt::Display) -> u8 {
    // The same form as clap's own usage errors: `error: …` on stderr, exit code 2.
    eprintln!("error: {}", crate::inert::inert(&message.to_string()));
    EXIT_USAGE
}
