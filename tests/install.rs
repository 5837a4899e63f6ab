//! What an installation gets: shell completions that real bash runs, and a man page that
//! groff renders, both written by mcp-witness itself from its command-line definition.

mod common;

use std::process::{Command, Stdio};

use common::fixture::Layout;
use common::*;

fn output(args: &[&str]) -> String {
    let out = bounded_output(Command::new(WITNESS).args(args).stdin(Stdio::null()));
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// What bash completes for the words of `line` (the last one being completed).
fn complete(script: &str, line: &[&str]) -> Vec<String> {
    let words = line
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let program = format!(
        "{script}\nCOMP_WORDS=({words}); COMP_CWORD={}; _mcp_witness; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        line.len() - 1
    );
    let out = bounded_output(
        Command::new("bash")
            .args(["--norc", "-c", &program])
            .stdin(Stdio::null()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_options_and_their_values() {
    let script = output(&["completions", "bash"]);
    assert_eq!(complete(&script, &["mcp-witness", "pro"]), ["probe"]);
    let options = complete(&script, &["mcp-witness", "check", "--on"]);
    assert_eq!(options, ["--only"]);
    let eras = complete(&script, &["mcp-witness", "probe", "--era", ""]);
    assert_eq!(eras, ["legacy", "modern", "auto"]);
}

#[test]
fn the_man_page_renders_with_groff_and_documents_every_command() {
    let page = output(&["manpage"]);
    let dir = TempDir::new("man");
    let file = dir.join("mcp-witness.1");
    std::fs::write(&file, &page).unwrap();
    let out = bounded_output(
        Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", file.to_str().unwrap()])
            .env("GROFF_NO_SGR", "1")
            .stdin(Stdio::null()),
    );
    // Bold and underline come as overstrikes (`X\bX`, `_\bX`): keep the last of each pair.
    let mut text = String::new();
    for c in String::from_utf8_lossy(&out.stdout).chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && warnings.trim().is_empty(), "{warnings}");
    for heading in ["NAME", "SYNOPSIS", "COMMANDS", "EXIT STATUS"] {
        assert!(text.contains(heading), "{heading}");
    }
    for command in [
        "probe", "check", "diff", "verify", "keygen", "serve", "drive", "analyze",
    ] {
        assert!(text.contains(&format!("mcp-witness {command}")), "{command}");
    }
    assert!(text.contains("--timeout") || text.contains("‐‐timeout"), "{text}");
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    for shell in ["zsh", "fish"] {
        let script = output(&["completions", shell]);
        for command in [
            "probe", "check", "diff", "verify", "keygen", "key", "repair", "serve",
        ] {
            assert!(script.contains(command), "{shell}: {command}");
        }
    }
}

/// `cargo install` puts `mcp-witness` on the user's PATH and nothing else: the test fixture is
/// an example, built for the tests, never installed. Built in the test's own target folder and
/// profile, so it reuses what the test run already compiled (offline, from Cargo.lock).
#[test]
fn cargo_install_installs_mcp_witness_alone() {
    let root = TempDir::new("install");
    let layout = Layout::of_this_binary();
    let out = bounded_output(
        Command::new(env!("CARGO"))
            .args(["install", "--quiet", "--offline", "--locked", "--path"])
            .arg(env!("CARGO_MANIFEST_DIR"))
            .arg("--root")
            .arg(root.path())
            .arg("--target-dir")
            .arg(&layout.target_dir)
            .args(["--profile", &layout.profile])
            .stdin(Stdio::null()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut installed: Vec<String> = std::fs::read_dir(root.join("bin"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    installed.sort();
    assert_eq!(installed, ["mcp-witness"]);
    let version = bounded_output(Command::new(root.join("bin/mcp-witness")).arg("--version"));
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("mcp-witness "),
        "{version:?}"
    );
}
