//! A single-pass check that a line is exactly its own canonical form, without building a
//! value: this is what lets `verify` spend its time on signatures, not on JSON.
//!
//! A line passes when it is what serde_json would write for the value it holds and that
//! value is fit for a block: no whitespace outside strings; object keys strictly increasing
//! by their UTF-16 code units, as RFC 8785 (JCS) sorts them (so no duplicates); strings escaped exactly as serde_json escapes (`\"`,
//! `\\`, `\b \f \n \r \t`, other control characters as lower-case `\u00xx`, nothing else);
//! integers only, in plain decimal, within ±(2^53−1). Unit tests pin the equivalence with a
//! round trip through `canonical::to_bytes`.

use std::borrow::Cow;
use std::ops::Range;

use super::canonical::MAX_SAFE_INTEGER;

/// Nesting deeper than serde_json's own limit is refused.
const MAX_DEPTH: usize = 128;

/// Where a line stops being canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonCanonical {
    pub offset: usize,
    pub what: &'static str,
}

/// One top-level member: its key (unescaped), and the byte spans of the whole member and
/// of its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member<'a> {
    pub key: Cow<'a, [u8]>,
    pub span: Range<usize>,
    pub value: Range<usize>,
}

/// What a scan learns of a canonical line: its top-level members, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scanned<'a> {
    pub members: Vec<Member<'a>>,
}

impl<'a> Scanned<'a> {
    /// The value bytes of a top-level member.
    pub fn get(&self, line: &'a [u8], key: &str) -> Option<&'a [u8]> {
        // Members are in key order: the line is canonical.
        let i = self
            .members
            .binary_search_by(|m| key_order(&m.key, key.as_bytes()))
            .ok()?;
        Some(&line[self.members[i].value.clone()])
    }

    /// The members other than `hash` and `sig`: joined with commas inside braces, they are
    /// the canonical form of the block without those two.
    pub fn unsigned(&self) -> Unsigned {
        let kept = self
            .members
            .iter()
            .filter(|m| m.key.as_ref() != b"hash" && m.key.as_ref() != b"sig")
            .map(|m| m.span.clone())
            .collect();
        Unsigned { kept }
    }
}

/// The spans that, joined, make the canonical form without `hash` and `sig`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unsigned {
    pub kept: Vec<Range<usize>>,
}

impl Unsigned {
    /// The canonical bytes without `hash` and `sig`, in pieces (for hashing without copying).
    pub fn pieces<'a>(&self, line: &'a [u8]) -> Vec<&'a [u8]> {
        let mut out = Vec::with_capacity(self.kept.len() * 2 + 1);
        out.push(&b"{"[..]);
        for (i, r) in self.kept.iter().enumerate() {
            if i > 0 {
                out.push(b",");
            }
            out.push(&line[r.clone()]);
        }
        out.push(b"}");
        out
    }
}

/// The JCS order of two unescaped keys (UTF-8 bytes; anything else sorts by its bytes).
pub fn key_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    // Decided at the first differing byte when either side is ASCII there (both then stand
    // at a character boundary, and an ASCII unit sorts below any other in UTF-16 too) or when
    // one key is a prefix of the other; the whole keys are looked at only otherwise.
    let same = common_prefix(a, b);
    match (a.get(same), b.get(same)) {
        (None, _) | (_, None) => return a.len().cmp(&b.len()),
        (Some(x), Some(y)) if x.is_ascii() || y.is_ascii() => return x.cmp(y),
        _ => {}
    }
    match (std::str::from_utf8(a), std::str::from_utf8(b)) {
        (Ok(a), Ok(b)) => super::canonical::key_order(a, b),
        _ => a.cmp(b),
    }
}

/// `key_order(a, b)` for a key `b` given as text, as every field name is: when `b` is
/// ASCII this is plain byte order (at the first difference `b`'s byte is ASCII, or one key
/// is a prefix of the other), which needs no look at where the keys differ.
pub fn key_order_str(a: &[u8], b: &str) -> std::cmp::Ordering {
    if b.is_ascii() {
        byte_order(a, b.as_bytes())
    } else {
        key_order(a, b.as_bytes())
    }
}

