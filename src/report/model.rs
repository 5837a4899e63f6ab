//! What a report shows, collected from an evidence file: the verification status (from
//! `evidence::verify`), then per target the blocks' outcomes, the changes between consecutive
//! blocks of one kind (each kind's own diff, surface changes included) and the teardown and
//! timing figures. The file is read twice, streaming, one line at a time: verify first, then
//! the verified lines only, each re-bound to the verified chain (its hash checked, linked to
//! the one before, ending at the verified head), so what is shown is what was verified. Memory
//! is bounded: at most `MAX_TARGETS` targets and the last `MAX_ROWS` blocks of each are kept.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;
use serde_json::Value;

use crate::evidence::block::{self, GENESIS_PREV_BYTES, MAX_LINE};
use crate::evidence::kind::{BlockKind, Change};
use crate::evidence::verify::{self, Broken, Expectations, Unreadable};
use crate::files::{BoundedLines, LineError};

/// Blocks shown per target (the latest ones); older ones are counted.
pub const MAX_ROWS: usize = 200;
/// Targets described in detail (the first seen); blocks of later ones are counted.
pub const MAX_TARGETS: usize = 64;
/// Bytes of a server name, version or (twice as many) command in a target's title.
pub const TITLE_PART: usize = 120;
/// Changes listed per block; more are counted.
pub const MAX_CHANGES: usize = 20;

/// What verify said of the file.
#[derive(Debug, Clone)]
pub enum Status {
    /// Every block checks; `trusted` when `--trust` was given (every block signed by a
    /// trusted key), otherwise the signatures are only self-consistent.
    Intact { trusted: bool },
    /// A block is signed by a key that is not trusted.
    Untrusted(Broken),
    /// The file was altered, damaged or truncated at a line.
    Broken(Broken),
}

impl Status {
    /// The word at the top of every report.
    pub fn headline(&self) -> &'static str {
        match self {
            Status::Intact { trusted: true } => "INTACT AND TRUSTED",
            Status::Intact { trusted: false } => "INTACT (signatures self-consistent, signer not pinned)",
            Status::Untrusted(_) => "UNTRUSTED",
            Status::Broken(_) => "BROKEN",
        }
    }

    /// The first bad line, when there is one.
    pub fn broken(&self) -> Option<&Broken> {
        match self {
            Status::Intact { .. } => None,
            Status::Untrusted(b) | Status::Broken(b) => Some(b),
        }
    }
}

/// The whole report.
#[derive(Debug)]
pub struct Report {
    pub file: PathBuf,
    pub status: Status,
    /// Blocks that verified (all of them when intact; those before the bad line otherwise).
    pub blocks: u64,
    pub head: Option<(u64, String)>,
    /// The keys that signed the verified blocks.
    pub keys: Vec<String>,
    pub warnings: Vec<String>,
    /// In order of first appearance.
    pub targets: Vec<Target>,
    /// Targets past `MAX_TARGETS`, and how many blocks they have.
    pub targets_not_shown: u64,
    pub blocks_not_shown: u64,
}

/// Everything about one target.
#[derive(Debug)]
pub struct Target {
    pub id: String,
    /// The server's (or for client blocks, the client's) latest name and version.
    pub name: Option<String>,
    pub version: Option<String>,
    /// The command as run (probe and check blocks).
    pub command: Vec<String>,
    pub blocks: u64,
    /// How many blocks had each outcome, per kind, in order of first appearance.
    pub tallies: Vec<(BlockKind, String, u64)>,
    /// Blocks that differ from the block of the same kind before them.
    pub changed: u64,
    /// The latest `MAX_ROWS` blocks.
    pub rows: VecDeque<Row>,
    /// Older blocks not in `rows`.
    pub rows_dropped: u64,
    /// The previous block of each kind, for the diff.
    last: HashMap<BlockKind, Value>,
}

/// One block.
#[derive(Debug)]
pub struct Row {
    pub seq: u64,
    pub observed_at: String,
    pub kind: BlockKind,
    pub outcome: Outcome,
    pub changes: Changes,
    /// Probe blocks: how the server ended and when.
    pub teardown: Option<Teardown>,
    /// How long the run took: probe `timings_ms.total`, check `duration_ms`.
    pub duration_ms: Option<u64>,
}

/// A block's outcome.
#[derive(Debug)]
pub enum Outcome {
    Probe {
        verdict: String,
        reasons: Vec<String>,
    },
    Check {
        pass: u64,
        warn: u64,
        fail: u64,
        skip: u64,
        could_not_run: bool,
    },
    Client {
        verdict: String,
    },
}

impl Outcome {
    /// One word for the timeline and the tallies.
    pub fn verdict(&self) -> String {
        match self {
            Outcome::Probe { verdict, .. } | Outcome::Client { verdict } => verdict.clone(),
            Outcome::Check {
                could_not_run: true, ..
            } => "could not run".into(),
            Outcome::Check { fail, .. } if *fail > 0 => "fail".into(),
            Outcome::Check { warn, .. } if *warn > 0 => "warn".into(),
            Outcome::Check { .. } => "pass".into(),
        }
    }

