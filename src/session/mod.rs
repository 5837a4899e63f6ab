//! One client session, the same for probe, check and drive: the handshake of the chosen era
//! (legacy `initialize`, modern `server/discover` with its -32022 version retry, or `auto`,
//! which falls back to legacy on a fresh connection), the request envelope of the era, and
//! the paginated walk of a list. What each caller makes of the result (probe's gates,
//! check's findings, drive's steps) stays with the caller.

mod handshake;
mod listing;

pub(crate) use handshake::{Handshake, HandshakeError, Plan, open};
pub(crate) use listing::{ListSpec, ListStop, Listing, MAX_PAGES, walk};

use serde_json::{Value, json};

use crate::mcp::{Era, modern_meta_as};
use crate::rpc::Rpc;

/// Where fresh connections come from: `auto` needs a second one when the first server does
/// not speak the modern era.
pub(crate) trait Connector {
    /// Opens a fresh connection (stdio: spawns the server), or says why it could not.
    fn connect(&mut self) -> Result<Rpc, String>;
    /// Ends a connection the handshake is done with; returns how it ended, in words, for the
    /// record (e.g. ` (that process ended by stdin_eof after 3 ms)`), or an empty string.
    fn retire(&mut self, rpc: Rpc) -> String;
    /// Opens a connection over the HTTP+SSE transport of 2024-11-05, the fallback when an
    /// HTTP endpoint refuses the initialize POST; `None` where there is no such fallback
    /// (stdio).
    fn connect_legacy_sse(&mut self) -> Option<Result<Rpc, String>> {
        None
    }
}

/// What every request of a session carries: in the modern era, `_meta` with the protocol
/// version and the client's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope {
    pub era: Era,
    /// The protocol version in use.
    pub version: String,
    /// The client name given to the server.
    pub client: &'static str,
}

impl Envelope {
    /// `params` as the era wants them sent: unchanged in the legacy era; in the modern era
    /// an object with `_meta` added (an object `_meta` already there keeps its other keys).
    pub fn wrap(&self, params: Option<Value>) -> Option<Value> {
        if self.era != Era::Modern {
            return params;
        }
        let mut p = params.unwrap_or_else(|| json!({}));
        if let Some(obj) = p.as_object_mut() {
            let meta = modern_meta_as(&self.version, self.client);
            match obj.get_mut("_meta").and_then(Value::as_object_mut) {
                Some(slot) => {
                    if let Value::Object(meta) = meta {
                        slot.extend(meta);
                    }
                }
                None => {
                    obj.insert("_meta".into(), meta);
                }
            }
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_request_is_sent_as_given_and_a_modern_one_carries_meta() {
        let legacy = Envelope {
            era: Era::Legacy,
            version: "2025-11-25".into(),
            client: "c",
        };
        assert_eq!(legacy.wrap(None), None);
        let modern = Envelope {
            era: Era::Modern,
            version: "2026-07-28".into(),
            client: "c",
        };
        let p = modern
            .wrap(Some(json!({"cursor": "x", "_meta": {"k": 1}})))
            .unwrap();
        assert_eq!(p["cursor"], "x");
        assert_eq!(p["_meta"]["k"], 1);
        assert_eq!(p["_meta"][crate::mcp::meta::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(p["_meta"][crate::mcp::meta::CLIENT_INFO]["name"], "c");
        assert!(modern.wrap(None).unwrap()["_meta"].is_object());
    }
}
