//! Reading an evidence file from its end, one line at a time, without reading the rest.
//!
//! Appends and `--if-changed` look only at the last few blocks, so their cost does not grow
//! with the file.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::block::MAX_LINE;

const CHUNK: usize = 64 * 1024;

/// Where the complete lines of a file end, and what comes after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Offset just past the last newline (0 when there is none).
    pub complete: u64,
    /// File length; bytes in `complete..len` are a torn last line.
    pub len: u64,
}

impl Shape {
    pub fn torn(&self) -> bool {
        self.complete < self.len
    }
}

/// Finds where the last complete line ends.
pub fn shape(file: &File) -> io::Result<Shape> {
    let len = file.metadata()?.len();
    let complete = match last_newline_before(file, len, u64::MAX)? {
        Some(i) => i + 1,
        None => 0,
    };
    Ok(Shape { complete, len })
}

/// Offset of the last `\n` in `0..end`, looking back at most `limit` bytes.
fn last_newline_before(file: &File, end: u64, limit: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; CHUNK];
    let mut pos = end;
    while pos > 0 && end - pos < limit {
        let n = CHUNK.min(pos as usize);
        let from = pos - n as u64;
        file.read_exact_at(&mut buf[..n], from)?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(Some(from + i as u64));
        }
        pos = from;
    }
    Ok(None)
}

/// Iterates complete lines backwards from `end` (an offset just past a newline).
pub struct RevLines<'f> {
    file: &'f File,
    end: u64,
}

impl<'f> RevLines<'f> {
    pub fn new(file: &'f File, end: u64) -> Self {
        RevLines { file, end }
    }
}

impl Iterator for RevLines<'_> {
    /// The line's start offset and its bytes without the newline.
    type Item = io::Result<(u64, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.end == 0 {
            return None;
        }
        let newline = self.end - 1;
        let start = match last_newline_before(self.file, newline, MAX_LINE as u64 + 1) {
            Ok(Some(i)) => i + 1,
            Ok(None) if newline <= MAX_LINE as u64 => 0,
            Ok(None) => {
                self.end = 0;
                return Some(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a line ending at offset {newline} is longer than any block"),
                )));
            }
            Err(e) => {
                self.end = 0;
                return Some(Err(e));
            }
        };
        let mut line = vec![0u8; (newline - start) as usize];
        if let Err(e) = self.file.read_exact_at(&mut line, start) {
            self.end = 0;
            return Some(Err(e));
        }
        self.end = start;
        Some(Ok((start, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(name: &str, bytes: &[u8]) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("mcpw-tail-{}-{name}", std::process::id()));
        File::create(&path).unwrap().write_all(bytes).unwrap();
        let f = File::open(&path).unwrap();
        (path, f)
    }

    #[test]
    fn lines_come_back_last_first_and_a_torn_tail_is_seen() {
        let big = "x".repeat(CHUNK * 2 + 17);
        let text = format!("one\n\n{big}\nlast\npartial");
        let (path, f) = file_with("rev", text.as_bytes());
        let shape = shape(&f).unwrap();
        assert!(shape.torn());
        assert_eq!(shape.len - shape.complete, "partial".len() as u64);
        let lines: Vec<Vec<u8>> = RevLines::new(&f, shape.complete).map(|r| r.unwrap().1).collect();
        assert_eq!(
            lines,
            vec![b"last".to_vec(), big.into_bytes(), b"".to_vec(), b"one".to_vec()]
        );
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn an_empty_file_has_no_lines() {
        let (path, f) = file_with("empty", b"");
        let shape = shape(&f).unwrap();
        assert_eq!(shape, Shape { complete: 0, len: 0 });
        assert!(RevLines::new(&f, 0).next().is_none());
        std::fs::remove_file(path).unwrap();
    }
}
