//! Ed25519 signing keys on disk and the public key text that `--trust` accepts.
//!
//! A secret key file holds one line, `ed25519-secret:<64 hex>`, mode 0600 in a 0700 folder.
//! The public key text is `ed25519:<64 hex>`.
//!
//! A key is used only when nobody else could have read or replaced it: the file must be a
//! regular file of ours that group and others cannot access, and its folder (the folder the
//! path names and, through links, the folder the file really is in) must not be writable by
//! group or others (not even a sticky `/tmp`) and must belong to us or to root.

use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::hex;

const SECRET_PREFIX: &str = "ed25519-secret:";
const PUBLIC_PREFIX: &str = "ed25519:";

/// Errors about key files and key texts.
#[derive(Debug)]
pub enum KeyError {
    Io(PathBuf, std::io::Error),
    /// The path is not a regular file (or a dangling link), or could not be opened.
    File(crate::files::FileError),
    /// Group or others may read the secret key.
    TooOpen(PathBuf, u32),
    /// Group or others may write in the key's folder, so they could swap the key.
    FolderOpen(PathBuf, u32),
    /// The key file (or its folder) belongs to another user.
    NotYours {
        path: PathBuf,
        folder: bool,
        owner: u32,
        me: u32,
    },
    Malformed(PathBuf),
    Exists(PathBuf),
    NoHome,
    BadPublicKey(String),
    /// A small-order ("weak") public key: signatures under it prove nothing.
    WeakPublicKey(String),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Io(p, e) => write!(f, "key file {}: {e}", p.display()),
            KeyError::File(e) => write!(f, "{e}"),
            KeyError::FolderOpen(p, mode) => write!(
                f,
                "key folder {} is writable by group or others (mode {:o}), so they could swap the key; it must be private: run `chmod 700 {}` or keep the key in a private folder",
                p.display(),
                mode & 0o7777,
                p.display()
            ),
            KeyError::NotYours {
                path,
                folder: false,
                owner,
                me,
            } => write!(
                f,
                "key file {} belongs to another user (uid {owner}; you are uid {me}); a signing key must be your own: create one with `mcp-witness keygen --key <a file in a private folder of yours>`",
                path.display()
            ),
            KeyError::NotYours {
                path,
                folder: true,
                owner,
                me,
            } => write!(
                f,
                "key folder {} belongs to another user (uid {owner}; you are uid {me}), who could swap the key; keep the key in a folder of your own",
                path.display()
            ),
            KeyError::TooOpen(p, mode) => write!(
                f,
                "key file {} is accessible to group or others (mode {:o}); it must be private: run `chmod 600 {}`",
                p.display(),
                mode & 0o777,
                p.display()
            ),
            KeyError::Malformed(p) => write!(
                f,
                "key file {} is not an mcp-witness signing key (expected one line `{SECRET_PREFIX}<64 hex>`)",
                p.display()
            ),
            KeyError::Exists(p) => write!(
                f,
                "key file {} already exists; pass --force to replace it (the old key is lost)",
                p.display()
            ),
            KeyError::NoHome => write!(
                f,
                "cannot find a place for the signing key: set MCP_WITNESS_KEY, XDG_CONFIG_HOME or HOME, or pass --key"
            ),
            KeyError::WeakPublicKey(t) => write!(
                f,
                "`{t}` is a small-order (weak) Ed25519 public key: ordinary Ed25519 libraries accept forged signatures under such a key, so it is never trusted; use the key `mcp-witness key` prints for a key made by `mcp-witness keygen`"
            ),
            KeyError::BadPublicKey(t) => write!(
                f,
                "`{t}` is not a public key: expected `{PUBLIC_PREFIX}<64 hex>` as printed by `mcp-witness key`"
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// The default key path: `$MCP_WITNESS_KEY`, else `$XDG_CONFIG_HOME/mcp-witness/signing.key`,
/// else `~/.config/mcp-witness/signing.key`.
pub fn default_path() -> Result<PathBuf, KeyError> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = nonempty("MCP_WITNESS_KEY") {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = nonempty("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(p).join("mcp-witness").join("signing.key"));
    }
    if let Some(p) = nonempty("HOME") {
        return Ok(PathBuf::from(p)
            .join(".config")
            .join("mcp-witness")
            .join("signing.key"));
    }
    Err(KeyError::NoHome)
}

/// The public key text, `ed25519:<hex>`.
pub fn public_text(key: &VerifyingKey) -> String {
    format!("{PUBLIC_PREFIX}{}", hex::encode(key.as_bytes()))
}

/// Parses a public key text; rejects weak (small-order) keys with their own error.
pub fn parse_public(text: &str) -> Result<VerifyingKey, KeyError> {
    let bad = || KeyError::BadPublicKey(text.chars().take(80).collect());
    let hex_part = text.trim().strip_prefix(PUBLIC_PREFIX).ok_or_else(bad)?;
    let bytes = hex::decode_exact::<32>(hex_part).ok_or_else(bad)?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| bad())?;
    if key.is_weak() {
        return Err(KeyError::WeakPublicKey(text.chars().take(80).collect()));
    }
    Ok(key)
}

/// Loads a signing key, refusing a file that others may read or could have replaced.
pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
    let file = crate::files::open_read(path, "key file").map_err(KeyError::File)?;
    let meta = file.metadata().map_err(|e| KeyError::Io(path.into(), e))?;
    let me = crate::sys::effective_uid();
    if meta.uid() != me {
        return Err(KeyError::NotYours {
            path: path.into(),
            folder: false,
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o077 != 0 {
        return Err(KeyError::TooOpen(path.into(), meta.mode()));
    }
    check_folders(path)?;
    let mut text = String::new();
    file.take(4096)
        .read_to_string(&mut text)
        .map_err(|e| KeyError::Io(path.into(), e))?;
    let hex_part = text
        .trim()
        .strip_prefix(SECRET_PREFIX)
        .ok_or_else(|| KeyError::Malformed(path.into()))?;
    let bytes = hex::decode_exact::<32>(hex_part).ok_or_else(|| KeyError::Malformed(path.into()))?;
    Ok(SigningKey::from_bytes(&bytes))
}

/// The folders a key at `path` lives in: the one the path names, and the one the file really
/// is in when links lead elsewhere.
fn key_folders(path: &Path) -> Vec<PathBuf> {
    let named = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut folders = vec![named];
    if let Ok(real) = fs::canonicalize(path)
        && let Some(dir) = real.parent()
        && fs::canonicalize(&folders[0]).ok().as_deref() != Some(dir)
    {
        folders.push(dir.to_path_buf());
    }
    folders
}

/// Refuses a key folder that group or others may write in, or that belongs to another user
/// (root's folders are trusted: root could replace the key anyway).
fn check_folders(path: &Path) -> Result<(), KeyError> {
    let me = crate::sys::effective_uid();
    for dir in key_folders(path) {
        let meta = fs::metadata(&dir).map_err(|e| KeyError::Io(dir.clone(), e))?;
        if meta.uid() != me && meta.uid() != 0 {
            return Err(KeyError::NotYours {
                path: dir,
                folder: true,
                owner: meta.uid(),
                me,
            });
        }
        if meta.mode() & 0o022 != 0 {
            return Err(KeyError::FolderOpen(dir, meta.mode()));
        }
    }
    Ok(())
}

/// Creates a new key file (0600, its folder 0700). Refuses to replace one unless `force`,
/// and refuses a folder where the key would not be private (see `load`).
pub fn generate(path: &Path, force: bool) -> Result<SigningKey, KeyError> {
    let io = |e| KeyError::Io(path.into(), e);
    // Never rename a key over a FIFO, device, folder or socket, nor create one through a
    // dangling link.
    crate::files::check_append_target(path, "key file").map_err(KeyError::File)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
    check_folders(path)?;
    let key = SigningKey::from_bytes(&random_bytes::<32>().map_err(io)?);
    let line = format!("{SECRET_PREFIX}{}\n", hex::encode(key.as_bytes()));
    // Write a private temporary file and rename it into place, so a crash never leaves a
    // half-written key and `--force` replaces atomically.
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    let written = f.write_all(line.as_bytes()).and_then(|()| f.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(e));
    }
    let placed = if force {
        fs::rename(&tmp, path)
    } else {
        // hard_link fails if the target exists: no window where an existing key is replaced.
        fs::hard_link(&tmp, path)
    };
    let _ = fs::remove_file(&tmp);
    match placed {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(KeyError::Exists(path.into())),
        Err(e) => Err(io(e)),
    }
}

/// Loads the key at `path`, creating it when absent. Returns whether it was created.
pub fn load_or_create(path: &Path) -> Result<(SigningKey, bool), KeyError> {
    match fs::symlink_metadata(path) {
        Ok(_) => load(path).map(|k| (k, false)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match generate(path, false) {
            Ok(k) => Ok((k, true)),
            // Another process created it between our look and our write: use theirs.
            Err(KeyError::Exists(_)) => load(path).map(|k| (k, false)),
            Err(e) => Err(e),
        },
        Err(e) => Err(KeyError::Io(path.into(), e)),
    }
}

/// Bytes from the kernel's random source.
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut out = [0u8; N];
    fs::File::open("/dev/urandom")?.read_exact(&mut out)?;
    Ok(out)
}

/// Reads `--trust` values: each is a key text or a file of key texts (one per line; blank
/// lines and `#` comments ignored).
pub fn trusted_keys(values: &[String]) -> Result<Vec<VerifyingKey>, KeyError> {
    let mut keys = Vec::new();
    for value in values {
        if value.trim().starts_with(PUBLIC_PREFIX) {
            keys.push(parse_public(value)?);
            continue;
        }
        let path = Path::new(value);
        let mut text = String::new();
        crate::files::open_read(path, "trust file")
            .map_err(KeyError::File)?
            .take(1 << 20)
            .read_to_string(&mut text)
            .map_err(|e| KeyError::Io(path.into(), e))?;
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            keys.push(parse_public(line)?);
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpw-keys-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn generated_key_is_private_and_loads_back() {
        let dir = scratch("gen");
        let path = dir.join("sub").join("signing.key");
        let key = generate(&path, false).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(load(&path).unwrap().to_bytes(), key.to_bytes());
        assert!(matches!(generate(&path, false), Err(KeyError::Exists(_))));
        let replaced = generate(&path, true).unwrap();
        assert_ne!(replaced.to_bytes(), key.to_bytes());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_key_others_can_read_is_refused() {
        let dir = scratch("open");
        let path = dir.join("signing.key");
        generate(&path, false).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, KeyError::TooOpen(..)));
        assert!(err.to_string().contains("chmod 600"));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_key_in_a_folder_others_may_write_is_refused_and_none_is_created_there() {
        let dir = scratch("openfolder");
        let path = dir.join("signing.key");
        generate(&path, false).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, KeyError::FolderOpen(..)), "{err}");
        assert!(err.to_string().contains("chmod 700"), "{err}");
        // Sticky, like /tmp, is refused too: the folder must be private.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(matches!(load(&path), Err(KeyError::FolderOpen(..))));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o770)).unwrap();
        assert!(matches!(load(&path), Err(KeyError::FolderOpen(..))));
        let other = dir.join("other.key");
        assert!(matches!(generate(&other, false), Err(KeyError::FolderOpen(..))));
        assert!(!other.exists());
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(load(&path).is_ok());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_key_reached_through_a_link_is_judged_by_the_folder_it_really_is_in() {
        let dir = scratch("linked");
        let private = dir.join("private");
        let key = private.join("signing.key");
        generate(&key, false).unwrap();
        let link = private.join("link.key");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        assert!(load(&link).is_ok());
        // The real folder becomes writable by others: through the link it is refused too.
        let open = dir.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        fs::rename(&key, open.join("signing.key")).unwrap();
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(open.join("signing.key"), &link).unwrap();
        assert!(matches!(load(&link), Err(KeyError::FolderOpen(p, _)) if p == open));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_key_or_key_folder_of_another_user_is_refused() {
        let me = crate::sys::effective_uid();
        if me != 0 {
            eprintln!("skipped: changing a file's owner needs root (running as uid {me})");
            return;
        }
        let dir = scratch("owner");
        let path = dir.join("k").join("signing.key");
        generate(&path, false).unwrap();
        std::os::unix::fs::chown(&path, Some(12345), None).unwrap();
        let err = load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                KeyError::NotYours {
                    folder: false,
                    owner: 12345,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("belongs to another user"), "{err}");
        std::os::unix::fs::chown(&path, Some(0), None).unwrap();
        std::os::unix::fs::chown(path.parent().unwrap(), Some(12345), None).unwrap();
        let err = load(&path).unwrap_err();
        assert!(matches!(err, KeyError::NotYours { folder: true, .. }), "{err}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn public_text_round_trips_and_garbage_is_refused() {
        let key = SigningKey::from_bytes(&[7u8; 32]).verifying_key();
        let text = public_text(&key);
        assert_eq!(parse_public(&text).unwrap(), key);
        assert!(parse_public("ed25519:zz").is_err());
        assert!(parse_public(&text.replace("ed25519:", "rsa:")).is_err());
        // The identity point is a weak key.
        let mut weak = [0u8; 32];
        weak[0] = 1;
        let err = parse_public(&format!("ed25519:{}", hex::encode(&weak))).unwrap_err();
        assert!(matches!(err, KeyError::WeakPublicKey(_)), "{err:?}");
        assert!(err.to_string().contains("small-order (weak)"), "{err}");
    }
}
