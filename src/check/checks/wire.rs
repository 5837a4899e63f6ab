//! The `wire` group: one check per family of messages, grading what `mcp::wire` found in
//! every message the run received. Fail when an official client rejects a message, warn when
//! it breaks the specification yet clients take it; skip when the run saw no such message.

use super::{Ctx, Outcome};
use crate::mcp::wire::{Family, Severity};

/// Violations quoted in a finding's message.
const QUOTED: usize = 6;

fn grade(ctx: &mut Ctx<'_>, family: Family) -> Outcome {
    let log = ctx.wire_seen();
    let version = log.version.map_or("the default version", |v| v.as_str());
    let what = family.what();
    let Some(seen) = log.families.get(&family).filter(|f| f.messages > 0) else {
        return Outcome::skip(format!("no {what} in this run"));
    };
    if seen.rejects == 0 && seen.tolerated == 0 {
        let unsampled =
            if matches!(family, Family::Notifications | Family::ServerRequests) && log.unsampled > 0 {
                format!(
                    " ({} more not parsed: past the sample or its budget)",
                    log.unsampled
                )
            } else {
                String::new()
            };
        return Outcome::pass(format!(
            "{} {what} valid against MCP {version}{unsampled}",
            seen.messages
        ));
    }
    let mut kept = seen.kept.clone();
    kept.sort_by_key(|v| std::cmp::Reverse(v.severity));
    let quoted: Vec<String> = kept
        .iter()
        .take(QUOTED)
        .map(|v| {
            let grade = match v.severity {
                Severity::Reject => "rejected by clients",
                Severity::Tolerated => "tolerated",
            };
            let pointer = if v.pointer.is_empty() {
                "(message)"
            } else {
                &v.pointer
            };
            format!(
                "`{}` [{}] {} ({grade})",
                crate::inert::inert(pointer),
                v.rule,
                crate::inert::inert(&v.message)
            )
        })
        .collect();
    let message = format!(
        "{} violation(s) a client rejects and {} tolerated, in {} {what} (MCP {version}); distinct: {}",
        seen.rejects,
        seen.tolerated,
        seen.messages,
        quoted.join("; ")
    );
    let payload: Vec<String> = kept
        .iter()
        .take(QUOTED)
        .map(|v| {
            let pointer = if v.pointer.is_empty() {
                "(message)"
            } else {
                &v.pointer
            };
            format!("{}: {}", crate::inert::inert(pointer), v.payload)
        })
        .collect();
    let outcome = if seen.rejects > 0 {
        Outcome::fail(message)
    } else {
        Outcome::warn(message)
    };
    outcome.with(payload.join("\n"))
}

macro_rules! family_checks {
    ($($name:ident => $family:ident),* $(,)?) => {
        $(pub(super) fn $name(ctx: &mut Ctx<'_>) -> Outcome {
            grade(ctx, Family::$family)
        })*
    };
}

family_checks! {
    envelope => Envelope,
    errors => Errors,
    initialize => Initialize,
    empty => Empty,
    tools_list => ToolsList,
    resources_list => ResourcesList,
    templates_list => TemplatesList,
    prompts_list => PromptsList,
    tools_call => ToolsCall,
    resources_read => ResourcesRead,
    prompts_get => PromptsGet,
    completion => Completion,
    notifications => Notifications,
    server_requests => ServerRequests,
}
