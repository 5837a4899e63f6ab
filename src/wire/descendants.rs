//! Finding and ending a server's descendants that left its process group or session.
//!
//! A server runs in its own session (see `transport`), so its process group is what the
//! teardown signals. A descendant can leave that group (`setpgid(0, 0)`) or the session
//! (`setsid()`), and one whose parent died is reparented, which breaks the parent-pid chain.
//! This module owns how they are still found and ended:
//!
//! - mcp-witness makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) before its first
//!   server, so an orphaned descendant is reparented to mcp-witness instead of init and its
//!   parent pid still leads here ("adopted");
//! - a [`Tracker`] thread walks the process tree below mcp-witness (the whole of `/proc`
//!   where the subreaper or the kernel's children lists are missing) every 50 to 400 ms
//!   while the server runs and remembers each descendant by pid and start time (which
//!   defeats pid reuse) with its argv; a descendant is a process whose parent chain leads to the server or to a
//!   remembered descendant, a process in the server's group or session, or an adopted
//!   orphan no other live server has claimed;
//! - at teardown, after the group is gone, [`Tracker::end_escapees`] sends SIGTERM to every
//!   remembered descendant outside the group, SIGKILL after the grace, verifies each by pid
//!   and start time, reaps the ones reparented to us, and says how each ended.
//!
//! Every child mcp-witness spawns goes through `wire::stdio::Server::spawn`, which registers
//! its pid here under the same lock as the spawn, so a server's own direct child is never
//! taken for an adopted orphan. An adopted orphan must also be in a session other than
//! mcp-witness's own (a server's descendants always are, since the server is a session
//! leader). When servers run concurrently (check's side runs), an orphan adopted before any
//! tracker saw it is claimed by the first tracker to scan it; whichever claims it ends it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sys::{self, ProcStat};

/// How often the tracker walks `/proc` while the server runs: every [`SCAN_MIN`] after a
/// scan that found a new descendant, backing off by doubling to [`SCAN_MAX`] while nothing
/// changes. A walk follows the kernel's children lists from mcp-witness down (see
/// [`candidates`]): a few reads per process of the servers' trees; the fallback, the whole of
/// `/proc`, costs 1–2 ms of CPU with ~80 processes (one read of `/proc/<pid>/stat` each). The
/// subreaper already keeps orphans findable whatever the timing: the walks add the argv of
/// short-lived escapees, attribution between concurrent servers, and a fallback when the
/// subreaper could not be set.
pub const SCAN_MIN: Duration = Duration::from_millis(50);
pub const SCAN_MAX: Duration = Duration::from_millis(400);
/// Escapees recorded per teardown (all are ended; only this many are listed).
pub const MAX_LISTED: usize = 64;
const ARGV_ARGS: usize = 32;
const ARGV_CHARS: usize = 256;

/// How a descendant left the server's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// It is in another process group of the server's session (`setpgid`).
    Group,
    /// It is in another session (`setsid`).
    Session,
}

impl Left {
    pub fn as_str(self) -> &'static str {
        match self {
            Left::Group => "group",
            Left::Session => "session",
        }
    }
}

/// How an escapee ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It was gone before the teardown signalled it.
    Exited,
    /// SIGTERM ended it.
    Sigterm,
    /// It outlived SIGTERM and the grace; SIGKILL ended it.
    Sigkill,
    /// Still alive after SIGKILL and a wait.
    Survived,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Exited => "exited",
            Ended::Sigterm => "sigterm",
            Ended::Sigkill => "sigkill",
            Ended::Survived => "survived",
        }
    }
}

/// A descendant of the server that was outside its process group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escapee {
    pub pid: u32,
    /// As read from `/proc/<pid>/cmdline` (bounded, not yet redacted).
    pub argv: Vec<String>,
    pub left: Left,
    pub ended: Ended,
}

