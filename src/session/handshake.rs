//! The handshake of each era, and `auto`. Legacy: `initialize`, then
//! `notifications/initialized`. Modern: `server/discover`, retried once with a version the
//! server names in a -32022 error, then the version both sides speak is chosen from
//! `supportedVersions`. Auto: modern first; a server that does not answer it as a modern
//! server gets a legacy handshake on a fresh connection, as the specification asks.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Connector, Envelope};
use crate::mcp::code::UNSUPPORTED_VERSION;
use crate::mcp::{DEFAULT_LEGACY, DEFAULT_MODERN, Era, EraChoice, MODERN_VERSIONS, ServerInfo, meta};
use crate::rpc::{NoReply, Reply, Rpc};
use crate::text::truncate;

/// What the caller asks of the handshake.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan<'a> {
    pub choice: EraChoice,
    /// `--protocol-version`, when given.
    pub version: Option<&'a str>,
    /// Bound on each wait for a reply.
    pub timeout: Duration,
    /// The client name given to the server.
    pub client: &'static str,
}

impl Plan<'_> {
    /// The version a legacy `initialize` asks for: the one named, unless it is a modern one.
    fn legacy_version(&self) -> String {
        match self.version {
            Some(v) if Era::of_version(v) != Some(Era::Modern) => v.to_string(),
            _ => DEFAULT_LEGACY.to_string(),
        }
    }

    /// The version `server/discover` carries first.
    fn modern_version(&self) -> String {
        self.version.unwrap_or(DEFAULT_MODERN).to_string()
    }
}

/// What the handshake learned, as far as it got.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    /// The era used, or known (a -32022 answer shows a modern server even when no version is
    /// shared).
    pub era: Era,
    /// The version last asked for.
    pub requested: String,
    /// The version in use: legacy, the `protocolVersion` answered (64 characters at most);
    /// modern, the one chosen from `supportedVersions`.
    pub version: Option<String>,
    /// The `initialize` or `server/discover` result, when it was an object.
    pub result: Option<Map<String, Value>>,
    pub server: Option<ServerInfo>,
    /// Under `auto`: what the discovery attempt showed.
    pub detection: Option<String>,
    pub discover_ms: Option<u64>,
    pub initialize_ms: Option<u64>,
    pub client: &'static str,
}

impl Handshake {
    fn new(plan: &Plan) -> Handshake {
        let era = match plan.choice {
            EraChoice::Legacy => Era::Legacy,
            EraChoice::Modern | EraChoice::Auto => Era::Modern,
        };
        let requested = match era {
            Era::Legacy => plan.legacy_version(),
            Era::Modern => plan.modern_version(),
        };
        Handshake {
            era,
            requested,
            version: None,
            result: None,
            server: None,
            detection: None,
            discover_ms: None,
            initialize_ms: None,
            client: plan.client,
        }
    }

    /// The request envelope of the session this handshake opened.
    pub fn envelope(&self) -> Envelope {
        Envelope {
            era: self.era,
            version: self.version.clone().unwrap_or_else(|| self.requested.clone()),
            client: self.client,
        }
    }

    /// The `capabilities` the server declared, if it sent an object or anything else there.
    pub fn capabilities(&self) -> Option<&Value> {
        self.result.as_ref()?.get("capabilities")
    }
}

