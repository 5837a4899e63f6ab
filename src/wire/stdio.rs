//! A spawned stdio server (started by `crate::wire::spawn`: its own session, so no controlling
//! terminal, and process group): the thread that reads its stdout and stderr and reaps it,
//! its stdin written directly while the pipe has room (a writer thread only for the rest),
//! one channel of events with bounded waits, and a measured teardown that leaves no process
//! of the group behind, nor any descendant that left it (those are found by
//! `crate::wire::descendants`).

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::descendants::{self, Escapee, Tracker};
use super::framing::{Frame, Splitter};
use super::{Closing, Sent, Transport, Wire, WireEvent, WireStats};
use crate::sys;

/// Events are buffered this many deep; a flooding server then waits on its pipe.
const EVENT_DEPTH: usize = 16;
/// Bytes of messages queued for the server's stdin and not yet written: past this a send
/// waits for room (and an answer that may not wait is dropped). One larger message is let
/// through alone. A server that never reads its stdin costs us at most this much.
pub const STDIN_QUEUE_BYTES: usize = 1 << 20;
const READ_CHUNK: usize = 64 * 1024;
/// How far the stdout reader may run ahead of lines not yet done with (see `LineCredit`).
pub const READ_AHEAD: usize = 1 << 20;
/// stderr bytes kept from the start and from the end.
pub const STDERR_HEAD: usize = 4 * 1024;
pub const STDERR_TAIL: usize = 8 * 1024;

/// How to start the server.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// argv[0] as the user wrote it.
    pub argv0: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub max_line: usize,
    /// Start it at a lower CPU priority (nice [`sys::BACKGROUND_NICE`], its session's
    /// autogroup too): check's version-negotiation side runs, which start beside the main
    /// session, so that where the copies compete for the cores the main session's start
    /// wins. Check puts the autogroup back once the main handshake is done.
    pub background: bool,
}

/// Something the server did.
#[derive(Debug)]
pub enum Event {
    Stdout(Frame),
    /// stdout reached end of file: every holder of its write end closed it.
    StdoutClosed,
    /// The direct child exited (it has been reaped).
    Exited(ExitStatus),
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitInfo {
    Code(i32),
    Signal(i32),
}

impl From<ExitStatus> for ExitInfo {
    fn from(s: ExitStatus) -> Self {
        match (s.code(), s.signal()) {
            (Some(c), _) => ExitInfo::Code(c),
            (None, Some(sig)) => ExitInfo::Signal(sig),
            (None, None) => ExitInfo::Code(-1),
        }
    }
}

/// What stderr carried: a byte count and bounded head and tail.
#[derive(Debug, Default, Clone)]
pub struct StderrLog {
    pub bytes: u64,
    /// The reader saw end of file.
    pub closed: bool,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
}

impl StderrLog {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        let room = STDERR_HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > STDERR_TAIL {
            let cut = self.tail.len() - STDERR_TAIL;
            self.tail.drain(..cut);
        }
    }

    /// The whole stderr when it fit in the head, else its last bytes.
    pub fn text_tail(&self) -> String {
        if self.bytes as usize <= STDERR_HEAD {
            String::from_utf8_lossy(&self.head).into_owned()
        } else {
            String::from_utf8_lossy(&self.tail).into_owned()
        }
    }
}

/// What ended a server process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndedBy {
    /// It had already exited when teardown began.
    ExitedBefore,
    /// It exited after its stdin was closed: the polite MCP shutdown.
    StdinEof,
    /// It needed SIGTERM.
    Sigterm,
    /// It ignored SIGTERM and needed SIGKILL.
    Sigkill,
    /// Still not reaped after SIGKILL and a wait.
    Unkillable,
}

impl EndedBy {
    /// The word the evidence records.
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::ExitedBefore => "exited_before",
            EndedBy::StdinEof => "stdin_eof",
            EndedBy::Sigterm => "sigterm",
            EndedBy::Sigkill => "sigkill",
            EndedBy::Unkillable => "unkillable",
        }
    }
}

