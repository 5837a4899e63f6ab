//! The two operating-system facts std does not offer: signalling a whole process group, and
//! listing the live members of one (from `/proc`).

use std::io;

/// `SIGTERM` on Linux.
pub const SIGTERM: i32 = 15;
/// `SIGCONT` on Linux.
pub const SIGCONT: i32 = 18;
/// `SIGKILL` on Linux.
pub const SIGKILL: i32 = 9;

unsafe extern "C" {
    /// libc's `kill(2)`.
    fn kill(pid: i32, sig: i32) -> i32;
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
