//! Starting a server process: in a session of its own (so in its own process group, with no
//! controlling terminal: it cannot open `/dev/tty`), its three standard streams on pipes, and
//! reaping it.
//!
//! A server is started with glibc's `posix_spawn` and `POSIX_SPAWN_SETSID`: the child shares
//! our memory until it executes the program (vfork), so starting it costs the same whatever
//! mcp-witness holds. `std::process::Command` can make a new session only from a `pre_exec`
//! hook, which makes it fork: copying our page tables, then taking a fault on each page we
//! write after it. Measured here (2 vCPUs, an 8 MiB parent): 300 µs against 60 µs from spawn
//! to a started `/bin/true`. A background server (check's side runs) also needs its nice
//! value lowered before it runs, which `posix_spawn` cannot do: those, and every server on a
//! C library other than glibc, are started by `Command` with the hook.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};

use super::stdio::SpawnSpec;
use crate::sys;

/// "Exec format error": a file the kernel cannot run by itself.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ENOEXEC: i32 = 8;

/// A started server: its pid and our ends of its stdin (non-blocking), stdout and stderr.
pub struct Started {
    pub pid: u32,
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// Starts the server `spec` describes.
pub fn start(spec: &SpawnSpec) -> io::Result<Started> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !spec.background {
        match posix::start(spec) {
            // A program without a `#!` line: `Command` runs it with /bin/sh, as execvp does.
            Err(e) if e.raw_os_error() == Some(ENOEXEC) => {}
            other => return other,
        }
    }
    start_forked(spec)
}

/// Waits for the server `pid` to exit and reaps it.
pub fn wait(pid: u32) -> io::Result<ExitStatus> {
    let raw = sys::wait_for(pid)?;
    Ok(ExitStatus::from_raw(raw))
}

