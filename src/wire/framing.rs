//! stdio framing: one JSON-RPC message per line, split on the newline byte, every line
//! bounded. Also the classification of a line as a message or as noise.

/// Default bound on one line: larger is a failure, never an out-of-memory.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

/// What the splitter yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// One line without its newline (a trailing `\r` is still there).
    Line(Vec<u8>),
    /// A line longer than the bound; its bytes were discarded. Carries the bytes seen so far.
    Oversize(usize),
}

/// Splits a byte stream into lines, whatever the chunking.
#[derive(Debug)]
pub struct Splitter {
    buf: Vec<u8>,
    max: usize,
    /// Inside an oversize line: skipping to its newline.
    skipping: bool,
}

impl Splitter {
    pub fn new(max: usize) -> Self {
        Splitter {
            buf: Vec::new(),
            max,
            skipping: false,
        }
    }

    /// Feeds a chunk; calls `out` for every complete line (and once per oversize line).
    pub fn push(&mut self, mut chunk: &[u8], out: &mut impl FnMut(Frame)) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&chunk[..i], Some(&chunk[i + 1..])),
                None => (chunk, None),
            };
            if !self.skipping {
                if self.buf.len() + part.len() > self.max {
                    let seen = self.buf.len() + part.len();
                    self.buf = Vec::new();
                    self.skipping = true;
                    out(Frame::Oversize(seen));
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            match rest {
                Some(rest) => {
                    if !self.skipping {
                        out(Frame::Line(std::mem::take(&mut self.buf)));
                    }
                    self.skipping = false;
                    chunk = rest;
                }
                None => break,
            }
        }
    }

    /// Bytes of the line being gathered (0 while skipping an oversize line).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// At end of stream: the unterminated last line, if any.
    pub fn finish(&mut self) -> Option<Frame> {
        if self.skipping || self.buf.is_empty() {
            return None;
        }
        Some(Frame::Line(std::mem::take(&mut self.buf)))
    }
}

/// A decoded line.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<'a> {
    /// The line ended in `\r\n` (tolerated, noted).
    pub crlf: bool,
    pub kind: LineKind<'a>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LineKind<'a> {
    /// A JSON object (its bytes, without a trailing `\r`): a candidate JSON-RPC message.
    Object(&'a [u8]),
    /// Anything else; the reason says which kind of noise it is.
    Noise(Noise),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noise {
    InvalidUtf8,
    Bom,
    Blank,
    NotJson,
    /// Valid JSON but not an object (e.g. an array: batches are not MCP since 2025-06-18).
    NotObject,
}

impl Noise {
    pub fn code(self) -> &'static str {
        match self {
            Noise::InvalidUtf8 => "invalid_utf8",
            Noise::Bom => "bom",
            Noise::Blank => "blank",
            Noise::NotJson => "not_json",
            Noise::NotObject => "not_object",
        }
    }
}

/// Classifies one line without building its value (a huge noise line costs no memory).
/// Never guesses: a line is a message only if it is exactly a JSON object.
pub fn decode(line: &[u8]) -> Decoded<'_> {
    let (body, crlf) = match line.strip_suffix(b"\r") {
        Some(b) => (b, true),
        None => (line, false),
    };
    let kind = if body.starts_with(b"\xEF\xBB\xBF") {
        LineKind::Noise(Noise::Bom)
    } else if std::str::from_utf8(body).is_err() {
        LineKind::Noise(Noise::InvalidUtf8)
    } else if body.iter().all(u8::is_ascii_whitespace) {
        LineKind::Noise(Noise::Blank)
    } else {
        match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
            Err(_) => LineKind::Noise(Noise::NotJson),
            Ok(_) if body.trim_ascii_start().first() == Some(&b'{') => LineKind::Object(body),
            Ok(_) => LineKind::Noise(Noise::NotObject),
        }
    };
    Decoded { crlf, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(max: usize, chunks: &[&[u8]]) -> (Vec<Frame>, Option<Frame>) {
        let mut s = Splitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut |f| out.push(f));
        }
        let rest = s.finish();
        (out, rest)
    }

    #[test]
    fn lines_are_found_across_and_within_chunks() {
        let (frames, rest) = split(100, &[b"{\"a\"", b":1}\n{\"b\":2}\n{\"c", b"\":3}\npart"]);
        assert_eq!(
            frames,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"{\"b\":2}".to_vec()),
                Frame::Line(b"{\"c\":3}".to_vec())
            ]
        );
        assert_eq!(rest, Some(Frame::Line(b"part".to_vec())));
    }

    #[test]
    fn an_oversize_line_is_reported_once_and_the_next_line_survives() {
        let (frames, rest) = split(4, &[b"abc", b"defgh", b"ij\nok\n"]);
        assert_eq!(frames, vec![Frame::Oversize(8), Frame::Line(b"ok".to_vec())]);
        assert_eq!(rest, None);
    }

    #[test]
    fn noise_is_classified_and_crlf_is_tolerated() {
        assert!(decode(b"{\"id\":1}\r").crlf);
        assert_eq!(decode(b"{\"id\":1}\r").kind, LineKind::Object(b"{\"id\":1}"));
        assert_eq!(decode(b"\xEF\xBB\xBF{}").kind, LineKind::Noise(Noise::Bom));
        assert_eq!(decode(b"\xff\xfe log").kind, LineKind::Noise(Noise::InvalidUtf8));
        assert_eq!(
            decode(b"Starting server...").kind,
            LineKind::Noise(Noise::NotJson)
        );
        assert_eq!(decode(b"[1,2]").kind, LineKind::Noise(Noise::NotObject));
        assert_eq!(decode(b"  ").kind, LineKind::Noise(Noise::Blank));
    }
}