/// Byte order of two keys, decided at the first byte when they differ there (as names mostly
/// do) without a call to compare the rest.
#[inline]
pub fn byte_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    match a.first().cmp(&b.first()) {
        std::cmp::Ordering::Equal => a.cmp(b),
        other => other,
    }
}

/// How many bytes `a` and `b` start with in common, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let word = |s: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let diff = word(a) ^ word(b);
        if diff != 0 {
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

/// Checks `line` (without its newline) and lists its top-level members.
pub fn scan(line: &[u8]) -> Result<Scanned<'_>, NonCanonical> {
    if std::str::from_utf8(line).is_err() {
        return Err(NonCanonical {
            offset: 0,
            what: "not UTF-8",
        });
    }
    let mut s = Scanner {
        b: line,
        i: 0,
        top: Vec::new(),
    };
    if s.peek() != Some(b'{') {
        return Err(s.err("not a JSON object"));
    }
    s.value(0)?;
    if s.i != line.len() {
        return Err(s.err("bytes after the object"));
    }
    Ok(Scanned { members: s.top })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    top: Vec<Member<'a>>,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn err(&self, what: &'static str) -> NonCanonical {
        NonCanonical { offset: self.i, what }
    }

    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), NonCanonical> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), NonCanonical> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => self.string().map(|_| ()),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            Some(c) if c.is_ascii_whitespace() => Err(self.err("whitespace outside a string")),
            _ => Err(self.err("expected a value")),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), NonCanonical> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(self.err("expected true, false or null"))
        }
    }

    fn integer(&mut self) -> Result<(), NonCanonical> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let digits = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let text = &self.b[digits..self.i];
        if text.is_empty() {
            return Err(self.err("expected digits"));
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return Err(self.err("a number that is not an integer"));
        }
        if text.len() > 1 && text[0] == b'0' {
            return Err(NonCanonical {
                offset: start,
                what: "a number with a leading zero",
            });
        }
        if digits > start && text == b"0" {
            return Err(NonCanonical {
                offset: start,
                what: "negative zero",
            });
        }
        let mut n: u64 = 0;
        for &d in text {
            n = match n.checked_mul(10).and_then(|n| n.checked_add(u64::from(d - b'0'))) {
                Some(n) if n <= MAX_SAFE_INTEGER => n,
                _ => {
                    return Err(NonCanonical {
                        offset: start,
                        what: "an integer beyond ±(2^53−1)",
                    });
                }
            };
        }
        Ok(())
    }

    /// A string; returns its content bytes unescaped (borrowed when it has no escapes).
    fn string(&mut self) -> Result<Cow<'a, [u8]>, NonCanonical> {
        self.expect(b'"', "expected a string")?;
        let start = self.i;
        let mut owned: Option<Vec<u8>> = None;
        loop {
            // The common case first: a run of plain bytes.
            if owned.is_none() {
                let rest = &self.b[self.i..];
                self.i += super::find::string_stop(rest).unwrap_or(rest.len());
            }
            let Some(c) = self.peek() else {
                return Err(self.err("unterminated string"));
            };
            match c {
                b'"' => {
                    let end = self.i;
                    self.i += 1;
                    return Ok(match owned {
                        Some(v) => Cow::Owned(v),
                        None => Cow::Borrowed(&self.b[start..end]),
                    });
                }
                b'\\' => {
                    let buf = owned.get_or_insert_with(|| self.b[start..self.i].to_vec());
                    let unescaped = match self.b.get(self.i + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'b') => 0x08,
                        Some(b'f') => 0x0c,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => {
                            let hex = self
                                .b
                                .get(self.i + 2..self.i + 6)
                                .ok_or(self.err("short \\u escape"))?;
                            let ok = hex.starts_with(b"00")
                                && hex[2..].iter().all(|h| matches!(h, b'0'..=b'9' | b'a'..=b'f'));
                            let code = if ok {
                                u8::from_str_radix(std::str::from_utf8(&hex[2..]).unwrap_or("zz"), 16).ok()
                            } else {
                                None
                            };
                            match code {
                                Some(c) if c < 0x20 && !matches!(c, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) => {
                                    buf.push(c);
                                    self.i += 6;
                                    continue;
                                }
                                _ => return Err(self.err("a \\u escape serde_json would not write")),
                            }
                        }
                        _ => return Err(self.err("an escape serde_json would not write")),
                    };
                    buf.push(unescaped);
                    self.i += 2;
                }
                c if c < 0x20 => return Err(self.err("a raw control character in a string")),
                c => {
                    if let Some(buf) = owned.as_mut() {
                        buf.push(c);
                    }
                    self.i += 1;
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<(), NonCanonical> {
        self.expect(b'{', "expected an object")?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        let mut prev: Option<Cow<'a, [u8]>> = None;
        loop {
            let member_start = self.i;
            let key = self.string()?;
            if let Some(p) = &prev
                && key_order(&key, p) != std::cmp::Ordering::Greater
            {
                return Err(NonCanonical {
                    offset: member_start,
                    what: "keys not in sorted order, or a duplicate key",
                });
            }
            self.expect(b':', "expected `:` right after a key")?;
            let value_start = self.i;
            self.value(depth + 1)?;
            if depth == 0 {
                self.top.push(Member {
                    key: key.clone(),
                    span: member_start..self.i,
                    value: value_start..self.i,
                });
            }
            prev = Some(key);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), NonCanonical> {
        self.expect(b'[', "expected an array")?;
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected `,` or `]`")),
            }
        }
    }
}

