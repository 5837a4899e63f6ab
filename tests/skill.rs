//! The agent skill's commands work as written: every `sh` block of
//! `skills/mcp-witness/SKILL.md` runs, in order, against the bundled fixture server, and
//! exits 0 as the skill says it does for a correct server.

mod common;

use std::process::{Command, Stdio};

use common::*;

/// The `sh` blocks of the skill, in order.
fn commands() -> Vec<String> {
    let skill = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/skills/mcp-witness/SKILL.md"
    ))
    .expect("the skill exists");
    assert!(
        skill.starts_with("---\nname: mcp-witness\ndescription: "),
        "frontmatter"
    );
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in skill.lines() {
        let trimmed = line.trim();
        match (&mut current, trimmed) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), text) => {
                block.push_str(text);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_command_of_the_skill_runs_as_written_against_a_correct_server() {
    let commands = commands();
    assert!(commands.len() >= 6, "{commands:?}");
    let dir = TempDir::new("skill");
    let bin = std::path::Path::new(WITNESS).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for command in &commands {
        let out = bounded_output(
            Command::new("sh")
                .args(["-c", command])
                .current_dir(dir.path())
                .env("PATH", &path)
                .env("SERVER", format!("{} correct", fixture()))
                .env("EVIDENCE", "evidence")
                .env("MCP_WITNESS_KEY", dir.join("signing.key"))
                .stdin(Stdio::null()),
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(dir.join("evidence/probes.jsonl").exists());
    assert!(dir.join("evidence/checks.jsonl").exists());
}