impl std::fmt::Display for EndedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the server was stopped, as the evidence records it.
#[derive(Debug, Clone)]
pub struct Teardown {
    pub ended_by: EndedBy,
    pub after_ms: u64,
    pub exit: Option<ExitInfo>,
    /// Signals sent to the group after the direct child was gone, because other members
    /// (grandchildren) remained: `sigterm`, `sigkill`.
    pub group_signals: Vec<&'static str>,
    /// Descendants found outside the group (they left it or the session), each ended
    /// separately: pid, argv as read (not yet redacted), how it left, how it ended.
    pub escapees: Vec<Escapee>,
    /// Members of the group and other descendants still alive at the end (pids). Empty is the
    /// only good answer.
    pub survivors: Vec<u32>,
}

/// A running server.
pub struct Server {
    pub pid: u32,
    pub started: Instant,
    events: Receiver<Event>,
    stdin: Option<Stdin>,
    /// Bytes handed to the writer thread and not yet written.
    stdin_queued: Arc<AtomicUsize>,
    /// Bytes of stdout lines between the reader and us (see `LineCredit`).
    credit: Arc<LineCredit>,
    /// Bytes of the line last handed out: the caller is done with it at the next call.
    held: usize,
    pub stderr: Arc<Mutex<StderrLog>>,
    stdout_bytes: Arc<AtomicU64>,
    /// Milliseconds from start to the first stdout byte, +1 (0 = none yet).
    first_stdout: Arc<AtomicU64>,
    exit: Option<ExitStatus>,
    stdout_closed: bool,
    tracker: Option<Tracker>,
}

/// Timing of a teardown.
#[derive(Debug, Clone, Copy)]
pub struct Grace {
    /// After closing stdin, how long to wait for a voluntary exit.
    pub eof: Duration,
    /// After SIGTERM, how long before SIGKILL.
    pub term: Duration,
}

impl Default for Grace {
    fn default() -> Self {
        Grace {
            eof: Duration::from_secs(2),
            term: Duration::from_secs(2),
        }
    }
}

impl Server {
    /// Spawns the server in its own session (so in its own process group, and with no
    /// controlling terminal: it cannot open `/dev/tty`), with all three pipes, and starts
    /// watching its descendants.
    pub fn spawn(spec: &SpawnSpec) -> std::io::Result<Server> {
        let started = Instant::now();
        let child = descendants::spawn_registered(|| super::spawn::start(spec), |c| c.pid)?;
        let pid = child.pid;
        let tracker = Tracker::start(pid);
        let (stdin, stdout, stderr_pipe) = (child.stdin, child.stdout, child.stderr);

        let (tx, events) = mpsc::sync_channel(EVENT_DEPTH);
        let stdout_bytes = Arc::new(AtomicU64::new(0));
        let first_stdout = Arc::new(AtomicU64::new(0));
        let stderr = Arc::new(Mutex::new(StderrLog::default()));

        let credit = Arc::new(LineCredit::default());
        spawn_reader(
            Outputs {
                stdout,
                stderr: stderr_pipe,
                pid,
            },
            tx,
            spec.max_line,
            started,
            (&stdout_bytes, &first_stdout),
            (&credit, &stderr),
        );
        let stdin_queued = Arc::new(AtomicUsize::new(0));
        // Non-blocking (set by `spawn::start`): written directly while the pipe has room (see
        // `send`), never waited on.
        let stdin = Stdin {
            file: Arc::new(stdin),
            writer: None,
        };

        Ok(Server {
            pid,
            started,
            events,
            stdin: Some(stdin),
            stdin_queued,
            credit,
            held: 0,
            stderr,
            stdout_bytes,
            first_stdout,
            exit: None,
            stdout_closed: false,
            tracker: Some(tracker),
        })
    }

