//! Opening the files a user names (evidence files, keys, `--trust` files, configs, serve
//! logs) and reading their lines within a bound.
//!
//! The rule: mcp-witness reads and writes only regular files. A FIFO, device, directory or
//! socket is refused at once with a message that says what the path is, before anything
//! blocks on it, reads from it or writes into it. The path is looked at first (so a device is
//! never even opened), then opened with `O_NONBLOCK` (so a FIFO swapped in meanwhile cannot
//! block the open) and the opened handle is checked again (so what is used is what was
//! checked).
//!
//! A file that this user may not write, or whose folder they may not create files in (its
//! permissions, or a read-only file system), is refused before a run too, naming the file or
//! folder that is not writable rather than the error of the open that would follow.
//!
//! Symbolic links to regular files are followed. For an evidence file about to be created,
//! a dangling symbolic link is refused rather than followed: creating a file wherever a link
//! points is not what the user asked for. Creation uses `O_NOFOLLOW`, so a link planted
//! between the look and the open is not followed either.

use std::fmt;
use std::fs::{self, File, FileType, OpenOptions};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::sys;

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fifo,
    Directory,
    CharDevice,
    BlockDevice,
    Socket,
    Other,
}

impl Kind {
    /// `None` for a regular file.
    fn of(t: FileType) -> Option<Kind> {
        Some(if t.is_file() {
            return None;
        } else if t.is_fifo() {
            Kind::Fifo
        } else if t.is_dir() {
            Kind::Directory
        } else if t.is_char_device() {
            Kind::CharDevice
        } else if t.is_block_device() {
            Kind::BlockDevice
        } else if t.is_socket() {
            Kind::Socket
        } else {
            Kind::Other
        })
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Fifo => "a FIFO (named pipe)",
            Kind::Directory => "a directory",
            Kind::CharDevice => "a character device",
            Kind::BlockDevice => "a block device",
            Kind::Socket => "a socket",
            Kind::Other => "not a regular file",
        }
    }
}

/// Why a path could not be opened.
#[derive(Debug)]
pub enum Problem {
    NotRegular(Kind),
    /// A symbolic link whose target does not exist.
    DanglingSymlink,
    /// This user may not write there: `place` is the file itself, or the nearest folder that
    /// exists on the way to it (where the file or its folders would be created).
    NotWritable {
        place: PathBuf,
        folder: bool,
        why: Refusal,
    },
    Io(io::Error),
}

/// Why a place cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its permissions do not let this user write (`EACCES`, `EPERM`).
    Permission,
    /// It is on a file system mounted read-only (`EROFS`).
    ReadOnlyFileSystem,
}

impl Refusal {
    /// The refusal an error is, if it is one.
    fn of(e: &io::Error) -> Option<Refusal> {
        match e.kind() {
            io::ErrorKind::PermissionDenied => Some(Refusal::Permission),
            io::ErrorKind::ReadOnlyFilesystem => Some(Refusal::ReadOnlyFileSystem),
            _ => None,
        }
    }
}

/// A path that could not be opened, with what it is for ("evidence file", "key file", …).
#[derive(Debug)]
pub struct FileError {
    pub role: &'static str,
    pub path: PathBuf,
    pub problem: Problem,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (role, path) = (self.role, self.path.display());
        match &self.problem {
            Problem::NotRegular(Kind::Other) => write!(
                f,
                "{role} {path} is not a regular file; mcp-witness reads and writes only regular files: give the path of one"
            ),
            Problem::NotRegular(kind) => write!(
                f,
                "{role} {path} is {}, not a regular file; mcp-witness reads and writes only regular files: give the path of one",
                kind.describe()
            ),
            Problem::DanglingSymlink => {
                let target = fs::read_link(&self.path)
                    .map(|t| format!(" (to {}, which does not exist)", t.display()))
                    .unwrap_or_default();
                write!(
                    f,
                    "{role} {path} is a dangling symbolic link{target}; mcp-witness does not create files through links: remove the link or point it at an existing file"
                )
            }
            Problem::NotWritable { place, folder, why } => {
                let what = if *folder { "the folder" } else { "the file" };
                let why = match why {
                    Refusal::Permission => "is not writable by this user",
                    Refusal::ReadOnlyFileSystem => "is on a read-only file system",
                };
                write!(
                    f,
                    "{role} {path} cannot be written: {what} {} {why}; run from a folder you can write to, or give a path in one",
                    place.display()
                )
            }
            Problem::Io(e) => write!(f, "{role} {path}: {e}"),
        }
    }
}