/// Why the handshake did not open a session.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HandshakeError {
    /// No connection could be made (stdio: the program could not be started).
    Connect(String),
    /// The request of `step` got no reply.
    NoReply { step: &'static str, why: NoReply },
    /// The request of `step` got an error reply.
    ErrorReply {
        step: &'static str,
        code: i64,
        message: String,
    },
    /// The reply to `step` could not be used: why.
    Malformed { step: &'static str, why: String },
    /// `--era modern`: the server did not answer `server/discover` as a modern server.
    NotModern(String),
    /// A modern server with no version in common with this tool: the versions it named.
    NoCommonVersion {
        supported: Vec<String>,
        /// The server said so with a -32022 error (else in `supportedVersions`).
        by_error: bool,
    },
}

impl HandshakeError {
    /// The failure in one sentence (server text already redacted by the RPC layer).
    pub fn sentence(&self) -> String {
        match self {
            HandshakeError::Connect(why) => why.clone(),
            HandshakeError::NoReply { step, why } => format!("{step} {}", crate::rpc::describe_no_reply(why)),
            HandshakeError::ErrorReply { step, code, message } => {
                format!("{step} got error {code}: {}", truncate(message, 200))
            }
            HandshakeError::Malformed { step: _, why } => why.clone(),
            HandshakeError::NotModern(why) => format!("server/discover {why}"),
            HandshakeError::NoCommonVersion { supported, by_error } => {
                let listed: Vec<String> = supported.iter().take(8).map(|v| truncate(v, 64)).collect();
                if *by_error {
                    format!(
                        "no common version: server/discover answered -32022, the server supports {listed:?}; this tool speaks {MODERN_VERSIONS:?} in the modern era"
                    )
                } else {
                    format!(
                        "no common version: server/discover lists {listed:?}; this tool speaks {MODERN_VERSIONS:?}"
                    )
                }
            }
        }
    }
}

/// Runs the handshake of `plan` over connections from `conn`. Returns the connection it
/// ended on (none if it could not connect), what it learned, and whether a session is open.
pub(crate) fn open(
    conn: &mut dyn Connector,
    plan: &Plan,
) -> (Option<Rpc>, Handshake, Result<(), HandshakeError>) {
    let mut hs = Handshake::new(plan);
    let mut rpc = match conn.connect() {
        Ok(rpc) => rpc,
        Err(e) => return (None, hs, Err(HandshakeError::Connect(e))),
    };
    let outcome = match plan.choice {
        EraChoice::Legacy => legacy_or_sse(conn, &mut rpc, plan, &mut hs),
        EraChoice::Modern => match discover(&mut rpc, plan, &mut hs) {
            Ok(Discovered::Modern) => Ok(()),
            Ok(Discovered::NotModern(why)) => Err(HandshakeError::NotModern(why)),
            Err(e) => Err(e),
        },
        EraChoice::Auto => match discover(&mut rpc, plan, &mut hs) {
            Ok(Discovered::Modern) => {
                hs.detection
                    .get_or_insert_with(|| "server/discover answered".into());
                Ok(())
            }
            Ok(Discovered::NotModern(why)) => {
                let ended = conn.retire(rpc);
                let discover_ms = hs.discover_ms.or(Some(0));
                hs = Handshake::new(&Plan {
                    choice: EraChoice::Legacy,
                    ..*plan
                });
                hs.discover_ms = discover_ms;
                hs.detection = Some(format!(
                    "server/discover {why}; fell back to legacy on a fresh connection{ended}"
                ));
                rpc = match conn.connect() {
                    Ok(rpc) => rpc,
                    Err(e) => return (None, hs, Err(HandshakeError::Connect(e))),
                };
                legacy_or_sse(conn, &mut rpc, plan, &mut hs)
            }
            Err(e) => Err(e),
        },
    };
    // A modern session's messages carry the version in `_meta` (the HTTP wire mirrors it);
    // the wire learns it too, for messages that carry none (raw robustness input).
    if outcome.is_ok()
        && hs.era == Era::Modern
        && let Some(v) = &hs.version
    {
        rpc.negotiated(v);
    }
    (Some(rpc), hs, outcome)
}

/// The legacy handshake; when an HTTP endpoint refuses the initialize POST with 400, 404 or
/// 405 (the statuses the 2025-11-25 transport names), the same handshake over the HTTP+SSE
/// transport of 2024-11-05 on a fresh connection. When that cannot be opened either, the
/// first refusal stands (the attempt is in the connector's record).
fn legacy_or_sse(
    conn: &mut dyn Connector,
    rpc: &mut Rpc,
    plan: &Plan,
    hs: &mut Handshake,
) -> Result<(), HandshakeError> {
    let first = legacy(rpc, plan, hs);
    let refused = match &first {
        Err(HandshakeError::NoReply {
            why: NoReply::Refused(r),
            ..
        }) if matches!(r.status, 400 | 404 | 405) => r.status,
        _ => return first,
    };
    match conn.connect_legacy_sse() {
        Some(Ok(fresh)) => {
            let old = std::mem::replace(rpc, fresh);
            let ended = conn.retire(old);
            let note = format!(
                "initialize was refused with HTTP {refused}; fell back to the HTTP+SSE transport (2024-11-05){ended}"
            );
            hs.detection = Some(match hs.detection.take() {
                Some(d) => format!("{d}; {note}"),
                None => note,
            });
            legacy(rpc, plan, hs)
        }
        _ => first,
    }
}

/// `initialize`, then `notifications/initialized` once it answered with an object.
fn legacy(rpc: &mut Rpc, plan: &Plan, hs: &mut Handshake) -> Result<(), HandshakeError> {
    hs.era = Era::Legacy;
    let params = crate::mcp::initialize_params(&hs.requested, plan.client);
    let sent = Instant::now();
    let reply = rpc.request("initialize", Some(params), plan.timeout);
    hs.initialize_ms = Some(sent.elapsed().as_millis() as u64);
    let step = "initialize";
    match reply {
        Ok(Reply::Result(Value::Object(map))) => {
            hs.version = map
                .get("protocolVersion")
                .and_then(Value::as_str)
                .map(|v| v.chars().take(64).collect());
            hs.server = crate::mcp::server_info(map.get("serverInfo"));
            hs.result = Some(map);
            // From here on the wire may carry the version (HTTP: `MCP-Protocol-Version`).
            if let Some(v) = &hs.version {
                rpc.negotiated(v);
            }
            rpc.notify("notifications/initialized", None);
            Ok(())
        }
        Ok(Reply::Result(_)) => Err(HandshakeError::Malformed {
            step,
            why: "the initialize result is not an object".into(),
        }),
        Ok(Reply::Error { code, message, .. }) => Err(HandshakeError::ErrorReply { step, code, message }),
        Ok(Reply::Malformed(_)) => Err(HandshakeError::Malformed {
            step,
            why: "the initialize reply has neither a result nor a valid error".into(),
        }),
        Err(why) => Err(HandshakeError::NoReply { step, why }),
    }
}

enum Discovered {
    Modern,
    /// Why the server is not a modern one, for the record.
    NotModern(String),
}

/// `server/discover`; on -32022 naming a version this tool speaks, retried once with it.
fn discover(rpc: &mut Rpc, plan: &Plan, hs: &mut Handshake) -> Result<Discovered, HandshakeError> {
    let auto = plan.choice == EraChoice::Auto;
    let sent = Instant::now();
    let mut retried = false;
    loop {
        let params = json!({"_meta": crate::mcp::modern_meta_as(&hs.requested, plan.client)});
        let reply = rpc.request("server/discover", Some(params), plan.timeout);
        hs.discover_ms = Some(sent.elapsed().as_millis() as u64);
        match reply {
            Ok(Reply::Result(result)) => return discovered(result, hs),
            Ok(Reply::Error {
                code: UNSUPPORTED_VERSION,
                data,
                ..
            }) => {
                // Only a modern server answers -32022: the era is known even when no version
                // is shared.
                hs.era = Era::Modern;
                if auto {
                    hs.detection =
                        Some("server/discover answered -32022 (unsupported protocol version)".into());
                }
                let supported: Vec<String> = data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .take(64)
                            .map(|v| truncate(v, 64))
                            .collect()
                    })
                    .unwrap_or_default();
                match supported.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
                    Some(v) if !retried && *v != hs.requested => {
                        hs.requested = v.clone();
                        retried = true;
                    }
                    _ => {
                        return Err(HandshakeError::NoCommonVersion {
                            supported,
                            by_error: true,
                        });
                    }
                }
            }
            Ok(Reply::Error { code, message, .. }) => {
                return Ok(Discovered::NotModern(format!(
                    "got error {code}: {}",
                    truncate(&message, 200)
                )));
            }
            Ok(Reply::Malformed(_)) => return Ok(Discovered::NotModern("got a malformed reply".into())),
            Err(NoReply::Timeout { waited_ms }) if auto => {
                return Ok(Discovered::NotModern(format!(
                    "got no reply within {waited_ms} ms"
                )));
            }
            Err(NoReply::Exited) if auto => return Ok(Discovered::NotModern("made the server exit".into())),
            // A status without a JSON-RPC answer (HTTP 400, 404, 405...): not a modern
            // server. A 401 is no answer at all: credentials are missing.
            Err(NoReply::Refused(r)) if auto && r.status != 401 && r.location.is_none() => {
                return Ok(Discovered::NotModern(format!(
                    "was refused with HTTP {}",
                    r.status
                )));
            }
            Err(why) => {
                return Err(HandshakeError::NoReply {
                    step: "server/discover",
                    why,
                });
            }
        }
    }
}

/// A `server/discover` result: modern when it lists `supportedVersions`; the version in use
/// is the one asked for when listed, else the first listed one this tool speaks.
fn discovered(result: Value, hs: &mut Handshake) -> Result<Discovered, HandshakeError> {
    let Value::Object(map) = result else {
        return Ok(Discovered::NotModern(
            "returned a result that is not an object".into(),
        ));
    };
    let versions: Option<Vec<String>> = map.get("supportedVersions").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .take(64)
            .map(|v| truncate(v, 64))
            .collect()
    });
    let Some(versions) = versions else {
        return Ok(Discovered::NotModern(
            "returned a result without supportedVersions".into(),
        ));
    };
    hs.era = Era::Modern;
    hs.server = crate::mcp::server_info(map.get("_meta").and_then(|m| m.get(meta::SERVER_INFO)));
    hs.result = Some(map);
    if versions.contains(&hs.requested) {
        hs.version = Some(hs.requested.clone());
    } else if let Some(v) = versions.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
        hs.version = Some(v.clone());
        hs.requested = v.clone();
    } else {
        return Err(HandshakeError::NoCommonVersion {
            supported: versions,
            by_error: false,
        });
    }
    Ok(Discovered::Modern)
}
