//! Transport checks, HTTP only: what the Streamable HTTP transport asks of a server beyond
//! JSON-RPC. Each check makes its own hand-made requests ([`crate::http::raw`]) beside the
//! main session, opening (and deleting) a session of its own where it needs one: an unknown
//! or deleted session gets 404, a bad `MCP-Protocol-Version` 400, a foreign `Origin` 403
//! (and, on loopback, a foreign `Host`: DNS rebinding), a wrong `Accept` 406, a wrong
//! `Content-Type` 415, a JSON-RPC batch a 4xx (batching was removed in 2025-06-18), and an
//! unparsable body a 400 whose body is a JSON-RPC error.

use crate::http::client::Dial;
use std::time::Instant;

use serde_json::{Value, json};

use super::Outcome;
use crate::check::session::Ctx;
use crate::http::HttpUrl;
use crate::http::message::{Method, SecretHeader};
use crate::http::raw::{RawReply, RawRequest, send};
use crate::mcp::{CLIENT_NAME, DEFAULT_LEGACY, DEFAULT_MODERN, Era};
use crate::text::truncate;

const ACCEPT: &str = "application/json, text/event-stream";
/// A session id no server gave: visible ASCII, UUID-shaped.
const UNKNOWN_SESSION: &str = "00000000-0000-4000-8000-6d6370772d78";
/// A host and origin no server serves.
const FOREIGN_HOST: &str = "mcp-witness.invalid";
const FOREIGN_ORIGIN: &str = "http://mcp-witness.invalid";

/// The endpoint, resolved, with the user's headers.
struct Http {
    url: HttpUrl,
    dial: Dial,
    secrets: Vec<SecretHeader>,
    era: Era,
    version: String,
    until: Instant,
}

impl Http {
    /// The endpoint of an HTTP run, or the skip that says why there is none.
    fn of(ctx: &Ctx<'_>) -> Result<Http, Outcome> {
        let Some(t) = ctx.http_target() else {
            return Err(Outcome::skip(
                "Streamable HTTP only: this server was reached over stdio or the HTTP+SSE transport of 2024-11-05",
            ));
        };
        let until = ctx.wait_until();
        let dial = Dial::resolve(&t.url, &t.options.tls, until).map_err(|e| Outcome::skip(format!("{e}")))?;
        let secrets = t
            .headers
            .iter()
            .filter_map(|(n, v)| SecretHeader::new(n, &v.0).ok())
            .collect();
        let version = ctx.protocol_version.clone().unwrap_or_else(|| match ctx.era {
            Era::Legacy => DEFAULT_LEGACY.into(),
            Era::Modern => DEFAULT_MODERN.into(),
        });
        Ok(Http {
            url: t.url.clone(),
            dial,
            secrets,
            era: ctx.era,
            version,
            until,
        })
    }

    fn send(&self, req: RawRequest<'_>) -> Result<RawReply, Outcome> {
        send(&self.url, &self.dial, &self.secrets, req, self.until)
            .map_err(|e| Outcome::skip(format!("the request got no reply: {e}")))
    }

    /// POSTs `body` as JSON with the right `Accept`, our fields and `extra`.
    fn post(&self, body: &Value, session: Option<&str>, extra: &[(&str, &str)]) -> Result<RawReply, Outcome> {
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        self.post_bytes(&bytes, "application/json", session, extra)
    }

