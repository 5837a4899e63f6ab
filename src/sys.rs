//! The operating-system facts std does not offer: signalling a whole process group and
//! listing the live members of one (from `/proc`), the effective user id, clearing a file
//! descriptor's `O_NONBLOCK`, and setting `SIGXFSZ` aside while an append writes.

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
const F_GETFL: i32 = 3;
const F_SETFL: i32 = 4;
/// `SIG_IGN` and `SIG_ERR` as `signal(2)` takes and returns them.
const SIG_IGN: usize = 1;
const SIG_ERR: usize = usize::MAX;

unsafe extern "C" {
    /// libc's `kill(2)`.
    fn kill(pid: i32, sig: i32) -> i32;
    /// libc's `geteuid(2)`.
    fn geteuid() -> u32;
    /// libc's `fcntl(2)` (variadic: here only with an `int` third argument).
    fn fcntl(fd: i32, cmd: i32, ...) -> i32;
    /// libc's `signal(2)`; handlers travel as plain addresses (`SIG_DFL` 0, `SIG_IGN` 1).
    fn signal(sig: i32, handler: usize) -> usize;
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
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, pgrp)) = parse_stat(&stat)
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
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(parse_stat("123 (a b) c)) S 1 456 456 0"), Some(('S', 456)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn refuses_to_signal_our_own_group_or_everyone() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
    }
}
