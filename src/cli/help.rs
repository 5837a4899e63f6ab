//! The examples and exit codes of every subcommand, in one table: each subcommand's `--help`
//! and the top-level help are built from it, so they cannot disagree. Also the tip for the
//! most common mistake, a server command without `--` before it.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// Exit codes, as documented.
#[allow(dead_code)] // INCONCLUSIVE is the verdict mapping's, held to it by a test.
pub mod exit {
    /// Success: pass, intact, unchanged, compliant.
    pub const OK: u8 = 0;
    /// The answer is no: fail, findings, broken, changed, not compliant.
    pub const NO: u8 = 1;
    /// Usage error, unreadable input, or evidence that could not be written.
    pub const USAGE: u8 = 2;
    /// probe only: the server stayed silent while alive (inconclusive).
    pub const INCONCLUSIVE: u8 = 3;

    #[cfg(test)]
    mod tests {
        use crate::probe::outcome::Verdict;

        #[test]
        fn the_verdicts_exit_with_the_documented_codes() {
            assert_eq!(Verdict::Pass.exit_code(), super::OK);
            assert_eq!(Verdict::Fail.exit_code(), super::NO);
            assert_eq!(Verdict::Inconclusive.exit_code(), super::INCONCLUSIVE);
        }
    }
}

/// One subcommand's help page additions.
pub struct Page {
    pub name: &'static str,
    pub examples: &'static [&'static str],
    pub exit_codes: &'static str,
}

/// Every subcommand, in the order of the top-level help.
pub const PAGES: &[Page] = &[
    Page {
        name: "probe",
        examples: &[
            "mcp-witness probe -- npx -y @modelcontextprotocol/server-everything",
            "mcp-witness probe --era auto --timeout 30 -- python -m my_server",
            "mcp-witness probe --config .vscode/mcp.json --server github",
            "mcp-witness probe --config .vscode/mcp.json --all",
            "mcp-witness probe --config auto --all",
            "mcp-witness probe --if-changed -e evidence/probes.jsonl -- node dist/index.js",
            "mcp-witness probe --url http://127.0.0.1:3001/mcp --header-env Authorization=MCP_TOKEN",
        ],
        exit_codes: "0 pass, 1 fail, 3 inconclusive (the server stayed silent while alive, or an HTTP server answered 401), 2 usage error or evidence not written",
    },
    Page {
        name: "check",
        examples: &[
            "mcp-witness check -- node dist/index.js",
            "mcp-witness check --list",
            "mcp-witness check --config .cursor/mcp.json --all",
            "mcp-witness check --only schema --skip schema.tool_description -- ./server",
            "mcp-witness check --junit junit.xml --sarif check.sarif --github -- ./server",
            "mcp-witness check --url http://127.0.0.1:3001/mcp --only transport",
        ],
        exit_codes: "0 no failures (and no warnings with --strict), 1 findings, 2 could not run (or evidence not written)",
    },
    Page {
        name: "diff",
        examples: &[
            "mcp-witness diff evidence/probes.jsonl",
            "mcp-witness diff --json evidence/checks.jsonl",
        ],
        exit_codes: "0 unchanged or baseline (the target's first block), 1 changed, 2 could not run (usage error, unreadable file, a block that does not check, no blocks)",
    },
    Page {
        name: "verify",
        examples: &[
            "mcp-witness verify --trust \"$(mcp-witness key)\" evidence/probes.jsonl",
            "mcp-witness verify --trust evidence/ci.pub --head 3f2a9c1e evidence/*.jsonl",
        ],
        exit_codes: "0 intact, 1 broken or untrusted, 2 usage error or unreadable file",
    },
    Page {
        name: "report",
        examples: &[
            "mcp-witness report evidence/probes.jsonl",
            "mcp-witness report --trust \"$(mcp-witness key)\" --html report.html --markdown report.md evidence/probes.jsonl",
        ],
        exit_codes: "0 intact (and trusted with --trust), 1 broken or untrusted (the report says so at the top), 2 usage error, unreadable file or report not written",
    },
    Page {
        name: "keygen",
        examples: &["mcp-witness keygen", "mcp-witness keygen --key ci-signing.key"],
        exit_codes: "0 key created (its public key printed), 2 a key already exists (use --force) or cannot be written",
    },
    Page {
        name: "key",
        examples: &[
            "mcp-witness key",
            "mcp-witness key --key ci-signing.key > evidence/ci.pub",
        ],
        exit_codes: "0 public key printed, 2 no key (create one with `mcp-witness keygen`) or an unreadable key",
    },
    Page {
        name: "repair",
        examples: &["mcp-witness repair evidence/probes.jsonl"],
        exit_codes: "0 repaired or nothing to repair, 2 usage error or the file cannot be changed",
    },
    Page {
        name: "serve",
        examples: &[
            "mcp-witness serve --log serve.log.jsonl",
            "mcp-witness probe -- mcp-witness serve --log serve.log.jsonl",
        ],
        exit_codes: "0 on stdin end of file, 2 if the log cannot be opened",
    },
    Page {
        name: "drive",
        examples: &[
            "mcp-witness drive",
            "mcp-witness drive --domain tools --era both --keep-logs",
            "mcp-witness drive --domain roots --era both",
            "mcp-witness drive --domain all --through \"python3 my_proxy.py -- {serve}\"",
            "mcp-witness drive --domain tools --through \"npx mcp-remote {url}\"",
        ],
        exit_codes: "0 every expected answer holds, 1 something did not, 2 usage error",
    },
    Page {
        name: "completions",
        examples: &[
            "mcp-witness completions bash",
            "mcp-witness completions zsh",
            "mcp-witness completions fish",
        ],
        exit_codes: "0 the script printed, 2 usage error",
    },
    Page {
        name: "manpage",
        examples: &["mcp-witness manpage"],
        exit_codes: "0 the page printed, 2 usage error",
    },
    Page {
        name: "analyze",
        examples: &[
            "mcp-witness analyze serve.log.jsonl",
            "mcp-witness analyze --domain tools --markdown report.md --record serve.log.jsonl",
        ],
        exit_codes: "0 every analysed list domain of every session reacts to list_changed and every exercised flow is handled (or not declared), 1 otherwise, 2 usage error or unreadable log",
    },
];

