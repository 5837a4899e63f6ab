//! How bytes reach a server and come back: the seam between a session and its transport.
//! A wire knows nothing of MCP: it delivers whole messages (frames), says when the server is
//! gone, and ends the connection reporting how. The session engine (`crate::session`) drives
//! any wire the same way; `stdio` is a spawned process on pipes, `http` a Streamable HTTP
//! endpoint.

pub mod descendants;
pub mod framing;
pub mod http;
pub mod spawn;
pub mod stdio;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use framing::Frame;
pub use stdio::{EndedBy, ExitInfo, Grace, StderrLog, Teardown};

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A spawned process, JSON-RPC over its stdin and stdout.
    Stdio,
    /// An HTTP endpoint.
    Http,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
        }
    }
}

/// What became of a message handed to a wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Sent,
    /// The way in is closed (stdio: the server exited or closed its stdin).
    Closed,
    /// The server has not taken its input for as long as we were willing to wait.
    Full,
    /// No connection could be made (HTTP: refused, reset, or the connect timed out).
    Unreachable(std::io::ErrorKind),
    /// HTTP over TLS: the certificate was refused or the handshake failed.
    TlsFailed(crate::http::tls::TlsFailure),
}

/// A request the server refused at the transport level (HTTP: a non-2xx status whose body
/// is no JSON-RPC answer, or any 401): enough for the record to say what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The JSON-RPC id of the refused message (`None`: a notification, a response, a raw
    /// message, or an exchange past the recorded ones).
    pub id: Option<serde_json::Value>,
    pub status: u16,
    /// Server text, cut to 1 KiB: make it inert to print it.
    pub content_type: Option<String>,
    /// Every `WWW-Authenticate` challenge, as sent (server text).
    pub www_authenticate: Vec<String>,
    /// A redirect's redacted `Location` (redirects are never followed).
    pub location: Option<String>,
    /// The start of the body, lossily decoded and cut to 512 bytes (server text).
    pub body: String,
}

/// Something the server did.
#[derive(Debug)]
pub enum WireEvent {
    /// One message, or bytes where one was due (stdio: a line).
    Frame(Frame),
    /// The server's output ended (stdio: every holder of stdout's write end closed it).
    OutputClosed,
    /// The server process exited (it has been reaped).
    Exited(ExitInfo),
    /// The server refused a message (HTTP status).
    Refused(Refusal),
    /// A reply stream broke off or its connection went away (HTTP), with the id of the
    /// request it was to answer when known, and what went wrong in words.
    Lost {
        id: Option<serde_json::Value>,
        why: String,
    },
}

/// Byte counts and timing of a wire, for the silence record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireStats {
    /// Bytes the server sent (stdio: on stdout).
    pub output_bytes: u64,
    /// Bytes on the server's diagnostic channel (stdio: stderr); 0 when it has none.
    pub stderr_bytes: u64,
    /// Milliseconds from the start to the first output byte.
    pub first_output_ms: Option<u64>,
}

/// How a connection ended, as the evidence records it.
#[derive(Debug, Clone)]
pub enum Closing {
    /// A spawned process was stopped.
    Process(Teardown),
    /// An HTTP session was ended: the DELETE and the HTTP facts of every exchange.
    Http(Box<crate::http::SessionEnd>),
}

impl Closing {
    /// The process teardown, when the wire was a process.
    pub fn into_teardown(self) -> Option<Teardown> {
        match self {
            Closing::Process(t) => Some(t),
            Closing::Http(_) => None,
        }
    }
}

/// One connection to a server. One implementation per transport.
pub trait Wire: Send {
    /// Which transport this is.
    fn transport(&self) -> Transport;
    /// Queues one serialized JSON-RPC message (the wire adds its framing), waiting for room
    /// until `deadline` at most.
    fn send(&mut self, message: Vec<u8>, deadline: Instant) -> Sent;
    /// Queues bytes for a robustness check, framed as a message would be but not checked.
    fn send_raw(&mut self, bytes: Vec<u8>, deadline: Instant) -> Sent;
    /// The next thing the server did, or `None` when `deadline` passes first. A frame handed
    /// out earlier is taken as done with.
    fn next(&mut self, deadline: Instant) -> Option<WireEvent>;
    /// How the server process ended, once it has.
    fn exit(&self) -> Option<ExitInfo>;
    /// Whether the server's output has ended.
    fn output_closed(&self) -> bool;
    /// Byte counts so far.
    fn stats(&self) -> WireStats;
    /// The server's diagnostic output (stdio: stderr), shared with its reader.
    fn stderr(&self) -> Option<Arc<Mutex<StderrLog>>>;
    /// Ends the connection (stdio: the measured teardown) and says how it ended.
    fn close(self: Box<Self>, grace: Grace) -> Closing;
    /// The handshake settled on `version`: a wire that carries it outside the messages
    /// (HTTP: `MCP-Protocol-Version` on every later request) takes note. Stdio: nothing.
    fn negotiated(&mut self, _version: &str) {}
    /// The server's process id, when the wire started a process.
    fn pid(&self) -> Option<u32> {
        None
    }
}
