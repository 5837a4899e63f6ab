//! The checker's vocabulary: a check's status and severity, its result, and the report.

use serde_json::{Value, json};

use crate::clock::Stamp;
use crate::probe::outcome::{Bound, ServerInfo, Silence, TargetSeen};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// Not applicable or not run (the reason says which).
    Skip,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        }
    }
}

/// How much a finding matters when it is not a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckResult {
    /// Stable dotted id, e.g. `protocol.unknown_method`.
    pub id: &'static str,
    pub title: &'static str,
    pub status: Status,
    pub severity: Severity,
    /// What was seen.
    pub message: String,
    /// What breaks and how to fix it.
    pub fix: &'static str,
    /// The spec section this check rests on.
    pub spec: &'static str,
    /// The offending payload, when there is one (bounded, redacted).
    pub payload: Option<String>,
}

impl CheckResult {
    /// The id's first component: protocol, pagination, schema, robustness, hygiene.
    pub fn group(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "group": self.group(),
            "title": self.title,
            "status": self.status.as_str(),
            "severity": self.severity.as_str(),
            "message": self.message,
            "fix": self.fix,
            "spec": self.spec,
            "payload": self.payload,
        })
    }
}

/// Counts of each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub pass: u64,
    pub warn: u64,
    pub fail: u64,
    pub skip: u64,
}

impl Counts {
    pub fn of(results: &[CheckResult]) -> Counts {
        let mut c = Counts::default();
        for r in results {
            match r.status {
                Status::Pass => c.pass += 1,
                Status::Warn => c.warn += 1,
                Status::Fail => c.fail += 1,
                Status::Skip => c.skip += 1,
            }
        }
        c
    }
}

/// Everything one `check` run found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub stamp: Stamp,
    pub host: String,
    pub target: TargetSeen,
    pub era: crate::mcp::Era,
    pub protocol_version: Option<String>,
    pub server: Option<ServerInfo>,
    pub results: Vec<CheckResult>,
    /// What a client sees, as digests, from the lists walked up front (none when the suite
    /// could not run).
    pub surface: Option<crate::surface::Surface>,
    /// Why the suite could not run (the server would not start or handshake), if so.
    pub could_not_run: Option<String>,
    /// Which bound ended the run early: the handshake's `--timeout` or the run's `--deadline`.
    pub bound: Option<Bound>,
    /// What the server processes showed.
    pub session: SessionSeen,
    pub duration_ms: u64,
    pub strict: bool,
}

/// What the server processes of a check run showed, recorded like an inconclusive probe's.
#[derive(Debug, Clone, Default)]
pub struct SessionSeen {
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// Redacted stderr tail, kept when the suite could not run or a server process died.
    pub stderr_tail: Option<String>,
    /// The handshake's unanswered wait, when that is what stopped the suite.
    pub silence: Option<Silence>,
    /// Checks after which the server had exited on their input and was started again.
    pub restarts: Vec<&'static str>,
    /// An HTTP server's main sessions (statuses, content types, session id shape, DELETE).
    pub http: Option<crate::probe::outcome::HttpSeen>,
}

impl CheckReport {
    pub fn counts(&self) -> Counts {
        Counts::of(&self.results)
    }

    /// 0 no failures (and no warnings under --strict), 1 findings, 2 could not run (or not to
    /// the end: the deadline passed).
    pub fn exit_code(&self) -> u8 {
        let c = self.counts();
        if self.could_not_run.is_some() || self.bound == Some(Bound::Deadline) {
            2
        } else if c.fail > 0 || (self.strict && c.warn > 0) {
            1
        } else {
            0
        }
    }

    /// The report's `target`: the command as run, or an HTTP server's redacted URL,
    /// transport and header names (its command, program and variables are then empty).
    fn target_json(&self) -> Value {
        let t = &self.target;
        let mut v = json!({
            "command": t.command,
            "program": t.program,
            "program_sha256": t.program_sha256,
            "cwd": t.cwd,
            "env": t.env_names,
        });
        if let (Some(url), Some(map)) = (&t.url, v.as_object_mut()) {
            map.insert("url".into(), json!(url));
            map.insert("transport".into(), json!(t.transport.as_str()));
            map.insert("headers".into(), json!(t.header_names));
        }
        v
    }

    /// The stable JSON report (`check --json`, schemas/check-report.schema.json).
    pub fn to_json(&self) -> Value {
        let c = self.counts();
        json!({
            "format": "mcp-witness/check-report/v1",
            "tool": {"name": "mcp-witness", "version": env!("CARGO_PKG_VERSION")},
            "observed_at": self.stamp.rfc3339,
            "target": self.target_json(),
            "era": self.era.as_str(),
            "protocol_version": self.protocol_version,
            "server": self.server.as_ref().map(|s| json!({"name": s.name, "version": s.version})),
            "could_not_run": self.could_not_run,
            "bound": self.bound.map(Bound::as_str),
            "strict": self.strict,
            "counts": {"pass": c.pass, "warn": c.warn, "fail": c.fail, "skip": c.skip},
            "duration_ms": self.duration_ms,
            "exit_code": self.exit_code(),
            "results": self.results.iter().map(CheckResult::to_json).collect::<Vec<_>>(),
        })
    }
}