/// Where the canonical value starting at `b[i]` ends, checked exactly as `scan` checks a
/// value nested `depth` levels deep in a line (`None` where `scan` would stop). For the
/// one-pass check of `kind::one_pass`, which hands the foreign JSON of a block to this.
pub(crate) fn value_end(b: &[u8], i: usize, depth: usize) -> Option<usize> {
    let mut s = Scanner {
        b,
        i,
        top: Vec::new(),
    };
    // `scan` collects members only at depth 0; nothing nested is collected.
    s.value(depth.max(1)).ok()?;
    Some(s.i)
}

/// The canonical string starting at `b[i]`: its content unescaped and where it ends, as
/// `scan` reads a string (`None` where `scan` would stop).
pub(crate) fn string_at(b: &[u8], i: usize) -> Option<(Cow<'_, [u8]>, usize)> {
    let mut s = Scanner {
        b,
        i,
        top: Vec::new(),
    };
    let text = s.string().ok()?;
    Some((text, s.i))
}

/// Just past the canonical string starting at `b[i]`, checked as `scan` checks a string but
/// without unescaping it (nothing is allocated); `None` where `scan` would stop.
pub(crate) fn checked_string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        let rest = b.get(j..)?;
        j += super::find::string_stop(rest)?;
        match b[j] {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' => {
                    let hex = b.get(j + 2..j + 6)?;
                    let digit = |h: u8| match h {
                        b'0'..=b'9' => Some(h - b'0'),
                        b'a'..=b'f' => Some(h - b'a' + 10),
                        _ => None,
                    };
                    if &hex[..2] != b"00" {
                        return None;
                    }
                    let code = digit(hex[2])? * 16 + digit(hex[3])?;
                    if code >= 0x20 || matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return None;
                    }
                    j += 6;
                }
                _ => return None,
            },
            // A raw control character.
            _ => return None,
        }
    }
}

/// A value inside a line that passed `scan`, read in place: the shape walk and the digests
/// of `evidence::kind` use these instead of building a `serde_json::Value`. On bytes that are
/// not such a value every reader answers `None` (nothing panics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(pub &'a [u8]);

