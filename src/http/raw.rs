//! One hand-made HTTP request and the start of its reply, for the transport checks: they
//! send what a well-behaved client never would (an unknown session, a foreign `Origin` or
//! `Host`, a wrong `Accept` or `Content-Type`, a batch) and read the status and the first
//! message of the body. Everything is bounded: the head by [`HeadLimits`], the body kept to
//! [`MAX_BODY`] bytes, an event stream read only until its first message, all before the
//! caller's deadline. The session id a reply carries is handed to the caller (to end the
//! session it opened) and must never be recorded.

use std::time::Instant;

use super::client::{Conn, Dial, HttpError};
use super::message::{HeadLimits, Method, Request, SecretHeader};
use super::sse::{SseItem, SseParser};
use super::url::HttpUrl;

/// Bytes of a reply body kept.
pub const MAX_BODY: usize = 16 * 1024;

/// What one raw request got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawReply {
    pub status: u16,
    /// The media type, lower-cased, without parameters.
    pub media_type: Option<String>,
    /// The `Mcp-Session-Id` value (a secret of the server's: use it, never record it).
    pub session_id: Option<String>,
    /// The JSON body, or the first `message` event's data; at most [`MAX_BODY`] bytes.
    pub body: Vec<u8>,
}

/// A request to make: method, extra fields (ours), the user's headers, an optional `Host`
/// that replaces the URL's, and a body.
#[derive(Debug, Clone, Copy)]
pub struct RawRequest<'a> {
    pub method: Method,
    pub fields: &'a [(&'a str, &'a str)],
    pub host: Option<&'a str>,
    pub body: Option<(&'a str, &'a [u8])>,
}

/// Sends `req` to `url` (at `addrs`) with the user's `secrets`, and reads the reply's head
/// and the start of its body before `deadline`.
pub fn send(
    url: &HttpUrl,
    dial: &Dial,
    secrets: &[SecretHeader],
    req: RawRequest<'_>,
    deadline: Instant,
) -> Result<RawReply, HttpError> {
    let host = url.host_header();
    let bytes = Request {
        method: req.method,
        target: &url.target,
        host: req.host.unwrap_or(&host),
        fields: req.fields,
        secrets,
        body: req.body,
    }
    .to_bytes();
    let mut conn = Conn::open(dial, deadline)?;
    conn.write_all(&bytes, deadline)?;
    let head = conn.read_head(HeadLimits::default(), deadline)?;
    let media_type = head.media_type();
    let session_id = head
        .headers
        .get("mcp-session-id")
        .filter(|v| v.len() <= 1024)
        .map(str::to_string);
    let mut body = match conn.body(&head, req.method, u64::MAX) {
        Ok(b) => b,
        // The status is what a check reads; an unframable body is left unread.
        Err(_) => {
            return Ok(RawReply {
                status: head.status,
                media_type,
                session_id,
                body: Vec::new(),
            });
        }
    };
    let stream = media_type.as_deref() == Some("text/event-stream");
    let mut kept = Vec::new();
    let mut parser = SseParser::new(MAX_BODY + 16, MAX_BODY);
    let mut first: Option<Vec<u8>> = None;
    while let Ok(Some(piece)) = body.next_piece(deadline) {
        if stream {
            parser.push(&piece, &mut |item| {
                if let SseItem::Event(e) = item
                    && e.event == "message"
                    && !e.data.is_empty()
                    && first.is_none()
                {
                    first = Some(e.data);
                }
            });
            if first.is_some() {
                break;
            }
        } else {
            let room = MAX_BODY - kept.len();
            kept.extend_from_slice(&piece[..piece.len().min(room)]);
            if kept.len() >= MAX_BODY {
                break;
            }
        }
    }
    body.close();
    Ok(RawReply {
        status: head.status,
        media_type,
        session_id,
        body: if stream { first.unwrap_or_default() } else { kept },
    })
}
