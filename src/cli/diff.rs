//! `diff`: what changed between the two latest blocks of one target, as a CI gate. Each
//! kind's comparison lives with the kind (`evidence::kind`); this is the command around it.

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use crate::evidence::block;
use crate::evidence::id;
use crate::evidence::kind::BlockKind;
use crate::files::{self, BoundedLines, LineError};

/// Show what changed between the two latest blocks of one target (tools added or removed,
/// server version, verdict, findings, client verdicts). Exit 1 when something changed.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The evidence file.
    file: PathBuf,
    /// The target id to compare, or a unique prefix of at least 8 hex digits (diff prints
    /// 12) [default: the target of the file's last block].
    #[arg(long, value_name = "ID")]
    target: Option<String>,
    /// Print the changes as JSON.
    #[arg(long)]
    json: bool,
}

/// The last two blocks of one target and kind.
#[derive(Default, Clone)]
struct Pair {
    old: Option<Value>,
    new: Option<Value>,
}

pub fn run(args: DiffArgs) -> u8 {
    let prefix = match args
        .target
        .as_deref()
        .map(|t| id::parse("--target", t))
        .transpose()
    {
        Ok(p) => p,
        Err(e) => return super::error(e),
    };
    let file = match files::open_read(&args.file, "evidence file") {
        Ok(f) => f,
        Err(e) => return super::error(e),
    };
    // Keep the last two blocks per (target, kind): memory does not grow with the file.
    let mut pairs: HashMap<(String, BlockKind), Pair> = HashMap::new();
    // The kind of each target's latest block, and the file's last (target, kind).
    let mut latest: HashMap<String, BlockKind> = HashMap::new();
    let mut last: Option<(String, BlockKind)> = None;
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
        let checked = match block::check_line(&line) {
            Ok(c) => c,
            Err(e) => {
                return super::error(format!(
                    "line {} of {} does not check ({e}); run `mcp-witness verify {}` first",
                    n + 1,
                    args.file.display(),
                    args.file.display()
                ));
            }
        };
        // check_line proved the line is a JSON object.
        let v: Value = serde_json::from_slice(&line).unwrap_or_default();
        let key = (checked.target_id.clone(), checked.kind);
        let slot = pairs.entry(key.clone()).or_default();
        slot.old = slot.new.take();
        slot.new = Some(v);
        latest.insert(checked.target_id, checked.kind);
        last = Some(key);
    }
    let key = match (&prefix, &last) {
        (Some(p), Some(_)) => {
            let target = match id::resolve("--target", p, latest.keys().map(String::as_str), "target") {
                Ok(t) => t.to_string(),
                Err(e) => return super::error(format!("{e} in {}", args.file.display())),
            };
            let kind = latest[&target];
            (target, kind)
        }
        (None, Some(k)) => k.clone(),
        (_, None) => {
            return super::error(format!(
                "{} holds no blocks: nothing to compare",
                args.file.display()
            ));
        }
    };
    let pair = pairs.get(&key).cloned().unwrap_or_default();
    let (target, kind) = key;
    let Some(new) = pair.new else {
        return super::error(format!("no {} block of target {target}", kind.name()));
    };
    let Some(old) = pair.old else {
        // The target's first block: the baseline later runs compare with.
        if args.json {
            outln!(
                "{}",
                crate::inert::json(&json!({
                    "target": target, "kind": kind.name(), "from_seq": null, "to_seq": new["seq"],
                    "baseline": true, "changed": false, "changes": [],
                }))
            );
        } else {
            outln!(
                "{} block seq {} of target {}: baseline (the target's first block; nothing to compare yet)",
                kind.name(),
                new["seq"],
                &target[..12]
            );
        }
        return 0;
    };
    let changes = kind.diff(&old, &new);
    if args.json {
        let list: Vec<Value> = changes.iter().map(|c| c.to_json()).collect();
        outln!(
            "{}",
            crate::inert::json(&json!({
                "target": target, "kind": kind.name(), "from_seq": old["seq"], "to_seq": new["seq"],
                "baseline": false, "changed": !changes.is_empty(), "changes": list,
            }))
        );
    } else {
        outln!(
            "{} block seq {} -> seq {} of target {}",
            kind.name(),
            old["seq"],
            new["seq"],
            &target[..12]
        );
        if changes.is_empty() {
            outln!("  unchanged");
        }
        for c in &changes {
            outln!("  {}", c.text());
        }
    }
    u8::from(!changes.is_empty())
}