    fn post_bytes(
        &self,
        bytes: &[u8],
        content_type: &str,
        session: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Result<RawReply, Outcome> {
        let mut fields: Vec<(&str, &str)> = Vec::new();
        if !extra.iter().any(|(n, _)| n.eq_ignore_ascii_case("Accept")) {
            fields.push(("Accept", ACCEPT));
        }
        if let Some(s) = session {
            fields.push(("Mcp-Session-Id", s));
        }
        if !extra
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("MCP-Protocol-Version"))
        {
            fields.push(("MCP-Protocol-Version", &self.version));
        }
        // `Host` replaces the URL's (never a second Host field).
        fields.extend(extra.iter().filter(|(n, _)| !n.eq_ignore_ascii_case("Host")));
        self.send(RawRequest {
            method: Method::Post,
            fields: &fields,
            host: extra
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("Host"))
                .map(|(_, v)| *v),
            body: Some((content_type, bytes)),
        })
    }

    /// The request that opens a session in the era in use: `initialize` (legacy) or
    /// `server/discover` (modern), as the first message a client sends.
    fn opening(&self, id: u64) -> (Value, &'static str) {
        match self.era {
            Era::Legacy => (
                json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                    "params": crate::mcp::initialize_params(DEFAULT_LEGACY, CLIENT_NAME)}),
                "initialize",
            ),
            Era::Modern => (
                json!({"jsonrpc": "2.0", "id": id, "method": "server/discover",
                    "params": {"_meta": crate::mcp::modern_meta_as(&self.version, CLIENT_NAME)}}),
                "server/discover",
            ),
        }
    }

    /// POSTs the opening request with `extra` fields (which may replace `Host` or `Accept`);
    /// a session it opened is deleted.
    fn open_with(&self, extra: &[(&str, &str)], content_type: &str) -> Result<RawReply, Outcome> {
        let (body, method) = self.opening(1);
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut extra = extra.to_vec();
        if self.era == Era::Modern {
            extra.push(("Mcp-Method", method));
        }
        let reply = self.post_bytes(&bytes, content_type, None, &extra)?;
        if let Some(sid) = &reply.session_id {
            self.delete(sid);
        }
        Ok(reply)
    }

    /// A legacy session of our own: `initialize`, then `notifications/initialized`. `None`
    /// when the server gave no session id.
    fn session(&self) -> Result<Option<String>, Outcome> {
        let (body, _) = self.opening(1);
        let reply = self.post(&body, None, &[("MCP-Protocol-Version", DEFAULT_LEGACY)])?;
        if !(200..300).contains(&reply.status) {
            return Err(Outcome::skip(format!(
                "the check's own initialize got {}",
                describe(&reply)
            )));
        }
        let Some(sid) = reply.session_id else {
            return Ok(None);
        };
        let _ = self.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            Some(&sid),
            &[],
        );
        Ok(Some(sid))
    }

    /// DELETEs a session; its status.
    fn delete(&self, sid: &str) -> Option<u16> {
        let fields = [
            ("Mcp-Session-Id", sid),
            ("MCP-Protocol-Version", self.version.as_str()),
        ];
        send(
            &self.url,
            &self.dial,
            &self.secrets,
            RawRequest {
                method: Method::Delete,
                fields: &fields,
                host: None,
                body: None,
            },
            self.until,
        )
        .ok()
        .map(|r| r.status)
    }
}

/// A reply in words: its status and the start of its body (server text, redacted and made
/// inert by the report).
fn describe(r: &RawReply) -> String {
    let body = String::from_utf8_lossy(&r.body);
    let body = body.trim();
    if body.is_empty() {
        format!("HTTP {}", r.status)
    } else {
        format!("HTTP {} ({})", r.status, truncate(body, 160))
    }
}

/// Whether a body is a JSON-RPC error: an object with `error.code` an integer.
fn json_rpc_error(body: &[u8]) -> Option<i64> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("error")?.get("code")?.as_i64()
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

fn legacy_only(h: &Http) -> Result<(), Outcome> {
    if h.era == Era::Modern {
        return Err(Outcome::skip(
            "legacy era only: the 2026-07-28 era has no sessions",
        ));
    }
    Ok(())
}

fn run(f: impl FnOnce() -> Result<Outcome, Outcome>) -> Outcome {
    f().unwrap_or_else(|o| o)
}

