//! The check report's renderings: human text, JUnit XML, SARIF 2.1.0, Markdown and GitHub
//! workflow annotations. (JSON is `CheckReport::to_json`.)

mod github;
mod human;
mod junit;
mod markdown;
mod sarif;

pub use github::{annotations, job_summary};
pub use human::human;
pub use junit::junit;
pub use markdown::markdown;
pub use sarif::sarif;

use super::model::CheckReport;

/// Groups in the order the checks run.
pub const GROUPS: &[&str] = &["protocol", "pagination", "schema", "robustness", "hygiene"];

fn who(report: &CheckReport) -> String {
    match &report.server {
        Some(s) => format!("{} {}", s.name, s.version.as_deref().unwrap_or("(no version)")),
        None => report.target.command.join(" "),
    }
}
