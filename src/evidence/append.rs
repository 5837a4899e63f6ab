//! Appending a block to an evidence file: locked, chained onto a checked tail, one write,
//! synced. Safe against concurrent writers (an exclusive `flock`) and crashes (a torn last
//! line is never chained onto). A write or sync that fails (disk full, quota, file-size limit)
//! is undone under the lock: the file is cut back to its old length, byte for byte as before.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};

use super::block::{self, BlockError, GENESIS_PREV, Link, Sealed};
use super::canonical;
use super::tail::{self, RevLines};
use crate::hex;

/// How long a writer waits for another writer's lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How far back `--if-changed` looks for the latest block of the same target.
pub const IF_CHANGED_WINDOW: usize = 10_000;
/// How far back an append looks for a block with the same target and time.
const DEDUP_WINDOW: usize = 10_000;

/// What an append did.
#[derive(Debug, Clone)]
pub enum Outcome {
    Appended(Sealed),
    /// A block with the same target and `observed_at` is already in the file.
    Duplicate {
        seq: u64,
        hash: String,
    },
    /// `if_changed`: the latest block of the same target has the same observation.
    Unchanged {
        seq: u64,
        hash: String,
    },
}

/// Why nothing was appended.
#[derive(Debug)]
pub enum AppendError {
    Io(PathBuf, io::Error),
    /// The path is not a regular file (or a dangling link), or could not be opened.
    File(crate::files::FileError),
    /// Writing or syncing the block failed; the file was cut back to `len` bytes (when
    /// `restore` is `Ok`) or may end in a torn line (when it is not).
    Write {
        path: PathBuf,
        len: u64,
        cause: WriteFailure,
        restore: Result<(), io::Error>,
    },
    Torn {
        path: PathBuf,
        offset: u64,
        bytes: u64,
    },
    BadTail {
        path: PathBuf,
        offset: u64,
        error: BlockError,
    },
    Busy(PathBuf),
    /// The body lacks what the chain rules need (a programming error, reported plainly).
    Body(&'static str),
    /// The sealed block would not pass verify; it was not written.
    Unverifiable(BlockError),
}

/// Why a write of a block failed, in the user's words.
#[derive(Debug)]
pub enum WriteFailure {
    /// ENOSPC.
    DiskFull,
    /// EDQUOT.
    Quota,
    /// EFBIG: the file-size limit (`ulimit -f`) or the file system's largest file.
    FileSizeLimit,
    Other(io::Error),
}

/// Linux error numbers for the three failures a user can act on.
const ENOSPC: i32 = 28;
const EDQUOT: i32 = 122;
const EFBIG: i32 = 27;

impl WriteFailure {
    fn of(e: io::Error) -> WriteFailure {
        match e.raw_os_error() {
            Some(ENOSPC) => WriteFailure::DiskFull,
            Some(EDQUOT) => WriteFailure::Quota,
            Some(EFBIG) => WriteFailure::FileSizeLimit,
            _ => WriteFailure::Other(e),
        }
    }
}

impl fmt::Display for WriteFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteFailure::DiskFull => write!(f, "disk full (no space left on the device)"),
            WriteFailure::Quota => write!(f, "disk quota exceeded"),
            WriteFailure::FileSizeLimit => write!(
                f,
                "file size limit reached (the process's `ulimit -f`, or the largest file the file system allows)"
            ),
            WriteFailure::Other(e) => write!(f, "{e}"),
        }
    }
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppendError::Io(p, e) => write!(f, "evidence file {}: {e}", p.display()),
            AppendError::File(e) => write!(f, "{e}"),
            AppendError::Write {
                path,
                len,
                cause,
                restore: Ok(()),
            } => write!(
                f,
                "evidence file {}: {cause} while appending; nothing was appended and the file was left as it was ({len} bytes). Make room (or raise the limit) and run again",
                path.display()
            ),
            AppendError::Write {
                path,
                len,
                cause,
                restore: Err(e),
            } => write!(
                f,
                "evidence file {}: {cause} while appending, and cutting the file back to its old length ({len} bytes) failed too ({e}); it may end in a torn line: make room, then run `mcp-witness repair {}`",
                path.display(),
                path.display()
            ),
            AppendError::Torn { path, offset, bytes } => write!(
                f,
                "evidence file {} ends in a torn line ({bytes} bytes from offset {offset}, no newline), \
                 probably from a crash mid-write; nothing was appended. Run `mcp-witness repair {}` \
                 to move those bytes aside",
                path.display(),
                path.display()
            ),
            AppendError::BadTail { path, offset, error } => write!(
                f,
                "the last block of {} (line at offset {offset}) does not check: {error}; refusing to chain \
                 onto it. Run `mcp-witness verify {}`",
                path.display(),
                path.display()
            ),
            AppendError::Busy(p) => write!(
                f,
                "evidence file {} stayed locked by another writer for {}s",
                p.display(),
                LOCK_WAIT.as_secs()
            ),
            AppendError::Body(what) => write!(f, "block body is missing {what}"),
            AppendError::Unverifiable(e) => {
                write!(f, "the new block would not verify ({e}); nothing was written")
            }
        }
    }
}