/// `Command` with a `pre_exec` hook: a new session, and a lower priority for a background run.
fn start_forked(spec: &SpawnSpec) -> io::Result<Started> {
    let mut cmd = Command::new(&spec.program);
    cmd.arg0(&spec.argv0)
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: the hook runs in the forked child before exec; it only calls setsid and
    // setpriority (both async-signal-safe) and reads errno. setsid also makes the new
    // process group, so `process_group(0)` must not be set as well.
    let background = spec.background;
    unsafe {
        cmd.pre_exec(move || {
            sys::new_session()?;
            if background {
                // A server that cannot be lowered still runs, at the usual priority.
                let _ = sys::lower_priority();
            }
            Ok(())
        });
    }
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn()?;
    let piped = || io::Error::other("a standard stream of the server was not piped");
    let ends = (|| {
        let stdin = File::from(OwnedFd::from(child.stdin.take().ok_or_else(piped)?));
        sys::set_nonblocking(&stdin)?;
        let stdout = File::from(OwnedFd::from(child.stdout.take().ok_or_else(piped)?));
        let stderr = File::from(OwnedFd::from(child.stderr.take().ok_or_else(piped)?));
        Ok::<_, io::Error>((stdin, stdout, stderr))
    })();
    match ends {
        // The child is reaped by `wait`, not through `Child`: dropping `Child` does nothing.
        Ok((stdin, stdout, stderr)) => Ok(Started {
            pid: child.id(),
            stdin,
            stdout,
            stderr,
        }),
        Err(e) => {
            // Never leave a server we cannot talk to running.
            let _ = sys::signal_group(child.id(), sys::SIGKILL);
            let _ = child.wait();
            Err(e)
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod posix {
    use std::ffi::{CString, OsStr, OsString, c_char, c_int, c_short};
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::{OsStrExt, OsStringExt};

    use super::Started;
    use crate::wire::stdio::SpawnSpec;

    /// glibc's `posix_spawnattr_t` (336 bytes on 64-bit Linux), with room to spare.
    #[repr(C, align(16))]
    struct Attr([u8; 512]);
    /// glibc's `posix_spawn_file_actions_t` (80 bytes on 64-bit Linux), with room to spare.
    #[repr(C, align(16))]
    struct Actions([u8; 256]);
    /// glibc's `sigset_t` (1024 bits).
    #[repr(C, align(8))]
    struct SigSet([u8; 128]);

    const POSIX_SPAWN_SETSIGDEF: c_short = 0x04;
    const POSIX_SPAWN_SETSIGMASK: c_short = 0x08;
    const POSIX_SPAWN_SETSID: c_short = 0x80;
    const SIGPIPE: c_int = 13;
    const SIGXFSZ: c_int = 25;
    const O_CLOEXEC: c_int = 0o2000000;

    unsafe extern "C" {
        fn posix_spawn(
            pid: *mut c_int,
            path: *const c_char,
            actions: *const Actions,
            attr: *const Attr,
            argv: *const *const c_char,
            envp: *const *const c_char,
        ) -> c_int;
        fn posix_spawnattr_init(attr: *mut Attr) -> c_int;
        fn posix_spawnattr_destroy(attr: *mut Attr) -> c_int;
        fn posix_spawnattr_setflags(attr: *mut Attr, flags: c_short) -> c_int;
        fn posix_spawnattr_setsigdefault(attr: *mut Attr, set: *const SigSet) -> c_int;
        fn posix_spawnattr_setsigmask(attr: *mut Attr, set: *const SigSet) -> c_int;
        fn posix_spawn_file_actions_init(actions: *mut Actions) -> c_int;
        fn posix_spawn_file_actions_destroy(actions: *mut Actions) -> c_int;
        fn posix_spawn_file_actions_adddup2(actions: *mut Actions, fd: c_int, newfd: c_int) -> c_int;
        fn posix_spawn_file_actions_addchdir_np(actions: *mut Actions, path: *const c_char) -> c_int;
        fn sigemptyset(set: *mut SigSet) -> c_int;
        fn sigaddset(set: *mut SigSet, sig: c_int) -> c_int;
        fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
    }

    /// A glibc call's result: 0, or an error number (the `posix_spawn*` functions return it).
    fn check(ret: c_int) -> io::Result<()> {
        match ret {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// A pipe whose two ends close on exec: (read end, write end).
    fn pipe() -> io::Result<(File, File)> {
        let mut fds = [-1 as c_int; 2];
        // SAFETY: pipe2 writes two file descriptors into the two-element array it is given.
        if unsafe { pipe2(fds.as_mut_ptr(), O_CLOEXEC) } == -1 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just opened by pipe2 and are owned by nothing else.
        let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok((File::from(ends.0), File::from(ends.1)))
    }

    fn c_string(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "an argument, path or environment variable of the server holds a NUL byte",
            )
        })
    }

    /// The environment the server starts with: ours, with `spec.env` set over it.
    fn environment(spec: &SpawnSpec) -> io::Result<Vec<CString>> {
        let set = &spec.env;
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !set.iter().any(|(name, _)| OsStr::new(name) == k))
            .collect();
        // A name set twice takes its last value, as with `Command::envs`.
        for (i, (k, v)) in set.iter().enumerate() {
            if !set[i + 1..].iter().any(|(later, _)| later == k) {
                vars.push((k.into(), v.into()));
            }
        }
        vars.into_iter()
            .map(|(k, v)| {
                let mut entry = k.into_vec();
                entry.push(b'=');
                entry.extend(v.into_vec());
                c_string(&entry)
            })
            .collect()
    }

    /// Owns an initialized `Attr` and `Actions` and destroys them however `start` leaves.
    struct Plan {
        attr: Box<Attr>,
        actions: Box<Actions>,
    }

    impl Plan {
        fn new() -> io::Result<Plan> {
            let mut attr = Box::new(Attr([0; 512]));
            let mut actions = Box::new(Actions([0; 256]));
            // SAFETY: each init gets a writable object at least as large as glibc's type and
            // suitably aligned; on failure the object is left uninitialized, so it is freed
            // without being destroyed.
            unsafe {
                check(posix_spawnattr_init(&mut *attr))?;
                if let Err(e) = check(posix_spawn_file_actions_init(&mut *actions)) {
                    posix_spawnattr_destroy(&mut *attr);
                    return Err(e);
                }
            }
            Ok(Plan { attr, actions })
        }
    }

    impl Drop for Plan {
        fn drop(&mut self) {
            // SAFETY: both were initialized in `Plan::new` and are destroyed once, here.
            unsafe {
                posix_spawn_file_actions_destroy(&mut *self.actions);
                posix_spawnattr_destroy(&mut *self.attr);
            }
        }
    }

    pub(super) fn start(spec: &SpawnSpec) -> io::Result<Started> {
        let path = c_string(spec.program.as_os_str().as_bytes())?;
        let mut args = vec![c_string(spec.argv0.as_bytes())?];
        for a in &spec.args {
            args.push(c_string(a.as_bytes())?);
        }
        let env = environment(spec)?;
        let cwd = match &spec.cwd {
            Some(dir) => Some(c_string(dir.as_os_str().as_bytes())?),
            None => None,
        };
        let mut argv: Vec<*const c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const c_char> = env.iter().map(|e| e.as_ptr()).collect();
        envp.push(std::ptr::null());

        let (stdin_read, stdin_write) = pipe()?;
        // Ours only: a pipe's two ends are two open files, each with its own flags, so the
        // server's stdin stays blocking.
        crate::sys::set_nonblocking(&stdin_write)?;
        let (stdout_read, stdout_write) = pipe()?;
        let (stderr_read, stderr_write) = pipe()?;

        let mut plan = Plan::new()?;
        let mut pid: c_int = 0;
        // SAFETY: `plan` holds initialized objects; the signal sets are initialized by
        // sigemptyset before use; every pointer passed (paths, argv, envp and their strings)
        // points into values that live until posix_spawn has returned, and argv and envp end
        // in a null pointer. The pipe descriptors are open (we own them) and are at least 3,
        // because the Rust runtime keeps 0, 1 and 2 open, so each dup2 really moves one.
        unsafe {
            let mut defaults = SigSet([0; 128]);
            check(sigemptyset(&mut defaults))?;
            // Ignored here (Rust ignores SIGPIPE; an append ignores SIGXFSZ for a moment), and
            // an ignored signal stays ignored across exec: the server gets the defaults.
            check(sigaddset(&mut defaults, SIGPIPE))?;
            check(sigaddset(&mut defaults, SIGXFSZ))?;
            let mut mask = SigSet([0; 128]);
            check(sigemptyset(&mut mask))?;
            let attr: *mut Attr = &mut *plan.attr;
            check(posix_spawnattr_setsigdefault(attr, &defaults))?;
            check(posix_spawnattr_setsigmask(attr, &mask))?;
            check(posix_spawnattr_setflags(
                attr,
                POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK,
            ))?;
            let actions: *mut Actions = &mut *plan.actions;
            check(posix_spawn_file_actions_adddup2(
                actions,
                stdin_read.as_raw_fd(),
                0,
            ))?;
            check(posix_spawn_file_actions_adddup2(
                actions,
                stdout_write.as_raw_fd(),
                1,
            ))?;
            check(posix_spawn_file_actions_adddup2(
                actions,
                stderr_write.as_raw_fd(),
                2,
            ))?;
            if let Some(dir) = &cwd {
                check(posix_spawn_file_actions_addchdir_np(actions, dir.as_ptr()))?;
            }
            check(posix_spawn(
                &mut pid,
                path.as_ptr(),
                actions,
                attr,
                argv.as_ptr(),
                envp.as_ptr(),
            ))?;
        }
        // The child's ends are the child's now: ours close here.
        drop((stdin_read, stdout_write, stderr_write));
        Ok(Started {
            pid: u32::try_from(pid).map_err(|_| io::Error::other("posix_spawn gave no pid"))?,
            stdin: stdin_write,
            stdout: stdout_read,
            stderr: stderr_read,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn spec(program: &str, args: &[&str]) -> SpawnSpec {
        SpawnSpec {
            program: program.into(),
            argv0: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![],
            cwd: None,
            max_line: 1024,
            background: false,
        }
    }

    /// Starts `spec`, closes its stdin, and returns its whole stdout and its exit status.
    /// Registered as a server, as `Server::spawn` does, so that no other test's tracker takes
    /// its exit for an adopted orphan's and reaps it first.
    fn run(spec: &SpawnSpec) -> (String, ExitStatus) {
        use crate::wire::descendants;
        let mut s = descendants::spawn_registered(|| start(spec), |s| s.pid).unwrap();
        drop(s.stdin);
        let mut out = String::new();
        s.stdout.read_to_string(&mut out).unwrap();
        let status = wait(s.pid).unwrap();
        descendants::unregister_server(s.pid);
        (out, status)
    }

    fn status_field(status: &str, name: &str) -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    }

    #[test]
    fn a_server_leads_a_session_of_its_own_with_no_terminal() {
        let (out, status) = run(&spec("/bin/cat", &["/proc/self/stat"]));
        assert!(status.success());
        // pid (comm) state ppid pgrp session tty_nr ...
        let after = out.rsplit_once(')').unwrap().1;
        let f: Vec<&str> = after.split_whitespace().collect();
        let pid = out.split_whitespace().next().unwrap();
        assert_eq!(
            (f[2], f[3], f[4]),
            (pid, pid, "0"),
            "pgrp, session, tty_nr: {out}"
        );
    }

    #[test]
    fn a_server_gets_the_default_sigpipe_and_sigxfsz_and_no_blocked_signal() {
        // This test process ignores SIGPIPE (the Rust runtime does): the server must not.
        let (out, _) = run(&spec("/bin/cat", &["/proc/self/status"]));
        let ignored = status_field(&out, "SigIgn:");
        assert_eq!(ignored & (1 << (13 - 1)), 0, "SIGPIPE ignored: {ignored:x}");
        assert_eq!(ignored & (1 << (25 - 1)), 0, "SIGXFSZ ignored: {ignored:x}");
        assert_eq!(status_field(&out, "SigBlk:"), 0);
    }

    #[test]
    fn a_server_gets_our_environment_with_its_own_variables_set_last_one_winning_and_its_folder() {
        let mut s = spec("/bin/sh", &["-c", "echo \"$MCPW_SPAWN_X|$HOME|$(pwd)\""]);
        s.env = vec![
            ("MCPW_SPAWN_X".into(), "a".into()),
            ("MCPW_SPAWN_X".into(), "b".into()),
        ];
        s.cwd = Some("/".into());
        let (out, status) = run(&s);
        assert!(status.success());
        let home = std::env::var("HOME").unwrap_or_default();
        assert_eq!(out.trim_end(), format!("b|{home}|/"));
    }

    #[test]
    fn a_program_without_an_interpreter_line_runs_under_the_shell() {
        let dir = std::env::temp_dir().join(format!("mcpw-spawn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("no-shebang");
        std::fs::write(&script, "echo ran by the shell\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let (out, status) = run(&spec(script.to_str().unwrap(), &[]));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(status.success());
        assert_eq!(out, "ran by the shell\n");
    }

    /// The open-file flags of descriptor `fd` of process `pid`, from /proc.
    fn flags(pid: &str, fd: i32) -> u32 {
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
        let line = info.lines().find(|l| l.starts_with("flags:")).unwrap();
        u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
    }

    #[test]
    fn our_end_of_stdin_never_blocks_and_the_servers_end_does() {
        for background in [false, true] {
            let mut s = spec("/bin/sh", &["-c", "grep ^flags /proc/self/fdinfo/0"]);
            s.background = background;
            let started = crate::wire::descendants::spawn_registered(|| start(&s), |s| s.pid).unwrap();
            let ours = flags("self", std::os::fd::AsRawFd::as_raw_fd(&started.stdin));
            assert_ne!(ours & sys::O_NONBLOCK as u32, 0, "ours, background {background}");
            drop(started.stdin);
            let mut out = String::new();
            let mut stdout = started.stdout;
            stdout.read_to_string(&mut out).unwrap();
            wait(started.pid).unwrap();
            crate::wire::descendants::unregister_server(started.pid);
            let theirs = u32::from_str_radix(out.split_whitespace().nth(1).unwrap(), 8).unwrap();
            assert_eq!(
                theirs & sys::O_NONBLOCK as u32,
                0,
                "theirs, background {background}: {out}"
            );
        }
    }

    #[test]
    fn a_missing_program_is_an_error_naming_the_cause() {
        let e = start(&spec("/nonexistent/mcpw-server", &[])).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_background_server_runs_at_the_background_nice_value() {
        let mut s = spec("/bin/cat", &["/proc/self/stat"]);
        s.background = true;
        let (out, _) = run(&s);
        let after = out.rsplit_once(')').unwrap().1;
        let nice: i32 = after.split_whitespace().nth(16).unwrap().parse().unwrap();
        assert_eq!(nice, sys::BACKGROUND_NICE);
        // Its own session too.
        let pid = out.split_whitespace().next().unwrap();
        assert_eq!(after.split_whitespace().nth(3).unwrap(), pid);
    }

    #[test]
    fn exit_statuses_come_back_as_they_were() {
        let (_, status) = run(&spec("/bin/sh", &["-c", "exit 3"]));
        assert_eq!(status.code(), Some(3));
        let (_, status) = run(&spec("/bin/sh", &["-c", "kill -TERM $$"]));
        assert_eq!(status.signal(), Some(15));
    }
}
