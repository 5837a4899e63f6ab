//! The HTML report: one self-contained page (inline CSS and SVG; no script, no external
//! asset or font; a Content-Security-Policy that forbids both besides). Every string from the
//! file is made inert and HTML-escaped by [`esc`].

use std::fmt::Write as _;

use super::model::{Changes, MAX_ROWS, Report, Row, Status, Target, spread};
use super::svg::{self, Point};
use crate::inert::inert;

/// Text from the file for HTML: hazards shown as escapes, then `& < > " '` escaped, so it is
/// text wherever it lands (element content or an attribute value).
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in inert(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font-family:sans-serif;margin:0;color:#1a1a1a;background:#fff;overflow-wrap:anywhere}
main{max-width:1100px;margin:0 auto;padding:0 16px 32px}
.status{padding:18px 24px;color:#fff}
.status h1{margin:0 0 6px;font-size:28px}
.status p{margin:4px 0}
.intact{background:#1b7f3b}.selfsigned{background:#2f6f4f}.broken,.untrusted{background:#b3261e}
table{border-collapse:collapse;width:100%;font-size:13px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
.good{color:#1b7f3b;font-weight:bold}.bad{color:#b3261e;font-weight:bold}.meh{color:#a05a00;font-weight:bold}
.surface{color:#6b3fa0}
code{font-size:12px;word-break:break-all}
section.target{border-top:2px solid #444;margin-top:28px}
figure{margin:8px 0}figcaption{font-size:13px;color:#333}
.note{color:#555;font-size:13px}
";

/// The whole page.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let title = format!("mcp-witness report: {}", r.file.display());
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        esc(&title)
    );
    status(&mut o, r);
    o.push_str("<main>\n");
    summary(&mut o, r);
    for t in &r.targets {
        target(&mut o, t);
    }
    let _ = write!(
        o,
        "<p class=\"note\">Written by mcp-witness {}. Text from the file is shown with control, bidi and invisible characters as <code>\\u{{..}}</code> escapes.</p>\n</main></body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    o
}

fn status(o: &mut String, r: &Report) {
    let class = match &r.status {
        Status::Intact { trusted: true } => "intact",
        Status::Intact { trusted: false } => "selfsigned",
        Status::Untrusted(_) => "untrusted",
        Status::Broken(_) => "broken",
    };
    let _ = write!(
        o,
        "<header id=\"status\" class=\"status {class}\"><h1>{}: {}</h1>",
        r.status.headline(),
        esc(&r.file.display().to_string())
    );
    if let Some(b) = r.status.broken() {
        let seq = b.seq.map(|s| format!(" (seq {s})")).unwrap_or_default();
        let _ = write!(
            o,
            "<p>Line {}{seq}: <b>{}</b>: {}</p><p>Shown below: only the {} before it. Nothing from line {} on can be relied on.</p>",
            b.line,
            esc(b.code),
            esc(&b.message),
            crate::cli::count(r.blocks, "verified block"),
            b.line
        );
    } else {
        let _ = write!(o, "<p>{} verified", crate::cli::count(r.blocks, "block"));
        if let Some((seq, hash)) = &r.head {
            let _ = write!(o, ", head seq {seq} <code>{}</code>", esc(hash));
        }
        o.push_str(".</p>");
        if matches!(r.status, Status::Intact { trusted: false }) {
            o.push_str("<p>No <code>--trust</code> key was given: anyone could have re-signed the whole file. Pin the signer with <code>--trust KEY</code>.</p>");
        }
    }
    o.push_str("</header>\n");
}

fn summary(o: &mut String, r: &Report) {
    o.push_str("<h2>File</h2><table>");
    let _ = write!(
        o,
        "<tr><th>file</th><td><code>{}</code></td></tr>",
        esc(&r.file.display().to_string())
    );
    let _ = write!(o, "<tr><th>verified blocks</th><td>{}</td></tr>", r.blocks);
    let keys: Vec<String> = r
        .keys
        .iter()
        .map(|k| format!("<code>{}</code>", esc(k)))
        .collect();
    let _ = write!(o, "<tr><th>signing keys</th><td>{}</td></tr>", keys.join("<br>"));
    for w in &r.warnings {
        let _ = write!(o, "<tr><th>warning</th><td>{}</td></tr>", esc(w));
    }
    let _ = write!(o, "<tr><th>targets</th><td>{}", r.targets.len());
    if r.targets_not_shown > 0 {
        let _ = write!(
            o,
            " shown; {} more with {} not shown (only the first {} targets are)",
            r.targets_not_shown,
            crate::cli::count(r.blocks_not_shown, "block"),
            super::model::MAX_TARGETS
        );
    }
    o.push_str("</td></tr></table>\n<ul>");
    for t in &r.targets {
        let _ = write!(
            o,
            "<li><a href=\"#t-{}\">{}</a> ({})</li>",
            esc(t.short_id()),
            esc(&t.title()),
            crate::cli::count(t.blocks, "block")
        );
    }
    o.push_str("</ul>\n");
}

fn verdict_class(good: Option<bool>) -> &'static str {
    match good {
        Some(true) => "good",
        Some(false) => "bad",
        None => "meh",
    }
}

fn target(o: &mut String, t: &Target) {
    let _ = write!(
        o,
        "<section class=\"target\" id=\"t-{}\"><h2>{}</h2><p>target <code>{}</code>: {}, {} changed from the one before.</p>",
        esc(t.short_id()),
        esc(&t.title()),
        esc(&t.id),
        crate::cli::count(t.blocks, "block"),
        t.changed
    );
    let tallies: Vec<String> = t
        .tallies
        .iter()
        .map(|(k, v, n)| format!("{} {}: {n}", k.name(), esc(v)))
        .collect();
    let _ = write!(o, "<p>Outcomes: {}</p>", tallies.join(", "));
    if t.rows_dropped > 0 {
        let _ = write!(
            o,
            "<p class=\"note\">The last {MAX_ROWS} blocks are shown; {} older ones are counted above but not listed or charted.</p>",
            t.rows_dropped
        );
    }
    charts(o, t);
    o.push_str("<table class=\"timeline\"><thead><tr><th>seq</th><th>observed at</th><th>kind</th><th>outcome</th><th>changes since the previous block of this kind</th></tr></thead><tbody>\n");
    for row in &t.rows {
        timeline_row(o, row);
    }
    o.push_str("</tbody></table></section>\n");
}

fn charts(o: &mut String, t: &Target) {
    let teardown: Vec<Point> = t
        .rows
        .iter()
        .filter_map(|r| {
            r.teardown.as_ref().map(|td| Point {
                seq: r.seq,
                value: td.after_ms,
                category: Some(td.ended_by.clone()),
            })
        })
        .collect();
    if !teardown.is_empty() {
        let (lo, mid, hi) = spread(teardown.iter().map(|p| p.value)).unwrap_or_default();
        let _ = write!(
            o,
            "<figure><figcaption>Teardown: ms from closing stdin to the end of the server, by how it ended (min {lo}, median {mid}, max {hi} ms)</figcaption>{}</figure>",
            svg::chart("teardown after_ms", "ms", &teardown)
        );
    }
    let timing: Vec<Point> = t
        .rows
        .iter()
        .filter_map(|r| {
            r.duration_ms.map(|d| Point {
                seq: r.seq,
                value: d,
                category: Some(r.kind.name().to_string()),
            })
        })
        .collect();
    if !timing.is_empty() {
        let (lo, mid, hi) = spread(timing.iter().map(|p| p.value)).unwrap_or_default();
        let _ = write!(
            o,
            "<figure><figcaption>Run time: probe timings_ms.total, check duration_ms (min {lo}, median {mid}, max {hi} ms)</figcaption>{}</figure>",
            svg::chart("run time", "ms", &timing)
        );
    }
}

fn timeline_row(o: &mut String, row: &Row) {
    let _ = write!(
        o,
        "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>",
        row.seq,
        esc(&row.observed_at),
        row.kind.name(),
        verdict_class(row.outcome.good()),
        esc(&row.outcome.detail())
    );
    match &row.changes {
        Changes::Baseline => o.push_str("<span class=\"note\">first block of its kind</span>"),
        Changes::Unchanged => o.push_str("<span class=\"note\">unchanged</span>"),
        Changes::Changed { list, more } => {
            o.push_str("<ul>");
            for c in list {
                let class = if matches!(c, crate::evidence::kind::Change::Surface { .. }) {
                    " class=\"surface\""
                } else {
                    ""
                };
                // `text` is already inert; `esc` escapes it for HTML.
                let _ = write!(o, "<li{class}>{}</li>", esc(&c.text()));
            }
            if *more > 0 {
                let _ = write!(o, "<li>and {more} more</li>");
            }
            o.push_str("</ul>");
        }
    }
    o.push_str("</td></tr>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_becomes_inert_escaped_text() {
        let out = esc("<script>alert('x')</script>\u{202e}\u{1b}[31m&\"");
        assert_eq!(
            out,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\u{202e}\\u{1b}[31m&amp;&quot;"
        );
    }
}