/// One remembered descendant.
#[derive(Debug, Clone)]
struct Seen {
    argv: Vec<String>,
    /// Its group and session when last seen alive.
    pgrp: u32,
    session: u32,
}

struct Registry {
    /// Direct children of live servers (their `std` `Child` reaps them).
    servers: BTreeSet<u32>,
    /// (pid, start) of descendants claimed by a tracker, with the claiming server's pid.
    claims: BTreeMap<(u32, u64), u32>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    servers: BTreeSet::new(),
    claims: BTreeMap::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs `spawn` with the registry locked and registers the direct child it returns, so no
/// tracker can take that child for an adopted orphan. Also makes mcp-witness a subreaper.
pub fn spawn_registered<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid_of: impl Fn(&T) -> u32,
) -> std::io::Result<T> {
    static SUBREAPER: Once = Once::new();
    SUBREAPER.call_once(|| {
        // Without it orphans go to init: the scans still find the ones they saw in time.
        IS_SUBREAPER.store(sys::become_subreaper().is_ok(), Ordering::SeqCst);
    });
    let mut reg = registry();
    let spawned = spawn()?;
    reg.servers.insert(pid_of(&spawned));
    Ok(spawned)
}

/// Forgets a direct child once it has been reaped (its pid may be reused from now on).
pub fn unregister_server(pid: u32) {
    registry().servers.remove(&pid);
}

