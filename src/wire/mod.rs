//! How bytes reach a server and come back: the seam between a session and its transport.
//! A wire knows nothing of MCP: it delivers whole messages (frames), says when the server is
//! gone, and ends the connection reporting how. The session engine (`crate::session`) drives
//! any wire the same way; `stdio` is a spawned process on pipes.

pub mod descendants;
pub mod framing;
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
}

impl Closing {
    /// The process teardown, when the wire was a process.
    pub fn into_teardown(self) -> Option<Teardown> {
        match self {
            Closing::Process(t) => Some(t),
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
}
