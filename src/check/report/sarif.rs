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
    let artifact = r
        .target
        .program
        .clone()
        .unwrap_or_else(|| r.target.command.first().cloned().unwrap_or_default());
    let artifact = inert(&artifact).into_owned();
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
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": artifact}},
                    "logicalLocations": [{"name": command_line, "kind": "module"}],
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
