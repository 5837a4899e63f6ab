//! SARIF 2.1.0: one rule per check id, one result per warning or failure. A result is
//! located at the server's own file when it is in the repository; a server from `--config`
//! also at its entry's name in the config file (line and column), as the primary location
//! when there is no server file, else as a related one.

use std::path::Path;

use serde_json::{Value, json};

use super::payload_lines;
use crate::check::checks::ALL;
use crate::check::model::{CheckReport, Status};
use crate::config::{Origin, locate};
use crate::inert::inert;

/// The SARIF document of a check; `origin` is the config entry the server came from, if any.
pub fn sarif(r: &CheckReport, origin: Option<&Origin>) -> Value {
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
    let artifact = artifact(&r.target).map(|a| uri_reference(&a));
    let command_line = inert(&r.target.command.join(" ")).into_owned();
    let module = json!([{"name": command_line, "kind": "module"}]);
    let entry = origin.and_then(|o| config_location(Path::new(&r.target.cwd), o));
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
            let mut result = json!({
                "ruleId": x.id,
                "ruleIndex": index,
                "level": level,
                "message": {"text": text},
            });
            let location = match (&artifact, &entry) {
                (Some(uri), _) => json!({
                    "physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "SRCROOT"}},
                    "logicalLocations": module,
                }),
                (None, Some(entry)) => json!({
                    "physicalLocation": entry,
                    "logicalLocations": module,
                }),
                (None, None) => json!({"logicalLocations": module}),
            };
            result["locations"] = json!([location]);
            if let (Some(_), Some(entry)) = (&artifact, &entry) {
                result["relatedLocations"] = json!([{
                    "id": 1,
                    "physicalLocation": entry,
                    "message": {"text": "the server's entry in the config file"},
                }]);
            }
            result
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
            "columnKind": "utf16CodeUnits",
            "invocations": [{
                "executionSuccessful": r.could_not_run.is_none(),
                "commandLine": command_line,
            }],
            "results": results,
        }],
    })
}

/// The physical location of the server's entry in its config file: the file relative to the
/// repository (as [`artifact`] places the server's file), and the region of its name when it
/// can be found. `None` for a config outside the repository.
fn config_location(cwd: &Path, origin: &Origin) -> Option<Value> {
    let uri = uri_reference(&in_repository(cwd, &origin.file)?);
    let mut location = json!({"artifactLocation": {"uri": uri, "uriBaseId": "SRCROOT"}});
    if let Some(at) = locate::entry(&origin.file, &origin.name) {
        location["region"] = json!({
            "startLine": at.line,
            "startColumn": at.column,
            "endColumn": at.end_column,
        });
    }
    Some(location)
}

/// A relative path as a SARIF `uri` (a URI reference): every byte but the unreserved ones
/// and `/` percent-encoded, so a space, `#`, `%` or `?` in a file name cannot end the path or
/// start a fragment, and no control or bidi character is written raw.
fn uri_reference(relative: &str) -> String {
    let mut out = String::with_capacity(relative.len());
    for b in relative.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `file` relative to the repository `cwd` is in (the nearest folder above it holding `.git`,
/// else `cwd` itself), with `/` separators; `None` when it is outside.
fn in_repository(cwd: &Path, file: &Path) -> Option<String> {
    let root = cwd.ancestors().find(|d| d.join(".git").exists()).unwrap_or(cwd);
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let relative = file.strip_prefix(&root).ok()?;
    Some(relative.to_string_lossy().replace('\\', "/"))
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
    let cwd = Path::new(&t.cwd);
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
    in_repository(cwd, &file)
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
    fn a_config_whose_name_needs_escaping_is_a_valid_uri_with_its_region() {
        let repo = std::env::temp_dir().join(format!("mcpw-sarif-uri-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&repo);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("my cfg")).unwrap();
        let file = repo.join("my cfg/mcp #1 100%é\u{202e}.json");
        std::fs::write(&file, "{\"servers\": {\"s\": {\"command\": \"x\"}}}").unwrap();
        let origin = Origin {
            file,
            name: "s".into(),
        };
        let at = config_location(&repo, &origin).unwrap();
        assert_eq!(
            at["artifactLocation"]["uri"],
            "my%20cfg/mcp%20%231%20100%25%C3%A9%E2%80%AE.json"
        );
        assert_eq!(at["region"]["startLine"], 1);
        assert_eq!(at["region"]["startColumn"], 14);
        std::fs::remove_dir_all(&repo).unwrap();
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
