//! A Markdown report: a summary and one table per group.

use super::{GROUPS, protocol, who};
use crate::check::model::{CheckReport, Status};
use crate::inert::inert;

/// Text for a table cell or a line: inert (no control, bidi or tag character, so no line
/// break), with the characters Markdown and HTML act on escaped.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in inert(text).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c => out.push(c),
        }
    }
    out
}

pub fn markdown(r: &CheckReport) -> String {
    let c = r.counts();
    let mut out = format!(
        "# mcp-witness check: {}\n\nProtocol {} ({} era). **{} pass, {} warn, {} fail, {} skip** in {} ms.\n",
        cell(&who(r)),
        cell(&protocol(r)),
        r.era.as_str(),
        c.pass,
        c.warn,
        c.fail,
        c.skip,
        r.duration_ms
    );
    if let Some(why) = &r.could_not_run {
        out.push_str(&format!("\n> The suite could not run: {}\n", cell(why)));
    }
    for group in GROUPS {
        let items: Vec<_> = r.results.iter().filter(|x| x.group() == *group).collect();
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n## {group}\n\n| status | check | result | fix |\n| --- | --- | --- | --- |\n"
        ));
        for x in items {
            let mark = match x.status {
                Status::Pass => "✅ pass",
                Status::Warn => "⚠️ warn",
                Status::Fail => "❌ fail",
                Status::Skip => "⏭️ skip",
            };
            let fix = if matches!(x.status, Status::Fail | Status::Warn) {
                format!("{} ([spec]({}))", x.fix, x.spec)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "| {mark} | `{}` | {} | {} |\n",
                x.id,
                cell(&x.message),
                cell(&fix)
            ));
        }
    }
    out
}