impl std::error::Error for FileError {}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    ReadWrite,
    /// Read and append, creating the file when the path names nothing.
    AppendCreate,
}

/// Opens a regular file for reading.
pub fn open_read(path: &Path, role: &'static str) -> Result<File, FileError> {
    open(path, role, Access::Read)
}

/// Opens an existing regular file for reading and writing.
pub fn open_read_write(path: &Path, role: &'static str) -> Result<File, FileError> {
    open(path, role, Access::ReadWrite)
}

/// Opens a regular file for reading and appending, creating it when nothing is at `path`
/// (never through a symbolic link).
pub fn open_append(path: &Path, role: &'static str) -> Result<File, FileError> {
    open(path, role, Access::AppendCreate)
}

/// Whether `open_append` could work: nothing at `path` yet, or a regular file (checked before
/// a run, so a bad path does not cost one; `open_append` checks again).
pub fn check_append_target(path: &Path, role: &'static str) -> Result<(), FileError> {
    look(path)
        .map(|_| ())
        .map_err(|problem| error(path, role, problem))
}

/// Writes `bytes` as the whole of the regular file at `path`, creating it when nothing is
/// there (never through a symbolic link). The open is the guard, not a check before it: a
/// FIFO, device or folder put at `path` since any check is refused, never blocked on, and a
/// refusal names the place.
pub fn write_whole(path: &Path, role: &'static str, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Write;
    let mut file = open(path, role, Access::AppendCreate)?;
    file.set_len(0)
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.flush())
        .map_err(|e| error(path, role, Problem::Io(e)))
}

/// [`check_append_target`], and a place this user may write: the file itself when it exists
/// (it is appended to or replaced in place), else the folder it would be created in. Not for
/// a file replaced by a rename, which needs only its folder.
pub fn check_write_target(path: &Path, role: &'static str) -> Result<(), FileError> {
    look(path)
        .and_then(|_| writable(path))
        .map_err(|problem| error(path, role, problem))
}

/// Whether this user may write a file at `path`: the file itself when it exists, else the
/// nearest folder that exists on the way to it (the file and its missing folders would be
/// created there). Only a refusal is an error; anything else is left to the write to report.
fn writable(path: &Path) -> Result<(), Problem> {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let (place, folder) = if fs::metadata(&path).is_ok() {
        (path.as_path(), false)
    } else {
        match path.ancestors().skip(1).find(|a| fs::metadata(a).is_ok()) {
            Some(dir) if dir.is_dir() => (dir, true),
            _ => return Ok(()),
        }
    };
    match sys::may_write(place, folder).map_err(|e| Refusal::of(&e)) {
        Err(Some(why)) => Err(Problem::NotWritable {
            place: place.to_path_buf(),
            folder,
            why,
        }),
        _ => Ok(()),
    }
}

/// `e`, from opening `path` to write (`create`: a new file), as a refusal naming the place
/// when it is one.
fn refused(path: &Path, create: bool, e: io::Error) -> Problem {
    let Some(why) = Refusal::of(&e) else {
        return Problem::Io(e);
    };
    let place = match path.parent().filter(|p| create && !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_path_buf(),
        None if create => PathBuf::from("."),
        None => path.to_path_buf(),
    };
    Problem::NotWritable {
        place,
        folder: create,
        why,
    }
}

fn error(path: &Path, role: &'static str, problem: Problem) -> FileError {
    FileError {
        role,
        path: path.to_path_buf(),
        problem,
    }
}

/// What is at a path, following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Regular,
    Nothing,
}

fn look(path: &Path) -> Result<Found, Problem> {
    match fs::metadata(path) {
        Ok(m) => match Kind::of(m.file_type()) {
            None => Ok(Found::Regular),
            Some(kind) => Err(Problem::NotRegular(kind)),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Err(Problem::DanglingSymlink),
            _ => Ok(Found::Nothing),
        },
        Err(e) => Err(Problem::Io(e)),
    }
}

