//! The Markdown report: the same facts as the HTML page (status on top, then per target the
//! outcomes, the timeline with its changes, and the teardown and timing trends as figures),
//! for a review, a ticket or a job summary. Text from the file is inert and escaped by `cell`.

use std::fmt::Write as _;

use super::model::{Changes, MAX_ROWS, MAX_TARGETS, Report, Target, spread};
use crate::cli::count;
use crate::inert::inert;

/// Text for a line or a table cell: inert (so no line break), with the characters Markdown
/// and HTML act on escaped.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in inert(text).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push_str("\\`"),
            c => out.push(c),
        }
    }
    out
}

pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# {}: {}\n",
        r.status.headline(),
        cell(&r.file.display().to_string())
    );
    if let Some(b) = r.status.broken() {
        let seq = b.seq.map(|s| format!(" (seq {s})")).unwrap_or_default();
        let _ = writeln!(
            o,
            "**Line {}{seq}: {}: {}**\n\nShown below: only the {} before it. Nothing from line {} on can be relied on.\n",
            b.line,
            cell(b.code),
            cell(&b.message),
            count(r.blocks, "verified block"),
            b.line
        );
    } else {
        let head = r
            .head
            .as_ref()
            .map(|(s, h)| format!(", head seq {s} {}", cell(h)))
            .unwrap_or_default();
        let _ = writeln!(o, "{} verified{head}.\n", count(r.blocks, "block"));
    }
    for k in &r.keys {
        let _ = writeln!(o, "- signing key: {}", cell(k));
    }
    for w in &r.warnings {
        let _ = writeln!(o, "- warning: {}", cell(w));
    }
    if r.targets_not_shown > 0 {
        let _ = writeln!(
            o,
            "- {} more targets with {} not shown (only the first {MAX_TARGETS} are)",
            r.targets_not_shown,
            count(r.blocks_not_shown, "block")
        );
    }
    for t in &r.targets {
        target(&mut o, t);
    }
    o
}

fn target(o: &mut String, t: &Target) {
    let _ = writeln!(o, "\n## {}\n", cell(&t.title()));
    let tallies: Vec<String> = t
        .tallies
        .iter()
        .map(|(k, v, n)| format!("{} {}: {n}", k.name(), cell(v)))
        .collect();
    let _ = writeln!(
        o,
        "Target {}: {}, {} changed from the one before. Outcomes: {}.\n",
        cell(&t.id),
        count(t.blocks, "block"),
        t.changed,
        tallies.join(", ")
    );
    if t.rows_dropped > 0 {
        let _ = writeln!(
            o,
            "The last {MAX_ROWS} blocks are shown; {} older ones are counted above but not listed.\n",
            t.rows_dropped
        );
    }
    let teardown: Vec<(u64, &str)> = t
        .rows
        .iter()
        .filter_map(|r| r.teardown.as_ref().map(|td| (td.after_ms, td.ended_by.as_str())))
        .collect();
    if let Some((lo, mid, hi)) = spread(teardown.iter().map(|t| t.0)) {
        let mut by: Vec<(&str, u64)> = Vec::new();
        for (_, e) in &teardown {
            match by.iter_mut().find(|(k, _)| k == e) {
                Some(x) => x.1 += 1,
                None => by.push((e, 1)),
            }
        }
        let by: Vec<String> = by.iter().map(|(k, n)| format!("{} {n}", cell(k))).collect();
        let series: Vec<String> = teardown.iter().map(|t| t.0.to_string()).collect();
        let _ = writeln!(
            o,
            "- teardown after_ms: min {lo}, median {mid}, max {hi} ({}); series: {}",
            by.join(", "),
            series.join(" ")
        );
    }
    let timing: Vec<u64> = t.rows.iter().filter_map(|r| r.duration_ms).collect();
    if let Some((lo, mid, hi)) = spread(timing.iter().copied()) {
        let series: Vec<String> = timing.iter().map(u64::to_string).collect();
        let _ = writeln!(
            o,
            "- run time ms: min {lo}, median {mid}, max {hi}; series: {}",
            series.join(" ")
        );
    }
    o.push_str("\n| seq | observed at | kind | outcome | changes since the previous block of this kind |\n| --- | --- | --- | --- | --- |\n");
    for row in &t.rows {
        let changes = match &row.changes {
            Changes::Baseline => "first block of its kind".to_string(),
            Changes::Unchanged => "unchanged".to_string(),
            Changes::Changed { list, more } => {
                let mut items: Vec<String> = list.iter().map(|c| cell(&c.text())).collect();
                if *more > 0 {
                    items.push(format!("and {more} more"));
                }
                items.join("<br>")
            }
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {changes} |",
            row.seq,
            cell(&row.observed_at),
            row.kind.name(),
            cell(&row.outcome.detail())
        );
    }
}
