//! `repair`: moves a torn last line (bytes after the last newline) to a side file and
//! truncates the evidence file to its last newline. Nothing else is ever changed.

use std::fs::{self, OpenOptions};

use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::tail;

/// What repair did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repaired {
    /// The file ends in a newline (or is empty): nothing to do.
    Clean,
    /// `bytes` torn bytes from `offset` were moved to `side_file`.
    Moved {
        offset: u64,
        bytes: u64,
        side_file: PathBuf,
    },
}

/// Torn bytes larger than this are not a crash mid-write of one block: refuse.
const MAX_TORN: u64 = super::block::MAX_LINE as u64;

/// Why repair did nothing.
#[derive(Debug)]
pub enum RepairError {
    /// Not a regular file, or it could not be opened.
    File(crate::files::FileError),
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for RepairError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RepairError::File(e) => write!(f, "cannot repair: {e}"),
            RepairError::Io(p, e) => write!(f, "cannot repair {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for RepairError {}

pub fn repair(path: &Path) -> Result<Repaired, RepairError> {
    let file = crate::files::open_read_write(path, "evidence file").map_err(RepairError::File)?;
    // Writing the side file past `ulimit -f` must fail, not kill us halfway.
    let _xfsz = crate::sys::FileSizeSignalIgnored::new();
    repair_open(path, &file).map_err(|e| RepairError::Io(path.into(), e))
}

fn repair_open(path: &Path, file: &std::fs::File) -> io::Result<Repaired> {
    file.lock()?;
    let shape = tail::shape(file)?;
    if !shape.torn() {
        return Ok(Repaired::Clean);
    }
    let bytes = shape.len - shape.complete;
    if bytes > MAX_TORN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} bytes follow the last newline, more than any block: this is not a torn line, so repair leaves the file alone",
                bytes
            ),
        ));
    }
    let mut torn = vec![0u8; bytes as usize];
    file.read_exact_at(&mut torn, shape.complete)?;
    let side_file = side_path(path)?;
    let mut side = OpenOptions::new().write(true).create_new(true).open(&side_file)?;
    side.write_all(&torn)?;
    side.sync_all()?;
    file.set_len(shape.complete)?;
    file.sync_all()?;
    Ok(Repaired::Moved {
        offset: shape.complete,
        bytes,
        side_file,
    })
}

/// `<file>.torn`, or `<file>.torn.2`, … — never overwriting an earlier side file.
fn side_path(path: &Path) -> io::Result<PathBuf> {
    let base = path.as_os_str().to_owned();
    for n in 1..1000 {
        let mut name = base.clone();
        if n == 1 {
            name.push(".torn");
        } else {
            name.push(format!(".torn.{n}"));
        }
        let candidate = PathBuf::from(name);
        if fs::symlink_metadata(&candidate).is_err() {
            return Ok(candidate);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "too many .torn side files next to the evidence file",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_exactly_the_torn_bytes_and_nothing_else() {
        let dir = std::env::temp_dir().join(format!("mcpw-repair-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("e.jsonl");
        fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        let done = repair(&path).unwrap();
        assert_eq!(
            done,
            Repaired::Moved {
                offset: 16,
                bytes: 5,
                side_file: dir.join("e.jsonl.torn")
            }
        );
        assert_eq!(fs::read(&path).unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(fs::read(dir.join("e.jsonl.torn")).unwrap(), b"{\"c\":");
        assert_eq!(repair(&path).unwrap(), Repaired::Clean);
        fs::write(&path, b"x").unwrap();
        let again = repair(&path).unwrap();
        assert_eq!(
            again,
            Repaired::Moved {
                offset: 0,
                bytes: 1,
                side_file: dir.join("e.jsonl.torn.2")
            }
        );
        fs::remove_dir_all(dir).unwrap();
    }
}