fn open(path: &Path, role: &'static str, access: Access) -> Result<File, FileError> {
    let err = |problem| error(path, role, problem);
    // Twice at most: a second look only when the path changed between the look and the open.
    let mut last_error = None;
    for _ in 0..2 {
        let found = look(path).map_err(err)?;
        let create = access == Access::AppendCreate && found == Found::Nothing;
        let mut options = OpenOptions::new();
        match access {
            Access::Read => options.read(true),
            Access::ReadWrite => options.read(true).write(true),
            Access::AppendCreate => options.read(true).append(true),
        };
        let mut flags = sys::O_NONBLOCK | sys::O_NOCTTY;
        if create {
            options.create(true);
            flags |= sys::O_NOFOLLOW;
        }
        options.custom_flags(flags);
        match options.open(path) {
            Ok(file) => {
                let meta = file.metadata().map_err(|e| err(Problem::Io(e)))?;
                if let Some(kind) = Kind::of(meta.file_type()) {
                    return Err(err(Problem::NotRegular(kind)));
                }
                sys::clear_nonblocking(&file).map_err(|e| err(Problem::Io(e)))?;
                return Ok(file);
            }
            // A link (ELOOP, with O_NOFOLLOW) or a socket or FIFO (ENXIO) appeared since the
            // look, or the file went away: look again, once.
            Err(e)
                if e.raw_os_error() == Some(sys::ELOOP)
                    || e.raw_os_error() == Some(sys::ENXIO)
                    || e.kind() == io::ErrorKind::NotFound =>
            {
                last_error = Some(e);
            }
            Err(e) if access == Access::Read => return Err(err(Problem::Io(e))),
            Err(e) => return Err(err(refused(path, create, e))),
        }
    }
    let e = last_error.unwrap_or_else(|| io::Error::from(io::ErrorKind::NotFound));
    Err(err(match look(path) {
        Err(problem) => problem,
        Ok(_) => Problem::Io(e),
    }))
}

/// A line longer than the bound, or a read that failed.
#[derive(Debug)]
pub enum LineError {
    /// Line `line` (1-based) is longer than `max` bytes.
    TooLong {
        line: u64,
        max: usize,
    },
    Io(io::Error),
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong { line, max } => {
                write!(f, "line {line} is too long (more than {max} bytes)")
            }
            LineError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LineError {}

/// The lines of a reader (without their newlines; a last line without one included), each
/// at most `max` bytes: memory stays within one line of the bound however large the input.
/// After an error it yields nothing more.
pub struct BoundedLines<R> {
    reader: BufReader<R>,
    max: usize,
    line: u64,
    done: bool,
}

impl<R: Read> BoundedLines<R> {
    pub fn new(reader: R, max: usize) -> Self {
        BoundedLines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            max,
            line: 0,
            done: false,
        }
    }
}

impl<R: Read> Iterator for BoundedLines<R> {
    type Item = Result<Vec<u8>, LineError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut out = Vec::new();
        loop {
            let buf = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(LineError::Io(e)));
                }
            };
            if buf.is_empty() {
                self.done = true;
                if out.is_empty() {
                    return None;
                }
                self.line += 1;
                return Some(Ok(out));
            }
            let newline = buf.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(buf.len());
            if out.len() + take > self.max {
                self.done = true;
                return Some(Err(LineError::TooLong {
                    line: self.line + 1,
                    max: self.max,
                }));
            }
            out.extend_from_slice(&buf[..take]);
            self.reader.consume(take + usize::from(newline.is_some()));
            if newline.is_some() {
                self.line += 1;
                return Some(Ok(out));
            }
        }
    }
}