impl std::error::Error for AppendError {}

/// Appends `body` (a block without chain fields) to the file at `path`.
///
/// `body` must carry `target.id` and `observed_at`; with `if_changed`, also
/// `observation_sha256`.
pub fn append(
    path: &Path,
    body: Map<String, Value>,
    key: &SigningKey,
    if_changed: bool,
) -> Result<Outcome, AppendError> {
    append_after(path, body, key, if_changed, None)
}

/// [`append`] for a run that took a [`Mark`] of the file before it began: only blocks appended
/// since can collide with its block, so only those are read back (when the mark still holds,
/// checked under the lock; otherwise the recent blocks are found by their times).
pub fn append_after(
    path: &Path,
    body: Map<String, Value>,
    key: &SigningKey,
    if_changed: bool,
    mark: Option<Mark>,
) -> Result<Outcome, AppendError> {
    let io_err = |e| AppendError::Io(path.to_path_buf(), e);
    let target_id = body
        .get("target")
        .and_then(|t| t.get("id"))
        .and_then(Value::as_str)
        .ok_or(AppendError::Body("target.id"))?
        .to_string();
    let observed_at = body
        .get("observed_at")
        .and_then(Value::as_str)
        .ok_or(AppendError::Body("observed_at"))?
        .to_string();
    let observation = body
        .get("observation_sha256")
        .and_then(Value::as_str)
        .map(str::to_string);
    if if_changed && observation.is_none() {
        return Err(AppendError::Body("observation_sha256"));
    }

    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        fs::create_dir_all(dir).map_err(io_err)?;
    }
    let file = crate::files::open_append(path, "evidence file").map_err(AppendError::File)?;
    lock(&file, path)?;

    let stamped = crate::clock::parse(&observed_at);
    let window = match (mark.filter(|m| m.holds(&file)), stamped) {
        (Some(m), Some(since)) => Window::After(m.len, since),
        (None, Some(since)) => Window::Since(since),
        (_, None) => Window::None,
    };
    let tail = Tail::read(&file, path, window)?;

    let mut body = body;
    let mut observed_at = observed_at;
    if !tail.candidates.is_empty() {
        let ours = body_digest_of_map(&body);
        // (target, observed_at) is unique in a file. The same block again is a no-op; another
        // run of the same target stamped in the same millisecond is moved 1 ms later.
        for _ in 0..1000 {
            match tail
                .candidates
                .iter()
                .find(|c| c.moment.target_id == target_id && c.moment.observed_at == observed_at)
            {
                Some(c) if c.body_digest == ours => {
                    return Ok(Outcome::Duplicate {
                        seq: c.moment.seq,
                        hash: c.moment.hash.clone(),
                    });
                }
                Some(_) => {
                    observed_at = crate::clock::next_millisecond(&observed_at)
                        .ok_or(AppendError::Body("a valid observed_at"))?;
                    body.insert("observed_at".into(), observed_at.clone().into());
                }
                None => break,
            }
        }
    }
    if if_changed
        && tail.last.is_some()
        && let Some(latest) = latest_of_target(&file, tail.shape.complete, &target_id).map_err(io_err)?
        && latest.observation_sha256 == observation
    {
        return Ok(Outcome::Unchanged {
            seq: latest.seq,
            hash: latest.hash,
        });
    }

    let link = match &tail.last {
        Some(last) => Link {
            seq: last.seq + 1,
            prev: hex::encode(&last.hash),
            file_id: hex::encode(&last.file_id),
        },
        None => Link {
            seq: 1,
            prev: GENESIS_PREV.into(),
            file_id: hex::encode(&super::keys::random_bytes::<16>().map_err(io_err)?),
        },
    };
    let sealed = block::seal(body, &link, key);
    // Never write a block that verify would refuse (a hostile value, or a bug): check its
    // content as verify will (its signature is ours, right by construction).
    if let Err(error) = block::check_line_content(&sealed.line[..sealed.line.len() - 1]) {
        return Err(AppendError::Unverifiable(error));
    }
    write_or_restore(&file, path, tail.shape.len, &sealed.line)?;
    if tail.last.is_none()
        && let Some(dir) = dir
    {
        // A new file: make its directory entry durable too.
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_err)?;
    }
    Ok(Outcome::Appended(sealed))
}