/// Watches one server's descendants while it runs; ends the escaped ones at teardown.
pub struct Tracker {
    root: u32,
    root_start: u64,
    known: Arc<Mutex<BTreeMap<(u32, u64), Seen>>>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Tracker {
    /// Starts watching the descendants of the server `root` (a direct child, just spawned).
    pub fn start(root: u32) -> Tracker {
        // The root is not reaped yet (its waiter starts later), so its stat is there; were it
        // not, u64::MAX makes the tracker match nothing rather than anything.
        let root_start = sys::stat_of(root).map_or(u64::MAX, |s| s.start);
        let known = Arc::new(Mutex::new(BTreeMap::new()));
        let (stop, rx) = mpsc::channel::<()>();
        let k = Arc::clone(&known);
        let thread = std::thread::Builder::new()
            .name("descendants".into())
            .spawn(move || {
                let mut every = SCAN_MIN;
                loop {
                    every = if scan(root, root_start, &k, false) {
                        SCAN_MIN
                    } else {
                        (every * 2).min(SCAN_MAX)
                    };
                    match rx.recv_timeout(every) {
                        Err(RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            })
            .ok();
        Tracker {
            root,
            root_start,
            known,
            stop: Some(stop),
            thread,
        }
    }

    /// Stops the watcher, then ends every remembered descendant outside the server's group
    /// (SIGTERM, SIGKILL after `term`), reaping those reparented to us. Returns the escapees
    /// (at most [`MAX_LISTED`], by pid) and the pids of descendants still alive at the end.
    pub fn end_escapees(mut self, term: Duration) -> (Vec<Escapee>, Vec<u32>) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            // The thread wakes at once on the closed channel; a scan under way takes ms.
            let _ = t.join();
        }
        let mut done: BTreeMap<(u32, u64), Escapee> = BTreeMap::new();
        // Something may fork while we signal: look again, a bounded number of times.
        for _ in 0..3 {
            scan(self.root, self.root_start, &self.known, true);
            let mut targets = Vec::new();
            for (&(pid, start), seen) in lock(&self.known).iter() {
                if done.contains_key(&(pid, start)) || seen.pgrp == self.root {
                    continue;
                }
                let left = if seen.session == self.root {
                    Left::Group
                } else {
                    Left::Session
                };
                let escapee = Escapee {
                    pid,
                    argv: seen.argv.clone(),
                    left,
                    ended: Ended::Exited,
                };
                if alive(pid, start) {
                    targets.push((pid, start));
                }
                done.insert((pid, start), escapee);
            }
            if targets.is_empty() {
                break;
            }
            for &(pid, _) in &targets {
                let _ = sys::signal_process(pid, sys::SIGTERM);
                // A stopped process handles SIGTERM only once continued.
                let _ = sys::signal_process(pid, sys::SIGCONT);
            }
            let left = wait_gone(&targets, Instant::now() + term);
            for key in &targets {
                if let Some(e) = done.get_mut(key) {
                    e.ended = if left.contains(key) {
                        Ended::Survived
                    } else {
                        Ended::Sigterm
                    };
                }
            }
            if left.is_empty() {
                continue;
            }
            for &(pid, _) in &left {
                let _ = sys::signal_process(pid, sys::SIGKILL);
            }
            let still = wait_gone(&left, Instant::now() + Duration::from_secs(2));
            for key in &left {
                if let Some(e) = done.get_mut(key)
                    && !still.contains(key)
                {
                    e.ended = Ended::Sigkill;
                }
            }
        }
        // Reap whatever died as our child (reparented to us), and list what still lives.
        let mut survivors = Vec::new();
        for &(pid, start) in lock(&self.known).keys() {
            if alive(pid, start) {
                survivors.push(pid);
            }
        }
        // One that outlived SIGKILL's wait is a survivor even if it went in the meantime.
        survivors.extend(
            done.values()
                .filter(|e| e.ended == Ended::Survived)
                .map(|e| e.pid),
        );
        survivors.sort_unstable();
        survivors.dedup();
        let mut escapees: Vec<Escapee> = done.into_values().collect();
        escapees.sort_by_key(|e| e.pid);
        escapees.truncate(MAX_LISTED);
        (escapees, survivors)
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        // A tracker dropped without a teardown just stops watching and lets go of its claims.
        drop(self.stop.take());
        let root = self.root;
        registry().claims.retain(|_, owner| *owner != root);
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whether (pid, start) is still a live process. A zombie child of ours is reaped here (it
/// is an adopted descendant: no `std` `Child` waits for it).
fn alive(pid: u32, start: u64) -> bool {
    let Some(st) = sys::stat_of(pid).filter(|s| s.start == start) else {
        return false;
    };
    if st.live() {
        return true;
    }
    if st.ppid == std::process::id() {
        let reg = registry();
        // Under the lock, so the pid cannot be reaped and reused by a new server between.
        if !reg.servers.contains(&pid) && sys::stat_of(pid).is_some_and(|s| s.start == start && !s.live()) {
            sys::reap_zombie(pid);
        }
    }
    false
}

/// Waits until every process in `procs` is gone or `deadline` passes; returns those left.
fn wait_gone(procs: &[(u32, u64)], deadline: Instant) -> Vec<(u32, u64)> {
    let mut pause = Duration::from_micros(200);
    loop {
        let left: Vec<(u32, u64)> = procs.iter().copied().filter(|&(p, s)| alive(p, s)).collect();
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Whether mcp-witness became a child subreaper (see [`spawn_registered`]).
static IS_SUBREAPER: AtomicBool = AtomicBool::new(false);

/// Most processes a narrow walk follows before it falls back to the whole of `/proc`.
const NARROW_LIMIT: usize = 4096;

/// The processes a scan looks at. As a subreaper, every descendant of a server is below
/// mcp-witness (under the server, or adopted by us when its parent died), so the walk
/// follows the children lists from mcp-witness, the server and the descendants already
/// remembered (one that left for another subreaper below the server is still below the
/// server): its cost follows the servers' trees, not the host's process count. Without the
/// subreaper, or without the kernel's children lists, every process of `/proc`.
fn candidates(me: u32, root: u32, known: &[u32]) -> Vec<ProcStat> {
    if IS_SUBREAPER.load(Ordering::SeqCst) {
        let mut roots = vec![me, root];
        roots.extend_from_slice(known);
        if let Some(found) = sys::processes_below(&roots, NARROW_LIMIT) {
            return found;
        }
    }
    sys::all_processes()
}

fn known_pids(known: &Mutex<BTreeMap<(u32, u64), Seen>>) -> Vec<u32> {
    lock(known).keys().map(|&(pid, _)| pid).collect()
}

/// One walk of `/proc`: remembers every descendant of `root` (see the module doc). True when
/// it found one it had not seen before.
fn scan(root: u32, root_start: u64, known: &Mutex<BTreeMap<(u32, u64), Seen>>, refresh_argv: bool) -> bool {
    let me = std::process::id();
    let my_session = sys::stat_of(me).map(|s| s.session);
    let procs: BTreeMap<u32, ProcStat> = candidates(me, root, &known_pids(known))
        .into_iter()
        .map(|s| (s.pid, s))
        .collect();
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for st in procs.values() {
        children.entry(st.ppid).or_default().push(st.pid);
    }
    // The server's session and group ids name its descendants only while its pid is not
    // another process's (a session or group id keeps its pid from reuse while it has members).
    let ids_are_ours = procs.get(&root).is_none_or(|s| s.start == root_start);
    let mut known = lock(known);
    let mut seeds = Vec::new();
    let mut adopted = Vec::new();
    for st in procs.values() {
        // A descendant starts no earlier than the server.
        if st.pid == me || st.start < root_start {
            continue;
        }
        if st.pid == root {
            if st.start == root_start {
                seeds.push(root);
            }
            continue;
        }
        if (ids_are_ours && (st.session == root || st.pgrp == root))
            || known.contains_key(&(st.pid, st.start))
        {
            seeds.push(st.pid);
        } else if st.ppid == me && Some(st.session) != my_session {
            adopted.push(st.pid);
        }
    }
    let mut reg = registry();
    for pid in adopted {
        // Read again under the lock: a server of ours reaped and unregistered after the walk
        // above read it would otherwise look like an orphan nobody registered (a zombie or a
        // vanished pid with no argv), a false escapee of whichever server is being scanned.
        let walked = procs.get(&pid).map(|s| s.start);
        if sys::stat_of(pid).is_none_or(|s| Some(s.start) != walked || s.ppid != me) {
            continue;
        }
        let claimed_by = procs.get(&pid).and_then(|s| reg.claims.get(&(pid, s.start)));
        if !reg.servers.contains(&pid) && claimed_by.is_none_or(|&o| o == root) {
            seeds.push(pid);
        }
    }
    // Everything below a seed descends from the server too.
    let mut queue = seeds;
    let mut found = BTreeSet::new();
    while let Some(pid) = queue.pop() {
        if !found.insert(pid) {
            continue;
        }
        if let Some(kids) = children.get(&pid) {
            queue.extend(
                kids.iter()
                    .copied()
                    .filter(|k| *k != me && !reg.servers.contains(k)),
            );
        }
    }
    let mut new = false;
    for pid in found {
        let Some(st) = procs.get(&pid) else { continue };
        if pid == root && st.start == root_start {
            continue;
        }
        if !st.live() && st.ppid == me && !reg.servers.contains(&pid) {
            // A descendant that died as our (adopted) child: no `std` `Child` waits for it,
            // so reap it (the registry lock keeps a new server from taking its pid between).
            sys::reap_zombie(pid);
        }
        reg.claims.entry((pid, st.start)).or_insert(root);
        new |= !known.contains_key(&(pid, st.start));
        let entry = known.entry((pid, st.start)).or_insert_with(|| Seen {
            argv: sys::cmdline(pid, ARGV_ARGS, ARGV_CHARS),
            pgrp: st.pgrp,
            session: st.session,
        });
        if st.live() {
            entry.pgrp = st.pgrp;
            entry.session = st.session;
            if refresh_argv {
                let argv = sys::cmdline(pid, ARGV_ARGS, ARGV_CHARS);
                if !argv.is_empty() {
                    entry.argv = argv;
                }
            }
        }
    }
    new
}
