//! The check report's renderings: human text, JUnit XML, SARIF 2.1.0, Markdown and GitHub
//! workflow annotations. (JSON is `CheckReport::to_json`.)

mod github;
mod human;
mod junit;
mod markdown;
mod sarif;

pub use github::{annotations, job_summary};
pub use human::{human, human_tail, result_lines};
pub use junit::junit;
pub use markdown::markdown;
pub use sarif::sarif;

use super::model::CheckReport;
use crate::inert::{inert, inert_lines};

/// Groups in the order the checks run.
pub const GROUPS: &[&str] = &[
    "protocol",
    "pagination",
    "schema",
    "robustness",
    "security",
    "wire",
    "traffic",
    "transport",
    "hygiene",
];

/// Who was checked, made inert: the server's name and version, or the command.
fn who(report: &CheckReport) -> String {
    match &report.server {
        Some(s) => format!(
            "{} {}",
            inert(&s.name),
            inert(s.version.as_deref().unwrap_or("(no version)"))
        ),
        None => inert(&report.target.command.join(" ")).into_owned(),
    }
}

/// The protocol version the server answered, made inert.
fn protocol(report: &CheckReport) -> String {
    inert(report.protocol_version.as_deref().unwrap_or("(none)")).into_owned()
}

/// A payload (several lines of our own layout around server text), each line made inert.
/// Every printer puts a prefix (`| `) before each line, so no payload line can begin a line
/// of a log that shows the report (a line the server wrote on stdout stays one line).
fn payload_lines(payload: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    inert_lines(payload.trim_end_matches('\n'))
}