/// What an append must know of a file before it writes: where its complete lines end, its
/// last block (checked in full, signature too: nothing is chained onto a block verify would
/// refuse), and the recent blocks a new block could collide with.
struct Tail {
    shape: tail::Shape,
    last: Option<block::Checked>,
    /// Recent blocks stamped at or after the time the tail was read for: only these can
    /// have the target and `observed_at` of the block being appended (which only moves later).
    candidates: Vec<Candidate>,
}

struct Candidate {
    moment: block::Moment,
    /// SHA-256 of the block without its chain fields: equal for the same block appended twice.
    body_digest: [u8; 32],
}

impl Tail {
    /// Reads the tail, and the blocks of `window` as candidates.
    fn read(file: &File, path: &Path, window: Window) -> Result<Tail, AppendError> {
        let io_err = |e| AppendError::Io(path.to_path_buf(), e);
        let shape = tail::shape(file).map_err(io_err)?;
        if shape.torn() {
            return Err(AppendError::Torn {
                path: path.into(),
                offset: shape.complete,
                bytes: shape.len - shape.complete,
            });
        }
        let mut lines = RevLines::new(file, shape.complete);
        let Some((offset, line)) = lines.next().transpose().map_err(io_err)? else {
            return Ok(Tail {
                shape,
                last: None,
                candidates: Vec::new(),
            });
        };
        let checked = block::check_line(&line).map_err(|error| AppendError::BadTail {
            path: path.into(),
            offset,
            error,
        })?;
        let lines = std::iter::once(Ok((offset, line))).chain(lines);
        let candidates = recent_candidates(lines, window).map_err(io_err)?;
        Ok(Tail {
            shape,
            last: Some(checked),
            candidates,
        })
    }
}

/// Which blocks a new block could collide with (same target, same `observed_at`).
#[derive(Debug, Clone, Copy)]
enum Window {
    /// Those after this offset (the file's end when the run began, see [`Mark`]), and those
    /// before it, last first, while they are stamped at or after this time: a block appended
    /// before the run began carries the run's time or a later one only if the clock was set
    /// back since, and then the blocks just before the mark are the ones that can.
    After(u64, time::OffsetDateTime),
    /// Those that may have been appended after a run stamped at this time began.
    Since(time::OffsetDateTime),
    None,
}

/// Where an evidence file ended before a run began. A block appended before then cannot carry
/// the run's time (the run had not begun), so its append reads back only what came after:
/// nothing, unless another writer appended meanwhile. The same file (device and inode), no
/// shorter, with a line ending at the mark, or the mark is not used.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    dev: u64,
    ino: u64,
    len: u64,
}

