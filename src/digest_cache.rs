//! A cache of program digests, so a probe need not hash a large interpreter (`node` is
//! about 100 MB) on every run. An entry is used only when the program's device, inode, size,
//! and modification and change times (to the nanosecond) all match those it was computed
//! for, read from the same open file both times; the block then says `cache`.
//!
//! What it trusts: that the file system updates the change time (ctime) on every write, which
//! only the superuser can set back (with the system clock); and the cache folder itself, which
//! is used only when it is a folder of ours that nobody else can write (like the signing key's
//! folder). Without a usable cache the digest is computed, as before.
//!
//! Where: `$MCP_WITNESS_DIGEST_CACHE` (a folder, or `off`), else
//! `$XDG_CACHE_HOME/mcp-witness/program-digests`, else `~/.cache/mcp-witness/program-digests`.
//! One file per program version, named by its key, holding its 64 hex digits. Entries are
//! never pruned (one small file per program version seen).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where a digest came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Computed,
    Cache,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Computed => "computed",
            Source::Cache => "cache",
        }
    }
}

/// The cache folder to use, if any.
pub fn folder() -> Option<PathBuf> {
    match std::env::var_os("MCP_WITNESS_DIGEST_CACHE") {
        Some(v) if v == "off" => return None,
        Some(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("mcp-witness").join("program-digests"))
}

/// SHA-256 of the file at `path`, from the cache in `cache` when an entry matches, else
/// computed (and stored when the file did not change while it was read).
pub fn sha256(path: &Path, cache: Option<&Path>) -> io::Result<(String, Source)> {
    let mut file = File::open(path)?;
    let before = file.metadata()?;
    let key = key_of(&before);
    if let Some(hex) = entry_for(&key, cache) {
        return Ok((hex, Source::Cache));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let hex = crate::hex::encode(&hasher.finalize());
    if let Some(dir) = cache {
        // Stored only when nothing changed while the bytes were read.
        if file.metadata().map(|m| key_of(&m) == key).unwrap_or(false) {
            let _ = store(dir, &key, &hex);
        }
    }
    Ok((hex, Source::Computed))
}

/// The SHA-256 of the file at `path` when the cache in `cache` has an entry that matches it:
/// a few system calls, where computing it reads the whole file.
pub fn cached(path: &Path, cache: Option<&Path>) -> Option<String> {
    let file = File::open(path).ok()?;
    entry_for(&key_of(&file.metadata().ok()?), cache)
}

fn entry_for(key: &str, cache: Option<&Path>) -> Option<String> {
    let dir = cache.filter(|c| usable_folder(c))?;
    read_entry(&dir.join(key))
}

/// The entry name: every field that changes when the file's bytes can have.
fn key_of(m: &std::fs::Metadata) -> String {
    format!(
        "{}-{}-{}-{}.{:09}-{}.{:09}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

/// A folder of ours that nobody else may write.
fn usable_folder(dir: &Path) -> bool {
    match std::fs::symlink_metadata(dir) {
        Ok(m) => m.is_dir() && m.uid() == crate::sys::effective_uid() && m.permissions().mode() & 0o022 == 0,
        Err(_) => false,
    }
}

fn read_entry(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.uid() != crate::sys::effective_uid() || meta.len() != 64 {
        return None;
    }
    let mut text = String::new();
    File::open(path).ok()?.take(64).read_to_string(&mut text).ok()?;
    (text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then_some(text)
}

/// Writes an entry atomically (a private temporary file renamed into place).
fn store(dir: &Path, key: &str, hex: &str) -> io::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    if !usable_folder(dir) {
        return Err(io::Error::other("the digest cache folder is not private"));
    }
    let tmp = dir.join(format!(".{key}.{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(hex.as_bytes())?;
    drop(f);
    std::fs::rename(&tmp, dir.join(key)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digest computed plainly, for comparison.
    fn reference(path: &Path) -> String {
        crate::hex::encode(&Sha256::digest(std::fs::read(path).unwrap()))
    }

    fn temp(label: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mcpw-digest-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_second_digest_comes_from_the_cache_and_a_changed_program_is_hashed_again() {
        let dir = temp("reuse");
        let cache = dir.join("cache");
        let program = dir.join("prog");
        std::fs::write(&program, b"version one").unwrap();
        let (first, s1) = sha256(&program, Some(&cache)).unwrap();
        let (again, s2) = sha256(&program, Some(&cache)).unwrap();
        assert_eq!((s1, s2), (Source::Computed, Source::Cache));
        assert_eq!(first, again);
        assert_eq!(first, reference(&program));
        // Same size, new bytes: the change time moves, so the entry no longer matches.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&program, b"version two").unwrap();
        let (changed, s3) = sha256(&program, Some(&cache)).unwrap();
        assert_eq!(s3, Source::Computed);
        assert_ne!(changed, first);
        assert_eq!(changed, reference(&program));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_cache_lookup_alone_finds_only_an_entry_that_matches_the_file_as_it_is() {
        let dir = temp("lookup");
        let cache = dir.join("cache");
        let program = dir.join("prog");
        std::fs::write(&program, b"version one").unwrap();
        assert_eq!(cached(&program, Some(&cache)), None, "nothing stored yet");
        let (hex, _) = sha256(&program, Some(&cache)).unwrap();
        assert_eq!(cached(&program, Some(&cache)), Some(hex));
        assert_eq!(cached(&program, None), None, "no cache, no entry");
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&program, b"version two").unwrap();
        assert_eq!(cached(&program, Some(&cache)), None, "the file changed");
        assert_eq!(cached(&dir.join("absent"), Some(&cache)), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_cache_folder_others_can_write_is_not_trusted() {
        let dir = temp("open");
        let cache = dir.join("cache");
        let program = dir.join("prog");
        std::fs::write(&program, b"bytes").unwrap();
        let (real, _) = sha256(&program, Some(&cache)).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        // A forged entry in a folder anyone could have written is ignored.
        let key = std::fs::read_dir(&cache)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name();
        std::fs::write(cache.join(key), "0".repeat(64)).unwrap();
        let (again, source) = sha256(&program, Some(&cache)).unwrap();
        assert_eq!((again, source), (real, Source::Computed));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