impl<'a> Raw<'a> {
    fn scanner(self) -> Scanner<'a> {
        Scanner {
            b: self.0,
            i: 0,
            top: Vec::new(),
        }
    }

    pub fn is_null(self) -> bool {
        self.0 == b"null"
    }

    /// The JSON type's first byte: `{`, `[`, `"`, `t`, `f`, `n`, or a digit or `-`.
    pub fn first(self) -> Option<u8> {
        self.0.first().copied()
    }

    /// A string's text, unescaped (borrowed when it holds no escape).
    pub fn str(self) -> Option<Cow<'a, str>> {
        if self.first() != Some(b'"') {
            return None;
        }
        // The usual case, without the scanner: the whole value is one string with no escape
        // or control character (what the scanner would read, and all it would read).
        if let [b'"', inner @ .., b'"'] = self.0
            && super::find::string_stop(inner).is_none()
        {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        let mut s = self.scanner();
        match s.string().ok()? {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(v) => String::from_utf8(v).ok().map(Cow::Owned),
        }
    }

    /// The `N` bytes a string of `2N` lower-case hex digits spells, read in place: a
    /// canonical string of hex digits holds no escape, so one that does is not one.
    pub fn hex<const N: usize>(self) -> Option<[u8; N]> {
        match self.0 {
            [b'"', inner @ .., b'"'] => crate::hex::decode_exact_bytes(inner),
            _ => None,
        }
    }

    /// An integer's value.
    pub fn int(self) -> Option<i64> {
        if !matches!(self.first(), Some(b'-' | b'0'..=b'9')) {
            return None;
        }
        std::str::from_utf8(self.0).ok()?.parse().ok()
    }

    pub fn bool(self) -> Option<bool> {
        match self.0 {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// An object's members in order: unescaped key and value.
    pub fn members(self) -> Option<Vec<(Cow<'a, [u8]>, Raw<'a>)>> {
        let b = self.0;
        if b.first() != Some(&b'{') {
            return None;
        }
        let mut out = Vec::with_capacity(8);
        let mut i = 1;
        if b.get(i) == Some(&b'}') {
            return (i + 1 == b.len()).then_some(out);
        }
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = string_end(b, i)?;
            let key = Raw(&b[i..key_end]);
            let inner = &key.0[1..key.0.len() - 1];
            let key = match inner.contains(&b'\\') {
                false => Cow::Borrowed(inner),
                true => key.scanner().string().ok()?,
            };
            if b.get(key_end) != Some(&b':') {
                return None;
            }
            let start = key_end + 1;
            let end = skip(b, start)?;
            out.push((key, Raw(&b[start..end])));
            match b.get(end) {
                Some(b',') => i = end + 1,
                Some(b'}') if end + 1 == b.len() => return Some(out),
                _ => return None,
            }
        }
    }

    /// An object member's value, read in place without listing the object's members: what
    /// `View::of(self).at(key)` answers on a canonical object.
    pub fn find(self, key: &str) -> Raw<'a> {
        let mut out = [Raw(b"null")];
        self.find_all(&[key], &mut out);
        out[0]
    }

    /// `find` of several keys in one pass over the object: `out[n]` is the value of `keys[n]`
    /// (`null` when absent). A key holding no `"`, `\` or control character (every field name)
    /// is compared as the member key's bytes: a canonical key with an escape holds one of
    /// those, so it cannot be that key; other keys are looked up the long way.
    pub fn find_all(self, keys: &[&str], out: &mut [Raw<'a>]) {
        out.fill(Raw(b"null"));
        let plain = |k: &&str| !k.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20);
        if !keys.iter().all(plain) {
            let view = self.members().unwrap_or_default();
            for (o, k) in out.iter_mut().zip(keys) {
                if let Some((_, v)) = view.iter().find(|(m, _)| m.as_ref() == k.as_bytes()) {
                    *o = *v;
                }
            }
            return;
        }
        let b = self.0;
        if b.first() != Some(&b'{') || b.get(1) == Some(&b'}') {
            return;
        }
        let mut i = 1;
        let mut left = keys.len();
        while left > 0 {
            if b.get(i) != Some(&b'"') {
                return;
            }
            let Some(key_end) = string_end(b, i) else { return };
            let name = &b[i + 1..key_end - 1];
            if b.get(key_end) != Some(&b':') {
                return;
            }
            let start = key_end + 1;
            let Some(end) = skip(b, start) else { return };
            if let Some(n) = keys.iter().position(|k| k.as_bytes() == name) {
                out[n] = Raw(&b[start..end]);
                left -= 1;
            }
            match b.get(end) {
                Some(b',') => i = end + 1,
                _ => return,
            }
        }
    }

    /// An array's items in order.
    pub fn items(self) -> Option<Vec<Raw<'a>>> {
        let b = self.0;
        if b.first() != Some(&b'[') {
            return None;
        }
        let mut out = Vec::new();
        let mut i = 1;
        if b.get(i) == Some(&b']') {
            return (i + 1 == b.len()).then_some(out);
        }
        loop {
            let end = skip(b, i)?;
            out.push(Raw(&b[i..end]));
            match b.get(end) {
                Some(b',') => i = end + 1,
                Some(b']') if end + 1 == b.len() => return Some(out),
                _ => return None,
            }
        }
    }

    /// An object's member by key.
    pub fn get(self, key: &str) -> Option<Raw<'a>> {
        self.members()?
            .into_iter()
            .find(|(k, _)| k.as_ref() == key.as_bytes())
            .map(|(_, v)| v)
    }

    /// A member's value, or `null` when absent or when this is not an object.
    pub fn at(self, key: &str) -> Raw<'a> {
        self.get(key).unwrap_or(Raw(b"null"))
    }
}

