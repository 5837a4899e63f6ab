//! The operating-system facts std does not offer: signalling a process group or one process,
//! listing the live members of a group, reading any process's `/proc/<pid>/stat` and
//! `cmdline`, starting a new session (`setsid`), becoming a child subreaper, reaping one
//! known zombie child, the effective user id, whether it may write a path (`faccessat`),
//! clearing a file descriptor's `O_NONBLOCK`, and setting `SIGXFSZ` aside while an append
//! writes.

use std::io;

/// `SIGTERM` on Linux.
pub const SIGTERM: i32 = 15;
/// `SIGCONT` on Linux.
pub const SIGCONT: i32 = 18;
/// `SIGKILL` on Linux.
pub const SIGKILL: i32 = 9;

/// `SIGXFSZ` on Linux: sent when a write goes past `RLIMIT_FSIZE`; it kills by default.
pub const SIGXFSZ: i32 = 25;
/// `O_NONBLOCK` on Linux.
pub const O_NONBLOCK: i32 = 0o4000;
/// `O_NOCTTY` on Linux.
pub const O_NOCTTY: i32 = 0o400;
/// `O_NOFOLLOW` on Linux.
pub const O_NOFOLLOW: i32 = 0o400000;
/// `ELOOP` on Linux: `O_NOFOLLOW` met a symbolic link.
pub const ELOOP: i32 = 40;
/// `ENXIO` on Linux: opening a socket, or a FIFO for writing with no reader.
pub const ENXIO: i32 = 6;
/// `faccessat(2)`'s "relative to the current folder", "with the effective ids", and modes.
const AT_FDCWD: i32 = -100;
const AT_EACCESS: i32 = 0x200;
const W_OK: i32 = 2;
const X_OK: i32 = 1;
const F_GETFL: i32 = 3;
const F_SETFL: i32 = 4;
/// `SIG_IGN` and `SIG_ERR` as `signal(2)` takes and returns them.
const SIG_IGN: usize = 1;
const SIG_ERR: usize = usize::MAX;

/// `PR_SET_CHILD_SUBREAPER` for `prctl(2)`.
const PR_SET_CHILD_SUBREAPER: i32 = 36;
/// `WNOHANG` for `waitpid(2)`.
const WNOHANG: i32 = 1;

unsafe extern "C" {
    /// libc's `kill(2)`.
    fn kill(pid: i32, sig: i32) -> i32;
    /// libc's `geteuid(2)`.
    fn geteuid() -> u32;
    /// libc's `fcntl(2)` (variadic: here only with an `int` third argument).
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    /// libc's `signal(2)`; handlers travel as plain addresses (`SIG_DFL` 0, `SIG_IGN` 1).
    fn signal(sig: i32, handler: usize) -> usize;
    /// libc's `setsid(2)`.
    fn setsid() -> i32;
    /// libc's `setpriority(2)`.
    fn setpriority(which: i32, who: u32, prio: i32) -> i32;
    /// libc's `prctl(2)` (variadic in C).
    fn prctl(option: i32, ...) -> i32;
    /// libc's `waitpid(2)`.
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    /// libc's `faccessat(2)`.
    fn faccessat(dirfd: i32, path: *const std::ffi::c_char, mode: i32, flags: i32) -> i32;
    /// libc's `open(2)` (variadic in C: here only with the two fixed arguments).
    fn open(path: *const std::ffi::c_char, flags: i32, ...) -> i32;
    /// libc's `write(2)`.
    fn write(fd: i32, buf: *const u8, count: usize) -> isize;
    /// libc's `close(2)`.
    fn close(fd: i32) -> i32;
    /// libc's `poll(2)`.
    fn poll(fds: *mut PollFd, nfds: u64, timeout: i32) -> i32;
    /// libc's `syscall(2)` (variadic in C: its arguments are read as `long`s).
    fn syscall(number: i64, ...) -> i64;
}

/// One descriptor for [`poll_fds`]: libc's `struct pollfd`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

/// Data to read (or end of file) for [`PollFd`].
pub const POLLIN: i16 = 0x1;
/// Room to write.
pub const POLLOUT: i16 = 0x4;
/// An error, a hang-up, or a descriptor that is not open: each also ends a wait.
pub const POLLERR: i16 = 0x8;
pub const POLLHUP: i16 = 0x10;
pub const POLLNVAL: i16 = 0x20;

