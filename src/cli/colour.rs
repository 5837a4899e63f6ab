//! `--color auto|always|never`, with the conventions of the environment: `NO_COLOR` (any
//! value) turns colour off, `CLICOLOR_FORCE` (any value but `0`) turns it on, `TERM=dumb`
//! turns it off; `--color always|never` overrides them all. Auto means: only on a terminal.

use clap::ValueEnum;

/// The `--color` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// Whether to colour output going to a stream that `terminal` says is (or is not) a
/// terminal, given the choice and the environment variable lookup `var`.
pub fn enabled(choice: ColorChoice, terminal: bool, var: impl Fn(&str) -> Option<String>) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if var("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                return false;
            }
            if var("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
                return true;
            }
            terminal && var("TERM").as_deref() != Some("dumb")
        }
    }
}

/// `enabled` for stdout, with this process's environment.
pub fn stdout(choice: ColorChoice) -> bool {
    enabled(
        choice,
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
        |k| std::env::var(k).ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_choice_and_the_environment_decide_in_the_documented_order() {
        assert!(enabled(ColorChoice::Auto, true, env(&[])));
        assert!(!enabled(ColorChoice::Auto, false, env(&[])));
        assert!(!enabled(ColorChoice::Auto, true, env(&[("NO_COLOR", "1")])));
        assert!(enabled(ColorChoice::Auto, true, env(&[("NO_COLOR", "")])));
        assert!(enabled(ColorChoice::Auto, false, env(&[("CLICOLOR_FORCE", "1")])));
        assert!(!enabled(
            ColorChoice::Auto,
            false,
            env(&[("CLICOLOR_FORCE", "0")])
        ));
        assert!(!enabled(ColorChoice::Auto, true, env(&[("TERM", "dumb")])));
        assert!(enabled(ColorChoice::Always, false, env(&[("NO_COLOR", "1")])));
        assert!(!enabled(
            ColorChoice::Never,
            true,
            env(&[("CLICOLOR_FORCE", "1")])
        ));
    }
}
