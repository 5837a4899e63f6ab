//! The probe's handshake: the session engine's (`crate::session`), then the probe's gates on
//! what the server answered. Legacy: `protocolVersion` must be a version this tool knows and
//! `serverInfo` must name the server. Modern: `capabilities` must be an object and
//! `resultType`, when present, `complete`.

use serde_json::Value;

use super::outcome::ReasonCode;
use super::{Run, Step, Stop};
use crate::evidence::canonical;
use crate::mcp::{CLIENT_NAME, Era, LEGACY_VERSIONS};
use crate::rpc::Rpc;
use crate::session::{Connector, Handshake, HandshakeError, Plan};
use crate::text::truncate;

impl Run<'_> {
    /// Opens the session of the chosen era and applies the probe's gates.
    pub(super) fn handshake(&mut self) -> Step<()> {
        let opts = self.opts;
        let plan = Plan {
            choice: opts.server.era,
            version: opts.server.protocol_version.as_deref(),
            timeout: opts.server.timeout,
            client: CLIENT_NAME,
        };
        let (rpc, hs, outcome) = crate::session::open(self, &plan);
        self.rpc = rpc;
        self.obs.era = hs.era;
        self.obs.era_detection = hs.detection.clone();
        self.obs.protocol_requested = hs.requested.clone();
        self.obs.protocol_version = hs.version.clone();
        self.obs.server = hs.server.clone();
        self.obs.capabilities = hs.capabilities().map(canonical::foreign_bounded);
        self.obs.timings.discover = hs.discover_ms;
        self.obs.timings.initialize = hs.initialize_ms;
        self.envelope = hs.envelope();
        self.instructions = hs.result.as_ref().and_then(|r| r.get("instructions")).cloned();
        if let Err(e) = outcome {
            return Err(self.handshake_failed(e));
        }
        match hs.era {
            Era::Legacy => self.gate_initialize(&hs),
            Era::Modern => self.gate_discover(&hs),
        }
    }

    /// Records why the handshake opened no session.
    fn handshake_failed(&mut self, e: HandshakeError) -> Stop {
        let code = match &e {
            HandshakeError::Connect(_) if self.opts.server.url.is_some() => ReasonCode::Unreachable,
            HandshakeError::Connect(_) => ReasonCode::SpawnFailed,
            HandshakeError::NoReply { step, why } => return self.no_reply(step, why.clone()),
            HandshakeError::ErrorReply { .. } => ReasonCode::InitializeError,
            HandshakeError::Malformed { .. } => ReasonCode::InitializeMalformed,
            HandshakeError::NotModern(_) => ReasonCode::DiscoverFailed,
            HandshakeError::NoCommonVersion { .. } => ReasonCode::NoCommonVersion,
        };
        self.fail(code, e.sentence())
    }

    /// The legacy gates: a known `protocolVersion` and a named server.
    fn gate_initialize(&mut self, hs: &Handshake) -> Step<()> {
        let result = hs.result.as_ref();
        let mut ok = true;
        match result
            .and_then(|r| r.get("protocolVersion"))
            .and_then(Value::as_str)
        {
            None => {
                self.fail(
                    ReasonCode::MissingProtocolVersion,
                    "the initialize result has no string protocolVersion",
                );
                ok = false;
            }
            Some(v) if !LEGACY_VERSIONS.contains(&v) => {
                self.fail(
                    ReasonCode::UnknownProtocolVersion,
                    format!(
                        "the server answered protocolVersion `{}`, which this tool does not know",
                        truncate(v, 64)
                    ),
                );
                ok = false;
            }
            Some(_) => {}
        }
        if hs.server.is_none() {
            self.fail(
                ReasonCode::MissingServerInfo,
                "the initialize result has no serverInfo with a string name",
            );
            ok = false;
        }
        if ok { Ok(()) } else { Err(Stop) }
    }

    /// The modern gates: a `capabilities` object and a complete result.
    fn gate_discover(&mut self, hs: &Handshake) -> Step<()> {
        if !hs.capabilities().is_some_and(Value::is_object) {
            return Err(self.fail(
                ReasonCode::DiscoverMalformed,
                "the server/discover result has no capabilities object",
            ));
        }
        if let Some(rt) = hs
            .result
            .as_ref()
            .and_then(|r| r.get("resultType"))
            .and_then(Value::as_str)
            && rt != "complete"
        {
            return Err(self.fail(
                ReasonCode::DiscoverMalformed,
                format!("server/discover returned resultType `{}`", truncate(rt, 64)),
            ));
        }
        Ok(())
    }
}

impl Connector for Run<'_> {
    /// A fresh connection: a server process spawned, or the HTTP endpoint resolved.
    fn connect(&mut self) -> Result<Rpc, String> {
        let endpoint = self.endpoint.as_ref().ok_or("the server was not resolved")?;
        let deadline = self.started + self.deadline();
        // A reply stream is read as long as the longest wait for a reply may last.
        let reply_wait = match &self.opts.call {
            Some(c) => c.timeout.max(self.opts.server.timeout),
            None => self.opts.server.timeout,
        };
        let wire = endpoint.connect(reply_wait, deadline)?;
        let mut rpc = Rpc::new(wire);
        rpc.redactor = self.redactor.clone();
        rpc.deadline = Some(deadline);
        Ok(rpc)
    }

    /// The HTTP+SSE fallback: the transport is recorded as `http_sse` once it opens; a failed
    /// attempt's facts join the record.
    fn connect_legacy_sse(&mut self) -> Option<Result<Rpc, String>> {
        let endpoint = self.endpoint.as_ref()?;
        let deadline = self.started + self.deadline();
        let attempt = endpoint.connect_legacy_sse(self.opts.server.timeout, deadline)?;
        Some(match attempt {
            Ok(wire) => {
                self.obs.target.transport = crate::target::Transport::HttpSse;
                let mut rpc = Rpc::new(wire);
                rpc.redactor = self.redactor.clone();
                rpc.deadline = Some(deadline);
                Ok(rpc)
            }
            Err(crate::wire::http::SseFallbackFailed { why, facts }) => {
                if let Some(facts) = facts {
                    self.obs.http.get_or_insert_with(Default::default).sessions.push(
                        crate::http::SessionEnd {
                            delete: crate::http::DeleteOutcome::NoSession,
                            facts,
                            readers_left: 0,
                        },
                    );
                }
                Err(why)
            }
        })
    }

    /// Tears down the discovery process of `auto`, keeping its survivors and escapees for
    /// the run's teardown record.
    fn retire(&mut self, rpc: Rpc) -> String {
        self.rpc = Some(rpc);
        match self.stop_server() {
            Some(td) => {
                self.earlier_survivors.extend(td.survivors.iter().copied());
                self.earlier_escapees.extend(td.escapees.iter().cloned());
                format!(
                    " (that process ended by {} after {} ms)",
                    td.ended_by, td.after_ms
                )
            }
            None => String::new(),
        }
    }
}
