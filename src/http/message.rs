//! HTTP/1.1 messages as bytes: the request we write, and the parsing of a response head
//! (status line and header fields) under bounds, plus the body framing it announces.
//!
//! Limits: HTTP/1.x only (no HTTP/2, no upgrade). Obsolete line folding in a response head is
//! refused as malformed. Header values from the server are kept as (lossy) UTF-8 text; the
//! caller decides what to record and makes it inert before printing it. No compression: a
//! `Content-Encoding` other than `identity` is for the caller to report as unsupported.

use std::fmt;

/// Bounds on one response head.
#[derive(Debug, Clone, Copy)]
pub struct HeadLimits {
    /// Bytes of the whole head (status line, fields, line ends).
    pub max_head: usize,
    /// Header fields.
    pub max_headers: usize,
    /// Bytes of one line.
    pub max_line: usize,
}

impl Default for HeadLimits {
    fn default() -> Self {
        HeadLimits {
            max_head: 64 * 1024,
            max_headers: 128,
            max_line: 16 * 1024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// A header field given by the user (a credential, typically). Its value is a secret: it is
/// written on the wire and nowhere else, and `Debug` shows the name only.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretHeader {
    name: String,
    value: String,
}

impl fmt::Debug for SecretHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: [REDACTED]", self.name)
    }
}

/// Header names the client writes itself; a user header may not replace them, as they decide
/// the framing or the session.
const OWN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "te",
    "upgrade",
    "expect",
];

/// Why a user header was refused. Only the name is ever shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// The name is empty or has a character a header name cannot have.
    BadName(String),
    /// The value holds a CR, LF or NUL (or another control but TAB).
    BadValue(String),
    /// The client writes this header itself.
    Reserved(String),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::BadName(n) => write!(
                f,
                "header name {:?} is not a valid HTTP token: use letters, digits and -",
                crate::inert::inert(n)
            ),
            HeaderError::BadValue(n) => write!(
                f,
                "the value of header {n} holds a line break or a control character: give it on one line"
            ),
            HeaderError::Reserved(n) => write!(
                f,
                "header {n} is set by mcp-witness itself and cannot be given: remove it"
            ),
        }
    }
}

impl std::error::Error for HeaderError {}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl SecretHeader {
    pub fn new(name: &str, value: &str) -> Result<SecretHeader, HeaderError> {
        let shown: String = name.chars().take(64).collect();
        if !is_token(name) || name.len() > 256 {
            return Err(HeaderError::BadName(shown));
        }
        if OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(HeaderError::Reserved(shown));
        }
        if value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) || value.len() > 16 * 1024 {
            return Err(HeaderError::BadValue(shown));
        }
        Ok(SecretHeader {
            name: name.to_string(),
            value: value.trim_matches([' ', '\t']).to_string(),
        })
    }
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// One request to write.
pub struct Request<'a> {
    pub method: Method,
    /// `/path?query`.
    pub target: &'a str,
    /// The `Host` value.
    pub host: &'a str,
    /// Fields we choose (`Accept`, `Mcp-Session-Id`, ...), written as given: the caller
    /// builds them from checked values only.
    pub fields: &'a [(&'a str, &'a str)],
    /// The user's fields.
    pub secrets: &'a [SecretHeader],
    /// `Content-Type` and bytes.
    pub body: Option<(&'a str, &'a [u8])>,
}

impl Request<'_> {
    /// The request bytes. `Connection: close`: one exchange per connection (a server that
    /// ignores it is still framed, never read to its close). No `Accept-Encoding` (identity),
    /// no `Expect`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.map_or(0, |b| b.1.len()));
        let line = |out: &mut Vec<u8>, name: &str, value: &str| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        out.extend_from_slice(self.method.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        line(&mut out, "Host", self.host);
        line(
            &mut out,
            "User-Agent",
            concat!("mcp-witness/", env!("CARGO_PKG_VERSION")),
        );
        for (n, v) in self.fields {
            line(&mut out, n, v);
        }
        for h in self.secrets {
            line(&mut out, &h.name, &h.value);
        }
        line(&mut out, "Connection", "close");
        match self.body {
            Some((content_type, bytes)) => {
                line(&mut out, "Content-Type", content_type);
                line(&mut out, "Content-Length", &bytes.len().to_string());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(bytes);
            }
            None => {
                if self.method == Method::Post {
                    line(&mut out, "Content-Length", "0");
                }
                out.extend_from_slice(b"\r\n");
            }
        }
        out
    }
}