    /// The verdict with its detail: reason codes, or the check counts.
    pub fn detail(&self) -> String {
        match self {
            Outcome::Probe { verdict, reasons } if reasons.is_empty() => verdict.clone(),
            Outcome::Probe { verdict, reasons } => format!("{verdict} ({})", reasons.join(", ")),
            Outcome::Check {
                pass,
                warn,
                fail,
                skip,
                could_not_run,
            } => format!(
                "{}{pass} pass, {warn} warn, {fail} fail, {skip} skip",
                if *could_not_run { "could not run: " } else { "" }
            ),
            Outcome::Client { verdict } => verdict.clone(),
        }
    }

    /// Whether this outcome is a good one (for colour): a client block's good words are
    /// `reacts to list_changed` and `handled` (`compliant` in older blocks).
    pub fn good(&self) -> Option<bool> {
        match self.verdict().as_str() {
            "pass" | "compliant" | "reacts to list_changed" | "handled" => Some(true),
            "warn" | "inconclusive" | "incomplete" => None,
            _ => Some(false),
        }
    }
}

/// What changed since the previous block of the same target and kind.
#[derive(Debug)]
pub enum Changes {
    /// The first block of its kind for this target.
    Baseline,
    Unchanged,
    /// The changes (at most `MAX_CHANGES`) and how many more there were.
    Changed {
        list: Vec<Change>,
        more: usize,
    },
}

/// How the server ended.
#[derive(Debug)]
pub struct Teardown {
    pub ended_by: String,
    pub after_ms: u64,
}

/// Why no report could be made (exit 2).
#[derive(Debug)]
pub enum Problem {
    Unreadable(Unreadable),
    /// The file changed between verifying it and reading it.
    Changed(PathBuf, String),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Unreadable(e) => write!(f, "{e}"),
            Problem::Changed(p, why) => write!(
                f,
                "{} changed while the report read it ({why}); run the report again when no one writes to it",
                p.display()
            ),
        }
    }
}

/// Verifies `path` against `trusted` and collects what the report shows.
pub fn collect(path: &Path, trusted: Vec<VerifyingKey>) -> Result<Report, Problem> {
    let pinned = !trusted.is_empty();
    let verified =
        verify::verify_file(path, &Expectations { trusted, head: None }).map_err(Problem::Unreadable)?;
    let status = match &verified.broken {
        None => Status::Intact { trusted: pinned },
        Some(b) if b.code == "untrusted_key" => Status::Untrusted(b.clone()),
        Some(b) => Status::Broken(b.clone()),
    };
    let mut report = Report {
        file: path.to_path_buf(),
        status,
        blocks: verified.blocks,
        head: verified.head.clone(),
        keys: verified.keys.clone(),
        warnings: verified.warnings.clone(),
        targets: Vec::new(),
        targets_not_shown: 0,
        blocks_not_shown: 0,
    };
    if verified.blocks == 0 {
        return Ok(report);
    }
    let changed = |why: String| Problem::Changed(path.to_path_buf(), why);
    let file = crate::files::open_read(path, "evidence file")
        .map_err(|e| Problem::Unreadable(Unreadable::Open(e)))?;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut others: HashSet<String> = HashSet::new();
    let mut prev = GENESIS_PREV_BYTES;
    let mut read = 0u64;
    for line in BoundedLines::new(file, MAX_LINE) {
        if read == verified.blocks {
            break;
        }
        let line = match line {
            Ok(l) => l,
            Err(LineError::TooLong { line, .. }) => {
                return Err(changed(format!("line {line} is now too long")));
            }
            Err(LineError::Io(e)) => {
                return Err(Problem::Unreadable(Unreadable::Read(path.to_path_buf(), e)));
            }
        };
        read += 1;
        // The signature of this very content was checked by verify if the hashes chain to
        // the verified head; the hash itself is checked here.
        let checked = block::check_line_content(&line)
            .map_err(|e| changed(format!("line {read} no longer checks: {e}")))?;
        if checked.prev != prev {
            return Err(changed(format!("line {read} no longer links to the line before")));
        }
        prev = checked.hash;
        let at = match index.get(&checked.target_id) {
            Some(&i) => i,
            None if report.targets.len() < MAX_TARGETS => {
                index.insert(checked.target_id.clone(), report.targets.len());
                report.targets.push(Target::new(&checked.target_id));
                report.targets.len() - 1
            }
            None => {
                if others.insert(checked.target_id.clone()) {
                    report.targets_not_shown += 1;
                }
                report.blocks_not_shown += 1;
                continue;
            }
        };
        // check_line_content proved the line is a JSON object.
        let value: Value = serde_json::from_slice(&line).unwrap_or_default();
        report.targets[at].add(checked.kind, value);
    }
    match &verified.head {
        Some((n, hash)) if read == *n && crate::hex::encode(&prev) == *hash => Ok(report),
        _ => Err(changed("its lines no longer end at the verified head".into())),
    }
}

