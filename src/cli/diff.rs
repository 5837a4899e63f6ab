//! `diff`: what changed between the two latest blocks of one target, for regression use in CI.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use crate::evidence::block;
use crate::files::{self, BoundedLines, LineError};
use crate::inert::inert;

/// Show what changed between the two latest blocks of one target (tools added or removed,
/// server version, verdict, findings). Exit 1 when something changed.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The evidence file.
    file: PathBuf,
    /// The target id to compare [default: the target of the file's last block].
    #[arg(long, value_name = "ID")]
    target: Option<String>,
    /// Print the changes as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DiffArgs) -> u8 {
    let file = match files::open_read(&args.file, "evidence file") {
        Ok(f) => f,
        Err(e) => return super::error(e),
    };
    // Keep the last two blocks per (target, kind): memory does not grow with the file.
    let mut last: Option<(String, String)> = None;
    let mut pairs: std::collections::HashMap<(String, String), (Option<Value>, Option<Value>)> =
        Default::default();
    // Lines are bounded as verify bounds them: memory stays within one block, whatever the file.
    for (n, line) in BoundedLines::new(file, block::MAX_LINE).enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e @ LineError::TooLong { .. }) => {
                return super::error(format!(
                    "{}: {e}, longer than any block: it is not an evidence file or it is damaged; run `mcp-witness verify {}`",
                    args.file.display(),
                    args.file.display()
                ));
            }
            Err(LineError::Io(e)) => {
                return super::error(format!("cannot read {}: {e}", args.file.display()));
            }
        };
        if let Err(e) = block::check_line(&line) {
            return super::error(format!(
                "line {} of {} does not check ({e}); run `mcp-witness verify` first",
                n + 1,
                args.file.display()
            ));
        }
        let v: Value = serde_json::from_slice(&line).unwrap_or_default();
        let key = (
            v["target"]["id"].as_str().unwrap_or_default().to_string(),
            v["kind"].as_str().unwrap_or_default().to_string(),
        );
        let slot = pairs.entry(key.clone()).or_default();
        slot.0 = slot.1.take();
        slot.1 = Some(v);
        last = Some(key);
    }
    let key = match (&args.target, &last) {
        (Some(t), Some((_, kind))) => {
            // The latest kind recorded for that target, preferring the file's last kind.
            let k = (t.clone(), kind.clone());
            if pairs.contains_key(&k) {
                k
            } else {
                pairs.keys().find(|(id, _)| id == t).cloned().unwrap_or(k)
            }
        }
        (None, Some(k)) => k.clone(),
        (_, None) => return super::error(format!("{} holds no blocks", args.file.display())),
    };
    let Some((Some(old), Some(new))) = pairs.get(&key).cloned() else {
        return super::error(format!(
            "target {} has fewer than two {} blocks in {}",
            key.0,
            key.1,
            args.file.display()
        ));
    };
    let changes = changes(&old, &new);
    if args.json {
        outln!(
            "{}",
            crate::inert::json(
                &json!({"target": key.0, "kind": key.1, "from_seq": old["seq"], "to_seq": new["seq"], "changed": !changes.is_empty(), "changes": changes})
            )
        );
    } else {
        outln!(
            "{} block seq {} -> seq {} of target {}",
            inert(&key.1),
            old["seq"],
            new["seq"],
            inert(&key.0.chars().take(12).collect::<String>())
        );
        if changes.is_empty() {
            outln!("  unchanged");
        }
        for c in &changes {
            outln!("  {c}");
        }
    }
    u8::from(!changes.is_empty())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The differences that matter, one sentence each; every value quoted from the file is made
/// inert, so a sentence stays one line and acts on no terminal.
pub fn changes(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn field(out: &mut Vec<String>, label: &str, a: &Value, b: &Value) {
        if a != b {
            out.push(format!(
                "{label}: {} -> {}",
                inert(&a.to_string()),
                inert(&b.to_string())
            ));
        }
    }
    let list = |names: &[&String]| names.iter().map(|s| inert(s)).collect::<Vec<_>>().join(", ");
    field(
        &mut out,
        "server name",
        &old["server"]["name"],
        &new["server"]["name"],
    );
    field(
        &mut out,
        "server version",
        &old["server"]["version"],
        &new["server"]["version"],
    );
    field(
        &mut out,
        "protocol version",
        &old["protocol_version"],
        &new["protocol_version"],
    );
    field(
        &mut out,
        "program",
        &old["target"]["program_sha256"],
        &new["target"]["program_sha256"],
    );
    if new["kind"] == "probe" {
        field(&mut out, "verdict", &old["verdict"], &new["verdict"]);
        let (a, b) = (strings(&old["tools"]["names"]), strings(&new["tools"]["names"]));
        let added: Vec<&String> = b.iter().filter(|n| !a.contains(n)).collect();
        let removed: Vec<&String> = a.iter().filter(|n| !b.contains(n)).collect();
        if !added.is_empty() {
            out.push(format!("tools added: {}", list(&added)));
        }
        if !removed.is_empty() {
            out.push(format!("tools removed: {}", list(&removed)));
        }
        let codes = |v: &Value| -> Vec<String> {
            v["reasons"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|x| x["code"].as_str())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        if codes(old) != codes(new) {
            out.push(inert(&format!("reasons: {:?} -> {:?}", codes(old), codes(new))).into_owned());
        }
    } else {
        let status = |v: &Value| -> Vec<(String, String)> {
            v["results"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .map(|x| {
                            (
                                x["id"].as_str().unwrap_or_default().to_string(),
                                x["status"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        let (a, b) = (status(old), status(new));
        for (id, s) in &b {
            match a.iter().find(|(i, _)| i == id) {
                Some((_, was)) if was != s => {
                    out.push(format!("{}: {} -> {}", inert(id), inert(was), inert(s)))
                }
                None => out.push(format!("{}: new ({})", inert(id), inert(s))),
                _ => {}
            }
        }
        for (id, s) in &a {
            if !b.iter().any(|(i, _)| i == id) {
                out.push(format!("{}: no longer run (was {})", inert(id), inert(s)));
            }
        }
        field(
            &mut out,
            "could not run",
            &old["could_not_run"],
            &new["could_not_run"],
        );
    }
    out
}
