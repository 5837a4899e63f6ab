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
    let parsed = match parse_one(&args) {
        Some(cli) => Ok(cli),
        None => help::apply(Cli::command())
            .try_get_matches_from(&args)
            .and_then(|m| Cli::from_arg_matches(&m)),
    };
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

/// `probe` and `check` start a server, and their own start-up is part of what a probe costs:
/// building every command's arguments to parse one of them takes about 0.15 ms. When the first
/// argument names one of them, only that command is built and parsed. Whatever that parse
/// does not accept (help, a version request, a usage error) gives `None`, and the whole
/// command line is parsed again, so messages and help are always the whole CLI's.
fn parse_one(args: &[String]) -> Option<Cli> {
    use clap::{Arg, Args, FromArgMatches};
    let name = args.get(1)?.as_str();
    let sub = match name {
        "probe" => probe::ProbeArgs::augment_args(clap::Command::new("probe")),
        "check" => check::CheckArgs::augment_args(clap::Command::new("check")),
        _ => return None,
    };
    let top = clap::Command::new("mcp-witness")
        .arg(
            Arg::new("color")
                .long("color")
                .global(true)
                .value_parser(clap::value_parser!(colour::ColorChoice))
                .default_value("auto"),
        )
        .subcommand(sub);
    let matches = top.try_get_matches_from(args).ok()?;
    let color = *matches.get_one::<colour::ColorChoice>("color")?;
    let (_, sub) = matches.subcommand()?;
    let command = match name {
        "probe" => Command::Probe(Box::new(probe::ProbeArgs::from_arg_matches(sub).ok()?)),
        _ => Command::Check(Box::new(check::CheckArgs::from_arg_matches(sub).ok()?)),
    };
    Some(Cli { command, color })
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};

    fn whole(args: &[String]) -> Result<Cli, clap::Error> {
        help::apply(Cli::command())
            .try_get_matches_from(args)
            .and_then(|m| Cli::from_arg_matches(&m))
    }

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn the_one_command_parse_gives_what_the_whole_command_line_gives() {
        let accepted = [
            "mcp-witness probe -- node server.js --port 3",
            "mcp-witness probe --no-record --json -- ./srv",
            "mcp-witness probe --color never --key k.key -e out.jsonl -- srv a b",
            "mcp-witness probe --call echo --call-args {\"text\":\"x\"} --timeout 3 -- srv",
            "mcp-witness probe --if-changed --url http://127.0.0.1:1/mcp",
            "mcp-witness probe --config c.json --server one",
            "mcp-witness check --no-record -- srv",
            "mcp-witness check --skip security --junit r.xml --json -- srv --flag",
            "mcp-witness check --color always -- srv",
        ];
        for line in accepted {
            let args = words(line);
            let one = parse_one(&args);
            let all = whole(&args);
            assert!(all.is_ok(), "{line}: {:?}", all.err());
            assert_eq!(format!("{one:?}"), format!("{:?}", all.ok()), "{line}");
        }
    }

    #[test]
    fn whatever_the_one_command_parse_refuses_goes_to_the_whole_command_line() {
        let refused = [
            "mcp-witness probe --help",
            "mcp-witness probe -h",
            "mcp-witness check --version",
            "mcp-witness probe",
            "mcp-witness probe node server.js",
            "mcp-witness probe --no-such-flag -- srv",
            "mcp-witness check --if-changed --no-record -- srv",
            "mcp-witness --color never probe -- srv",
            "mcp-witness verify e.jsonl",
        ];
        for line in refused {
            let args = words(line);
            assert!(
                parse_one(&args).is_none(),
                "{line} must be left to the whole parse"
            );
        }
        // The whole parse still takes what only it knows.
        assert!(whole(&words("mcp-witness --color never probe -- srv")).is_ok());
    }
}
