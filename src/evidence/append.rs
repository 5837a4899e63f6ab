//! Appending a block to an evidence file: locked, chained onto a checked tail, one write,
//! synced. Safe against concurrent writers (an exclusive `flock`) and crashes (a torn last
//! line is never chained onto).

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};

use super::block::{self, BlockError, Checked, GENESIS_PREV, Link, Sealed};
use super::tail::{self, RevLines};
use crate::hex;

/// How long a writer waits for another writer's lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);
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
}

impl fmt::Display for AppendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AppendError::Io(p, e) => write!(f, "evidence file {}: {e}", p.display()),
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
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io_err)?;
    lock(&file, path)?;

    let shape = tail::shape(&file).map_err(io_err)?;
    if shape.torn() {
        return Err(AppendError::Torn {
            path: path.into(),
            offset: shape.complete,
            bytes: shape.len - shape.complete,
        });
    }
    let mut lines = RevLines::new(&file, shape.complete);
    let last = match lines.next() {
        None => None,
        Some(r) => {
            let (offset, line) = r.map_err(io_err)?;
            let checked = block::check_line(&line).map_err(|error| AppendError::BadTail {
                path: path.into(),
                offset,
                error,
            })?;
            Some(checked)
        }
    };

    if let Some(last) = &last {
        if let Some(found) = same_moment(last, lines, &target_id, &observed_at).map_err(io_err)? {
            return Ok(Outcome::Duplicate {
                seq: found.seq,
                hash: found.hash,
            });
        }
        if if_changed
            && let Some(latest) = latest_of_target(&file, shape.complete, &target_id).map_err(io_err)?
            && latest.observation_sha256 == observation
        {
            return Ok(Outcome::Unchanged {
                seq: latest.seq,
                hash: latest.hash,
            });
        }
    }

    let link = match &last {
        Some(last) => Link {
            seq: last.seq + 1,
            prev: last.hash.clone(),
            file_id: last.file_id.clone(),
        },
        None => Link {
            seq: 1,
            prev: GENESIS_PREV.into(),
            file_id: hex::encode(&super::keys::random_bytes::<16>().map_err(io_err)?),
        },
    };
    let sealed = block::seal(body, &link, key);
    (&file).write_all(&sealed.line).map_err(io_err)?;
    file.sync_data().map_err(io_err)?;
    if last.is_none()
        && let Some(dir) = dir
    {
        // A new file: make its directory entry durable too.
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_err)?;
    }
    Ok(Outcome::Appended(sealed))
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

/// A block of the same target observed at the same moment, among the last block and those
/// before it that are not older than `observed_at`.
fn same_moment(
    last: &Checked,
    earlier: RevLines<'_>,
    target_id: &str,
    observed_at: &str,
) -> io::Result<Option<Checked>> {
    let Some(ours) = crate::clock::parse(observed_at) else {
        return Ok(None);
    };
    let is_same = |b: &Checked| b.target_id == target_id && b.observed_at == observed_at;
    if is_same(last) {
        return Ok(Some(last.clone()));
    }
    if crate::clock::parse(&last.observed_at).is_some_and(|t| t < ours) {
        return Ok(None);
    }
    for line in earlier.take(DEDUP_WINDOW) {
        let (_, line) = line?;
        let Ok(b) = block::check_line(&line) else {
            return Ok(None);
        };
        if is_same(&b) {
            return Ok(Some(b));
        }
        if crate::clock::parse(&b.observed_at).is_some_and(|t| t < ours) {
            return Ok(None);
        }
    }
    Ok(None)
}

/// The latest block of a target, reading backwards until one is found.
pub fn latest_of_target(file: &File, end: u64, target_id: &str) -> io::Result<Option<Checked>> {
    for line in RevLines::new(file, end) {
        let (_, line) = line?;
        if let Ok(b) = block::check_line(&line)
            && b.target_id == target_id
        {
            return Ok(Some(b));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::block::tests::body;

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
        assert_eq!(lines[0].prev, GENESIS_PREV);
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
        let with_obs = |at: &str, obs: &str| {
            let mut b = body("t", at);
            b.insert("observation_sha256".into(), obs.into());
            b
        };
        append(
            &path,
            with_obs("2026-12-02T10:00:00.000+00:00", "aa"),
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
            with_obs("2026-12-02T10:00:02.000+00:00", "aa"),
            &key(),
            true,
        )
        .unwrap();
        assert!(matches!(same, Outcome::Unchanged { seq: 1, .. }), "{same:?}");
        let changed = append(
            &path,
            with_obs("2026-12-02T10:00:03.000+00:00", "bb"),
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
