//! `keygen` and `key`: creating the signing key and printing its public half.

use std::path::PathBuf;

use clap::Args;

use crate::evidence::keys;

/// Create a signing key (file mode 0600, folder 0700) and print its public key.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Key file [default: $MCP_WITNESS_KEY, $XDG_CONFIG_HOME/mcp-witness/signing.key or ~/.config/mcp-witness/signing.key]
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Replace an existing key (evidence it signed then verifies only against the old public key).
    #[arg(long)]
    force: bool,
}

/// Print the public key, in the text form `verify --trust` accepts.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// Key file [default: as for keygen]
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
}

pub(super) fn key_path(explicit: Option<PathBuf>) -> Result<PathBuf, keys::KeyError> {
    match explicit {
        Some(p) => Ok(p),
        None => keys::default_path(),
    }
}

pub fn keygen(args: KeygenArgs) -> u8 {
    let path = match key_path(args.key) {
        Ok(p) => p,
        Err(e) => return super::error(e),
    };
    match keys::generate(&path, args.force) {
        Ok(key) => {
            eprintln!("mcp-witness: wrote signing key {}", path.display());
            outln!("{}", keys::public_text(&key.verifying_key()));
            super::help::exit::OK
        }
        Err(e) => super::error(e),
    }
}

pub fn key(args: KeyArgs) -> u8 {
    let path = match key_path(args.key) {
        Ok(p) => p,
        Err(e) => return super::error(e),
    };
    if !path.exists() && std::fs::symlink_metadata(&path).is_err() {
        return super::error(format!(
            "no signing key at {}: create one with `mcp-witness keygen{}`",
            path.display(),
            if default_key(&path) {
                String::new()
            } else {
                format!(" --key {}", path.display())
            }
        ));
    }
    match keys::load(&path) {
        Ok(key) => {
            outln!("{}", keys::public_text(&key.verifying_key()));
            super::help::exit::OK
        }
        Err(e) => super::error(e),
    }
}

/// Whether `path` is where keys go when `--key` is not given.
fn default_key(path: &std::path::Path) -> bool {
    keys::default_path().is_ok_and(|d| d == path)
}
