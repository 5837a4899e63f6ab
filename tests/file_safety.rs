//! Files that are not files, and writes that fail: every path a user names (evidence files,
//! keys, `--trust` files, configs, serve logs) is refused at once when it is a FIFO, a
//! device, a folder, a socket or a dangling link; diff and analyze read lines within a bound;
//! an append that cannot be written leaves the evidence file byte for byte as it was; and a
//! folder that cannot be written (its permissions, a read-only file system) is named as such
//! before the run.

mod common;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Runs `mcp-witness` like `witness`, but kills it after 10 s so that a regression that
/// blocks (on a FIFO, say) fails the test instead of hanging it.
fn bounded(dir: &TempDir, args: &[&str]) -> Run {
    bounded_command(dir, WITNESS, args)
}

fn bounded_command(dir: &TempDir, program: &str, args: &[&str]) -> Run {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir.path())
        .env("MCP_WITNESS_KEY", dir.join("signing.key"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} was still running after 10 s: it blocked");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// One of each thing that is not a regular file, in `dir`, with the words that name it.
struct NotFiles {
    paths: Vec<(PathBuf, &'static str)>,
    _socket: std::os::unix::net::UnixListener,
}

impl NotFiles {
    fn new(dir: &TempDir) -> NotFiles {
        let fifo = dir.join("a-fifo");
        let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
        assert!(made.success());
        let folder = dir.join("a-folder");
        fs::create_dir(&folder).unwrap();
        let socket_path = dir.join("a-socket");
        let socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
        NotFiles {
            paths: vec![
                (fifo, "is a FIFO"),
                (PathBuf::from("/dev/null"), "is a character device"),
                (folder, "is a directory"),
                (socket_path, "is a socket"),
            ],
            _socket: socket,
        }
    }
}

fn assert_refused(run: &Run, words: &str, what: &str) {
    assert_eq!(run.code, 2, "{what}: {}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(words) && run.stderr.contains("regular file"),
        "{what}: expected `{words}` and what to do in: {}",
        run.stderr
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn verify_diff_analyze_and_repair_refuse_at_once_what_is_not_a_regular_file() {
    let dir = TempDir::new("notfiles-read");
    let not = NotFiles::new(&dir);
    for (path, words) in &not.paths {
        for verb in ["verify", "diff", "analyze", "repair"] {
            let run = bounded(&dir, &[verb, s(path)]);
            assert_refused(&run, words, &format!("{verb} {}", path.display()));
        }
    }
}

#[test]
fn a_dangling_link_is_named_as_such_when_read() {
    let dir = TempDir::new("dangling-read");
    let link = dir.join("gone.jsonl");
    std::os::unix::fs::symlink(dir.join("nowhere.jsonl"), &link).unwrap();
    for verb in ["verify", "diff", "analyze", "repair"] {
        let run = bounded(&dir, &[verb, s(&link)]);
        assert_eq!(run.code, 2, "{verb}: {}", run.stderr);
        assert!(
            run.stderr.contains("is a dangling symbolic link"),
            "{verb}: {}",
            run.stderr
        );
    }
}

#[test]
fn diff_and_analyze_of_dev_zero_fail_at_once_instead_of_reading_forever() {
    let dir = TempDir::new("devzero");
    for verb in ["diff", "analyze", "verify"] {
        let run = bounded(&dir, &[verb, "/dev/zero"]);
        assert_refused(&run, "is a character device", verb);
    }
}

#[test]
fn config_key_and_trust_refuse_at_once_what_is_not_a_regular_file() {
    let b = Bench::new("notfiles-options");
    let run = b.probe_fixture(&[], &["correct"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ev = s(&b.evidence).to_string();
    let not = NotFiles::new(&b.dir);
    for (path, words) in &not.paths {
        let p = s(path);
        let run = bounded(&b.dir, &["probe", "-e", &ev, "--config", p, "--server", "x"]);
        assert_refused(&run, words, &format!("--config {p}"));
        let run = bounded(
            &b.dir,
            &["probe", "-e", &ev, "--key", p, "--", fixture(), "correct"],
        );
        assert_refused(&run, words, &format!("probe --key {p}"));
        let run = bounded(&b.dir, &["key", "--key", p]);
        assert_refused(&run, words, &format!("key --key {p}"));
        let run = bounded(&b.dir, &["verify", "--trust", p, &ev]);
        assert_refused(&run, words, &format!("--trust {p}"));
    }
    assert_eq!(b.blocks().len(), 1, "nothing was appended");
}

#[test]
fn keygen_never_replaces_what_is_not_a_regular_file_even_with_force() {
    let dir = TempDir::new("notfiles-keygen");
    let not = NotFiles::new(&dir);
    // Not /dev/null: were the guard missing, `--force` would rename a key over it.
    for (path, words) in not.paths.iter().filter(|(p, _)| p.starts_with(dir.path())) {
        for extra in [&[][..], &["--force"]] {
            let mut args = vec!["keygen", "--key", s(path)];
            args.extend_from_slice(extra);
            let run = bounded(&dir, &args);
            assert_refused(&run, words, &format!("{args:?}"));
        }
    }
    let meta = fs::symlink_metadata(dir.join("a-fifo")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
}

#[test]
fn an_evidence_file_that_is_not_a_regular_file_is_refused_before_the_run() {
    let dir = TempDir::new("notfiles-append");
    let not = NotFiles::new(&dir);
    for (path, words) in &not.paths {
        let run = bounded(&dir, &["probe", "-e", s(path), "--", fixture(), "correct"]);
        assert_refused(&run, words, &format!("probe -e {}", path.display()));
        assert!(!run.stdout.contains("recorded"), "{}", run.stdout);
        let run = bounded(&dir, &["check", "-e", s(path), "--", fixture(), "correct"]);
        assert_refused(&run, words, &format!("check -e {}", path.display()));
    }
}

#[test]
fn a_dangling_link_as_the_evidence_file_is_refused_and_nothing_is_created_at_its_target() {
    let dir = TempDir::new("dangling-append");
    let target = dir.join("elsewhere.jsonl");
    let link = dir.join("evidence.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let run = bounded(&dir, &["probe", "-e", s(&link), "--", fixture(), "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("is a dangling symbolic link") && run.stderr.contains("remove the link"),
        "{}",
        run.stderr
    );
    assert!(!target.exists(), "no file may be created through the link");
}

#[test]
fn a_link_to_an_existing_evidence_file_is_followed() {
    let b = Bench::new("link-append");
    assert_eq!(b.probe_fixture(&[], &["correct"]).code, 0);
    let link = b.dir.join("link.jsonl");
    std::os::unix::fs::symlink(&b.evidence, &link).unwrap();
    let run = bounded(&b.dir, &["probe", "-e", s(&link), "--", fixture(), "paginated"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(b.blocks().len(), 2);
    assert_eq!(bounded(&b.dir, &["verify", s(&b.evidence)]).code, 0);
}

/// A sparse file of `len` zero bytes: one line with no newline.
fn one_long_line(dir: &TempDir, len: u64) -> PathBuf {
    let path = dir.join("one-line");
    fs::File::create(&path).unwrap().set_len(len).unwrap();
    path
}

/// Runs `mcp-witness args` under GNU time; returns the run and its peak RSS in KiB.
fn with_peak_rss(dir: &TempDir, args: &[&str]) -> (Run, u64) {
    let time = "/usr/bin/time";
    assert!(
        Path::new(time).exists(),
        "measuring peak memory needs GNU time at {time} (apt-get install time)"
    );
    let mut full = vec!["-f", "peak_rss_kib=%M", WITNESS];
    full.extend_from_slice(args);
    let run = bounded_command(dir, time, &full);
    let peak = run
        .stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak_rss_kib="))
        .and_then(|v| v.trim().parse().ok())
        .expect("GNU time printed the peak");
    (run, peak)
}

#[test]
fn a_hundred_megabyte_line_makes_diff_and_analyze_fail_as_too_long_without_holding_it() {
    let dir = TempDir::new("longline");
    let len = 100_000_000;
    let path = one_long_line(&dir, len);
    for (verb, bound_mib) in [("diff", 16), ("analyze", 32)] {
        let (run, peak_kib) = with_peak_rss(&dir, &[verb, s(&path)]);
        assert_eq!(run.code, 2, "{verb}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("line 1 is too long"),
            "{verb}: {}",
            run.stderr
        );
        eprintln!("{verb}: peak RSS {peak_kib} KiB for a {len}-byte line (bound {bound_mib} MiB)");
        assert!(
            peak_kib * 1024 < len,
            "{verb} held {peak_kib} KiB: the line must never be held whole"
        );
    }
}

/// Bytes of a file, to compare before and after.
fn bytes(path: &Path) -> Vec<u8> {
    fs::read(path).unwrap()
}

#[test]
fn an_append_past_the_file_size_limit_leaves_the_file_as_it_was_and_says_so() {
    let b = Bench::new("fsize");
    assert_eq!(b.probe_fixture(&[], &["correct"]).code, 0);
    let before = bytes(&b.evidence);
    // Room for 100 more bytes: the next block starts to be written, then the limit hits.
    let limit = format!("--fsize={}", before.len() + 100);
    let ev = s(&b.evidence).to_string();
    let run = bounded_command(
        &b.dir,
        "prlimit",
        &[
            &limit,
            "--",
            WITNESS,
            "probe",
            "-e",
            &ev,
            "--",
            fixture(),
            "paginated",
        ],
    );
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("file size limit reached") && run.stderr.contains("left as it was"),
        "{}",
        run.stderr
    );
    assert!(
        bytes(&b.evidence) == before,
        "the file must be byte for byte as before"
    );
    // Without the limit, the next probe chains on as if nothing happened.
    assert_eq!(b.probe_fixture(&[], &["paginated"]).code, 0);
    assert_eq!(b.blocks().len(), 2);
    let run = bounded(&b.dir, &["verify", &ev]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// A tmpfs mounted for one test, unmounted when dropped (also when the test fails).
struct Mount(PathBuf);

impl Mount {
    /// A tmpfs at `at` with mount `options` (`size=64k`, `ro`, …).
    fn tmpfs(at: &Path, options: &str) -> Result<Mount, String> {
        fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(Mount(at.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let done = Command::new("umount").arg(&self.0).status();
        if !done.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        .unwrap_or(false)
}

#[test]
fn an_append_to_a_full_disk_leaves_the_file_as_it_was_and_says_disk_full() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let b = Bench::new("diskfull");
    let mount = match Mount::tmpfs(&b.dir.join("mnt"), "size=64k") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipped: cannot mount a tmpfs here: {e}");
            return;
        }
    };
    let ev = mount.0.join("evidence.jsonl");
    let evs = s(&ev).to_string();
    let run = bounded(&b.dir, &["probe", "-e", &evs, "--", fixture(), "correct"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Fill the rest of the disk.
    {
        use std::io::Write;
        let mut filler = fs::File::create(mount.0.join("filler")).unwrap();
        while filler.write_all(&[b'x'; 4096]).is_ok() {}
        let _ = filler.write_all(b"x");
    }
    let before = bytes(&ev);
    // A check block (about 5 KB) is larger than a tmpfs page, so it cannot fit in what is
    // left of the file's last page: its write starts, then the disk is full.
    let run = bounded(&b.dir, &["check", "-e", &evs, "--", fixture(), "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("disk full") && run.stderr.contains("left as it was"),
        "{}",
        run.stderr
    );
    assert!(bytes(&ev) == before, "the file must be byte for byte as before");
    fs::remove_file(mount.0.join("filler")).unwrap();
    let run = bounded(&b.dir, &["check", "-e", &evs, "--", fixture(), "correct"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(bounded(&b.dir, &["verify", &evs]).code, 0);
}

#[test]
fn a_key_in_a_folder_others_may_write_is_refused_before_it_signs_anything() {
    use std::os::unix::fs::PermissionsExt;
    let b = Bench::new("keyfolder");
    assert_eq!(b.probe_fixture(&[], &["correct"]).code, 0);
    fs::set_permissions(b.dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    let run = b.probe_fixture(&[], &["paginated"]);
    fs::set_permissions(b.dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("key folder") && run.stderr.contains("chmod 700"),
        "{}",
        run.stderr
    );
    assert_eq!(b.blocks().len(), 1, "nothing was signed with the exposed key");
}

#[test]
fn a_serve_log_stays_within_the_bound_analyze_reads_whatever_a_client_sends() {
    use std::io::Write;
    let dir = TempDir::new("serve-bound");
    let log = dir.join("serve.jsonl");
    let mut serve = Command::new(WITNESS)
        .args(["serve", "--log", s(&log)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Just under serve's 16 MiB input bound, all control bytes: escaped, the entry would be
    // six times larger than the line, over the 32 MiB a log line may have.
    let mut line = vec![1u8; (16 << 20) - 1];
    line.push(b'\n');
    let mut stdin = serve.stdin.take().unwrap();
    stdin.write_all(&line).unwrap();
    drop(stdin);
    assert!(serve.wait().unwrap().success());
    let text = fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("not logged: over the log's line bound"),
        "the entry is replaced by a note of its size"
    );
    assert!(text.lines().all(|l| l.len() < 32 << 20));
    let run = bounded(&dir, &["analyze", s(&log)]);
    assert_eq!(
        run.code, 1,
        "readable, and incomplete: {}{}",
        run.stdout, run.stderr
    );
}

#[test]
fn serve_log_and_analyze_markdown_refuse_at_once_what_is_not_a_regular_file() {
    let dir = TempDir::new("notfiles-kit");
    let not = NotFiles::new(&dir);
    let log = dir.join("serve.jsonl");
    fs::write(&log, "").unwrap();
    for (path, words) in &not.paths {
        let run = bounded(&dir, &["serve", "--log", s(path)]);
        assert_eq!(run.code, 2, "serve --log {}: {}", path.display(), run.stderr);
        assert!(
            run.stderr.contains(words),
            "serve --log {}: {}",
            path.display(),
            run.stderr
        );
        let run = bounded(&dir, &["analyze", s(&log), "--markdown", s(path)]);
        assert_refused(&run, words, &format!("analyze --markdown {}", path.display()));
    }
}

/// A folder this user may not write (mode 0555), with copies of mcp-witness and the fixture
/// beside it and a private home, in a folder every user may pass through. As root, who may
/// write anywhere, the commands run as `nobody` (setpriv); as anyone else, as themselves.
struct ReadOnlyFolder {
    base: TempDir,
    ro: PathBuf,
    home: PathBuf,
}

const NOBODY: u32 = 65534;

impl ReadOnlyFolder {
    fn new(label: &str) -> ReadOnlyFolder {
        use std::os::unix::fs::PermissionsExt;
        let base = TempDir::new(label);
        fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).unwrap();
        for (from, to) in [(WITNESS, "mcp-witness"), (fixture(), "fixture")] {
            fs::copy(from, base.join(to)).unwrap();
        }
        let home = base.join("home");
        fs::create_dir(&home).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        let ro = base.join("ro");
        fs::create_dir(&ro).unwrap();
        fs::write(ro.join("old.jsonl"), "").unwrap();
        fs::set_permissions(ro.join("old.jsonl"), fs::Permissions::from_mode(0o444)).unwrap();
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        ReadOnlyFolder { base, ro, home }
    }

    /// `mcp-witness ARGS` run in the read-only folder by a user who may not write it.
    fn run(&self, args: &[&str]) -> Run {
        let witness = self.base.join("mcp-witness");
        let mut cmd = if is_root() {
            let mut cmd = Command::new("setpriv");
            let id = NOBODY.to_string();
            cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups"])
                .arg(witness);
            cmd
        } else {
            Command::new(witness)
        };
        cmd.args(args)
            .current_dir(&self.ro)
            .env("HOME", &self.home)
            .env("MCP_WITNESS_KEY", self.home.join("signing.key"))
            .env("MCP_WITNESS_DIGEST_CACHE", self.home.join("digests"))
            .stdin(Stdio::null());
        Run::from(bounded_output(&mut cmd))
    }

    fn fixture(&self) -> String {
        s(&self.base.join("fixture")).to_string()
    }
}

#[test]
fn a_folder_this_user_may_not_write_is_named_as_not_writable_before_the_run() {
    let f = ReadOnlyFolder::new("read-only");
    let (ro, fx) = (s(&f.ro).to_string(), f.fixture());
    let not_writable = format!("the folder {ro} is not writable by this user");

    // The default evidence file, evidence/probes.jsonl under the working folder.
    let run = f.run(&["probe", "--", &fx, "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "evidence file {ro}/evidence/probes.jsonl cannot be written: {not_writable}; run from a folder you can write to, or give a path in one (-e FILE), or record nothing with --no-record"
        )),
        "{}",
        run.stderr
    );
    assert!(
        !run.stdout.contains("pass:"),
        "the run must not have started: {}",
        run.stdout
    );
    assert!(
        !f.home.join("signing.key").exists(),
        "no key is made for a run that cannot record"
    );

    // A relative evidence path with folders to create; an existing file this user may not write.
    let run = f.run(&["probe", "-e", "a/b/x.jsonl", "--", &fx, "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(&not_writable), "{}", run.stderr);
    let run = f.run(&["probe", "-e", "old.jsonl", "--", &fx, "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains(&format!("the file {ro}/old.jsonl is not writable by this user")),
        "{}",
        run.stderr
    );

    // Output files are refused the same way, before the run.
    for (flag, file) in [("--json", "out.json"), ("--sarif", "reports/out.sarif")] {
        let run = f.run(&["check", "--no-record", flag, file, "--", &fx, "correct"]);
        assert_eq!(run.code, 2, "{flag}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains(&format!("output file {file} cannot be written: {not_writable}")),
            "{flag}: {}",
            run.stderr
        );
    }

    // What needs no writing works there.
    let run = f.run(&["probe", "--no-record", "--", &fx, "correct"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn a_read_only_file_system_is_named_as_such_before_the_run() {
    if !is_root() {
        eprintln!("skipped: mounting a read-only tmpfs needs root");
        return;
    }
    let b = Bench::new("read-only-fs");
    let mount = match Mount::tmpfs(&b.dir.join("mnt"), "ro,size=64k") {
        Ok(m) => m,
        Err(e) => {
            eprintln!("skipped: cannot mount a tmpfs here: {e}");
            return;
        }
    };
    let mnt = s(&mount.0).to_string();
    let ev = format!("{mnt}/evidence.jsonl");
    let run = bounded(&b.dir, &["probe", "-e", &ev, "--", fixture(), "correct"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "evidence file {ev} cannot be written: the folder {mnt} is on a read-only file system"
        )),
        "{}",
        run.stderr
    );
    let report = format!("{mnt}/report.md");
    let run = bounded(
        &b.dir,
        &[
            "check",
            "--no-record",
            "--markdown",
            &report,
            "--",
            fixture(),
            "correct",
        ],
    );
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("is on a read-only file system"),
        "{}",
        run.stderr
    );
}
