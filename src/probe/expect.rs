//! `probe --expect FILE`: the rug-pull gate. The surface just seen is compared with the one
//! in the latest passing probe block of the same target in FILE (an evidence file that must
//! verify intact); any difference is a fail with reason `surface_changed` naming each
//! changed tool and part. The new block records which block it was compared with.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::outcome::{Observation, Reason, ReasonCode, Verdict};
use crate::evidence::block::MAX_LINE;
use crate::evidence::verify::{Expectations, verify_file};
use crate::surface::Change;

/// Changes named in the reason; the rest are counted.
const CHANGES_NAMED: usize = 20;

/// The block a probe was compared with, and what differed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub seq: u64,
    pub hash: String,
    pub changes: Vec<Change>,
}

/// Why the comparison could not be made (the probe then records nothing: exit 2).
#[derive(Debug)]
pub enum ExpectError {
    /// The file could not be read or does not verify intact.
    NotIntact(PathBuf, String),
    /// No passing probe block of this target with a surface.
    NoBaseline(PathBuf),
    /// This probe saw no surface to compare (it failed before the tool list).
    NothingSeen,
}

impl fmt::Display for ExpectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectError::NotIntact(p, why) => write!(
                f,
                "--expect {}: {why}; compare only with evidence that verifies (run `mcp-witness verify` on it)",
                p.display()
            ),
            ExpectError::NoBaseline(p) => write!(
                f,
                "--expect {}: no passing probe block of this target with a surface; record one first with `mcp-witness probe -e {} -- …`",
                p.display(),
                p.display()
            ),
            ExpectError::NothingSeen => f.write_str("--expect: this probe saw no tool list to compare"),
        }
    }
}

/// Compares `obs` with the latest passing block of its target in `file`; a difference makes
/// it a fail with reason `surface_changed`. A probe that did not pass on its own is compared
/// too when it saw a surface, but its verdict stays what it was.
pub fn expect(obs: &mut Observation, file: &Path) -> Result<Expected, ExpectError> {
    let report = verify_file(file, &Expectations::default())
        .map_err(|e| ExpectError::NotIntact(file.to_path_buf(), e.to_string()))?;
    if let Some(b) = &report.broken {
        return Err(ExpectError::NotIntact(
            file.to_path_buf(),
            format!("line {} is broken ({})", b.line, b.code),
        ));
    }
    let Some(surface) = obs.surface.as_ref().map(crate::surface::Surface::to_json) else {
        return Err(ExpectError::NothingSeen);
    };
    let target = super::record::target_id(&obs.target);
    let baseline = latest_passing(file, &target)?;
    let Some((seq, hash, old)) = baseline else {
        return Err(ExpectError::NoBaseline(file.to_path_buf()));
    };
    let changes = crate::surface::compare(&old, &surface);
    if !changes.is_empty() {
        let mut named: Vec<String> = changes.iter().take(CHANGES_NAMED).map(Change::sentence).collect();
        if changes.len() > CHANGES_NAMED {
            named.push(format!("and {} more", changes.len() - CHANGES_NAMED));
        }
        obs.verdict = Verdict::Fail;
        obs.reasons.push(Reason::new(
            ReasonCode::SurfaceChanged,
            format!(
                "the surface differs from block seq {seq} ({}…) of {}: {}",
                &hash[..12.min(hash.len())],
                file.display(),
                named.join("; ")
            ),
        ));
    }
    Ok(Expected { seq, hash, changes })
}

/// The latest passing probe block of `target` that holds a surface: its seq, hash and surface.
fn latest_passing(file: &Path, target: &str) -> Result<Option<(u64, String, Value)>, ExpectError> {
    let not_intact = |why: String| ExpectError::NotIntact(file.to_path_buf(), why);
    let f = crate::files::open_read(file, "evidence file").map_err(|e| not_intact(e.to_string()))?;
    let mut found = None;
    for line in crate::files::BoundedLines::new(f, MAX_LINE) {
        let line = line.map_err(|e| not_intact(e.to_string()))?;
        let Ok(block) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let field = |k: &str| block.get(k).and_then(Value::as_str);
        let ours = field("kind") == Some("probe")
            && field("verdict") == Some("pass")
            && block
                .get("target")
                .and_then(|t| t.get("id"))
                .and_then(Value::as_str)
                == Some(target);
        if let (true, Some(surface), Some(seq), Some(hash)) = (
            ours,
            block.get("surface").filter(|s| s.is_object()),
            block.get("seq").and_then(Value::as_u64),
            field("hash"),
        ) {
            found = Some((seq, hash.to_string(), surface.clone()));
        }
    }
    Ok(found)
}
