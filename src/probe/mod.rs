//! The probe: spawn a stdio server, run the handshake of the chosen era, list every page of
//! tools, optionally call one tool, tear the server down, and say pass, fail or
//! inconclusive. Never guesses other message formats: silence is recorded and the probe stops.

mod call;
pub mod expect;
pub(crate) mod handshake;
pub mod outcome;
pub mod record;
mod tools;

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clock;
use crate::redact::Redactor;
use crate::rpc::{NoReply, Rpc};
use crate::wire::Closing;
use crate::wire::stdio::ExitInfo;
use outcome::*;

pub use crate::mcp::EraChoice;

/// The opt-in tool call.
#[derive(Debug, Clone)]
pub struct CallRequest {
    pub tool: String,
    pub arguments: Value,
    pub timeout: Duration,
}

/// Everything a probe needs to know.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub server: crate::target::ServerOptions,
    pub call: Option<CallRequest>,
}

impl ProbeOptions {
    /// Options with the documented defaults for `command`.
    pub fn new(command: Vec<String>) -> Self {
        ProbeOptions {
            server: crate::target::ServerOptions::new(command),
            call: None,
        }
    }
}

/// A probe step that could not go on; its reasons are already in the observation.
pub(crate) struct Stop;

pub(crate) type Step<T> = Result<T, Stop>;

/// The state of one probe run.
pub(crate) struct Run<'o> {
    opts: &'o ProbeOptions,
    endpoint: Option<crate::target::Endpoint>,
    rpc: Option<Rpc>,
    /// What every request of the session carries (`_meta` in the modern era).
    envelope: crate::session::Envelope,
    /// The handshake's `instructions`, as replied (redacted), for the surface.
    instructions: Option<Value>,
    obs: Observation,
    redactor: Redactor,
    started: Instant,
    stderr_total: u64,
    /// Redacted stderr tail of the last process torn down.
    last_stderr_tail: Option<String>,
    /// Survivors of an earlier process of this run (the discovery process under `auto`).
    earlier_survivors: Vec<u32>,
    /// Escapees of an earlier process of this run (already redacted).
    earlier_escapees: Vec<crate::wire::descendants::Escapee>,
}

/// Probes a server. Never panics on anything the server does; every outcome is an
/// observation.
pub fn probe(opts: &ProbeOptions) -> Observation {
    let stamp = clock::now();
    let host = crate::evidence::block::host_name();
    let (prepared, launched) = opts.server.prepare();
    let era = match opts.server.era {
        EraChoice::Modern => Era::Modern,
        _ => Era::Legacy,
    };
    let requested = opts
        .server
        .protocol_version
        .clone()
        .unwrap_or_else(|| era.default_version().to_string());
    let obs = Observation {
        stamp,
        host,
        target: prepared.target,
        era,
        era_detection: None,
        protocol_requested: requested.clone(),
        protocol_version: None,
        server: None,
        capabilities: None,
        tools: None,
        surface: None,
        expected: None,
        call: None,
        verdict: Verdict::Fail,
        reasons: Vec::new(),
        silence: None,
        bound: None,
        traffic: Default::default(),
        stderr_bytes: 0,
        stderr_tail: None,
        timings: Timings::default(),
        teardown: None,
        http: None,
    };
    let mut redactor = prepared.redactor;
    if let Some(call) = &opts.call {
        // A secret-named key of the call's arguments is a secret of the run.
        redactor.learn_json(&call.arguments);
    }
    let mut run = Run {
        opts,
        endpoint: None,
        rpc: None,
        envelope: crate::session::Envelope {
            era,
            version: requested.clone(),
            client: crate::mcp::CLIENT_NAME,
        },
        instructions: None,
        obs,
        redactor,
        started: Instant::now(),
        stderr_total: 0,
        last_stderr_tail: None,
        earlier_survivors: Vec::new(),
        earlier_escapees: Vec::new(),
    };

    let digest = run.resolve(launched);
    let _ = run.session();
    run.finish(digest)
}

