//! The Streamable HTTP endpoint as a [`Wire`]: [`HttpEndpointWire`] puts the session engine's
//! messages on [`crate::http::HttpWire`] and turns what comes back into [`WireEvent`]s. It
//! owns the mapping between the two: which JSON-RPC id each HTTP exchange carried (so a
//! refused POST fails its own request), how a non-2xx reply is delivered (a JSON-RPC error
//! body answers its request, as the 2026-07-28 era detection needs; anything else, and any
//! 401, is a [`Refusal`]), and the 2026-07-28 request headers mirrored from the message
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`). The same wire runs the HTTP+SSE
//! transport of 2024-11-05 ([`crate::http::legacy_sse`]) when the session falls back to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::framing::Frame;
use super::{Closing, ExitInfo, Grace, Refusal, Sent, StderrLog, Transport, Wire, WireEvent, WireStats};
use crate::http::legacy_sse::LegacySse;
use crate::http::message::SecretHeader;
use crate::http::{self, HttpError, HttpOptions, HttpStatus, HttpUrl, HttpWire};
use crate::mcp::meta;

/// Bytes of a refused reply's body kept for the record.
const REFUSAL_BODY: usize = 512;
/// Request ids remembered per exchange (the facts record at most this many exchanges).
const MAX_IDS: usize = 4096;
/// How long connecting and writing one message may take at least.
const MIN_SEND: Duration = Duration::from_millis(500);
/// How long the DELETE at the end may take at least.
const MIN_CLOSE: Duration = Duration::from_secs(1);

/// Why the HTTP+SSE fallback opened no session, and the facts of the attempt (the GET's
/// status and content type), when it got as far as a request.
#[derive(Debug, Clone)]
pub struct SseFallbackFailed {
    pub why: String,
    pub facts: Option<http::HttpFacts>,
}

/// The transport under the wire.
enum Inner {
    Streamable(HttpWire),
    LegacySse(LegacySse),
}

/// A Streamable HTTP endpoint (or an HTTP+SSE one) seen as a wire.
pub struct HttpEndpointWire {
    inner: Inner,
    /// The JSON-RPC id each recorded exchange carried.
    ids: HashMap<usize, Value>,
}

impl std::fmt::Debug for HttpEndpointWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("HttpEndpointWire");
        match &self.inner {
            Inner::Streamable(w) => d.field("streamable", w),
            Inner::LegacySse(w) => d.field("legacy_sse", w),
        };
        d.finish_non_exhaustive()
    }
}

impl HttpEndpointWire {
    /// Resolves the host (no connection yet: each message makes its own).
    pub fn connect(
        url: HttpUrl,
        headers: Vec<(String, String)>,
        options: HttpOptions,
    ) -> Result<HttpEndpointWire, HttpError> {
        Ok(HttpEndpointWire {
            inner: Inner::Streamable(HttpWire::connect(url, headers, options)?),
            ids: HashMap::new(),
        })
    }

    /// Opens an HTTP+SSE (2024-11-05) session: the GET stream, then its `endpoint` (waited
    /// for until `endpoint_wait`). The stream is read until `stream_deadline` at most. On
    /// failure, why, and the facts of the attempt for the record.
    pub fn connect_legacy_sse(
        url: HttpUrl,
        headers: Vec<(String, String)>,
        options: HttpOptions,
        endpoint_wait: Instant,
        stream_deadline: Instant,
    ) -> Result<HttpEndpointWire, SseFallbackFailed> {
        let failed = |why: String, facts| SseFallbackFailed { why, facts };
        url.require_plain().map_err(|e| failed(e.to_string(), None))?;
        let headers = headers
            .iter()
            .map(|(n, v)| SecretHeader::new(n, v))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed(HttpError::Header(e).to_string(), None))?;
        match LegacySse::open(&url, headers, options, endpoint_wait, stream_deadline) {
            Ok(w) => Ok(HttpEndpointWire {
                inner: Inner::LegacySse(w),
                ids: HashMap::new(),
            }),
            Err((e, facts)) => Err(failed(e.to_string(), Some(facts))),
        }
    }

    fn post(&mut self, message: Vec<u8>, deadline: Instant) -> Sent {
        // A caller that will not wait for room (an answer to a server request, sent with a
        // deadline of now) still needs a connection made: that gets a short bound.
        let deadline = deadline.max(Instant::now() + MIN_SEND);
        let peek: Option<Value> = serde_json::from_slice(&message).ok();
        let extra = peek.as_ref().map(modern_headers).unwrap_or_default();
        let id = peek
            .as_ref()
            .filter(|m| m.get("method").is_some())
            .and_then(|m| m.get("id"))
            .cloned();
        let sent = match &mut self.inner {
            Inner::Streamable(w) => w.send_with(message, &extra, deadline),
            Inner::LegacySse(w) => w.send(message, deadline),
        };
        match sent {
            http::Sent::Posted { exchange } => {
                if let (Some(i), Some(id)) = (exchange, id)
                    && self.ids.len() < MAX_IDS
                {
                    self.ids.insert(i, id);
                }
                Sent::Sent
            }
            http::Sent::Gone(kind) => Sent::Unreachable(kind),
            http::Sent::TimedOut => Sent::Unreachable(std::io::ErrorKind::TimedOut),
            http::Sent::TlsFailed(t) => Sent::TlsFailed(t),
            http::Sent::Closed => Sent::Closed,
            http::Sent::Full => Sent::Full,
        }
    }

    /// A POST of a Streamable HTTP session that carried no request (its exchange is known
    /// and has no id). The HTTP+SSE stream (exchange 0, a GET) carries every reply.
    fn carries_no_request(&self, exchange: Option<usize>) -> bool {
        matches!(self.inner, Inner::Streamable(_)) && exchange.is_some_and(|i| !self.ids.contains_key(&i))
    }

    fn id_of(&self, exchange: Option<usize>) -> Option<Value> {
        exchange.and_then(|i| self.ids.get(&i).cloned())
    }

    /// A non-2xx reply: a JSON-RPC error in its body answers the request (with our id put
    /// in when the server gave none; a raw message's answer keeps `id: null`, as the RPC
    /// layer expects of an unparsable line's answer); otherwise, and always for a 401, a
    /// refusal.
    fn status(&self, s: HttpStatus) -> WireEvent {
        let id = self.id_of(s.exchange);
        if s.status != 401
            && let Some(line) = error_answer(&s.body, id.as_ref().unwrap_or(&Value::Null))
        {
            return WireEvent::Frame(Frame::Line(line));
        }
        WireEvent::Refused(Refusal {
            id,
            status: s.status,
            content_type: s.content_type,
            www_authenticate: s.www_authenticate,
            location: s.location,
            body: crate::text::cut(&String::from_utf8_lossy(&s.body), REFUSAL_BODY).to_string(),
        })
    }
}

/// The 2026-07-28 headers a message mirrors: present only when its `_meta` names a protocol
/// version (a modern request), so legacy messages go out as before.
fn modern_headers(message: &Value) -> Vec<(&'static str, String)> {
    let Some(version) = message
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(meta::PROTOCOL_VERSION))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let mut out = vec![("MCP-Protocol-Version", version.to_string())];
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        out.push(("Mcp-Method", method.to_string()));
        let key = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            _ => None,
        };
        if let Some(name) = key
            .and_then(|k| message.get("params")?.get(k))
            .and_then(Value::as_str)
        {
            out.push(("Mcp-Name", name.to_string()));
        }
    }
    out
}

/// A JSON-RPC error object in a refused body, as the reply to `id`; `None` when the body is
/// not one, or answers another request.
fn error_answer(body: &[u8], id: &Value) -> Option<Vec<u8>> {
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    let error = msg.get("error")?;
    if !error.get("code").is_some_and(Value::is_i64) {
        return None;
    }
    match msg.get("id") {
        None | Some(Value::Null) => {
            msg.insert("id".into(), id.clone());
        }
        Some(other) if other == id => {}
        Some(_) => return None,
    }
    msg.entry("jsonrpc").or_insert_with(|| "2.0".into());
    serde_json::to_vec(&msg).ok()
}

impl Wire for HttpEndpointWire {
    fn transport(&self) -> Transport {
        Transport::Http
    }

    fn send(&mut self, message: Vec<u8>, deadline: Instant) -> Sent {
        self.post(message, deadline)
    }

    /// The bytes go out as the body, as they are.
    fn send_raw(&mut self, bytes: Vec<u8>, deadline: Instant) -> Sent {
        self.post(bytes, deadline)
    }

    fn next(&mut self, deadline: Instant) -> Option<WireEvent> {
        loop {
            let event = match &mut self.inner {
                Inner::Streamable(w) => w.next(deadline)?,
                Inner::LegacySse(w) => w.next(deadline)?,
            };
            return Some(match event {
                http::WireEvent::Message(bytes) => WireEvent::Frame(Frame::Line(bytes)),
                // Not an object: the RPC layer records it as noise, as it would a stdout line.
                http::WireEvent::Noise(bytes, _) => WireEvent::Frame(Frame::Line(bytes)),
                http::WireEvent::Oversize(n) => WireEvent::Frame(Frame::Oversize(n)),
                // Events of other types carry no JSON-RPC message.
                http::WireEvent::OtherEvent { .. } => continue,
                http::WireEvent::Status(s) => self.status(s),
                // A notification's or response's exchange that broke answers nothing: its
                // facts record it, and no request waits for it.
                http::WireEvent::Broken { exchange, .. } | http::WireEvent::Gone { exchange, .. }
                    if self.carries_no_request(exchange) =>
                {
                    continue;
                }
                http::WireEvent::Broken { exchange, error } => WireEvent::Lost {
                    id: self.id_of(exchange),
                    why: format!("the reply stream broke off: {error}"),
                },
                http::WireEvent::Gone { exchange, kind } => WireEvent::Lost {
                    id: self.id_of(exchange),
                    why: format!("the connection went away before a reply ({kind})"),
                },
            });
        }
    }

    fn exit(&self) -> Option<ExitInfo> {
        None
    }

    fn output_closed(&self) -> bool {
        false
    }

    fn stats(&self) -> WireStats {
        let facts = match &self.inner {
            Inner::Streamable(w) => w.facts(),
            Inner::LegacySse(w) => w.facts(),
        };
        WireStats {
            output_bytes: facts.exchanges.iter().map(|x| x.body_bytes).sum(),
            stderr_bytes: 0,
            first_output_ms: None,
        }
    }

    fn stderr(&self) -> Option<Arc<Mutex<StderrLog>>> {
        None
    }

    fn close(self: Box<Self>, grace: Grace) -> Closing {
        let deadline = Instant::now() + grace.eof.max(MIN_CLOSE);
        let end = match self.inner {
            Inner::Streamable(w) => w.close(deadline),
            Inner::LegacySse(w) => w.close(deadline),
        };
        Closing::Http(Box::new(end))
    }

    fn negotiated(&mut self, version: &str) {
        if let Inner::Streamable(w) = &mut self.inner {
            w.set_protocol_version(version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_modern_message_mirrors_its_version_method_and_name_and_a_legacy_one_nothing() {
        let m = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "_meta": {meta::PROTOCOL_VERSION: "2026-07-28"}}});
        assert_eq!(
            modern_headers(&m),
            [
                ("MCP-Protocol-Version", "2026-07-28".to_string()),
                ("Mcp-Method", "tools/call".to_string()),
                ("Mcp-Name", "echo".to_string()),
            ]
        );
        let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}});
        assert!(modern_headers(&legacy).is_empty());
    }

    #[test]
    fn an_error_body_without_an_id_answers_the_request_and_one_for_another_id_does_not() {
        let line = error_answer(
            br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"x"}}"#,
            &json!(3),
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["id"], 3);
        assert_eq!(v["error"]["code"], -32000);
        assert!(error_answer(br#"{"id":4,"error":{"code":1,"message":"x"}}"#, &json!(3)).is_none());
        assert!(error_answer(b"Bad Request", &json!(3)).is_none());
        let raw = error_answer(br#"{"error":{"code":-32700,"message":"x"}}"#, &Value::Null).unwrap();
        assert_eq!(serde_json::from_slice::<Value>(&raw).unwrap()["id"], Value::Null);
        assert!(error_answer(br#"{"error":"text"}"#, &json!(3)).is_none());
    }
}
