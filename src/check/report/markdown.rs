//! A Markdown report: a summary and one table per group.

use super::{GROUPS, who};
use crate::check::model::{CheckReport, Status};

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(r: &CheckReport) -> String {
    let c = r.counts();
    let mut out = format!(
        "# mcp-witness check: {}\n\nProtocol {} ({} era). **{} pass, {} warn, {} fail, {} skip** in {} ms.\n",
        cell(&who(r)),
        r.protocol_version.as_deref().unwrap_or("(none)"),
        r.era,
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