impl Run<'_> {
    /// Finds the program; starts hashing it on a thread.
    fn resolve(
        &mut self,
        launched: Result<crate::target::Launch, String>,
    ) -> Option<crate::target::DigestJob> {
        match launched {
            Ok(launch) => {
                self.endpoint = Some(launch.endpoint);
                launch.digest
            }
            Err(e) if self.opts.server.url.is_some() => {
                self.fail(ReasonCode::BadUrl, e);
                None
            }
            Err(e) if self.opts.server.command.is_empty() => {
                self.fail(ReasonCode::NoCommand, e);
                None
            }
            Err(e) => {
                self.fail(ReasonCode::ProgramNotFound, e);
                None
            }
        }
    }

    fn session(&mut self) -> Step<()> {
        if self.endpoint.is_none() {
            return Err(Stop);
        }
        self.handshake()?;
        self.list_tools()?;
        if self.obs.reasons.is_empty() {
            self.obs.verdict = Verdict::Pass;
        }
        if let Some(req) = &self.opts.call {
            let req = req.clone();
            self.call(&req);
        }
        Ok(())
    }

    /// The bound on the whole run.
    fn deadline(&self) -> Duration {
        self.opts.server.deadline.unwrap_or(crate::target::PROBE_DEADLINE)
    }

    pub(crate) fn rpc(&mut self) -> &mut Rpc {
        self.rpc.as_mut().expect("spawned")
    }

    /// Records a failure reason.
    pub(crate) fn fail(&mut self, code: ReasonCode, message: impl Into<String>) -> Stop {
        self.obs.verdict = Verdict::Fail;
        // Redact in full, then bound: a cut must never leave part of a secret behind.
        let message = crate::text::truncate(&self.redactor.text(&message.into()), 1024);
        self.obs.reasons.push(Reason::new(code, message));
        Stop
    }

    /// Records why a request got no reply, as a fail or (silence) inconclusive.
    pub(crate) fn no_reply(&mut self, step: &str, why: NoReply) -> Stop {
        match why {
            NoReply::Timeout { waited_ms } => {
                let wire = self.rpc.as_ref().expect("spawned").wire();
                let stats = wire.stats();
                self.obs.silence = Some(Silence {
                    step: step.to_string(),
                    waited_ms,
                    stdout_bytes: stats.output_bytes,
                    stderr_bytes: stats.stderr_bytes,
                    alive: wire.exit().is_none(),
                });
                self.obs.verdict = Verdict::Inconclusive;
                let noise = self.rpc().traffic.noise_count;
                let detail = if noise > 0 {
                    format!(" ({noise} stdout lines were not JSON-RPC messages)")
                } else {
                    String::new()
                };
                let reason = if self.rpc().past_deadline() {
                    self.obs.bound = Some(Bound::Deadline);
                    Reason::new(
                        ReasonCode::Deadline,
                        format!(
                            "the run's deadline of {} s passed while waiting {waited_ms} ms for {step}{detail}; raise it with --deadline",
                            self.deadline().as_secs_f64()
                        ),
                    )
                } else {
                    self.obs.bound = Some(Bound::Timeout);
                    let alive = if self.opts.server.url.is_some() {
                        "" // an HTTP server has no process to watch
                    } else {
                        " while the server was alive"
                    };
                    Reason::new(
                        ReasonCode::NoReply,
                        format!(
                            "no reply to {step} within {waited_ms} ms{alive}{detail}; raise the wait with --timeout"
                        ),
                    )
                };
                self.obs.reasons.push(reason);
                Stop
            }
            NoReply::Exited => {
                let status = self.rpc().wire().exit();
                let how = match status {
                    Some(ExitInfo::Code(c)) => format!("exited with code {c}"),
                    Some(ExitInfo::Signal(s)) => format!("was killed by signal {s}"),
                    None => "exited".to_string(),
                };
                self.fail(
                    ReasonCode::ServerExited,
                    format!("the server {how} before replying to {step}"),
                )
            }
            NoReply::StdoutClosed => self.fail(
                ReasonCode::StdoutClosed,
                format!("the server closed its stdout before replying to {step}"),
            ),
            NoReply::Oversize { bytes } => self.fail(
                ReasonCode::LineTooLong,
                format!(
                    "a stdout line grew past {} bytes ({bytes} seen) while waiting for {step}",
                    self.opts.server.max_line
                ),
            ),
            NoReply::StdinClosed => self.fail(
                ReasonCode::StdinClosed,
                format!("the server's stdin was closed; could not send {step}"),
            ),
            NoReply::TooComplex { bytes } => self.fail(
                ReasonCode::ReplyTooComplex,
                format!(
                    "the reply to {step} ({bytes} bytes) holds more values than one parse may build ({} MiB of structure); it was not kept",
                    crate::json_budget::PARSE_BUDGET >> 20
                ),
            ),
            NoReply::DuplicateIdKey { keys } => self.fail(
                ReasonCode::DuplicateIdKey,
                format!("a reply while waiting for {step} has the `id` key {keys} times: which request it answers is ambiguous"),
            ),
            NoReply::Refused(r) if r.status == 401 => self.auth_required(step, *r),
            NoReply::Refused(r) if r.location.is_some() || (300..400).contains(&r.status) => self.fail(
                ReasonCode::HttpRedirect,
                format!(
                    "{step} {}",
                    crate::rpc::describe_no_reply(&NoReply::Refused(r))
                ),
            ),
            NoReply::Refused(r) => self.fail(
                ReasonCode::HttpStatus,
                format!(
                    "{step} {}",
                    crate::rpc::describe_no_reply(&NoReply::Refused(r))
                ),
            ),
            NoReply::Unreachable { kind } => self.fail(
                ReasonCode::Unreachable,
                format!("could not connect to send {step} ({kind}): check that the server is running and the URL's host and port"),
            ),
            NoReply::TlsFailed(t) => self.fail(
                ReasonCode::TlsFailed,
                format!("could not send {step}: {}", t.sentence()),
            ),
            NoReply::Lost { why } => self.fail(ReasonCode::ReplyLost, format!("{step} {}", crate::rpc::describe_no_reply(&NoReply::Lost { why }))),
            NoReply::ErrorWithNullId { code, message } => {
                let code = code.map_or_else(|| "without a code".to_string(), |c| format!("{c}"));
                self.fail(
                    ReasonCode::ErrorWithNullId,
                    format!("while waiting for {step} the server sent an error with id null: {code}: {message}"),
                )
            }
        }
    }

    /// A 401: credentials are missing or refused. Inconclusive, with the challenge and, from
    /// the endpoint's own origin, the protected resource metadata.
    fn auth_required(&mut self, step: &str, r: crate::wire::Refusal) -> Stop {
        if let Some(crate::target::Endpoint::Http(t)) = &self.endpoint {
            let deadline = self.started + self.deadline();
            let seen = crate::http::auth::inspect(&t.url, &t.options.tls, &r.www_authenticate, deadline);
            self.obs.http.get_or_insert_with(Default::default).auth = Some(seen);
        }
        self.obs.verdict = Verdict::Inconclusive;
        let given = if self.opts.server.headers.is_empty() {
            "no credentials were given: pass them with --header-env 'Authorization=VAR' (the value read from $VAR)"
        } else {
            "the credentials given were refused: check the --header/--header-env values"
        };
        let message = format!("{step} was answered HTTP 401 (authorization required); {given}");
        self.obs.reasons.push(Reason::new(
            ReasonCode::AuthRequired,
            crate::text::truncate(&self.redactor.text(&message), 1024),
        ));
        Stop
    }

    /// Tears down the current process (if any), keeping its stderr byte count.
    pub(crate) fn stop_server(&mut self) -> Option<crate::wire::stdio::Teardown> {
        let mut rpc = self.rpc.take()?;
        let traffic = std::mem::take(&mut rpc.traffic);
        self.obs.traffic = merge_traffic(std::mem::take(&mut self.obs.traffic), traffic);
        let stderr = rpc.wire().stderr();
        let mut teardown = match rpc.close(self.opts.server.grace) {
            Closing::Process(td) => td,
            Closing::Http(end) => {
                self.obs
                    .http
                    .get_or_insert_with(Default::default)
                    .sessions
                    .push(*end);
                return None;
            }
        };
        for e in &mut teardown.escapees {
            e.argv = self.redactor.argv(&e.argv);
        }
        if let Some(Ok(log)) = stderr.as_ref().map(|s| s.lock()) {
            self.stderr_total += log.bytes;
            let mut tail = self.redactor.text(&log.text_tail());
            if log.bytes as usize > crate::wire::stdio::STDERR_HEAD {
                // The tail starts mid-line: drop that partial line, which could hold the end
                // of a secret the redactor no longer recognises.
                let cut = tail.find('\n').map_or(tail.len(), |i| i + 1);
                tail.drain(..cut);
            }
            self.last_stderr_tail = Some(tail);
        }
        Some(teardown)
    }

    fn finish(mut self, digest: Option<crate::target::DigestJob>) -> Observation {
        if let Some(rpc) = &self.rpc {
            self.obs.timings.first_stdout = rpc.wire().stats().first_output_ms;
        }
        if let Some(mut teardown) = self.stop_server() {
            teardown
                .survivors
                .extend(std::mem::take(&mut self.earlier_survivors));
            let mut escapees = std::mem::take(&mut self.earlier_escapees);
            escapees.append(&mut teardown.escapees);
            escapees.sort_by_key(|e| e.pid);
            escapees.truncate(crate::wire::descendants::MAX_LISTED);
            teardown.escapees = escapees;
            self.obs.teardown = Some(teardown);
        }
        self.obs.stderr_bytes = self.stderr_total;
        if let Some(handle) = digest {
            match handle.join() {
                Ok(Ok((hex, source))) => {
                    self.obs.target.program_sha256 = Some(hex);
                    self.obs.target.program_sha256_source = Some(source);
                }
                Ok(Err(e)) => {
                    self.fail(
                        ReasonCode::ProgramUnreadable,
                        format!("cannot read the program to hash it: {e}"),
                    );
                }
                Err(_) => {}
            }
        }
        // Everything the server chose can carry a secret it echoed: mask it everywhere.
        let r = &self.redactor;
        if let Some(s) = &mut self.obs.server {
            s.name = r.text(&s.name);
            s.version = s.version.as_deref().map(|v| r.text(v));
        }
        if let Some(c) = &mut self.obs.capabilities {
            r.json(c);
        }
        if let Some(t) = &mut self.obs.tools {
            for n in &mut t.names {
                *n = r.text(n);
            }
        }
        self.obs.era_detection = self.obs.era_detection.as_deref().map(|d| r.text(d));
        if let Some(h) = &mut self.obs.http {
            h.redact(r);
        }
        self.obs.timings.total = self.started.elapsed().as_millis() as u64;
        if self.obs.verdict == Verdict::Pass && !self.obs.reasons.is_empty() {
            self.obs.verdict = Verdict::Fail;
        }
        if self.obs.verdict != Verdict::Pass {
            self.obs.stderr_tail = self.last_stderr_tail.take();
        }
        self.obs
    }
}

pub(crate) fn merge_traffic(mut a: crate::rpc::Traffic, b: crate::rpc::Traffic) -> crate::rpc::Traffic {
    use crate::rpc::NOISE_KEEP;
    a.noise_count += b.noise_count;
    a.noise.extend(b.noise);
    a.noise.truncate(NOISE_KEEP);
    a.crlf_lines += b.crlf_lines;
    a.notification_count += b.notification_count;
    a.notifications.extend(b.notifications);
    a.notifications.truncate(32);
    a.server_request_count += b.server_request_count;
    a.server_requests.extend(b.server_requests);
    a.server_requests.truncate(32);
    a.unmatched_replies += b.unmatched_replies;
    a.answers_not_sent += b.answers_not_sent;
    a.max_line = a.max_line.max(b.max_line);
    a.messages += b.messages;
    a.array_lines += b.array_lines;
    a.log_messages += b.log_messages;
    a
}
