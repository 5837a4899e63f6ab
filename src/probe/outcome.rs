//! What a probe observed, and its verdict with machine-readable reasons.

use serde_json::Value;

use crate::clock::Stamp;
use crate::rpc::Traffic;
use crate::wire::stdio::Teardown;

/// The probe's verdict: it covers the handshake and the tool list only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The server stayed silent past the timeout while alive.
    Inconclusive,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// The exit code of `probe`: 0 pass, 1 fail, 3 inconclusive.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Inconclusive => 3,
        }
    }
}

/// One reason for a fail or inconclusive verdict: a stable code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: &'static str,
    pub message: String,
}

impl Reason {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Reason {
            code,
            message: message.into(),
        }
    }
}

pub use crate::mcp::{Era, ServerInfo};

/// The bound that ended a run early: one wait's `--timeout`, or the whole run's `--deadline`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Timeout,
    Deadline,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Timeout => "timeout",
            Bound::Deadline => "deadline",
        }
    }
}

/// Symptoms of a silent server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Silence {
    /// The request that got no reply, e.g. `initialize`.
    pub step: String,
    pub waited_ms: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub alive: bool,
}

impl Silence {
    /// As a block records it.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "step": self.step,
            "waited_ms": self.waited_ms,
            "stdout_bytes": self.stdout_bytes,
            "stderr_bytes": self.stderr_bytes,
            "alive": self.alive,
        })
    }
}

/// The tool list as replied, across every page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolsSeen {
    /// Number of entries in the replies' `tools` arrays.
    pub count: u64,
    /// String names in reply order.
    pub names: Vec<String>,
    pub pages: u64,
    /// False when a pathological list was cut to keep the block bounded.
    pub names_complete: bool,
}

/// The opt-in call of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSeen {
    pub tool: String,
    /// `ok`, `tool_error`, `rpc_error`, `silent`, `not_listed`, `exited`, `malformed`.
    pub outcome: &'static str,
    pub argument_names: Vec<String>,
    pub content_types: Vec<String>,
    pub preview: Option<String>,
    pub result_sha256: Option<String>,
    pub error: Option<(i64, String)>,
    pub elapsed_ms: Option<u64>,
}

/// The command as it was run, with secrets redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSeen {
    pub command: Vec<String>,
    pub program: Option<String>,
    pub program_sha256: Option<String>,
    pub cwd: String,
    pub env_names: Vec<String>,
    /// The era asked for (what was used is `Observation::era`).
    pub era: crate::mcp::EraChoice,
    /// `--protocol-version`, when given.
    pub protocol_version: Option<String>,
    /// The transport asked for (`stdio`, or `streamable_http` for a URL; `http_sse` once
    /// the fallback to the 2024-11-05 transport was taken).
    pub transport: crate::target::Transport,
    /// The redacted URL of an HTTP target.
    pub url: Option<String>,
    /// The names of the request headers given (never their values), in order.
    pub header_names: Vec<String>,
}

/// Durations in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timings {
    pub first_stdout: Option<u64>,
    pub discover: Option<u64>,
    pub initialize: Option<u64>,
    pub tools_list: Option<u64>,
    pub call: Option<u64>,
    pub total: u64,
}

/// Everything one probe saw.
#[derive(Debug, Clone)]
pub struct Observation {
    pub stamp: Stamp,
    pub host: String,
    pub target: TargetSeen,
    pub era: Era,
    /// With `--era auto`: what the discovery attempt got, e.g. `error -32601`.
    pub era_detection: Option<String>,
    pub protocol_requested: String,
    pub protocol_version: Option<String>,
    pub server: Option<ServerInfo>,
    pub capabilities: Option<Value>,
    pub tools: Option<ToolsSeen>,
    pub call: Option<CallSeen>,
    pub verdict: Verdict,
    pub reasons: Vec<Reason>,
    pub silence: Option<Silence>,
    /// Which bound ended the run early, if one did.
    pub bound: Option<Bound>,
    pub traffic: Traffic,
    pub stderr_bytes: u64,
    /// Redacted stderr tail, kept for fail and inconclusive only.
    pub stderr_tail: Option<String>,
    pub timings: Timings,
    pub teardown: Option<Teardown>,
    /// What the HTTP transport showed (an HTTP target only).
    pub http: Option<HttpSeen>,
}

/// The HTTP side of a probe: each connection's facts and how it ended, and, after a 401,
/// what the server said about its authorization.
#[derive(Debug, Clone, Default)]
pub struct HttpSeen {
    /// One per connection, in order (under `--era auto`, the discovery connection first).
    pub sessions: Vec<crate::http::SessionEnd>,
    pub auth: Option<AuthSeen>,
}

impl HttpSeen {
    /// Masks secrets in the server's text kept here.
    pub fn redact(&mut self, r: &crate::redact::Redactor) {
        for s in &mut self.sessions {
            for x in &mut s.facts.exchanges {
                x.content_type = x.content_type.as_deref().map(|c| r.text(c));
            }
        }
        if let Some(a) = &mut self.auth {
            // A challenge is `Scheme param=...`: only the run's own secrets are masked in it.
            a.challenges = a.challenges.iter().map(|c| r.literals(c)).collect();
            if let Some(doc) = &mut a.metadata {
                r.json(doc);
            }
        }
    }
}

pub use crate::http::auth::AuthSeen;
