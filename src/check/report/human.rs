//! The human report: grouped, one line a check, a summary line with counts and time.

use super::{GROUPS, payload_lines, protocol, who};
use crate::check::model::{CheckReport, CheckResult, Status};
use crate::inert::inert;

/// Renders the report; `colour` adds ANSI colours, `verbose` explains warnings and passes too.
pub fn human(r: &CheckReport, colour: bool, verbose: bool) -> String {
    let paint = |code: &str, text: &str| {
        if colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let mut out = String::new();
    let proto = protocol(r);
    out.push_str(&format!(
        "mcp-witness check: {}, protocol {proto} ({})\n",
        who(r),
        r.era.as_str()
    ));
    if let Some(why) = &r.could_not_run {
        out.push_str(&format!(
            "{} the suite could not run: {}\n",
            paint("1;31", "ERROR"),
            inert(why)
        ));
    }
    // When the suite could not run, the checks it did not run are one line, not one each.
    let not_run = |x: &&crate::check::model::CheckResult| {
        r.could_not_run.is_some() && x.status == Status::Skip && x.message.starts_with("not run: ")
    };
    let skipped = r.results.iter().filter(not_run).count();
    for group in GROUPS {
        let items: Vec<_> = r
            .results
            .iter()
            .filter(|x| x.group() == *group && !not_run(x))
            .collect();
        if items.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{}\n", paint("1", group)));
        for x in items {
            out.push_str(&result_lines(x, colour, verbose, r.strict));
        }
    }
    if skipped > 0 {
        out.push_str(&format!(
            "\n{} {skipped} checks did not run, because the suite could not run (see above)\n",
            paint("2", "SKIP")
        ));
    }
    let c = r.counts();
    out.push_str(&format!(
        "\nsummary: {} pass, {} warn, {} fail, {} skip in {} ms{}\n",
        c.pass,
        c.warn,
        c.fail,
        c.skip,
        r.duration_ms,
        if r.strict {
            " (strict: warnings count as failures)"
        } else {
            ""
        }
    ));
    out
}

/// The lines of one result: its status, id and message, and for a finding that is explained
/// its payload, fix and spec.
pub fn result_lines(x: &CheckResult, colour: bool, verbose: bool, strict: bool) -> String {
    let paint = |code: &str, text: &str| {
        if colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    };
    let tag = match x.status {
        Status::Pass => paint("32", "PASS"),
        Status::Warn => paint("33", "WARN"),
        Status::Fail => paint("31", "FAIL"),
        Status::Skip => paint("2", "SKIP"),
    };
    let mut out = format!("  {tag}  {:<38} {}\n", x.id, inert(&x.message));
    let explain = x.status == Status::Fail
        || (verbose && x.status == Status::Warn)
        || (strict && x.status == Status::Warn);
    if explain {
        if let Some(p) = &x.payload {
            for line in payload_lines(p).take(12) {
                out.push_str(&format!("        | {line}\n"));
            }
        }
        out.push_str(&format!("        fix: {}\n        spec: {}\n", x.fix, x.spec));
    }
    out
}

/// The report after its results were shown as they came (`check_with`): the server, why the
/// suite could not run if it could not, the checks that did not run, and the summary.
pub fn human_tail(r: &CheckReport, colour: bool) -> String {
    let full = human(r, colour, false);
    let mut out = String::new();
    // The first line (who and which protocol) and an ERROR line, then the collapsed SKIP
    // line and the summary: everything but the groups.
    let mut lines = full.lines().peekable();
    if let Some(first) = lines.next() {
        out.push_str(&format!("\n{first}\n"));
    }
    for line in lines {
        if line.contains("the suite could not run")
            || line.contains("checks did not run")
            || line.starts_with("summary:")
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