    /// Sends bytes to the server's stdin, waiting for room until `deadline` at most. While
    /// nothing is queued they are written at once, as far as the pipe takes them; what it
    /// does not take is queued for a writer thread (started the first time one is needed).
    /// Room in the queue means fewer than `STDIN_QUEUE_BYTES` queued with these bytes (or
    /// nothing queued).
    pub fn send(&mut self, bytes: Vec<u8>, deadline: Instant) -> Sent {
        let Some(stdin) = &mut self.stdin else {
            return Sent::Closed;
        };
        let mut bytes = bytes;
        if self.stdin_queued.load(Ordering::Acquire) == 0 {
            // Nothing queued: the writer, if any, is idle, so writing here keeps the order.
            match write_now(&stdin.file, &bytes) {
                Ok(n) if n == bytes.len() => return Sent::Sent,
                Ok(n) => {
                    bytes.drain(..n);
                }
                Err(_) => {
                    // The server closed its stdin (or it broke): later sends say so. This
                    // one counts as sent, as one handed to a writer that then fails does.
                    self.stdin = None;
                    return Sent::Sent;
                }
            }
        }
        let len = bytes.len();
        let writer = stdin
            .writer
            .get_or_insert_with(|| spawn_writer(Arc::clone(&stdin.file), &self.stdin_queued));
        loop {
            let queued = self.stdin_queued.load(Ordering::Acquire);
            if queued == 0 || queued.saturating_add(len) <= STDIN_QUEUE_BYTES {
                // Counted before it is handed over, so the writer never subtracts first.
                self.stdin_queued.fetch_add(len, Ordering::AcqRel);
                match writer.try_send(bytes) {
                    Ok(()) => return Sent::Sent,
                    Err(mpsc::TrySendError::Disconnected(_)) => {
                        unqueue(&self.stdin_queued, len);
                        return Sent::Closed;
                    }
                    Err(mpsc::TrySendError::Full(b)) => {
                        unqueue(&self.stdin_queued, len);
                        bytes = b;
                    }
                }
            }
            if Instant::now() >= deadline {
                return Sent::Full;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Bytes queued for the server's stdin and not yet written.
    pub fn stdin_queued(&self) -> usize {
        self.stdin_queued.load(Ordering::Acquire)
    }

    /// Closes the server's stdin (once queued writes are done).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next event, or `None` when `deadline` passes first. The line handed out by the
    /// previous call is taken as done with: its bytes no longer hold the reader back.
    pub fn next_event(&mut self, deadline: Instant) -> Option<Event> {
        self.credit.release(std::mem::take(&mut self.held));
        // Checked first, so a flood of queued lines cannot stretch a wait past its deadline.
        if Instant::now() >= deadline {
            return None;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.events.recv_timeout(wait) {
            Ok(ev) => {
                match &ev {
                    Event::Exited(s) => self.exit = Some(*s),
                    Event::StdoutClosed => self.stdout_closed = true,
                    Event::Stdout(Frame::Line(line)) => self.held = line.len(),
                    Event::Stdout(Frame::Oversize(_)) => {}
                }
                Some(ev)
            }
            Err(RecvTimeoutError::Timeout) => None,
            // Every sender is gone: the reader and the waiter both finished.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(wait);
                None
            }
        }
    }

    pub fn exit_status(&self) -> Option<ExitStatus> {
        self.exit
    }

    pub fn stdout_closed(&self) -> bool {
        self.stdout_closed
    }

    pub fn stdout_bytes(&self) -> u64 {
        self.stdout_bytes.load(Ordering::Relaxed)
    }

    pub fn stderr_bytes(&self) -> u64 {
        self.stderr.lock().map(|s| s.bytes).unwrap_or(0)
    }

    /// Milliseconds from spawn to the first stdout byte.
    pub fn first_stdout_ms(&self) -> Option<u64> {
        match self.first_stdout.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n - 1),
        }
    }

    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Stops the server: close stdin, wait, SIGTERM the group, wait, SIGKILL the group, reap;
    /// then make sure no member of the group is left, and end every descendant that left the
    /// group or the session (SIGTERM, SIGKILL after the grace). Costs only as long as the
    /// server takes.
    pub fn teardown(mut self, grace: Grace) -> Teardown {
        let start = Instant::now();
        let already = self.exit.is_some();
        self.close_stdin();
        let pgid = self.pid;
        let mut ended_by = if already {
            EndedBy::ExitedBefore
        } else {
            EndedBy::StdinEof
        };
        if !already && !self.wait_exit(start + grace.eof) {
            let _ = sys::signal_group(pgid, sys::SIGTERM);
            // A stopped process handles SIGTERM only once continued.
            let _ = sys::signal_group(pgid, sys::SIGCONT);
            ended_by = EndedBy::Sigterm;
            let term_start = Instant::now();
            if !self.wait_exit(term_start + grace.term) {
                let _ = sys::signal_group(pgid, sys::SIGKILL);
                ended_by = EndedBy::Sigkill;
                if !self.wait_exit(Instant::now() + Duration::from_secs(5)) {
                    ended_by = EndedBy::Unkillable;
                }
            }
        }
        let after_ms = start.elapsed().as_millis() as u64;

        // Grandchildren (npx wrappers, helpers) can outlive the direct child.
        let mut group_signals = Vec::new();
        if !sys::live_members(pgid).is_empty() {
            let _ = sys::signal_group(pgid, sys::SIGTERM);
            // A stopped process handles SIGTERM only once continued.
            let _ = sys::signal_group(pgid, sys::SIGCONT);
            group_signals.push("sigterm");
            if !wait_group_gone(pgid, Instant::now() + grace.term) {
                let _ = sys::signal_group(pgid, sys::SIGKILL);
                group_signals.push("sigkill");
                wait_group_gone(pgid, Instant::now() + Duration::from_secs(2));
            }
        }
        // Descendants outside the group were not reached by any of that.
        let (escapees, others) = match self.tracker.take() {
            Some(t) => t.end_escapees(grace.term),
            None => (Vec::new(), Vec::new()),
        };
        // Once the group is gone, stderr's last bytes are a moment away (unless an escaped
        // process holds the pipe: then do not wait for it).
        let stderr_deadline = Instant::now() + Duration::from_millis(200);
        while !self.stderr.lock().map(|l| l.closed).unwrap_or(true) && Instant::now() < stderr_deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        Teardown {
            ended_by,
            after_ms,
            exit: self.exit.map(ExitInfo::from),
            group_signals,
            escapees,
            survivors: {
                let mut s = sys::live_members(pgid);
                s.extend(others);
                s.sort_unstable();
                s.dedup();
                s
            },
        }
        // Dropping `self` drops the event receiver: reader threads still blocked on a pipe
        // that an escaped process holds are never joined, so they cannot keep us alive.
    }

    /// Waits for the direct child's exit, discarding other events. True if it exited.
    fn wait_exit(&mut self, deadline: Instant) -> bool {
        while self.exit.is_none() {
            if self.next_event(deadline).is_none() && Instant::now() >= deadline {
                return false;
            }
        }
        true
    }
}

fn wait_group_gone(pgid: u32, deadline: Instant) -> bool {
    let mut pause = Duration::from_micros(200);
    loop {
        if sys::live_members(pgid).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Bytes of stdout lines read but not yet done with: queued in the channel, or the one the
/// consumer holds. While any are, the reader reads on only until these and the line it is
/// building reach `READ_AHEAD`, so a server's lines cost one line (at most `--max-line`) plus
/// `READ_AHEAD` at a time, however fast it writes.
#[derive(Default)]
struct LineCredit {
    state: Mutex<CreditState>,
}

#[derive(Default)]
struct CreditState {
    in_flight: usize,
    /// The consumer is gone: nothing will be freed again.
    closed: bool,
}

impl LineCredit {
    fn take(&self, bytes: usize) {
        if let Ok(mut s) = self.state.lock() {
            s.in_flight += bytes;
        }
    }

    fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        if let Ok(mut s) = self.state.lock() {
            s.in_flight = s.in_flight.saturating_sub(bytes);
        }
    }

    fn close(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.closed = true;
        }
    }

    /// Whether `building` more bytes fit beside those in flight under `max` (or none are in
    /// flight); `None` when the consumer is gone.
    fn room(&self, building: usize, max: usize) -> Option<bool> {
        let s = self.state.lock().ok()?;
        if s.closed {
            return None;
        }
        Some(s.in_flight == 0 || s.in_flight + building <= max)
    }
}

impl Wire for Server {
    fn transport(&self) -> Transport {
        Transport::Stdio
    }

