//! JUnit XML: one test suite per group, one test case per check.

use super::{GROUPS, payload_lines};
use crate::check::model::{CheckReport, Status};
use crate::inert::inert;

fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 cannot carry most control characters at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

pub fn junit(r: &CheckReport) -> String {
    let c = r.counts();
    let failures = c.fail + if r.strict { c.warn } else { 0 };
    let secs = r.duration_ms as f64 / 1000.0;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"mcp-witness check\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"{}\" time=\"{secs:.3}\">\n",
        r.results.len(),
        u8::from(r.could_not_run.is_some()),
        c.skip
    ));
    for group in GROUPS {
        let items: Vec<_> = r.results.iter().filter(|x| x.group() == *group).collect();
        if items.is_empty() {
            continue;
        }
        let f = items
            .iter()
            .filter(|x| x.status == Status::Fail || (r.strict && x.status == Status::Warn))
            .count();
        let s = items.iter().filter(|x| x.status == Status::Skip).count();
        out.push_str(&format!(
            "  <testsuite name=\"{group}\" tests=\"{}\" failures=\"{f}\" errors=\"0\" skipped=\"{s}\">\n",
            items.len()
        ));
        for x in items {
            out.push_str(&format!(
                "    <testcase classname=\"mcp-witness.{group}\" name=\"{}\">\n",
                esc(x.id)
            ));
            // XML escaping keeps the document well-formed; inert keeps a CI log that prints
            // the message from being driven by it.
            let message = inert(&x.message);
            let mut body = format!("{message}\nfix: {}\nspec: {}", x.fix, x.spec);
            for line in x.payload.as_deref().map(payload_lines).into_iter().flatten() {
                body.push_str("\n| ");
                body.push_str(&line);
            }
            match x.status {
                Status::Fail => out.push_str(&format!(
                    "      <failure type=\"error\" message=\"{}\">{}</failure>\n",
                    esc(&message),
                    esc(&body)
                )),
                Status::Warn if r.strict => out.push_str(&format!(
                    "      <failure type=\"warning\" message=\"{}\">{}</failure>\n",
                    esc(&message),
                    esc(&body)
                )),
                Status::Warn => out.push_str(&format!(
                    "      <system-out>warning: {}</system-out>\n",
                    esc(&body)
                )),
                Status::Skip => out.push_str(&format!("      <skipped message=\"{}\"/>\n", esc(&message))),
                Status::Pass => {}
            }
            out.push_str("    </testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}