/// A page's text after the options.
fn after_help(page: &Page) -> String {
    let mut text = String::from("Examples:\n");
    for e in page.examples {
        text.push_str(&format!("  {e}\n"));
    }
    text.push_str(&format!("\nExit codes: {}.", page.exit_codes));
    text
}

/// Adds the examples and exit codes to every subcommand and the exit-code table to the top.
pub fn apply(mut cmd: clap::Command) -> clap::Command {
    let mut top = String::from("Exit codes:\n");
    for page in PAGES {
        top.push_str(&format!(
            "  {:<8} {}\n",
            format!("{}:", page.name),
            page.exit_codes
        ));
        cmd = cmd.mut_subcommand(page.name, |c| c.after_help(after_help(page)));
    }
    top.push_str("\nRun `mcp-witness help <COMMAND>` for a command's options and examples.");
    cmd.after_help(top)
}

/// The tip for a server command given without `--` (`mcp-witness probe node x.js`).
pub fn tip(err: &clap::Error, args: &[String]) -> Option<String> {
    if err.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = err.get(ContextKind::InvalidArg) else {
        return None;
    };
    let verb = args.get(1).filter(|v| *v == "probe" || *v == "check")?;
    if arg.starts_with('-') {
        return None;
    }
    let at = args.iter().position(|a| a == arg)?;
    let mut fixed: Vec<&str> = args[1..at].iter().map(String::as_str).collect();
    fixed.push("--");
    fixed.extend(args[at..].iter().map(String::as_str));
    Some(format!(
        "tip: put the server command after `--`, e.g. `mcp-witness {}`",
        crate::inert::inert(&fixed.join(" "))
    ))
    .filter(|_| !verb.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_subcommand_has_examples_and_exit_codes_and_no_page_names_an_unknown_one() {
        let cmd = apply(super::super::Cli::command());
        let names: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
        for page in PAGES {
            assert!(names.contains(&page.name), "{}", page.name);
            assert!(!page.examples.is_empty(), "{}", page.name);
        }
        for c in cmd.get_subcommands().filter(|c| c.get_name() != "help") {
            let help = c.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(
                help.contains("Examples:") && help.contains("Exit codes:"),
                "{}",
                c.get_name()
            );
        }
    }

    #[test]
    fn every_example_parses() {
        let cmd = apply(super::super::Cli::command());
        for page in PAGES {
            for e in page.examples {
                if e.contains('"') || e.contains('>') || e.contains('*') {
                    continue;
                }
                let argv: Vec<&str> = e.split_whitespace().collect();
                cmd.clone()
                    .try_get_matches_from(&argv)
                    .unwrap_or_else(|err| panic!("{e}: {err}"));
            }
        }
    }
}