    fn send(&mut self, mut message: Vec<u8>, deadline: Instant) -> Sent {
        message.push(b'\n');
        Server::send(self, message, deadline)
    }

    fn send_raw(&mut self, mut bytes: Vec<u8>, deadline: Instant) -> Sent {
        bytes.push(b'\n');
        Server::send(self, bytes, deadline)
    }

    fn next(&mut self, deadline: Instant) -> Option<WireEvent> {
        Some(match self.next_event(deadline)? {
            Event::Stdout(frame) => WireEvent::Frame(frame),
            Event::StdoutClosed => WireEvent::OutputClosed,
            Event::Exited(status) => WireEvent::Exited(ExitInfo::from(status)),
        })
    }

    fn exit(&self) -> Option<ExitInfo> {
        self.exit.map(ExitInfo::from)
    }

    fn output_closed(&self) -> bool {
        self.stdout_closed
    }

    fn pid(&self) -> Option<u32> {
        Some(self.pid)
    }

    fn stats(&self) -> WireStats {
        WireStats {
            output_bytes: self.stdout_bytes(),
            stderr_bytes: self.stderr_bytes(),
            first_output_ms: self.first_stdout_ms(),
        }
    }

    fn stderr(&self) -> Option<Arc<Mutex<StderrLog>>> {
        Some(Arc::clone(&self.stderr))
    }

