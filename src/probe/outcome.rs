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
    /// The process exit code that says this verdict (`cli::help::exit` names them).
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Inconclusive => 3,
        }
    }
}

/// Why a probe did not pass: a stable code, the same in the evidence, `--json` and the
/// README's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasonCode {
    NoCommand,
    ProgramNotFound,
    ProgramUnreadable,
    SpawnFailed,
    BadUrl,
    Unreachable,
    HttpStatus,
    HttpRedirect,
    ReplyLost,
    TlsFailed,
    AuthRequired,
    NoReply,
    Deadline,
    ServerExited,
    StdoutClosed,
    StdinClosed,
    LineTooLong,
    ReplyTooComplex,
    DuplicateIdKey,
    ErrorWithNullId,
    InitializeError,
    InitializeMalformed,
    MissingProtocolVersion,
    UnknownProtocolVersion,
    MissingServerInfo,
    DiscoverFailed,
    DiscoverMalformed,
    NoCommonVersion,
    ToolsListError,
    ToolsListMalformed,
    CursorRepeated,
    TooManyPages,
    NoTools,
    InvalidTool,
    SurfaceChanged,
}

impl ReasonCode {
    /// Every code, in the README's order.
    pub const ALL: &'static [ReasonCode] = &[
        ReasonCode::NoCommand,
        ReasonCode::ProgramNotFound,
        ReasonCode::ProgramUnreadable,
        ReasonCode::SpawnFailed,
        ReasonCode::BadUrl,
        ReasonCode::Unreachable,
        ReasonCode::HttpStatus,
        ReasonCode::HttpRedirect,
        ReasonCode::ReplyLost,
        ReasonCode::TlsFailed,
        ReasonCode::AuthRequired,
        ReasonCode::NoReply,
        ReasonCode::Deadline,
        ReasonCode::ServerExited,
        ReasonCode::StdoutClosed,
        ReasonCode::StdinClosed,
        ReasonCode::LineTooLong,
        ReasonCode::ReplyTooComplex,
        ReasonCode::DuplicateIdKey,
        ReasonCode::ErrorWithNullId,
        ReasonCode::InitializeError,
        ReasonCode::InitializeMalformed,
        ReasonCode::MissingProtocolVersion,
        ReasonCode::UnknownProtocolVersion,
        ReasonCode::MissingServerInfo,
        ReasonCode::DiscoverFailed,
        ReasonCode::DiscoverMalformed,
        ReasonCode::NoCommonVersion,
        ReasonCode::ToolsListError,
        ReasonCode::ToolsListMalformed,
        ReasonCode::CursorRepeated,
        ReasonCode::TooManyPages,
        ReasonCode::NoTools,
        ReasonCode::InvalidTool,
        ReasonCode::SurfaceChanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::NoCommand => "no_command",
            ReasonCode::ProgramNotFound => "program_not_found",
            ReasonCode::ProgramUnreadable => "program_unreadable",
            ReasonCode::SpawnFailed => "spawn_failed",
            ReasonCode::BadUrl => "bad_url",
            ReasonCode::Unreachable => "unreachable",
            ReasonCode::TlsFailed => "tls_failed",
            ReasonCode::HttpStatus => "http_status",
            ReasonCode::HttpRedirect => "http_redirect",
            ReasonCode::ReplyLost => "reply_lost",
            ReasonCode::AuthRequired => "auth_required",
            ReasonCode::NoReply => "no_reply",
            ReasonCode::Deadline => "deadline",
            ReasonCode::ServerExited => "server_exited",
            ReasonCode::StdoutClosed => "stdout_closed",
            ReasonCode::StdinClosed => "stdin_closed",
            ReasonCode::LineTooLong => "line_too_long",
            ReasonCode::ReplyTooComplex => "reply_too_complex",
            ReasonCode::DuplicateIdKey => "duplicate_id_key",
            ReasonCode::ErrorWithNullId => "error_with_null_id",
            ReasonCode::InitializeError => "initialize_error",
            ReasonCode::InitializeMalformed => "initialize_malformed",
            ReasonCode::MissingProtocolVersion => "missing_protocol_version",
            ReasonCode::UnknownProtocolVersion => "unknown_protocol_version",
            ReasonCode::MissingServerInfo => "missing_server_info",
            ReasonCode::DiscoverFailed => "discover_failed",
            ReasonCode::DiscoverMalformed => "discover_malformed",
            ReasonCode::NoCommonVersion => "no_common_version",
            ReasonCode::ToolsListError => "tools_list_error",
            ReasonCode::ToolsListMalformed => "tools_list_malformed",
            ReasonCode::CursorRepeated => "cursor_repeated",
            ReasonCode::TooManyPages => "too_many_pages",
            ReasonCode::NoTools => "no_tools",
            ReasonCode::InvalidTool => "invalid_tool",
            ReasonCode::SurfaceChanged => "surface_changed",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason for a fail or inconclusive verdict: a stable code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub code: ReasonCode,
    pub message: String,
}

impl Reason {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
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

/// What became of the opt-in call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A result with a content array.
    Ok,
    /// A result with `isError: true`.
    ToolError,
    /// A JSON-RPC error reply.
    RpcError,
    /// No reply within the call's timeout.
    Silent,
    /// The tool is not in the list: never called.
    NotListed,
    /// The probe failed before the call: never called.
    NotAttempted,
    /// The server went away before replying.
    Exited,
    /// A reply with neither a content array nor a valid error.
    Malformed,
}

impl CallOutcome {
    /// The word the evidence records.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::ToolError => "tool_error",
            CallOutcome::RpcError => "rpc_error",
            CallOutcome::Silent => "silent",
            CallOutcome::NotListed => "not_listed",
            CallOutcome::NotAttempted => "not_attempted",
            CallOutcome::Exited => "exited",
            CallOutcome::Malformed => "malformed",
        }
    }
}

/// The opt-in call of one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSeen {
    pub tool: String,
    pub outcome: CallOutcome,
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
    /// Whether the digest was computed this run or taken from the digest cache.
    pub program_sha256_source: Option<crate::digest_cache::Source>,
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
    /// What a client sees, as digests: every tool and its parts, and the instructions.
    pub surface: Option<crate::surface::Surface>,
    /// With `--expect`: the block the surface was compared with, and what differed.
    pub expected: Option<super::expect::Expected>,
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

#[cfg(test)]
mod tests {
    use super::ReasonCode;

    /// The backticked words of the README table that follows `heading`.
    pub(crate) fn readme_table_codes(heading: &str) -> Vec<String> {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
        let table = readme
            .split(heading)
            .nth(1)
            .unwrap_or_else(|| panic!("README has {heading}"));
        let mut codes = Vec::new();
        for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let first = line.split('|').nth(1).unwrap_or_default();
            codes.extend(first.split('`').skip(1).step_by(2).map(str::to_string));
        }
        codes
    }

    #[test]
    fn the_readme_lists_every_reason_code_and_no_other() {
        let listed = readme_table_codes("| code | meaning |");
        let known: Vec<String> = ReasonCode::ALL.iter().map(|c| c.as_str().to_string()).collect();
        assert_eq!(listed, known);
    }
}
