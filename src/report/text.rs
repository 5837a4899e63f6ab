//! The text summary `report` prints without `--html` or `--markdown`: the status line, then
//! per target its outcomes, its latest block, its last changes and its trends. Text from the
//! file is made inert.

use std::fmt::Write as _;

use super::model::{Changes, Report, spread};
use crate::cli::count;
use crate::inert::inert;

/// Changes listed per target in the summary (the latest first).
const CHANGES_SHOWN: usize = 8;

/// The first line: the status and the file.
pub fn status_line(r: &Report) -> String {
    let mut line = format!(
        "{}: {}",
        r.status.headline(),
        inert(&r.file.display().to_string())
    );
    if let Some(b) = r.status.broken() {
        let seq = b.seq.map(|s| format!(" (seq {s})")).unwrap_or_default();
        let _ = write!(line, ": line {}{seq}: {}: {}", b.line, b.code, inert(&b.message));
        let _ = write!(
            line,
            "; summarised: only the {} before it",
            count(r.blocks, "verified block")
        );
    } else {
        let _ = write!(line, ": {} verified", count(r.blocks, "block"));
    }
    line
}

pub fn render(r: &Report) -> String {
    let mut o = status_line(r);
    o.push('\n');
    for w in &r.warnings {
        let _ = writeln!(o, "  warning: {}", inert(w));
    }
    if r.targets_not_shown > 0 {
        let _ = writeln!(
            o,
            "  {} more targets with {} not summarised",
            r.targets_not_shown,
            count(r.blocks_not_shown, "block")
        );
    }
    for t in &r.targets {
        let _ = writeln!(o, "\ntarget {} {}", t.short_id(), inert(&t.title()));
        let tallies: Vec<String> = t
            .tallies
            .iter()
            .map(|(k, v, n)| format!("{} {}: {n}", k.name(), inert(v)))
            .collect();
        let _ = writeln!(o, "  {}; {}", count(t.blocks, "block"), tallies.join(", "));
        if let Some(last) = t.rows.back() {
            let _ = writeln!(
                o,
                "  latest: seq {} {} {}: {}",
                last.seq,
                inert(&last.observed_at),
                last.kind.name(),
                inert(&last.outcome.detail())
            );
        }
        let _ = writeln!(o, "  {} changed from the one before", count(t.changed, "block"));
        let mut shown = 0;
        for row in t.rows.iter().rev() {
            if let Changes::Changed { list, more } = &row.changes {
                for c in list {
                    if shown == CHANGES_SHOWN {
                        break;
                    }
                    let _ = writeln!(o, "    seq {} {}: {}", row.seq, row.kind.name(), c.text());
                    shown += 1;
                }
                if *more > 0 && shown < CHANGES_SHOWN {
                    let _ = writeln!(o, "    seq {}: and {more} more", row.seq);
                }
            }
        }
        let after = t
            .rows
            .iter()
            .filter_map(|r| r.teardown.as_ref().map(|td| td.after_ms));
        if let Some((lo, mid, hi)) = spread(after) {
            let _ = writeln!(o, "  teardown after_ms: min {lo}, median {mid}, max {hi}");
        }
        if let Some((lo, mid, hi)) = spread(t.rows.iter().filter_map(|r| r.duration_ms)) {
            let _ = writeln!(o, "  run time ms: min {lo}, median {mid}, max {hi}");
        }
    }
    o
}