    fn close(self: Box<Self>, grace: Grace) -> Closing {
        Closing::Process(self.teardown(grace))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.credit.close();
    }
}

/// Our end of the server's stdin (non-blocking), and the writer thread for what the pipe did
/// not take at once. The file closes when both let go of it.
struct Stdin {
    file: Arc<std::fs::File>,
    writer: Option<SyncSender<Vec<u8>>>,
}

/// Writes as much of `bytes` as the pipe takes now: how much that was.
fn write_now(mut file: &std::fs::File, bytes: &[u8]) -> std::io::Result<usize> {
    let mut done = 0;
    while done < bytes.len() {
        match file.write(&bytes[done..]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Writes all of `bytes`, waiting for room as long as it takes (the writer thread's way).
fn write_waiting(file: &std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut done = 0;
    while done < bytes.len() {
        done += write_now(file, &bytes[done..])?;
        if done < bytes.len() {
            let mut fds = [sys::PollFd {
                fd: file.as_raw_fd(),
                events: sys::POLLOUT,
                revents: 0,
            }];
            sys::poll_fds(&mut fds, -1)?;
        }
    }
    Ok(())
}

/// What the reader watches: the server's stdout and stderr, and its exit.
struct Outputs {
    stdout: std::fs::File,
    stderr: std::fs::File,
    pid: u32,
}

/// One thread reads stdout (its lines become events) and stderr (kept in `log`), and reaps the
/// server when it exits (an `Exited` event), waiting on all three at once with `poll`. It
/// never waits on the consumer: events the channel has no room for wait in an outbox, and
/// while they do (or while the lines not yet done with leave no room, see `LineCredit`) stdout
/// is not read, but stderr is still drained and the exit still seen, so a server that writes
/// its stderr while nobody takes its stdout lines never stalls on it. Where the kernel has no
/// `pidfd_open`, a thread of its own waits for the exit.
fn spawn_reader(
    outputs: Outputs,
    tx: SyncSender<Event>,
    max_line: usize,
    started: Instant,
    (bytes, first): (&Arc<AtomicU64>, &Arc<AtomicU64>),
    (credit, log): (&Arc<LineCredit>, &Arc<Mutex<StderrLog>>),
) {
    let bytes = Arc::clone(bytes);
    let first = Arc::clone(first);
    let credit = Arc::clone(credit);
    let log = Arc::clone(log);
    let Outputs { stdout, stderr, pid } = outputs;
    let exit = match sys::pidfd_open(pid) {
        Ok(fd) => Some(fd),
        Err(_) => {
            spawn_waiter(pid, tx.clone());
            None
        }
    };
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        let mut splitter = Splitter::new(max_line);
        let mut buf = vec![0u8; READ_CHUNK];
        let (mut out, mut err, mut exit) = (Some(stdout), Some(stderr), exit);
        // Events read and not yet taken by the channel, in order. At most one read's worth:
        // stdout is not read again until they are all handed over.
        let mut outbox: std::collections::VecDeque<Event> = std::collections::VecDeque::new();
        let mut consumer = true;
        loop {
            while consumer && let Some(ev) = outbox.pop_front() {
                match tx.try_send(ev) {
                    Ok(()) => {}
                    Err(mpsc::TrySendError::Full(ev)) => {
                        outbox.push_front(ev);
                        break;
                    }
                    Err(mpsc::TrySendError::Disconnected(_)) => consumer = false,
                }
            }
            if !consumer {
                // Nobody takes events any more: stdout is no longer read.
                outbox.clear();
                out = None;
            }
            // Stdout is watched only while the outbox is empty and there is room for what a
            // read may bring.
            let room = match &out {
                Some(_) if outbox.is_empty() => credit.room(splitter.pending() + READ_CHUNK, READ_AHEAD),
                Some(_) => Some(false),
                None => Some(false),
            };
            if room.is_none() {
                consumer = false;
                out = None;
            }
            let mut fds = Vec::with_capacity(3);
            let watch = |f: Option<i32>, fds: &mut Vec<sys::PollFd>| {
                f.map(|fd| {
                    fds.push(sys::PollFd {
                        fd,
                        events: sys::POLLIN,
                        revents: 0,
                    });
                    fds.len() - 1
                })
            };
            let out_at = watch(
                out.as_ref().filter(|_| room == Some(true)).map(|f| f.as_raw_fd()),
                &mut fds,
            );
            let err_at = watch(err.as_ref().map(|f| f.as_raw_fd()), &mut fds);
            let exit_at = watch(exit.as_ref().map(|f| f.as_raw_fd()), &mut fds);
            let waiting = !outbox.is_empty() || (out.is_some() && out_at.is_none());
            if fds.is_empty() {
                if let Some(ev) = outbox.pop_front() {
                    // Nothing else to watch: wait for the consumer to take it.
                    consumer = tx.send(ev).is_ok();
                    continue;
                }
                if !waiting {
                    break;
                }
            }
            // Waiting for the consumer (channel room, or line credit) is looked at again every
            // millisecond.
            let timeout = if waiting { 1 } else { -1 };
            if sys::poll_fds(&mut fds, timeout).is_err() {
                break;
            }
            let ready = |at: Option<usize>| at.is_some_and(|i| fds[i].revents != 0);
            if ready(out_at)
                && let Some(stdout) = &mut out
            {
                let n = match stdout.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Ok(0) | Err(_) => 0,
                    Ok(n) => n,
                };
                if n == 0 {
                    out = None;
                    if let Some(f) = splitter.finish() {
                        outbox.push_back(Event::Stdout(f));
                    }
                    outbox.push_back(Event::StdoutClosed);
                } else {
                    if bytes.fetch_add(n as u64, Ordering::Relaxed) == 0 {
                        first.store(started.elapsed().as_millis() as u64 + 1, Ordering::Relaxed);
                    }
                    splitter.push(&buf[..n], &mut |f| {
                        if let Frame::Line(line) = &f {
                            credit.take(line.len());
                        }
                        outbox.push_back(Event::Stdout(f));
                    });
                }
            }
            if ready(err_at)
                && let Some(stderr) = &mut err
            {
                match stderr.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Ok(0) | Err(_) => {
                        err = None;
                        if let Ok(mut log) = log.lock() {
                            log.closed = true;
                        }
                    }
                    Ok(n) => {
                        if let Ok(mut log) = log.lock() {
                            log.push(&buf[..n]);
                        }
                    }
                }
            }
            if ready(exit_at) {
                exit = None;
                let status = match sys::reap_exited(pid) {
                    Some(raw) => Ok(ExitStatus::from_raw(raw)),
                    // Readable before waitpid can see the exit: wait for it (a moment).
                    None => super::spawn::wait(pid),
                };
                // Reaped: its pid may be reused from now on.
                descendants::unregister_server(pid);
                if let Ok(status) = status {
                    // After the lines read before it.
                    outbox.push_back(Event::Exited(status));
                }
            }
        }
    });
}

fn spawn_waiter(pid: u32, tx: SyncSender<Event>) {
    std::thread::spawn(move || {
        let status = super::spawn::wait(pid);
        // Reaped: its pid may be reused from now on.
        descendants::unregister_server(pid);
        if let Ok(status) = status {
            let _ = tx.send(Event::Exited(status));
        }
    });
}

/// Takes `len` bytes off a queue count, never below zero.
fn unqueue(queued: &AtomicUsize, len: usize) {
    let _ = queued.fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
        Some(q.saturating_sub(len))
    });
}

