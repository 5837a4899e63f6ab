//! `check`: a conformance and robustness suite for stdio servers. One server process runs the
//! read-only checks, then robustness, then hygiene (which grades what the others left behind);
//! the version-negotiation checks need fresh processes, which start in parallel with it.

pub mod checks;
pub mod model;
pub mod record;
pub mod report;
mod session;

use std::time::Instant;

use crate::probe::outcome::Bound;
use checks::Input;

pub use model::{CheckReport, CheckResult, Counts, Severity, Status};
pub use session::{Ctx, Probed, SideRun};

/// What `check` is asked to do.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub server: crate::target::ServerOptions,
    /// `--only`: ids (and everything below them) to run; empty means all.
    pub only: Vec<String>,
    /// `--skip`: ids (and everything below them) not to run.
    pub skip: Vec<String>,
    /// Warnings count as failures.
    pub strict: bool,
    /// `--call-tools`: every tool may be called with valid arguments.
    pub call_tools: bool,
    /// `--safe-tool`: these tools may be called with valid arguments.
    pub safe_tools: Vec<String>,
}

impl CheckOptions {
    pub fn new(command: Vec<String>) -> Self {
        CheckOptions {
            server: crate::target::ServerOptions::new(command),
            only: Vec::new(),
            skip: Vec::new(),
            strict: false,
            call_tools: false,
            safe_tools: Vec::new(),
        }
    }

    /// Whether a check id is selected: `--only` and `--skip` match an id and every id below it.
    pub fn selected(&self, id: &str) -> bool {
        let under = |pat: &String| id == pat || id.starts_with(&format!("{pat}."));
        (self.only.is_empty() || self.only.iter().any(under)) && !self.skip.iter().any(under)
    }

    /// Whether calling `tool` with valid arguments was allowed.
    pub fn may_call(&self, tool: &str) -> bool {
        self.call_tools || self.safe_tools.iter().any(|t| t == tool)
    }
}

/// Runs the whole suite against a server. Never panics on what the server does: a server
/// that will not start, handshake, or that dies mid-run is a report saying so.
pub fn check(opts: &CheckOptions) -> CheckReport {
    check_with(opts, &mut |_| {})
}

/// `check`, showing each result to `seen` as soon as it is known (the CLI prints them as
/// they come on a terminal).
pub fn check_with(opts: &CheckOptions, seen: &mut dyn FnMut(&CheckResult)) -> CheckReport {
    let started = Instant::now();
    let prefetch = checks::Prefetch::of(|id| opts.selected(id));
    let mut ctx = Ctx::start(opts, &prefetch);
    let mut results = Vec::new();
    for c in checks::ALL {
        if !opts.selected(c.id) {
            continue;
        }
        let outcome = if let Some(why) = ctx.could_not_run.as_ref().filter(|_| c.needs.session) {
            checks::Outcome::skip(format!("not run: {why}"))
        } else if let Some(only) = c.needs.transport.filter(|t| *t != ctx.transport()) {
            checks::Outcome::skip(format!(
                "{} only: this server was reached over {}",
                only.as_str(),
                ctx.transport().as_str()
            ))
        } else if ctx.past_deadline() {
            ctx.bound = Some(Bound::Deadline);
            checks::Outcome::skip(format!(
                "not run: the run's deadline of {} s passed; raise it with --deadline",
                ctx.deadline_secs()
            ))
        } else if let Some(first) = exits_on_malformed(&ctx).filter(|_| c.input == Input::Malformed) {
            checks::Outcome::skip(format!(
                "not sent: the server exits on malformed input, as {first} found"
            ))
        } else {
            ctx.begin_step(c.id, c.input != Input::Valid);
            let outcome = (c.run)(&mut ctx);
            after_input(&mut ctx, c.input, outcome)
        };
        let result = c.result(outcome, &ctx.redactor);
        seen(&result);
        results.push(result);
    }
    ctx.finish(results, started.elapsed().as_millis() as u64)
}

/// The check whose malformed line first made the server exit, if one did.
fn exits_on_malformed(ctx: &Ctx<'_>) -> Option<&'static str> {
    ctx.restarts.iter().copied().find(|id| {
        checks::ALL
            .iter()
            .any(|k| k.id == *id && k.input == Input::Malformed)
    })
}

/// A server that died of what a check sent is a fail of that check, and is started again
/// for the checks that remain.
fn after_input(ctx: &mut Ctx<'_>, input: Input, outcome: checks::Outcome) -> checks::Outcome {
    if input == Input::Valid || ctx.rpc.is_none() || ctx.alive() {
        return outcome;
    }
    let id = ctx.current_step();
    let again = if ctx.restart_after(id) {
        "it was started again for the remaining checks"
    } else {
        "it was not started again"
    };
    checks::Outcome {
        status: Status::Fail,
        message: format!("{} (the server exited on this input; {again})", outcome.message),
        payload: outcome.payload,
    }
}