pub fn unknown_session(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        legacy_only(&h)?;
        let Some(own) = h.session()? else {
            return Ok(Outcome::skip(
                "the server gives no session id: it keeps no sessions",
            ));
        };
        let reply = h.post(&ping(2), Some(UNKNOWN_SESSION), &[]);
        h.delete(&own);
        let reply = reply?;
        Ok(match reply.status {
            404 => Outcome::pass("HTTP 404"),
            s if (200..300).contains(&s) => Outcome::fail(format!(
                "a request with a session id the server never gave got {}",
                describe(&reply)
            )),
            _ => Outcome::fail(format!(
                "a request with a session id the server never gave got {}, not 404: a client cannot tell it must start a new session",
                describe(&reply)
            )),
        })
    })
}

pub fn deleted_session(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        legacy_only(&h)?;
        let Some(own) = h.session()? else {
            return Ok(Outcome::skip(
                "the server gives no session id: it keeps no sessions",
            ));
        };
        match h.delete(&own) {
            Some(405) => {
                return Ok(Outcome::skip(
                    "the server does not let clients end sessions (DELETE got 405)",
                ));
            }
            Some(s) if (200..300).contains(&s) => {}
            Some(s) => {
                return Ok(Outcome::warn(format!(
                    "DELETE of the session got HTTP {s}, neither 2xx nor 405"
                )));
            }
            None => return Ok(Outcome::skip("DELETE of the session got no reply")),
        }
        let reply = h.post(&ping(2), Some(&own), &[])?;
        Ok(match reply.status {
            404 => Outcome::pass("HTTP 404 after DELETE"),
            _ => Outcome::fail(format!(
                "a request in a deleted session got {}, not 404",
                describe(&reply)
            )),
        })
    })
}

pub fn bad_protocol_version(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let bad = "1999-01-01";
        let (reply, own) = match h.era {
            Era::Legacy => {
                let own = h.session()?;
                let reply = h.post(&ping(2), own.as_deref(), &[("MCP-Protocol-Version", bad)]);
                (reply, own)
            }
            Era::Modern => {
                let body = json!({"jsonrpc": "2.0", "id": 2, "method": "ping",
                    "params": {"_meta": crate::mcp::modern_meta_as(bad, CLIENT_NAME)}});
                let reply = h.post(
                    &body,
                    None,
                    &[("MCP-Protocol-Version", bad), ("Mcp-Method", "ping")],
                );
                (reply, None)
            }
        };
        if let Some(own) = &own {
            h.delete(own);
        }
        let reply = reply?;
        Ok(match reply.status {
            400 => Outcome::pass("HTTP 400"),
            s if (200..300).contains(&s) => Outcome::fail(format!(
                "MCP-Protocol-Version {bad} was accepted ({})",
                describe(&reply)
            )),
            _ => Outcome::warn(format!(
                "MCP-Protocol-Version {bad} got {}, not 400",
                describe(&reply)
            )),
        })
    })
}

pub fn foreign_origin(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let reply = h.open_with(&[("Origin", FOREIGN_ORIGIN)], "application/json")?;
        Ok(match reply.status {
            403 => Outcome::pass("HTTP 403"),
            s if (200..300).contains(&s) => Outcome::fail(format!(
                "a request with Origin {FOREIGN_ORIGIN} was served ({}): a web page on any site can drive this server (DNS rebinding)",
                describe(&reply)
            )),
            _ => Outcome::warn(format!(
                "a request with Origin {FOREIGN_ORIGIN} got {}, not 403",
                describe(&reply)
            )),
        })
    })
}

/// Whether the URL's host is a loopback address or `localhost`.
fn loopback(url: &HttpUrl) -> bool {
    match &url.host {
        crate::http::url::Host::Ipv4(a) => a.is_loopback(),
        crate::http::url::Host::Ipv6(a) => a.is_loopback(),
        crate::http::url::Host::Name(n) => n == "localhost" || n.ends_with(".localhost"),
    }
}

