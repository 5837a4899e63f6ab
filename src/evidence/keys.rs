//! Ed25519 signing keys on disk and the public key text that `--trust` accepts.
//!
//! A secret key file holds one line, `ed25519-secret:<64 hex>`, mode 0600 in a 0700 folder.
//! The public key text is `ed25519:<64 hex>`.

use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::hex;

const SECRET_PREFIX: &str = "ed25519-secret:";
const PUBLIC_PREFIX: &str = "ed25519:";

/// Errors about key files and key texts.
#[derive(Debug)]
pub enum KeyError {
    Io(PathBuf, std::io::Error),
    /// Group or others may read the secret key.
    TooOpen(PathBuf, u32),
    Malformed(PathBuf),
    Exists(PathBuf),
    NoHome,
    BadPublicKey(String),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Io(p, e) => write!(f, "key file {}: {e}", p.display()),
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

/// Parses a public key text; rejects weak (small-order) keys.
pub fn parse_public(text: &str) -> Result<VerifyingKey, KeyError> {
    let bad = || KeyError::BadPublicKey(text.chars().take(80).collect());
    let hex_part = text.trim().strip_prefix(PUBLIC_PREFIX).ok_or_else(bad)?;
    let bytes = hex::decode_exact::<32>(hex_part).ok_or_else(bad)?;
    let key = VerifyingKey::from_bytes(&bytes).map_err(|_| bad())?;
    if key.is_weak() {
        return Err(bad());
    }
    Ok(key)
}

/// Loads a signing key, refusing a file that others may read.
pub fn load(path: &Path) -> Result<SigningKey, KeyError> {
    let meta = fs::metadata(path).map_err(|e| KeyError::Io(path.into(), e))?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(KeyError::TooOpen(path.into(), mode));
    }
    let mut text = String::new();
    fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_string(&mut text))
        .map_err(|e| KeyError::Io(path.into(), e))?;
    let hex_part = text
        .trim()
        .strip_prefix(SECRET_PREFIX)
        .ok_or_else(|| KeyError::Malformed(path.into()))?;
    let bytes = hex::decode_exact::<32>(hex_part).ok_or_else(|| KeyError::Malformed(path.into()))?;
    Ok(SigningKey::from_bytes(&bytes))
}

/// Creates a new key file (0600, its folder 0700). Refuses to replace one unless `force`.
pub fn generate(path: &Path, force: bool) -> Result<SigningKey, KeyError> {
    let io = |e| KeyError::Io(path.into(), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io)?;
    }
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
        fs::File::open(path)
            .and_then(|f| f.take(1 << 20).read_to_string(&mut text))
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
    fn public_text_round_trips_and_garbage_is_refused() {
        let key = SigningKey::from_bytes(&[7u8; 32]).verifying_key();
        let text = public_text(&key);
        assert_eq!(parse_public(&text).unwrap(), key);
        assert!(parse_public("ed25519:zz").is_err());
        assert!(parse_public(&text.replace("ed25519:", "rsa:")).is_err());
        // The identity point is a weak key.
        let mut weak = [0u8; 32];
        weak[0] = 1;
        assert!(parse_public(&format!("ed25519:{}", hex::encode(&weak))).is_err());
    }
}
