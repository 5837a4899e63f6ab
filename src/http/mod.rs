//! MCP over Streamable HTTP, on std only: the building blocks of an HTTP wire, one job per
//! file. [`url`] parses and redacts the target URL; [`message`] writes requests and parses
//! response heads; [`client`] runs one exchange over a `TcpStream` with deadlines and framing;
//! [`sse`] parses event streams; [`session`] is the transport proper, [`HttpWire`], shaped like
//! the stdio wire (send, next event with a deadline, close and say how it ended).
//!
//! [`tls`] adds `https://` with the cargo feature `https` (without it an `https://` URL is a
//! typed error naming the feature).
//!
//! Limits of the whole module: HTTP/1.1 only (no HTTP/2), no proxies (`HTTP_PROXY` is
//! not read), no compression (identity only; a compressed reply is reported, not decoded),
//! redirects recorded and never followed, no keep-alive reuse, no GET stream, no resumption,
//! no HTTP+SSE (2024-11-05) transport yet.

pub mod auth;
pub mod client;
pub mod legacy_sse;
pub mod message;
pub mod raw;
pub mod session;
pub mod sse;
pub mod tls;
pub mod url;

pub use client::HttpError;
pub use session::{
    DeleteOutcome, Ended, Exchange, HttpFacts, HttpOptions, HttpStatus, HttpWire, Sent, SessionEnd,
    SessionIdFact, WireEvent,
};
pub use url::{HttpUrl, UrlError};