pub fn foreign_host(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        if !loopback(&h.url) {
            return Ok(Outcome::skip(
                "only for a server on the loopback interface (DNS rebinding reaches local servers)",
            ));
        }
        let reply = h.open_with(&[("Host", FOREIGN_HOST)], "application/json")?;
        Ok(match reply.status {
            403 | 421 => Outcome::pass(format!("HTTP {}", reply.status)),
            s if (200..300).contains(&s) => Outcome::warn(format!(
                "a request with Host {FOREIGN_HOST} was served ({}): a DNS-rebinding page can reach this local server",
                describe(&reply)
            )),
            _ => Outcome::warn(format!(
                "a request with Host {FOREIGN_HOST} got {}, not 403",
                describe(&reply)
            )),
        })
    })
}

pub fn accept(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let reply = h.open_with(&[("Accept", "text/html")], "application/json")?;
        Ok(match reply.status {
            406 => Outcome::pass("HTTP 406"),
            s if (200..300).contains(&s) => Outcome::warn(format!(
                "a POST accepting only text/html was answered {}: a reply the client said it cannot read",
                describe(&reply)
            )),
            _ => Outcome::warn(format!(
                "a POST accepting only text/html got {}, not 406",
                describe(&reply)
            )),
        })
    })
}

pub fn content_type(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let reply = h.open_with(&[], "text/plain")?;
        Ok(match reply.status {
            415 => Outcome::pass("HTTP 415"),
            s if (200..300).contains(&s) => Outcome::fail(format!(
                "a JSON body sent as text/plain was served ({})",
                describe(&reply)
            )),
            s if (400..500).contains(&s) => Outcome::warn(format!(
                "a body sent as text/plain got {}, not 415",
                describe(&reply)
            )),
            _ => Outcome::fail(format!("a body sent as text/plain got {}", describe(&reply))),
        })
    })
}

pub fn batch(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let own = if h.era == Era::Legacy { h.session()? } else { None };
        let reply = h.post(&json!([ping(2), ping(3)]), own.as_deref(), &[]);
        if let Some(own) = &own {
            h.delete(own);
        }
        let reply = reply?;
        Ok(match reply.status {
            s if (400..500).contains(&s) => Outcome::pass(format!("HTTP {s}")),
            _ => Outcome::warn(format!(
                "a JSON-RPC batch got {}: batching was removed in 2025-06-18, a client of {} must not rely on it",
                describe(&reply),
                h.version
            )),
        })
    })
}

pub fn error_body(ctx: &mut Ctx<'_>) -> Outcome {
    run(|| {
        let h = Http::of(ctx)?;
        let own = if h.era == Era::Legacy { h.session()? } else { None };
        let mut extra: Vec<(&str, &str)> = Vec::new();
        if h.era == Era::Modern {
            extra.push(("Mcp-Method", "ping"));
        }
        let reply = h.post_bytes(
            b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": ",
            "application/json",
            own.as_deref(),
            &extra,
        );
        if let Some(own) = &own {
            h.delete(own);
        }
        let reply = reply?;
        if (200..300).contains(&reply.status) && json_rpc_error(&reply.body).is_some() {
            return Ok(Outcome::warn(format!(
                "an unparsable body got a JSON-RPC error with {}, not 400",
                describe(&reply)
            )));
        }
        Ok(match (reply.status, json_rpc_error(&reply.body)) {
            (400, Some(-32700)) => Outcome::pass("HTTP 400 with error -32700"),
            (400, Some(code)) => {
                Outcome::warn(format!("HTTP 400 with error {code}, not -32700 (Parse error)"))
            }
            (s, Some(_)) if (400..500).contains(&s) => Outcome::warn(format!(
                "{}: a JSON-RPC error, but not with 400",
                describe(&reply)
            )),
            (s, None) if (400..500).contains(&s) => Outcome::warn(format!(
                "{}: the body is not a JSON-RPC error, so a client can only show the status",
                describe(&reply)
            )),
            _ => Outcome::fail(format!("an unparsable body got {}", describe(&reply))),
        })
    })
}