/// Response header fields, names lower-cased, in arrival order (repeats kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// The first value of `name` (lower-case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
    /// Every value of `name` (lower-case), in order.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed status line and its header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub headers: Headers,
}

impl ResponseHead {
    /// The media type of `Content-Type`, lower-cased, without parameters.
    pub fn media_type(&self) -> Option<String> {
        self.headers
            .get("content-type")
            .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
    }
}

/// Something wrong with a response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadError {
    /// The status line is not `HTTP/1.x NNN reason`.
    StatusLine,
    /// A field line without a colon, with a bad name, or folded.
    FieldLine,
    LineTooLong,
    HeadTooLarge,
    TooManyHeaders,
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HeadError::StatusLine => "the server's reply does not start with an HTTP/1.x status line",
            HeadError::FieldLine => "the server's reply has a malformed header line",
            HeadError::LineTooLong => "the server's reply has a header line over the length bound",
            HeadError::HeadTooLarge => "the server's reply head is over the size bound",
            HeadError::TooManyHeaders => "the server's reply has more header fields than the bound",
        })
    }
}

/// Parses `HTTP/1.x NNN [reason]` (the line without its end).
pub fn parse_status_line(line: &[u8]) -> Result<u16, HeadError> {
    let rest = line.strip_prefix(b"HTTP/1.").ok_or(HeadError::StatusLine)?;
    match rest {
        [minor, b' ', a, b, c, tail @ ..]
            if minor.is_ascii_digit()
                && [a, b, c].iter().all(|d| d.is_ascii_digit())
                && (tail.is_empty() || tail[0] == b' ') =>
        {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err(HeadError::StatusLine),
    }
}

/// Parses `name: value` (the line without its end): the name lower-cased, the value trimmed.
pub fn parse_field_line(line: &[u8]) -> Result<(String, String), HeadError> {
    if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
        return Err(HeadError::FieldLine); // obsolete folding
    }
    let colon = line.iter().position(|b| *b == b':').ok_or(HeadError::FieldLine)?;
    let name = std::str::from_utf8(&line[..colon]).map_err(|_| HeadError::FieldLine)?;
    if !is_token(name) {
        return Err(HeadError::FieldLine);
    }
    let value = String::from_utf8_lossy(line[colon + 1..].trim_ascii()).into_owned();
    Ok((name.to_ascii_lowercase(), value))
}

/// How a response body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// No body at all (204, 304, 1xx, or a reply to HEAD).
    None,
    Length(u64),
    Chunked,
    /// Neither: the body ends when the server closes (bounded by the deadline and size).
    Close,
}

/// Why a head announces a body we cannot frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FramingError {
    /// `Transfer-Encoding` whose last coding is not `chunked` (or that stacks codings).
    TransferEncoding(String),
    /// `Content-Length` not a number, or several that differ.
    ContentLength,
}

