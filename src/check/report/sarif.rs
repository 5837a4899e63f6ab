//! SARIF 2.1.0: one rule per check id, one result per warning or failure.

use serde_json::{Value, json};

use super::payload_lines;
use crate::check::checks::ALL;
use crate::check::model::{CheckReport, Status};
use crate::inert::inert;

pub fn sarif(r: &CheckReport) -> Value {
    let rules: Vec<Value> = ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.id,
                "name": c.id.replace('.', "_"),
                "shortDescription": {"text": c.title},
                "fullDescription": {"text": c.fix},
                "helpUri": c.spec,
                "help": {"text": c.fix},
                "defaultConfiguration": {"level": "error"},
            })
        })
        .collect();
    let artifact = artifact(&r.target).map(|a| inert(&a).into_owned());
    let command_line = inert(&r.target.command.join(" ")).into_owned();
    let results: Vec<Value> = r
        .results
        .iter()
        .filter(|x| matches!(x.status, Status::Fail | Status::Warn))
        .map(|x| {
            let level = if x.status == Status::Fail || r.strict {
                "error"
            } else {
                "warning"
            };
            let index = ALL.iter().position(|c| c.id == x.id).unwrap_or(0);
            // JSON escaping keeps the document valid; inert keeps a viewer or CI log that
            // prints the message from being driven by it.
            let mut text = format!("{} Fix: {}", inert(&x.message), x.fix);
            for line in x.payload.as_deref().map(payload_lines).into_iter().flatten() {
                text.push_str("\n| ");
                text.push_str(&line);
            }
            json!({
                "ruleId": x.id,
                "ruleIndex": index,
                "level": level,
                "message": {"text": text},
                "locations": [match &artifact {
                    Some(uri) => json!({
                        "physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "SRCROOT"}},
                        "logicalLocations": [{"name": command_line, "kind": "module"}],
                    }),
                    None => json!({"logicalLocations": [{"name": command_line, "kind": "module"}]}),
                }],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcp-witness",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://modelcontextprotocol.io/specification",
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": r.could_not_run.is_none(),
                "commandLine": command_line,
            }],
            "results": results,
        }],
    })
}

/// Interpreters whose first file argument is the server's own code.
const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "python", "python3", "deno", "bun", "ruby", "perl", "php", "tsx", "ts-node", "uv",
];

/// The server's own file, relative to the repository it is in (the nearest folder above the
/// server's working folder holding `.git`, else that folder): the script an interpreter runs
/// (`node dist/index.js` → `dist/index.js`), or the program itself. Never an interpreter, and
/// nothing outside that folder (a result then has only a logical location).
fn artifact(t: &crate::probe::outcome::TargetSeen) -> Option<String> {
    use std::path::Path;
    let cwd = Path::new(&t.cwd);
    let root = cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd);
    let program = t.command.first()?;
    let name = Path::new(program).file_name()?.to_str()?;
    let interpreter = INTERPRETERS.iter().any(|i| {
        name == *i || (name.starts_with(i) && name[i.len()..].chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    let file = if interpreter {
        t.command[1..]
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|a| cwd.join(a))
            .find(|p| p.is_file())?
    } else {
        Path::new(t.program.as_deref()?).to_path_buf()
    };
    let file = std::fs::canonicalize(&file).unwrap_or(file);
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let relative = file.strip_prefix(&root).ok()?;
    Some(relative.to_string_lossy().replace('\\', "/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::outcome::TargetSeen;

    fn target(cwd: &std::path::Path, command: &[&str], program: &str) -> TargetSeen {
        TargetSeen {
            command: command.iter().map(|s| s.to_string()).collect(),
            program: Some(program.into()),
            program_sha256: None,
            program_sha256_source: None,
            cwd: cwd.display().to_string(),
            env_names: vec![],
            era: crate::mcp::EraChoice::Legacy,
            protocol_version: None,
            transport: crate::target::Transport::Stdio,
            url: None,
            header_names: vec![],
        }
    }

    #[test]
    fn a_script_is_located_relative_to_the_repository_never_at_the_interpreter() {
        let repo = std::env::temp_dir().join(format!("mcpw-sarif-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&repo);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("server/dist")).unwrap();
        std::fs::write(repo.join("server/dist/index.js"), "").unwrap();
        let cwd = repo.join("server");
        let t = target(&cwd, &["node", "--no-warnings", "dist/index.js"], "/usr/bin/node");
        assert_eq!(artifact(&t).as_deref(), Some("server/dist/index.js"));
        let t = target(&cwd, &["python3.11", "-m", "my_server"], "/usr/bin/python3.11");
        assert_eq!(artifact(&t), None, "a module is no file: no physical location");
        let t = target(&cwd, &["npx", "-y", "some-server"], "/usr/bin/npx");
        assert_eq!(
            artifact(&t),
            None,
            "a program outside the repository is not pointed at"
        );
        std::fs::remove_dir_all(&repo).unwrap();
    }
}