/// Where the value starting at `i` of an already scanned line ends: strings are skipped to
/// their closing quote and containers to their matching bracket, without checking again
/// what `scan` checked. `None` on bytes that are not such a value.
pub(crate) fn skip(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => i = string_end(b, i)?,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b',' | b':' if depth > 0 => i += 1,
            b',' | b':' => return None,
            // A number or literal: up to the next delimiter.
            _ => {
                i += b[i..]
                    .iter()
                    .position(|&c| matches!(c, b',' | b'}' | b']' | b':'))
                    .unwrap_or(b.len() - i);
            }
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

/// Just past the closing quote of the string whose opening quote is at `i`.
pub(crate) fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let rest = b.get(j..)?;
        let at = super::find::quote_or_backslash(rest)?;
        if rest[at] == b'"' {
            return Some(j + at + 1);
        }
        j += at + 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::canonical;
    use serde_json::{Value, json};

    /// Keys ASCII and not, prefixes of each other, and past the first eight bytes.
    const KEYS: [&str; 28] = [
        "",
        "a",
        "ab",
        "abc",
        "b",
        "a\u{7f}",
        "é",
        "aé",
        "ab\u{e000}",
        "ab\u{ffff}",
        "ab😀",
        "😀",
        "\u{e000}",
        "\u{ffff}",
        "é😀",
        "éa",
        "\u{100}",
        "\u{7ff}",
        "\u{800}",
        // Past the first eight bytes, compared a word at a time.
        "abcdefgh",
        "abcdefghij",
        "abcdefghik",
        "abcdefgh\u{e000}",
        "abcdefgh😀",
        "abcdefghijklmnopq",
        "abcdefghijklmnopr",
        "abcdefghijklmnop",
        "abcdefgé",
    ];

    #[test]
    fn key_order_is_utf16_order_for_every_pair_of_prefixes_ascii_and_astral_keys() {
        let keys = KEYS;
        for a in keys {
            for b in keys {
                assert_eq!(
                    key_order(a.as_bytes(), b.as_bytes()),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} against {b:?}"
                );
                assert_eq!(
                    key_order_str(a.as_bytes(), b),
                    a.encode_utf16().cmp(b.encode_utf16()),
                    "{a:?} against {b:?} given as text"
                );
            }
        }
    }

    #[test]
    fn a_view_finds_every_member_of_a_canonical_object_by_ascii_or_other_keys() {
        let keys = KEYS;
        let object: serde_json::Map<String, Value> = keys
            .iter()
            .enumerate()
            .map(|(n, k)| (k.to_string(), json!(n)))
            .collect();
        let line = canonical::to_bytes(&Value::Object(object));
        let view = crate::evidence::kind::View::of(Raw(&line));
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(view.at(k).int(), Some(n as i64), "{k:?}");
        }
        for absent in ["aa", "abcdefghi", "é😀a", "\u{e001}", "abcdefgh😀😀", "zz"] {
            assert!(view.at(absent).is_null(), "{absent:?}");
        }
    }

    #[test]
    fn a_hex_string_is_decoded_in_place_as_its_text_would_be() {
        for text in ["00ab", "00AB", "00a", "00abc", "0g0a", "", "00ab\n", "é0ab"] {
            let raw = canonical::to_bytes(&json!(text));
            assert_eq!(
                Raw(&raw).hex::<2>(),
                crate::hex::decode_exact::<2>(text),
                "{text:?}"
            );
        }
        // Not strings, or not canonical ones (a canonical string escapes no digit).
        for raw in [&b"1234"[..], b"null", b"[\"00ab\"]", b"\"\\u0030\\u0030ab\""] {
            assert_eq!(Raw(raw).hex::<2>(), None, "{}", String::from_utf8_lossy(raw));
        }
    }

    /// The reference definition: the canonical writer writes the line back byte for byte,
    /// and the value holds only safe integers.
    fn reference(line: &[u8]) -> bool {
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => v.is_object() && canonical::to_bytes(&v) == line && canonical::check_fit(&v).is_ok(),
            Err(_) => false,
        }
    }

    fn sample() -> Vec<u8> {
        canonical::to_bytes(&json!({
            "a": [1, -2, 0, true, false, null, {}, []],
            "hash": "ab",
            "k\"q": "tab\there \u{1} \u{7f} é 😀 \\ /",
            "n": {"z": 9007199254740991u64, "y": -9007199254740991i64},
            "sig": "cd",
            "zz": "",
        }))
    }

    #[test]
    fn canonical_lines_pass_and_the_unsigned_form_matches_serde() {
        let line = sample();
        let unsigned = scan(&line).unwrap().unsigned();
        let mut v: Value = serde_json::from_slice(&line).unwrap();
        v.as_object_mut().unwrap().remove("hash");
        v.as_object_mut().unwrap().remove("sig");
        assert_eq!(unsigned.pieces(&line).concat(), canonical::to_bytes(&v));
    }

    #[test]
    fn hash_and_sig_are_cut_wherever_they_stand() {
        for v in [
            json!({"hash": "x", "sig": "y"}),
            json!({"hash": "x", "sig": "y", "z": 1}),
            json!({"a": 1, "hash": "x", "sig": "y"}),
            json!({"hash": "x", "m": 1, "sig": "y"}),
            json!({"a": {"hash": "nested stays"}, "hash": "x"}),
        ] {
            let line = canonical::to_bytes(&v);
            let mut expect = v.clone();
            expect.as_object_mut().unwrap().remove("hash");
            expect.as_object_mut().unwrap().remove("sig");
            let got = scan(&line).unwrap().unsigned().pieces(&line).concat();
            assert_eq!(String::from_utf8(got).unwrap(), expect.to_string(), "{v}");
        }
    }

    #[test]
    fn agrees_with_the_serde_round_trip_on_many_mutations() {
        let base = sample();
        let alphabet = b"{}[]\",:\\ 0123456789-.eEtrufalsn\x01\x7fab/u";
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..20_000 {
            let mut line = base.clone();
            crate::evidence::block::tests::garble_with(&mut line, alphabet, &mut next);
            let ours = scan(&line).is_ok();
            assert_eq!(
                ours,
                reference(&line),
                "round {round}: {:?}",
                String::from_utf8_lossy(&line)
            );
        }
    }

    #[test]
    fn keys_across_the_unicode_range_are_in_jcs_order() {
        // Keys from every plane, including the two ranges whose UTF-8 and UTF-16 orders differ.
        let chars = [
            'a',
            '\u{7f}',
            'é',
            '\u{7ff}',
            '\u{800}',
            '\u{d7ff}',
            '\u{e000}',
            '\u{fffd}',
            '\u{ffff}',
            '\u{10000}',
            '😀',
            '\u{10ffff}',
        ];
        let mut map = serde_json::Map::new();
        for (i, a) in chars.iter().enumerate() {
            for b in &chars {
                map.insert(format!("{a}{b}"), json!(i));
            }
        }
        let line = canonical::to_bytes(&Value::Object(map.clone()));
        let scanned = scan(&line).expect("the canonical writer's output scans");
        assert!(reference(&line));
        for k in map.keys() {
            assert!(scanned.get(&line, k).is_some(), "{k:?} found by get");
        }
        // The UTF-8 byte order (serde_json's) is not canonical when the two orders differ.
        let serde = serde_json::to_vec(&Value::Object(map)).unwrap();
        assert_ne!(serde, line);
        assert_eq!(
            scan(&serde).unwrap_err().what,
            "keys not in sorted order, or a duplicate key"
        );
    }

    #[test]
    fn raw_values_are_read_in_place() {
        let line = sample();
        let top = Raw(&line);
        let n = top.get("n").unwrap();
        assert_eq!(n.get("y").unwrap().int(), Some(-9007199254740991));
        assert_eq!(
            top.get("k\"q").unwrap().str().unwrap(),
            "tab\there \u{1} \u{7f} é 😀 \\ /"
        );
        let items = top.get("a").unwrap().items().unwrap();
        assert_eq!(items.len(), 8);
        assert_eq!(items[3].bool(), Some(true));
        assert!(items[5].is_null());
        assert_eq!(items[6].members().unwrap(), vec![]);
        assert!(top.at("missing").is_null());
        assert_eq!(Raw(b"[1,").items(), None);
        assert_eq!(Raw(b"{1:2}").members(), None);
        assert_eq!(Raw(b"{\"").members(), None);
        assert_eq!(Raw(b"\"x").str(), None);
        assert_eq!(Raw(b"\"").str(), None);
        assert_eq!(Raw(b"\"\"").str().as_deref(), Some(""));
        assert_eq!(Raw(b"\"a\"b\"").str().as_deref(), Some("a"));
        assert_eq!(Raw(b"\"a\\\"b\"").str().as_deref(), Some("a\"b"));
        assert_eq!(Raw(b"\"a\x01\"").str(), None);
    }

    #[test]
    fn reading_in_place_agrees_with_the_full_scan_and_never_panics() {
        // Every object in a canonical line: its members as `Raw::members` reads them are the
        // top-level members a full scan of that object finds.
        fn walk(v: Raw<'_>) {
            if v.first() == Some(b'{') {
                let fast = v.members().unwrap();
                let full = scan(v.0).unwrap();
                assert_eq!(fast.len(), full.members.len());
                for ((k, x), m) in fast.iter().zip(&full.members) {
                    assert_eq!(k, &m.key);
                    assert_eq!(x.0, &v.0[m.value.clone()]);
                    assert_eq!(v.find(std::str::from_utf8(k).unwrap()), *x, "find {k:?}");
                    walk(*x);
                }
                for absent in ["", "0", "a0", "zzz", "\u{10ffff}", "q\"", "\u{1}"] {
                    if !fast.iter().any(|(k, _)| k.as_ref() == absent.as_bytes()) {
                        assert!(v.find(absent).is_null(), "{absent:?} is not there");
                    }
                }
                let keys: Vec<String> = fast
                    .iter()
                    .rev()
                    .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
                    .chain(["zzz".to_string()])
                    .collect();
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let mut all = vec![Raw(b""); keys.len()];
                v.find_all(&keys, &mut all);
                for (k, x) in keys.iter().zip(&all) {
                    assert_eq!(*x, v.find(k), "find_all {k:?}");
                }
            } else if v.first() == Some(b'[') {
                v.items().unwrap().into_iter().for_each(walk);
            }
        }
        walk(Raw(&sample()));
        let nested =
            canonical::to_bytes(&json!({"a": [{"b": "x\\\"]}", "c": [[], {}]}, 1], "d": {"e": null}}));
        walk(Raw(&nested));
        // Bytes that are not a scanned value: answers, no panic.
        let mut next = crate::test_rng::xorshift(7);
        let line = sample();
        for _ in 0..5000 {
            let seed = next();
            let a = (seed as usize) % line.len();
            let b = a + ((seed >> 20) as usize) % (line.len() - a + 1);
            let r = Raw(&line[a..b]);
            let _ = (r.members(), r.items(), r.str(), r.int());
        }
    }

    #[test]
    fn the_usual_non_canonical_spellings_are_refused() {
        for bad in [
            &br#"{"a":1, "b":2}"#[..],
            br#"{"b":1,"a":2}"#,
            br#"{"a":1,"a":1}"#,
            br#"{"a":1.0}"#,
            br#"{"a":1e2}"#,
            br#"{"a":01}"#,
            br#"{"a":-0}"#,
            br#"{"a":"\u0041"}"#,
            br#"{"a":"\/"}"#,
            br#"{"a":"\u000a"}"#,
            br#"{"a":9007199254740992}"#,
            br#"[1]"#,
            br#"{"a":1}x"#,
        ] {
            assert!(scan(bad).is_err(), "{}", String::from_utf8_lossy(bad));
            assert!(!reference(bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