/// Waits until one of `fds` is ready or `timeout_ms` passes (-1: no bound); how many are
/// ready. An interrupted wait is reported as 0 ready.
pub fn poll_fds(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: poll reads and writes exactly `fds.len()` `struct pollfd`s, which `PollFd`
    // lays out as C does, in a slice we hold mutably for the call.
    let n = unsafe { poll(fds.as_mut_ptr(), fds.len() as u64, timeout_ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(0)
        } else {
            Err(e)
        };
    }
    Ok(n as usize)
}

/// A descriptor that becomes readable when the process `pid` exits (`pidfd_open(2)`, Linux
/// 5.3 and later; an error elsewhere, and callers then wait for the exit another way).
pub fn pidfd_open(pid: u32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // The same number on every architecture: system calls added since 5.1 share one table.
    const SYS_PIDFD_OPEN: i64 = 434;
    let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pid <= 1 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: pidfd_open takes a pid and flags (0) and returns a new descriptor or -1; it
    // touches no memory of ours.
    let fd = unsafe { syscall(SYS_PIDFD_OPEN, i64::from(pid), 0i64) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just opened for us and is owned by nothing else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Sets `O_NONBLOCK` on an open descriptor: reads and writes then fail with `WouldBlock`
/// instead of waiting.
pub fn set_nonblocking(fd: &impl std::os::fd::AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL read and set the status flags of a descriptor we own (the
    // borrow keeps it open); they take an `int` argument or none and touch no memory of ours.
    let flags = unsafe { fcntl(fd, F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { fcntl(fd, F_SETFL, flags | O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process, by its effective ids, may write `path`: a file, or a folder (create
/// entries in it, which also needs search permission). `EACCES` or `EROFS` when it may not.
pub fn may_write(path: &std::path::Path, folder: bool) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mode = if folder { W_OK | X_OK } else { W_OK };
    // SAFETY: `path` is a NUL-terminated string that outlives the call, which only reads it.
    if unsafe { faccessat(AT_FDCWD, path.as_ptr(), mode, AT_EACCESS) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The effective user id of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: `geteuid` takes nothing, cannot fail and touches no memory of ours.
    unsafe { geteuid() }
}

/// Clears `O_NONBLOCK` on an open descriptor (set only so that opening a FIFO cannot block).
pub fn clear_nonblocking(fd: &impl std::os::fd::AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL read and set the status flags of a descriptor we own (the
    // borrow keeps it open); they take an `int` argument or none and touch no memory of ours.
    let flags = unsafe { fcntl(fd, F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    if flags & O_NONBLOCK == 0 {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { fcntl(fd, F_SETFL, flags & !O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// While alive, `SIGXFSZ` is ignored, so a write past the file-size limit fails with `EFBIG`
/// (which the writer can undo and report) instead of killing the process mid-write. Dropping
/// it puts the previous disposition back, so servers spawned later inherit the usual one.
pub struct FileSizeSignalIgnored {
    previous: Option<usize>,
}

impl FileSizeSignalIgnored {
    pub fn new() -> Self {
        // SAFETY: `signal` with SIG_IGN installs no code of ours; it only changes the
        // process's disposition of SIGXFSZ, which Drop restores.
        let previous = unsafe { signal(SIGXFSZ, SIG_IGN) };
        FileSizeSignalIgnored {
            previous: (previous != SIG_ERR).then_some(previous),
        }
    }
}

impl Default for FileSizeSignalIgnored {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for FileSizeSignalIgnored {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            // SAFETY: puts back the disposition `signal` returned above (SIG_DFL, SIG_IGN or
            // a handler someone else installed and that is still valid).
            unsafe { signal(SIGXFSZ, previous) };
        }
    }
}

/// Makes the calling process a session leader (and process group leader) with no
/// controlling terminal. Async-signal-safe: meant for a `pre_exec` hook.
pub fn new_session() -> io::Result<()> {
    // SAFETY: setsid takes no arguments and only changes this process's session and group;
    // failure is reported as -1 with errno set. It is async-signal-safe.
    if unsafe { setsid() } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The nice value of a process that must not compete with the one that matters.
pub const BACKGROUND_NICE: i32 = 10;

/// [`BACKGROUND_NICE`] as written to `/proc/self/autogroup`.
const AUTOGROUP_NICE: &[u8] = b"10";
/// `open(2)`'s write-only and close-on-exec flags, and `EAGAIN`, on Linux.
const O_WRONLY: i32 = 1;
const O_CLOEXEC: i32 = 0o2000000;
const EAGAIN: i32 = 11;
/// The kernel lets a process without `CAP_SYS_ADMIN` set an autogroup's nice once every
/// 100 ms, machine-wide: a second side run started at once tries again this often.
const AUTOGROUP_TRIES: u32 = 10;
const AUTOGROUP_RETRY: std::time::Duration = std::time::Duration::from_millis(25);

/// Lowers the calling process's CPU priority to [`BACKGROUND_NICE`] (its children inherit
/// it), and, called after [`new_session`], its session's autogroup too (see
/// [`lower_autogroup`]). Async-signal-safe: meant for a `pre_exec` hook.
pub fn lower_priority() -> io::Result<()> {
    const PRIO_PROCESS: i32 = 0;
    // SAFETY: setpriority with PRIO_PROCESS and who 0 changes only the calling process's nice
    // value; failure is -1 with errno set. It is a plain system call, async-signal-safe.
    if unsafe { setpriority(PRIO_PROCESS, 0, BACKGROUND_NICE) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // A kernel without autogroups (or with them off) schedules by the nice value alone.
    let _ = lower_autogroup();
    Ok(())
}

/// Sets the calling session's autogroup nice to [`BACKGROUND_NICE`]. Where the kernel groups
/// tasks by session (`sched_autogroup_enabled`, the default of most distributions), a
/// process's nice value only ranks it against the tasks of its own session; a server
/// started in a session of its own (`setsid`) would then compete for the cores as an equal
/// of every other session, the main server's among them, whatever its nice value. Uses only
/// `open`, `write`, `close` and `nanosleep`: async-signal-safe.
fn lower_autogroup() -> io::Result<()> {
    const PATH: &[u8] = b"/proc/self/autogroup\0";
    rate_limited(|| {
        // SAFETY: PATH is NUL-terminated and static; open only reads it.
        let fd = unsafe { open(PATH.as_ptr().cast(), O_WRONLY | O_CLOEXEC) };
        if fd == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: writes AUTOGROUP_NICE's bytes, static, from fd, which we just opened.
        let written = unsafe { write(fd, AUTOGROUP_NICE.as_ptr(), AUTOGROUP_NICE.len()) };
        let failed = (written == -1).then(io::Error::last_os_error);
        // SAFETY: closes the descriptor opened above, once.
        unsafe { close(fd) };
        failed.map_or(Ok(()), Err)
    })
}

/// Puts the autogroup of `pid`, a server started by [`lower_priority`] in a session of its
/// own, back to the usual nice (0), so that once the main session no longer needs the cores
/// more, the server is not starved by other sessions' work. Only a process that still leads
/// its own session is touched (a pid reused since would not be one of ours).
pub fn restore_autogroup(pid: u32) -> io::Result<()> {
    if stat_of(pid).is_none_or(|st| st.session != pid) {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    let path = format!("/proc/{pid}/autogroup");
    rate_limited(|| std::fs::write(&path, b"0"))
}

/// Runs `set` (a write of an autogroup's nice) again while the kernel's rate limit refuses it.
fn rate_limited(mut set: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let mut tries = 0;
    loop {
        tries += 1;
        match set() {
            Err(e) if e.raw_os_error() == Some(EAGAIN) && tries < AUTOGROUP_TRIES => {
                std::thread::sleep(AUTOGROUP_RETRY)
            }
            done => return done,
        }
    }
}

/// Makes this process a child subreaper: a descendant orphaned by its parent's death is
/// reparented to us (not to init), so it stays findable through its parent pid.
pub fn become_subreaper() -> io::Result<()> {
    // SAFETY: PR_SET_CHILD_SUBREAPER reads one integer argument (passed as an unsigned long,
    // as the variadic C prototype expects) and touches no memory of ours.
    let rc = unsafe { prctl(PR_SET_CHILD_SUBREAPER, 1u64, 0u64, 0u64, 0u64) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reaps the child `pid` of ours if it has exited, without waiting: its raw wait status.
pub fn reap_exited(pid: u32) -> Option<i32> {
    let pid = i32::try_from(pid).ok().filter(|p| *p > 1)?;
    let mut status = 0i32;
    // SAFETY: waitpid writes one int through a pointer to a live local; WNOHANG keeps it from
    // blocking; a positive pid addresses exactly that child.
    (unsafe { waitpid(pid, &mut status, WNOHANG) } == pid).then_some(status)
}

/// Waits for the child `pid` of ours to exit and reaps it: its raw wait status.
pub fn wait_for(pid: u32) -> io::Result<i32> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pid <= 1 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    loop {
        let mut status = 0i32;
        // SAFETY: waitpid writes one int through a pointer to a live local; a positive pid
        // addresses exactly that child.
        if unsafe { waitpid(pid, &mut status, 0) } == pid {
            return Ok(status);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps `pid` if it is an exited child of ours; never waits. True if it was reaped.
/// Callers must know `pid` is a zombie child no one else waits for (not a `std` `Child`).
pub fn reap_zombie(pid: u32) -> bool {
    reap_exited(pid).is_some()
}

/// Sends `sig` to the one process `pid` (never to a group, ourselves, or init).
pub fn signal_process(pid: u32, sig: i32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pid <= 1 || pid as u32 == std::process::id() {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: `kill` takes two plain integers and touches no memory of ours; a positive pid
    // addresses one process.
    if unsafe { kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The fields of `/proc/<pid>/stat` the process tracking needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: u32,
    /// `R`, `S`, `D`, `Z`, `T`, ...
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub session: u32,
    /// The controlling terminal's device number; 0 = none.
    pub tty_nr: i64,
    /// Start time in clock ticks since boot: with the pid, it names one process (pids are
    /// reused, this pair is not).
    pub start: u64,
}

impl ProcStat {
    /// Neither a zombie nor dead.
    pub fn live(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Parses a whole `/proc/<pid>/stat` line. The command name may hold spaces and
/// parentheses, so fields are counted from the last `)`.
pub fn parse_full_stat(stat: &str) -> Option<ProcStat> {
    let pid = stat.split_once(' ')?.0.trim().parse().ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_ascii_whitespace().collect();
    // f[0] is field 3 (state); field n is f[n - 3].
    Some(ProcStat {
        pid,
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        tty_nr: f.get(4)?.parse().ok()?,
        start: f.get(19)?.parse().ok()?,
    })
}

/// One process's stat, or `None` when it is gone (or unreadable).
pub fn stat_of(pid: u32) -> Option<ProcStat> {
    parse_full_stat(read_stat(pid, &mut [0u8; STAT_BUF])?)
}

const STAT_BUF: usize = 4096;

/// `/proc/<pid>/stat` in one read into `buf`. procfs produces the whole line at once, and
/// the scans read every process's stat, so the metadata call and growing reads of
/// `read_to_string` (six system calls a process instead of three) were most of a scan. A
/// line is about 300 bytes (52 fields of at most 20 digits and a 64-byte command name stay
/// far below the buffer); a line that fills the buffer is not trusted to be whole.
fn read_stat(pid: u32, buf: &mut [u8; STAT_BUF]) -> Option<&str> {
    use std::io::Read;
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let n = loop {
        match file.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other.ok()?,
        }
    };
    if n == buf.len() {
        return None;
    }
    std::str::from_utf8(&buf[..n]).ok()
}

/// The stats of `roots` and of every process below them, found through the kernel's lists
/// of each thread's children (`/proc/<pid>/task/<tid>/children`), so the cost follows the
/// size of those trees, not of the host. `None` when this kernel keeps no such lists
/// (`CONFIG_PROC_CHILDREN`), or past `limit` processes. The lists are read one by one, so a
/// process forked while they are read may be missing from this walk (the next one sees it).
pub fn processes_below(roots: &[u32], limit: usize) -> Option<Vec<ProcStat>> {
    let me = std::process::id();
    if std::fs::metadata(format!("/proc/{me}/task/{me}/children")).is_err() {
        return None;
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut queue: Vec<u32> = roots.to_vec();
    let mut out = Vec::new();
    let mut buf = [0u8; STAT_BUF];
    while let Some(pid) = queue.pop() {
        if !seen.insert(pid) {
            continue;
        }
        if seen.len() > limit {
            return None;
        }
        let Some(st) = read_stat(pid, &mut buf).and_then(parse_full_stat) else {
            continue;
        };
        out.push(st);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let mut path = task.path();
            path.push("children");
            if let Ok(list) = std::fs::read_to_string(&path) {
                queue.extend(
                    list.split_ascii_whitespace()
                        .filter_map(|p| p.parse::<u32>().ok()),
                );
            }
        }
    }
    Some(out)
}

/// Every process's stat that could be read.
pub fn all_processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        if let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
            && let Some(st) = stat_of(pid)
        {
            out.push(st);
        }
    }
    out
}

/// A process's argv from `/proc/<pid>/cmdline`, bounded: at most `max_args` arguments of at
/// most `max_chars` characters each (lossily decoded). Empty when gone or a zombie.
pub fn cmdline(pid: u32, max_args: usize, max_chars: usize) -> Vec<String> {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(format!("/proc/{pid}/cmdline")) else {
        return Vec::new();
    };
    let mut bytes = Vec::new();
    let limit = (max_args * (max_chars * 4 + 1)) as u64;
    if file.take(limit).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .take(max_args)
        .map(|a| String::from_utf8_lossy(a).chars().take(max_chars).collect())
        .collect()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe extern "C" {
    /// glibc's `mallopt(3)`.
    fn mallopt(param: i32, value: i32) -> i32;
}

/// Makes every allocation of 128 KiB or more a mapping of its own, returned to the system
/// when freed. glibc otherwise raises this threshold to the largest block freed so far (up
/// to 32 MiB), after which the line buffers a server's big lines need are carved from heaps
/// that are never given back: peak memory then grows with the number of big lines seen, not
/// with the one being handled. A no-op where the C library is not glibc.
pub fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_MMAP_THRESHOLD: i32 = -3;
        // SAFETY: `mallopt` takes two integers and only changes the allocator's tuning; it is
        // called before any other thread exists, and a failure (0) leaves the default.
        let _ = unsafe { mallopt(M_MMAP_THRESHOLD, 128 * 1024) };
    }
}

/// Sends `sig` to every process in group `pgid`. `sig == 0` only asks whether any exists.
pub fn signal_group(pgid: u32, sig: i32) -> io::Result<()> {
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    if pgid <= 1 {
        // kill(0) and kill(-1) would signal our own group or every process: never.
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: `kill` takes two plain integers and touches no memory of ours; a negative pid
    // addresses the process group, which is what we spawned the server into.
    let rc = unsafe { kill(-pgid, sig) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether any process (zombies included) is still in the group.
pub fn group_exists(pgid: u32) -> bool {
    !matches!(signal_group(pgid, 0), Err(e) if e.raw_os_error() == Some(3 /* ESRCH */))
}

/// Live (not zombie) members of a process group, read from `/proc`.
pub fn live_members(pgid: u32) -> Vec<u32> {
    if !group_exists(pgid) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let mut buf = [0u8; STAT_BUF];
        let Some(stat) = read_stat(pid, &mut buf) else {
            continue;
        };
        if let Some((state, pgrp)) = parse_stat(stat)
            && pgrp == pgid
            && state != 'Z'
            && state != 'X'
        {
            members.push(pid);
        }
    }
    members.sort_unstable();
    members
}

/// State and process group from a `/proc/<pid>/stat` line. The command name may hold spaces
/// and parentheses, so fields are counted from the last `)`.
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_autogroup_is_lowered_to_the_background_nice() {
        assert_eq!(AUTOGROUP_NICE, BACKGROUND_NICE.to_string().as_bytes());
    }

    /// The nice value in `/proc/PID/autogroup` ("/autogroup-N nice V"), where the kernel
    /// groups tasks by session.
    fn autogroup_nice(pid: u32) -> Option<i32> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/autogroup")).ok()?;
        text.split_whitespace().last()?.parse().ok()
    }

    #[test]
    fn a_lowered_server_session_is_lowered_then_put_back() {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("5");
        // SAFETY: the hook calls only the async-signal-safe functions it is written for.
        unsafe {
            cmd.pre_exec(|| {
                new_session()?;
                lower_priority()
            });
        }
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        let enabled = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
            .is_ok_and(|t| t.trim() == "1");
        if enabled && autogroup_nice(pid).is_some() {
            assert_eq!(autogroup_nice(pid), Some(BACKGROUND_NICE), "lowered at its start");
            restore_autogroup(pid).unwrap();
            assert_eq!(autogroup_nice(pid), Some(0), "put back");
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            restore_autogroup(pid).is_err(),
            "a process that is gone is not touched"
        );
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(parse_stat("123 (a b) c)) S 1 456 456 0"), Some(('S', 456)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn full_stat_lines_give_session_terminal_and_start_time() {
        let line = "4242 (a ) b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let st = parse_full_stat(line).unwrap();
        assert_eq!(
            (st.pid, st.state, st.ppid, st.pgrp, st.session),
            (4242, 'S', 1, 4242, 4242)
        );
        assert_eq!((st.tty_nr, st.start), (0, 987654));
        assert_eq!(parse_full_stat("4242 (x) S 1 2"), None);
    }

    #[test]
    fn our_own_stat_is_read() {
        let me = stat_of(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
        assert!(me.live());
    }

    #[test]
    fn refuses_to_signal_our_own_group_or_everyone() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
    }
}