/// Makes an output file's place ready before a run: creates its folders, and refuses a path
/// that is a folder, a FIFO, a device or a socket, or that cannot be written, so a bad path
/// fails before the run and not after it. An existing regular file is left as it is (it is
/// replaced when the output is written).
pub fn prepare_output(path: &Path) -> Result<(), String> {
    writable(path).map_err(|problem| error(path, "output file", problem).to_string())?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            format!(
                "cannot create the folder {} for {}: {e}",
                parent.display(),
                path.display()
            )
        })?;
    }
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Err(format!(
                "{} is not a regular file; name a file to write",
                path.display()
            ));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot use {}: {e}", path.display())),
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpw-files-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn lines_come_back_as_split_would_give_them() {
        let lines =
            |text: &[u8]| -> Vec<Vec<u8>> { BoundedLines::new(text, 10).map(Result::unwrap).collect() };
        assert_eq!(lines(b""), Vec::<Vec<u8>>::new());
        assert_eq!(lines(b"a\n\nb"), vec![b"a".to_vec(), vec![], b"b".to_vec()]);
        assert_eq!(lines(b"0123456789\n"), vec![b"0123456789".to_vec()]);
    }

    #[test]
    fn a_line_over_the_bound_is_an_error_naming_it_and_ends_the_lines() {
        let mut it = BoundedLines::new(&b"ok\n0123456789x\nafter\n"[..], 10);
        assert_eq!(it.next().unwrap().unwrap(), b"ok");
        match it.next() {
            Some(Err(LineError::TooLong { line: 2, max: 10 })) => {}
            other => panic!("expected line 2 too long, got {other:?}"),
        }
        assert!(it.next().is_none());
    }

    #[test]
    fn a_directory_is_refused_for_reading_and_appending() {
        let dir = scratch("dir");
        let e = open_read(&dir, "evidence file").unwrap_err();
        assert!(matches!(e.problem, Problem::NotRegular(Kind::Directory)), "{e}");
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = open_append(&dir, "evidence file").unwrap_err();
        assert!(matches!(e.problem, Problem::NotRegular(Kind::Directory)), "{e}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_dangling_link_is_never_created_through() {
        let dir = scratch("dangling");
        let link = dir.join("e.jsonl");
        std::os::unix::fs::symlink(dir.join("elsewhere.jsonl"), &link).unwrap();
        let e = open_append(&link, "evidence file").unwrap_err();
        assert!(matches!(e.problem, Problem::DanglingSymlink), "{e}");
        assert!(e.to_string().contains("is a dangling symbolic link"), "{e}");
        assert!(!dir.join("elsewhere.jsonl").exists());
        assert!(check_append_target(&link, "evidence file").is_err());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_link_to_a_regular_file_is_followed_and_a_missing_file_created() {
        let dir = scratch("link");
        let real = dir.join("real.jsonl");
        fs::write(&real, b"x\n").unwrap();
        let link = dir.join("link.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(open_append(&link, "evidence file").is_ok());
        let new = dir.join("new.jsonl");
        assert!(check_append_target(&new, "evidence file").is_ok());
        assert!(open_append(&new, "evidence file").is_ok());
        assert!(new.is_file());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_whole_write_replaces_a_file_and_refuses_a_fifo_put_there_after_any_check() {
        let dir = scratch("whole");
        let file = dir.join("report.md");
        fs::write(&file, b"a longer old text\n").unwrap();
        write_whole(&file, "report", b"new\n").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"new\n");
        // The check passed on a regular file; a FIFO (no reader) is there by the write: the
        // write is refused at once, never blocked on.
        let fifo = dir.join("swapped.md");
        check_write_target(&fifo, "report").unwrap();
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let e = write_whole(&fifo, "report", b"x").unwrap_err();
        assert!(matches!(e.problem, Problem::NotRegular(Kind::Fifo)), "{e}");
        assert!(e.to_string().contains("report"), "{e}");
        // Nor is a dangling link written through.
        let link = dir.join("link.md");
        std::os::unix::fs::symlink(dir.join("elsewhere.md"), &link).unwrap();
        assert!(write_whole(&link, "report", b"x").is_err());
        assert!(!dir.join("elsewhere.md").exists());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_character_device_is_refused_without_reading_it() {
        let e = open_read(Path::new("/dev/zero"), "log").unwrap_err();
        assert!(matches!(e.problem, Problem::NotRegular(Kind::CharDevice)), "{e}");
        assert!(e.to_string().contains("is a character device"), "{e}");
    }
}