impl Mark {
    /// Marks the end of the evidence file at `path`; `None` when there is no such file yet.
    pub fn take(path: &Path) -> Option<Mark> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path).ok()?;
        m.is_file().then(|| Mark {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
        })
    }

    /// Whether the mark holds for `file` (open and locked for the append).
    fn holds(&self, file: &File) -> bool {
        use std::os::unix::fs::{FileExt, MetadataExt};
        let Ok(m) = file.metadata() else {
            return false;
        };
        if (m.dev(), m.ino()) != (self.dev, self.ino) || m.len() < self.len {
            return false;
        }
        let mut last = [0u8; 1];
        self.len == 0 || (file.read_exact_at(&mut last, self.len - 1).is_ok() && last[0] == b'\n')
    }
}

/// Appends `line` and syncs it; on failure cuts the file back to `len` (we hold the lock, so
/// `len` is still its length before our write) and says what happened.
fn write_or_restore(file: &File, path: &Path, len: u64, line: &[u8]) -> Result<(), AppendError> {
    // A write past `ulimit -f` must fail with EFBIG, not kill us with a torn line written.
    let _xfsz = crate::sys::FileSizeSignalIgnored::new();
    let written = { file }.write_all(line).and_then(|()| file.sync_data());
    let Err(e) = written else { return Ok(()) };
    let restore = file.set_len(len).and_then(|()| file.sync_data());
    Err(AppendError::Write {
        path: path.into(),
        len,
        cause: WriteFailure::of(e),
        restore,
    })
}

fn lock(file: &File, path: &Path) -> Result<(), AppendError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(()),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => return Err(AppendError::Busy(path.into())),
            Err(fs::TryLockError::Error(e)) => return Err(AppendError::Io(path.into(), e)),
        }
    }
}

/// How long after its probe ended a block can have been appended (the lock wait, and a margin).
const APPEND_SLACK: time::Duration = time::Duration::seconds(LOCK_WAIT.as_secs() as i64 + 5);

/// The blocks of `window`, read back from the end (file order is append order), with their
/// body digests. `Window::Since(t)`: back to a block that ended (observed_at plus its run time
/// plus the append slack) before `t`, since every block before it was appended earlier too;
/// of those, the ones stamped at or after `t` are kept.
fn recent_candidates(
    lines: impl Iterator<Item = io::Result<(u64, Vec<u8>)>>,
    window: Window,
) -> io::Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for line in lines.take(DEDUP_WINDOW) {
        let (offset, line) = line?;
        let Some(m) = block::moment(&line) else { break };
        let stamped = crate::clock::parse(&m.observed_at);
        let (keep, stop) = match window {
            Window::None => break,
            Window::After(end, _) if offset >= end => (true, false),
            // Before the mark: on only while the blocks carry the run's time or a later one.
            Window::After(_, since) => {
                let later = stamped.is_some_and(|t| t >= since);
                (later, !later)
            }
            Window::Since(since) => {
                let ended = stamped.map(|t| t + time::Duration::milliseconds(m.total_ms as i64));
                (
                    stamped.is_some_and(|t| t >= since),
                    ended.is_some_and(|t| t + APPEND_SLACK < since),
                )
            }
        };
        if keep && let Some(body_digest) = block::body_digest(&line) {
            out.push(Candidate {
                moment: m,
                body_digest,
            });
        }
        if stop {
            break;
        }
    }
    Ok(out)
}

fn body_digest_of_map(body: &Map<String, Value>) -> [u8; 32] {
    let mut b = body.clone();
    b.insert("format".into(), block::FORMAT.into());
    block::body_digest(&canonical::to_bytes(&Value::Object(b))).unwrap_or_default()
}

