//! SARIF 2.1.0: one rule per check id, one result per warning or failure.

use serde_json::{Value, json};

use crate::check::checks::ALL;
use crate::check::model::{CheckReport, Status};

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
            let text = match &x.payload {
                Some(p) => format!("{} Fix: {}\n{p}", x.message, x.fix),
                None => format!("{} Fix: {}", x.message, x.fix),
            };
            json!({
                "ruleId": x.id,
                "ruleIndex": index,
                "level": level,
                "message": {"text": text},
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": artifact}},
                    "logicalLocations": [{"name": r.target.command.join(" "), "kind": "module"}],
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
                "commandLine": r.target.command.join(" "),
            }],
            "results": results,
        }],
    })
}
