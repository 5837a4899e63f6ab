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
/// they come on a terminal). Results are shown and reported in the registry's order, but a
/// check that reads a side run whose result is not in yet waits while the checks after it
/// run on the main session, and is run as soon as its side run is in (at the end at the
/// latest): a server whose start is CPU-bound starts its side runs while the main session
/// is already checked, instead of holding it up.
pub fn check_with(opts: &CheckOptions, seen: &mut dyn FnMut(&CheckResult)) -> CheckReport {
    let started = Instant::now();
    let prefetch = checks::Prefetch::of(|id| opts.selected(id));
    let mut ctx = Ctx::start(opts, &prefetch);
    let mut results: Vec<Option<CheckResult>> = Vec::new();
    let mut waiting: Vec<(usize, &checks::Check)> = Vec::new();
    let mut shown = 0;
    for c in checks::ALL {
        if !opts.selected(c.id) {
            continue;
        }
        if side_runs_ready(&mut ctx, c) {
            results.push(Some(run_check(&mut ctx, c)));
        } else {
            waiting.push((results.len(), c));
            results.push(None);
        }
        let mut still = Vec::new();
        for (slot, w) in waiting {
            if side_runs_ready(&mut ctx, w) {
                results[slot] = Some(run_check(&mut ctx, w));
            } else {
                still.push((slot, w));
            }
        }
        waiting = still;
        shown = show_in_order(&results, shown, seen);
    }
    for (slot, w) in waiting {
        results[slot] = Some(run_check(&mut ctx, w));
    }
    show_in_order(&results, shown, seen);
    ctx.finish(
        results.into_iter().flatten().collect(),
        started.elapsed().as_millis() as u64,
    )
}

/// Whether every side run `c` reads has its result in (or will never have one).
fn side_runs_ready(ctx: &mut Ctx<'_>, c: &checks::Check) -> bool {
    c.needs.side_runs.iter().all(|v| ctx.side_run_ready(v))
}

/// Shows the results from `from` on, up to the first one not known yet; returns where the
/// next call starts.
fn show_in_order(results: &[Option<CheckResult>], from: usize, seen: &mut dyn FnMut(&CheckResult)) -> usize {
    let mut next = from;
    while let Some(Some(r)) = results.get(next) {
        seen(r);
        next += 1;
    }
    next
}

/// Runs one check (or says why it was not run) and grades it.
fn run_check(ctx: &mut Ctx<'_>, c: &checks::Check) -> CheckResult {
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
    } else if let Some(first) = exits_on_malformed(ctx).filter(|_| c.input == Input::Malformed) {
        checks::Outcome::skip(format!(
            "not sent: the server exits on malformed input, as {first} found"
        ))
    } else {
        ctx.begin_step(c.id, c.input != Input::Valid);
        let outcome = (c.run)(ctx);
        after_input(ctx, c.input, outcome)
    };
    c.result(outcome, &ctx.redactor)
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