fn spawn_writer(stdin: Arc<std::fs::File>, queued: &Arc<AtomicUsize>) -> SyncSender<Vec<u8>> {
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(EVENT_DEPTH);
    let queued = Arc::clone(queued);
    std::thread::spawn(move || {
        for bytes in &rx {
            let written = write_waiting(&stdin, &bytes);
            unqueue(&queued, bytes.len());
            drop(bytes);
            if written.is_err() {
                break;
            }
        }
        // What was still queued is dropped with the channel: nothing is queued any more.
        drop(rx);
        queued.store(0, Ordering::Release);
        // Dropping stdin (with the server's own handle on it) closes the pipe: the server
        // sees end of file.
    });
    tx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> SpawnSpec {
        SpawnSpec {
            program: "/bin/sh".into(),
            argv0: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: vec![],
            cwd: None,
            max_line: 1024,
            background: false,
        }
    }

    #[test]
    fn a_server_leads_its_own_session_and_group_without_a_terminal() {
        let server = Server::spawn(&sh("cat >/dev/null")).unwrap();
        let st = sys::stat_of(server.pid).unwrap();
        assert_eq!((st.session, st.pgrp, st.tty_nr), (server.pid, server.pid, 0));
        let t = server.teardown(Grace::default());
        // Other tests of this binary run servers at the same time in this one (subreaper)
        // process: an orphan of theirs may be attributed here (a documented limit of
        // attributing adopted orphans between concurrent servers), so only survivors count.
        assert!(t.survivors.is_empty(), "{t:?}");
    }

    #[test]
    fn a_server_that_exits_on_eof_is_torn_down_at_once() {
        let server = Server::spawn(&sh("cat >/dev/null")).unwrap();
        let t = server.teardown(Grace::default());
        assert_eq!(t.ended_by, EndedBy::StdinEof);
        assert_eq!(t.exit, Some(ExitInfo::Code(0)));
        assert!(t.after_ms < 1000, "{t:?}");
        assert!(t.survivors.is_empty());
    }

    #[test]
    fn a_server_ignoring_eof_gets_sigterm_and_its_children_go_too() {
        let server = Server::spawn(&sh("sleep 300 & sleep 300")).unwrap();
        let grace = Grace {
            eof: Duration::from_millis(100),
            term: Duration::from_secs(2),
        };
        let t = server.teardown(grace);
        assert_eq!(t.ended_by, EndedBy::Sigterm);
        assert_eq!(t.exit, Some(ExitInfo::Signal(sys::SIGTERM)));
        assert!(t.survivors.is_empty(), "{t:?}");
    }

    #[test]
    fn a_server_that_never_reads_gets_at_most_the_stdin_queue_bound_queued() {
        let mut server = Server::spawn(&sh("sleep 300")).unwrap();
        let message = vec![b'x'; 100 * 1024];
        let mut sent = 0;
        // The pipe takes 64 KiB, the queue 1 MiB: within a few dozen sends room runs out.
        for _ in 0..64 {
            match server.send(message.clone(), Instant::now()) {
                Sent::Sent => sent += 1,
                other => {
                    assert_eq!(other, Sent::Full);
                    break;
                }
            }
        }
        assert!(sent < 64, "every send found room");
        assert!(
            server.stdin_queued() <= STDIN_QUEUE_BYTES,
            "{}",
            server.stdin_queued()
        );
        // One message larger than the bound still goes when nothing else is queued.
        let mut big = Server::spawn(&sh("sleep 300")).unwrap();
        let line = vec![b'y'; 2 * STDIN_QUEUE_BYTES];
        assert_eq!(big.send(line, Instant::now()), Sent::Sent);
        let grace = Grace {
            eof: Duration::from_millis(50),
            term: Duration::from_secs(2),
        };
        assert!(server.teardown(grace).survivors.is_empty());
        assert!(big.teardown(grace).survivors.is_empty());
    }

    #[test]
    fn stdout_lines_and_exit_arrive_as_events() {
        let mut server = Server::spawn(&sh("printf 'a\\nb'; echo oops >&2; exit 4")).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut lines = Vec::new();
        while server.exit_status().is_none() || !server.stdout_closed() {
            match server.next_event(deadline) {
                Some(Event::Stdout(Frame::Line(l))) => lines.push(l),
                Some(_) => {}
                None => panic!("timed out"),
            }
        }
        assert_eq!(lines, vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(server.stdout_bytes(), 3);
        let t = server.teardown(Grace::default());
        assert_eq!(t.ended_by, EndedBy::ExitedBefore);
        assert_eq!(t.exit, Some(ExitInfo::Code(4)));
    }

    #[test]
    fn a_server_writing_stderr_while_its_stdout_lines_wait_untaken_is_never_stalled() {
        // More lines than the event channel holds, then 200 KB of stderr (three pipes' worth),
        // then it reads its stdin to the end.
        let script = "i=0; while [ $i -lt 40 ]; do echo n$i; i=$((i+1)); done; \
                      head -c 200000 /dev/zero | tr '\\0' e >&2; cat >/dev/null";
        let mut server = Server::spawn(&sh(script)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.stderr_bytes() < 200_000 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            server.stderr_bytes(),
            200_000,
            "stderr was drained with no event taken"
        );
        // And so it goes on to read what we send.
        let chunk = vec![b'x'; 256 * 1024];
        for i in 0..8 {
            assert_eq!(server.send(chunk.clone(), deadline), Sent::Sent, "send {i}");
        }
        let t = server.teardown(Grace::default());
        assert_eq!(t.ended_by, EndedBy::StdinEof);
    }

    #[test]
    fn the_last_stderr_of_a_member_ended_at_teardown_is_kept_behind_untaken_lines() {
        // The server exits at once; a member of its group writes 100 stdout lines, then one
        // stderr line, when teardown's SIGTERM reaches it. Nobody takes those lines.
        let script = "sh -c 'trap \"i=0; while [ \\$i -lt 100 ]; do echo l\\$i; i=\\$((i+1)); done; \
                      echo TAIL-ON-STDERR >&2; exit 0\" TERM; while :; do sleep 1; done' & sleep 0.2; exit 0";
        let mut server = Server::spawn(&sh(script)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.exit_status().is_none() {
            server.next_event(deadline).expect("the server exits");
        }
        let log = Arc::clone(&server.stderr);
        let t = server.teardown(Grace::default());
        assert_eq!(t.group_signals, vec!["sigterm"]);
        assert!(t.survivors.is_empty(), "{t:?}");
        let log = log.lock().unwrap();
        assert!(log.closed, "stderr read to its end");
        assert!(
            log.text_tail().ends_with("TAIL-ON-STDERR\n"),
            "{:?}",
            log.text_tail()
        );
    }
}