/// The body framing the head announces (RFC 9112 §6.3).
pub fn framing(head: &ResponseHead, method: Option<Method>) -> Result<Framing, FramingError> {
    if matches!(head.status, 100..=199 | 204 | 304) || method.is_none() {
        return Ok(Framing::None);
    }
    let codings: Vec<String> = head
        .headers
        .all("transfer-encoding")
        .flat_map(|v| v.split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty())
        .collect();
    if !codings.is_empty() {
        return if codings == ["chunked"] {
            Ok(Framing::Chunked)
        } else {
            let shown: String = codings.join(", ").chars().take(64).collect();
            Err(FramingError::TransferEncoding(shown))
        };
    }
    let mut length = None;
    for v in head.headers.all("content-length") {
        for part in v.split(',') {
            let part = part.trim();
            if part.is_empty() || part.len() > 19 || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(FramingError::ContentLength);
            }
            let n: u64 = part.parse().map_err(|_| FramingError::ContentLength)?;
            if length.is_some_and(|l| l != n) {
                return Err(FramingError::ContentLength);
            }
            length = Some(n);
        }
    }
    Ok(length.map_or(Framing::Close, Framing::Length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_request_carries_host_accept_type_length_and_user_headers() {
        let secret = SecretHeader::new("Authorization", "Bearer abc").unwrap();
        let req = Request {
            method: Method::Post,
            target: "/mcp?x=1",
            host: "[::1]:8080",
            fields: &[("Accept", "application/json, text/event-stream")],
            secrets: std::slice::from_ref(&secret),
            body: Some(("application/json", b"{}")),
        };
        let text = String::from_utf8(req.to_bytes()).unwrap();
        assert!(text.starts_with("POST /mcp?x=1 HTTP/1.1\r\nHost: [::1]:8080\r\n"));
        assert!(text.contains("\r\nAccept: application/json, text/event-stream\r\n"));
        assert!(text.contains("\r\nAuthorization: Bearer abc\r\n"));
        assert!(text.contains("\r\nContent-Type: application/json\r\n"));
        assert!(text.ends_with("\r\nContent-Length: 2\r\n\r\n{}"));
        assert!(!text.to_ascii_lowercase().contains("accept-encoding"));
    }

    #[test]
    fn secret_header_values_never_show_in_debug() {
        let h = SecretHeader::new("X-Api-Key", "hunter22").unwrap();
        assert_eq!(format!("{h:?}"), "X-Api-Key: [REDACTED]");
    }

    #[test]
    fn user_headers_that_would_break_framing_or_inject_lines_are_refused() {
        assert_eq!(
            SecretHeader::new("Content-Length", "1"),
            Err(HeaderError::Reserved("Content-Length".into()))
        );
        assert_eq!(
            SecretHeader::new("X-A", "v\r\nX-B: w"),
            Err(HeaderError::BadValue("X-A".into()))
        );
        assert_eq!(
            SecretHeader::new("X A", "v"),
            Err(HeaderError::BadName("X A".into()))
        );
        let e = SecretHeader::new("X-A", "s3cret\n").unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn status_lines_parse_strictly() {
        assert_eq!(parse_status_line(b"HTTP/1.1 200 OK"), Ok(200));
        assert_eq!(parse_status_line(b"HTTP/1.0 404"), Ok(404));
        assert_eq!(parse_status_line(b"HTTP/1.1 202 "), Ok(202));
        for bad in [
            &b"HTTP/2 200 OK"[..],
            b"HTTP/1.1 20 OK",
            b"HTTP/1.1 2000",
            b"ICY 200 OK",
            b"",
        ] {
            assert_eq!(parse_status_line(bad), Err(HeadError::StatusLine), "{bad:?}");
        }
    }

    #[test]
    fn field_lines_lower_case_names_and_trim_values() {
        assert_eq!(
            parse_field_line(b"Mcp-Session-Id:  abc \t"),
            Ok(("mcp-session-id".into(), "abc".into()))
        );
        assert_eq!(parse_field_line(b" folded"), Err(HeadError::FieldLine));
        assert_eq!(parse_field_line(b"no colon"), Err(HeadError::FieldLine));
        assert_eq!(parse_field_line(b"bad name: x"), Err(HeadError::FieldLine));
    }

    fn head(status: u16, fields: &[(&str, &str)]) -> ResponseHead {
        ResponseHead {
            status,
            headers: Headers(
                fields
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
            ),
        }
    }

    #[test]
    fn framing_prefers_chunked_then_length_then_close() {
        let post = Some(Method::Post);
        assert_eq!(
            framing(
                &head(200, &[("transfer-encoding", "chunked"), ("content-length", "5")]),
                post
            ),
            Ok(Framing::Chunked)
        );
        assert_eq!(
            framing(&head(200, &[("content-length", "5")]), post),
            Ok(Framing::Length(5))
        );
        assert_eq!(
            framing(&head(200, &[("content-length", "5, 5")]), post),
            Ok(Framing::Length(5))
        );
        assert_eq!(framing(&head(200, &[]), post), Ok(Framing::Close));
        assert_eq!(
            framing(&head(204, &[("content-length", "5")]), post),
            Ok(Framing::None)
        );
        assert_eq!(
            framing(&head(200, &[("content-length", "5")]), None),
            Ok(Framing::None)
        );
    }

    #[test]
    fn framing_refuses_unknown_codings_and_conflicting_lengths() {
        let post = Some(Method::Post);
        assert_eq!(
            framing(&head(200, &[("transfer-encoding", "gzip, chunked")]), post),
            Err(FramingError::TransferEncoding("gzip, chunked".into()))
        );
        for bad in ["5, 6", "-1", "", "0x10", "99999999999999999999"] {
            assert_eq!(
                framing(&head(200, &[("content-length", bad)]), post),
                Err(FramingError::ContentLength),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn media_type_drops_parameters_and_case() {
        let h = head(200, &[("content-type", "Text/Event-Stream; charset=utf-8")]);
        assert_eq!(h.media_type().as_deref(), Some("text/event-stream"));
    }
}
