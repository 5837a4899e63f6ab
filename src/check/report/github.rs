//! GitHub Actions workflow commands (`::error` / `::warning`) and the job summary.

use crate::check::model::{CheckReport, Status};
use crate::inert::inert;

/// Workflow commands escape `%`, CR and LF in messages, and also `:` and `,` in properties.
/// Server text is made inert first, so it holds no CR or LF to escape and no control at all.
fn esc_data(text: &str) -> String {
    text.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

fn esc_prop(text: &str) -> String {
    esc_data(text).replace(':', "%3A").replace(',', "%2C")
}

pub fn annotations(r: &CheckReport) -> String {
    let mut out = String::new();
    if let Some(why) = &r.could_not_run {
        out.push_str(&format!(
            "::error title=mcp-witness check could not run::{}\n",
            esc_data(&inert(why))
        ));
    }
    for x in &r.results {
        let level = match x.status {
            Status::Fail => "error",
            Status::Warn if r.strict => "error",
            Status::Warn => "warning",
            _ => continue,
        };
        out.push_str(&format!(
            "::{level} title={}::{} Fix: {}\n",
            esc_prop(x.id),
            esc_data(&inert(&x.message)),
            esc_data(x.fix)
        ));
    }
    out
}

/// The Markdown appended to `$GITHUB_STEP_SUMMARY`.
pub fn job_summary(r: &CheckReport) -> String {
    super::markdown(r)
}