/// The latest block of a target, reading backwards until one is found.
/// The latest block of a target among the last `IF_CHANGED_WINDOW` blocks (read without
/// their signatures: verify is what proves them). Beyond that, the run counts as changed.
pub fn latest_of_target(file: &File, end: u64, target_id: &str) -> io::Result<Option<block::Moment>> {
    for line in RevLines::new(file, end).take(IF_CHANGED_WINDOW) {
        let (_, line) = line?;
        if let Some(m) = block::moment(&line)
            && m.target_id == target_id
        {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::block::tests::{body, reseal_digests};
    use std::fs::OpenOptions;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpw-append-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir.join("nested").join("e.jsonl")
    }

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[9u8; 32])
    }

    #[test]
    fn blocks_chain_from_genesis() {
        let path = scratch("chain");
        let Outcome::Appended(a) =
            append(&path, body("t", "2026-12-02T10:00:00.000+00:00"), &key(), false).unwrap()
        else {
            panic!("first append must write")
        };
        let Outcome::Appended(b) =
            append(&path, body("t", "2026-12-02T10:00:01.000+00:00"), &key(), false).unwrap()
        else {
            panic!("second append must write")
        };
        assert_eq!((a.seq, b.seq), (1, 2));
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text
            .lines()
            .map(|l| block::check_line(l.as_bytes()).unwrap())
            .collect();
        assert_eq!(hex::encode(&lines[0].prev), GENESIS_PREV);
        assert_eq!(lines[0].prev, block::GENESIS_PREV_BYTES);
        assert_eq!(lines[1].prev, lines[0].hash);
        assert_eq!(lines[1].file_id, lines[0].file_id);
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn the_same_block_twice_is_written_once() {
        let path = scratch("dup");
        let at = "2026-12-02T10:00:00.000+00:00";
        append(&path, body("t", at), &key(), false).unwrap();
        // A concurrent writer's block, observed later, landed in between.
        append(
            &path,
            body("other", "2026-12-02T10:00:00.500+00:00"),
            &key(),
            false,
        )
        .unwrap();
        let again = append(&path, body("t", at), &key(), false).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 1, .. }), "{again:?}");
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 2);
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn another_run_in_the_same_millisecond_is_stamped_one_millisecond_later() {
        let path = scratch("samems");
        let at = "2026-12-02T10:00:00.000+00:00";
        append(&path, body("t", at), &key(), false).unwrap();
        let mut other = body("t", at);
        other.insert("verdict".into(), "fail".into());
        let other = reseal_digests(other);
        let Outcome::Appended(b) = append(&path, other.clone(), &key(), false).unwrap() else {
            panic!("must write")
        };
        let v: Value = serde_json::from_slice(&b.line).unwrap();
        assert_eq!(v["observed_at"], "2026-12-02T10:00:00.001+00:00");
        // And that one again is a no-op, even behind a block observed earlier.
        append(&path, body("u", "2026-12-02T09:59:59.000+00:00"), &key(), false).unwrap();
        let mut again = other;
        again.insert("observed_at".into(), "2026-12-02T10:00:00.001+00:00".into());
        assert!(matches!(
            append(&path, again, &key(), false).unwrap(),
            Outcome::Duplicate { seq: 2, .. }
        ));
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 3);
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_run_that_marked_the_file_finds_the_blocks_appended_since() {
        let path = scratch("mark");
        let at = "2026-12-02T10:00:00.000+00:00";
        // Before the run: a block of another target, stamped earlier.
        append(
            &path,
            body("before", "2026-12-02T09:59:59.000+00:00"),
            &key(),
            false,
        )
        .unwrap();
        let mark = Mark::take(&path).unwrap();
        // During the run, another writer appends a block of the same target and time.
        append(&path, body("t", at), &key(), false).unwrap();
        let mut ours = body("t", at);
        ours.insert("verdict".into(), "fail".into());
        let ours = reseal_digests(ours);
        let Outcome::Appended(b) = append_after(&path, ours, &key(), false, Some(mark)).unwrap() else {
            panic!("must write")
        };
        let v: Value = serde_json::from_slice(&b.line).unwrap();
        assert_eq!(
            v["observed_at"], "2026-12-02T10:00:00.001+00:00",
            "moved past the block since the mark"
        );
        // The same block as the one appended since the mark is a no-op.
        let again = append_after(&path, body("t", at), &key(), false, Some(mark)).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 2, .. }), "{again:?}");
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn behind_the_mark_only_blocks_stamped_at_or_after_the_run_are_read_back() {
        let path = scratch("mark-clock");
        // Blocks appended before the run, the last two stamped at or after the run's time
        // (the clock was set back since): those are read back and found.
        append(&path, body("t", "2026-12-02T09:00:00.000+00:00"), &key(), false).unwrap();
        append(&path, body("t", "2026-12-02T10:00:00.000+00:00"), &key(), false).unwrap();
        append(&path, body("u", "2026-12-02T10:00:05.000+00:00"), &key(), false).unwrap();
        let mark = Mark::take(&path).unwrap();
        let at = "2026-12-02T10:00:00.000+00:00";
        let again = append_after(&path, body("t", at), &key(), false, Some(mark)).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 2, .. }), "{again:?}");
        let mut other = body("t", at);
        other.insert("verdict".into(), "fail".into());
        let other = reseal_digests(other);
        let Outcome::Appended(b) = append_after(&path, other, &key(), false, Some(mark)).unwrap() else {
            panic!("must write")
        };
        let v: Value = serde_json::from_slice(&b.line).unwrap();
        assert_eq!(v["observed_at"], "2026-12-02T10:00:00.001+00:00");
        let report = crate::evidence::verify::verify_file(&path, &Default::default()).unwrap();
        assert!(report.broken.is_none(), "{:?}", report.broken);
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_mark_that_no_longer_holds_is_set_aside_for_the_blocks_times() {
        let path = scratch("stale-mark");
        let at = "2026-12-02T10:00:00.000+00:00";
        append(&path, body("t", at), &key(), false).unwrap();
        let mark = Mark::take(&path).unwrap();
        // The file is replaced by another holding the same block (a new inode): the mark
        // says nothing of it, and the block is found by its time.
        let copy = path.with_extension("copy");
        fs::copy(&path, &copy).unwrap();
        fs::rename(&copy, &path).unwrap();
        let again = append_after(&path, body("t", at), &key(), false, Some(mark)).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 1, .. }), "{again:?}");
        // A mark past the end (the file was cut back) does not hold either.
        let long = Mark {
            len: u64::MAX,
            ..Mark::take(&path).unwrap()
        };
        let again = append_after(&path, body("t", at), &key(), false, Some(long)).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 1, .. }), "{again:?}");
        // Nor a mark in the middle of a line.
        let mid = Mark {
            len: 10,
            ..Mark::take(&path).unwrap()
        };
        let again = append_after(&path, body("t", at), &key(), false, Some(mid)).unwrap();
        assert!(matches!(again, Outcome::Duplicate { seq: 1, .. }), "{again:?}");
        assert!(Mark::take(&path.with_extension("absent")).is_none());
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn a_torn_tail_is_never_chained_onto() {
        let path = scratch("torn");
        append(&path, body("t", "2026-12-02T10:00:00.000+00:00"), &key(), false).unwrap();
        let good_len = fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"seq\":2,\"tr")
            .unwrap();
        let err = append(&path, body("t", "2026-12-02T10:00:01.000+00:00"), &key(), false).unwrap_err();
        match &err {
            AppendError::Torn { offset, bytes, .. } => assert_eq!((*offset, *bytes), (good_len, 12)),
            other => panic!("expected a torn-tail error, got {other:?}"),
        }
        assert!(err.to_string().contains("mcp-witness repair"));
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }

    #[test]
    fn unchanged_observations_are_skipped_with_if_changed() {
        let path = scratch("ifchanged");
        // The observation is what the verdict (among others) makes it.
        let with_obs = |at: &str, verdict: &str| {
            let mut b = body("t", at);
            b.insert("verdict".into(), verdict.into());
            reseal_digests(b)
        };
        append(
            &path,
            with_obs("2026-12-02T10:00:00.000+00:00", "pass"),
            &key(),
            true,
        )
        .unwrap();
        append(
            &path,
            body("other", "2026-12-02T10:00:01.000+00:00"),
            &key(),
            false,
        )
        .unwrap();
        let same = append(
            &path,
            with_obs("2026-12-02T10:00:02.000+00:00", "pass"),
            &key(),
            true,
        )
        .unwrap();
        assert!(matches!(same, Outcome::Unchanged { seq: 1, .. }), "{same:?}");
        let changed = append(
            &path,
            with_obs("2026-12-02T10:00:03.000+00:00", "fail"),
            &key(),
            true,
        )
        .unwrap();
        assert!(
            matches!(changed, Outcome::Appended(Sealed { seq: 3, .. })),
            "{changed:?}"
        );
        fs::remove_dir_all(path.parent().unwrap().parent().unwrap()).unwrap();
    }
}