impl Target {
    fn new(id: &str) -> Target {
        Target {
            id: id.to_string(),
            name: None,
            version: None,
            command: Vec::new(),
            blocks: 0,
            tallies: Vec::new(),
            changed: 0,
            rows: VecDeque::new(),
            rows_dropped: 0,
            last: HashMap::new(),
        }
    }

    /// The target as a person names it: the server's name and version and the command,
    /// each cut to a bound (the timeline and the file keep the rest).
    pub fn title(&self) -> String {
        use crate::text::truncate;
        let name = match (&self.name, &self.version) {
            (Some(n), Some(v)) => format!("{} {}", truncate(n, TITLE_PART), truncate(v, TITLE_PART)),
            (Some(n), None) => truncate(n, TITLE_PART),
            (None, _) => "(no server name)".into(),
        };
        if self.command.is_empty() {
            name
        } else {
            format!("{name}: {}", truncate(&self.command.join(" "), 2 * TITLE_PART))
        }
    }

    /// The first 12 hex digits of the id, as diff prints it.
    pub fn short_id(&self) -> &str {
        crate::text::cut(&self.id, 12)
    }

    fn add(&mut self, kind: BlockKind, v: Value) {
        self.blocks += 1;
        let text = |v: &Value| v.as_str().map(str::to_string);
        let who = if kind == BlockKind::Client {
            &v["client"]
        } else {
            &v["server"]
        };
        if let Some(name) = text(&who["name"]) {
            self.name = Some(name);
            self.version = text(&who["version"]);
        }
        if let Some(cmd) = v["target"]["command"].as_array() {
            self.command = cmd.iter().filter_map(Value::as_str).map(str::to_string).collect();
        }
        let count = |v: &Value| v.as_u64().unwrap_or(0);
        let outcome = match kind {
            BlockKind::Probe => Outcome::Probe {
                verdict: text(&v["verdict"]).unwrap_or_default(),
                reasons: v["reasons"]
                    .as_array()
                    .map(|r| r.iter().filter_map(|r| text(&r["code"])).collect())
                    .unwrap_or_default(),
            },
            BlockKind::Check => Outcome::Check {
                pass: count(&v["counts"]["pass"]),
                warn: count(&v["counts"]["warn"]),
                fail: count(&v["counts"]["fail"]),
                skip: count(&v["counts"]["skip"]),
                could_not_run: !v["could_not_run"].is_null(),
            },
            BlockKind::Client => Outcome::Client {
                verdict: text(&v["verdict"]).unwrap_or_default(),
            },
        };
        let verdict = outcome.verdict();
        match self
            .tallies
            .iter_mut()
            .find(|(k, o, _)| *k == kind && *o == verdict)
        {
            Some(t) => t.2 += 1,
            None => self.tallies.push((kind, verdict, 1)),
        }
        let changes = match self.last.get(&kind) {
            None => Changes::Baseline,
            Some(old) => {
                let mut list = kind.diff(old, &v);
                if list.is_empty() {
                    Changes::Unchanged
                } else {
                    self.changed += 1;
                    let more = list.len().saturating_sub(MAX_CHANGES);
                    list.truncate(MAX_CHANGES);
                    Changes::Changed { list, more }
                }
            }
        };
        let teardown = v["teardown"].as_object().map(|t| Teardown {
            ended_by: t
                .get("ended_by")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            after_ms: t.get("after_ms").and_then(Value::as_u64).unwrap_or(0),
        });
        let duration_ms = match kind {
            BlockKind::Probe => v["timings_ms"]["total"].as_u64(),
            BlockKind::Check => v["duration_ms"].as_u64(),
            BlockKind::Client => None,
        };
        let row = Row {
            seq: count(&v["seq"]),
            observed_at: text(&v["observed_at"]).unwrap_or_default(),
            kind,
            outcome,
            changes,
            teardown,
            duration_ms,
        };
        if self.rows.len() == MAX_ROWS {
            self.rows.pop_front();
            self.rows_dropped += 1;
        }
        self.rows.push_back(row);
        self.last.insert(kind, v);
    }
}

/// Minimum, median and maximum of some values.
pub fn spread(values: impl IntoIterator<Item = u64>) -> Option<(u64, u64, u64)> {
    let mut v: Vec<u64> = values.into_iter().collect();
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some((v[0], v[v.len() / 2], v[v.len() - 1]))
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn a_client_that_reacts_or_handles_is_good_one_that_fails_is_not() {
        let good = |v: &str| Outcome::Client { verdict: v.into() }.good();
        for v in ["reacts to list_changed", "handled", "compliant"] {
            assert_eq!(good(v), Some(true), "{v}");
        }
        for v in [
            "does not react",
            "not handled",
            "server at fault",
            "not compliant",
        ] {
            assert_eq!(good(v), Some(false), "{v}");
        }
        assert_eq!(good("incomplete"), None);
    }
}
