//! Canonical form and the kind's shape, checked together in one pass over a line: what
//! `verify` runs on every block, so that a good block is read once, allocating nothing but
//! its member list's place on the stack.
//!
//! `read` answers only "this line is a canonical block of a known format and kind that fits
//! its kind's shape" (with its top-level members), or "not sure". On "not sure" the caller
//! runs the reference path (`canonical_scan::scan`, then `shape::check_members`), which
//! names what is wrong; so errors and verdicts are the reference's, and this pass may only
//! ever be faster, never more lenient. A unit test holds the two together on many mutated
//! and re-signed blocks of every kind (`block::tests`).
//!
//! The pass walks the bytes driven by the shape: an object's keys are merged with its
//! fields sorted by name (canonical keys are strictly increasing, so one comparison a key
//! usually suffices and the merge also proves the order), strings are checked for
//! serde_json's escapes without being unescaped, integers for their canonical spelling and
//! their bounds, and foreign JSON (`Shape::Foreign`) is handed to the reference scanner.
//! Before the `kind` member is read, a top-level member is held to the shape of every kind
//! that still could be the block's.

use std::sync::OnceLock;

use super::shape::{Field, Shape, Syntax};
use super::{BlockKind, ENVELOPE, View};
use crate::evidence::canonical::MAX_SAFE_INTEGER;
use crate::evidence::canonical_scan::{self, Raw};
use crate::evidence::find;

/// Nesting deeper than this is refused by `canonical_scan::scan` too.
const MAX_DEPTH: usize = 128;
/// At most this many top-level members (the bit sets are `u64`).
const MAX_MEMBERS: usize = 64;

/// A shape, compiled for the pass: objects' fields sorted by name.
#[derive(Debug)]
enum Node {
    Str,
    Text(Syntax),
    Enum(&'static [&'static str]),
    Int(i64, i64),
    Bool,
    Foreign,
    Obj(Obj),
    Array(Box<Node>, Option<usize>),
    OrNull(Box<Node>),
    OneOf(Vec<Node>),
}

/// A field name, with its first eight bytes as one number for comparing keys to it.
#[derive(Debug, Clone, Copy)]
struct Name {
    head: u64,
    bytes: &'static [u8],
}

impl Name {
    fn of(name: &'static str) -> Name {
        let bytes = name.as_bytes();
        let mut head = 0u64;
        for (i, &c) in bytes.iter().take(8).enumerate() {
            head |= u64::from(c) << (56 - 8 * i);
        }
        Name { head, bytes }
    }
}

/// A key of the line: its bytes (plain: no escape, no control character) and the same
/// number of its first eight bytes, zero-padded.
#[derive(Clone, Copy)]
struct Key<'a> {
    head: u64,
    bytes: &'a [u8],
}

impl<'a> Key<'a> {
    /// The key whose bytes are `b[start..start + len]`.
    fn at(b: &'a [u8], start: usize, len: usize) -> Key<'a> {
        let bytes = &b[start..start + len];
        let word = match b.get(start..start + 8) {
            Some(w) => {
                let mut a = [0u8; 8];
                a.copy_from_slice(w);
                u64::from_be_bytes(a)
            }
            None => {
                let mut w = 0u64;
                for (i, &c) in bytes.iter().take(8).enumerate() {
                    w |= u64::from(c) << (56 - 8 * i);
                }
                w
            }
        };
        let head = if len >= 8 {
            word
        } else {
            word & !(u64::MAX >> (8 * len))
        };
        Key { head, bytes }
    }

    /// Whether `name` sorts before this key (byte order). Names and plain keys hold no zero
    /// byte, so equal heads of keys both at most eight bytes long differ only in length.
    fn after(self, name: &Name) -> bool {
        match name.head.cmp(&self.head) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal if name.bytes.len() <= 8 && self.bytes.len() <= 8 => {
                name.bytes.len() < self.bytes.len()
            }
            std::cmp::Ordering::Equal => name.bytes < self.bytes,
        }
    }

    fn is(self, name: &Name) -> bool {
        name.head == self.head
            && name.bytes.len() == self.bytes.len()
            && (name.bytes.len() <= 8 || name.bytes == self.bytes)
    }
}

#[derive(Debug)]
struct Obj {
    /// Fields in key order (their names are ASCII: byte order is JCS order).
    fields: Vec<(Name, Node)>,
    /// Bit `n`: `fields[n]` is required.
    required: u64,
}

/// One name of the top level: which kinds have it, which require it, and its shape for
/// each group of kinds that share one.
#[derive(Debug)]
struct TopField {
    name: &'static str,
    key: Name,
    /// Bit `k`: `BlockKind::ALL[k]`.
    kinds: u8,
    alternatives: Vec<(u8, Node)>,
}

#[derive(Debug)]
struct Schema {
    /// The names of every kind's table and the envelope, in key order.
    top: Vec<TopField>,
    /// Per kind: bit `n` set when `top[n]` is required.
    required: [u64; BlockKind::ALL.len()],
}

fn compile(shape: &Shape) -> Option<Node> {
    Some(match shape {
        Shape::Str => Node::Str,
        Shape::Text(s) => Node::Text(*s),
        Shape::Enum(words) => Node::Enum(words),
        Shape::Int(lo, hi) => Node::Int(*lo, *hi),
        Shape::Bool => Node::Bool,
        Shape::Foreign => Node::Foreign,
        Shape::Obj(fields) => Node::Obj(compile_object(fields)?),
        Shape::Array(item, max) => Node::Array(Box::new(compile(item)?), *max),
        Shape::OrNull(inner) => Node::OrNull(Box::new(compile(inner)?)),
        Shape::OneOf(shapes) => Node::OneOf(shapes.iter().map(compile).collect::<Option<_>>()?),
    })
}

fn plain(name: &str) -> bool {
    !name.contains(['"', '\\']) && !name.contains(char::is_control) && name.is_ascii()
}

fn compile_object(fields: &[Field]) -> Option<Obj> {
    if fields.len() > 64 || !fields.iter().all(|f| plain(f.name)) {
        return None;
    }
    let mut sorted: Vec<&Field> = fields.iter().collect();
    sorted.sort_by_key(|f| f.name.as_bytes());
    if sorted.windows(2).any(|w| w[0].name == w[1].name) {
        return None;
    }
    let mut required = 0u64;
    let mut out = Vec::with_capacity(sorted.len());
    for (n, f) in sorted.into_iter().enumerate() {
        if f.required {
            required |= 1 << n;
        }
        out.push((Name::of(f.name), compile(&f.shape)?));
    }
    Some(Obj {
        fields: out,
        required,
    })
}

fn compile_schema() -> Option<Schema> {
    let mut names: Vec<&'static str> = Vec::new();
    for kind in BlockKind::ALL {
        for f in ENVELOPE.iter().chain(kind.spec().fields) {
            if !names.contains(&f.name) {
                names.push(f.name);
            }
        }
    }
    if names.len() > MAX_MEMBERS || !names.iter().all(|n| plain(n)) {
        return None;
    }
    names.sort_unstable();
    let mut required = [0u64; BlockKind::ALL.len()];
    let mut top = Vec::with_capacity(names.len());
    for (n, name) in names.iter().enumerate() {
        let mut kinds = 0u8;
        let mut groups: Vec<(u8, Shape)> = Vec::new();
        for (k, kind) in BlockKind::ALL.iter().enumerate() {
            let table = [ENVELOPE, kind.spec().fields];
            let mut found = table.iter().flat_map(|t| t.iter()).filter(|f| f.name == *name);
            let Some(field) = found.next() else { continue };
            if found.next().is_some() {
                return None;
            }
            kinds |= 1 << k;
            if field.required {
                required[k] |= 1 << n;
            }
            match groups.iter_mut().find(|(_, s)| *s == field.shape) {
                Some((mask, _)) => *mask |= 1 << k,
                None => groups.push((1 << k, field.shape)),
            }
        }
        let alternatives = groups
            .into_iter()
            .map(|(mask, s)| Some((mask, compile(&s)?)))
            .collect::<Option<_>>()?;
        top.push(TopField {
            name,
            key: Name::of(name),
            kinds,
            alternatives,
        });
    }
    Some(Schema { top, required })
}

fn schema() -> Option<&'static Schema> {
    static SCHEMA: OnceLock<Option<Schema>> = OnceLock::new();
    SCHEMA.get_or_init(compile_schema).as_ref()
}

/// One top-level member: its name, where it starts (its key's quote), where its value
/// starts, and where it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Member {
    pub name: &'static str,
    pub start: usize,
    pub value: usize,
    pub end: usize,
}

/// A line `read` found to be a canonical block that fits its kind.
#[derive(Debug, Clone)]
pub struct Read<'a> {
    pub kind: BlockKind,
    line: &'a [u8],
    count: usize,
    members: [Member; MAX_MEMBERS],
}

impl<'a> Read<'a> {
    /// The top-level members, in the line's (key) order.
    pub fn members(&self) -> &[Member] {
        &self.members[..self.count]
    }

    /// The members as the kinds read them.
    pub fn view(&self) -> View<'a> {
        View {
            members: self
                .members()
                .iter()
                .map(|m| (m.name.as_bytes().into(), Raw(&self.line[m.value..m.end])))
                .collect(),
        }
    }
}

impl<'a> Read<'a> {
    /// A place for `read_into` to fill.
    pub fn new(line: &'a [u8]) -> Read<'a> {
        Read {
            kind: BlockKind::Probe,
            line,
            count: 0,
            members: [Member::default(); MAX_MEMBERS],
        }
    }
}

/// Whether `line` (without its newline) is a canonical block of a known format and kind
/// that fits its kind's shape; `None` when it is not or when this pass cannot tell (the
/// reference path then decides, and names what is wrong).
pub fn read(line: &[u8]) -> Option<Read<'_>> {
    let mut out = Read::new(line);
    read_into(&mut out).then_some(out)
}

/// `read` into a `Read` of the caller's (its member list, some kilobytes, is not moved).
pub fn read_into(out: &mut Read<'_>) -> bool {
    out.count = 0;
    fill(out).is_some()
}

fn fill(out: &mut Read<'_>) -> Option<()> {
    let line = out.line;
    let schema = schema()?;
    std::str::from_utf8(line).ok()?;
    if line.first() != Some(&b'{') {
        return None;
    }
    let all_kinds: u8 = (1 << BlockKind::ALL.len()) - 1;
    let mut possible = all_kinds;
    let mut seen = 0u64;
    let mut cursor = 0usize;
    let mut i = 1;
    loop {
        let start = i;
        let (key, after) = plain_string(line, i)?;
        let key = Key::at(line, i + 1, key.len());
        while cursor < schema.top.len() && key.after(&schema.top[cursor].key) {
            cursor += 1;
        }
        let field = schema.top.get(cursor).filter(|f| key.is(&f.key))?;
        let n = cursor;
        cursor += 1;
        possible &= field.kinds;
        if line.get(after) != Some(&b':') {
            return None;
        }
        let value = after + 1;
        let mut end = None;
        let mut fitting = 0u8;
        for (mask, node) in &field.alternatives {
            if mask & possible == 0 {
                continue;
            }
            if let Some(e) = walk(node, line, value, 1) {
                if end.is_some_and(|x| x != e) {
                    return None;
                }
                end = Some(e);
                fitting |= mask & possible;
            }
        }
        let end = end?;
        possible = fitting;
        if key.bytes == b"kind" {
            let (name, _) = plain_string(line, value)?;
            let k = BlockKind::ALL.iter().position(|k| k.name().as_bytes() == name)?;
            possible &= 1 << k;
        }
        if possible == 0 || out.count == MAX_MEMBERS {
            return None;
        }
        out.members[out.count] = Member {
            name: field.name,
            start,
            value,
            end,
        };
        out.count += 1;
        seen |= 1 << n;
        match line.get(end) {
            Some(b',') => i = end + 1,
            Some(b'}') if end + 1 == line.len() => break,
            _ => return None,
        }
    }
    // `kind` is required of every kind: once read, one kind is left.
    if possible.count_ones() != 1 {
        return None;
    }
    let k = possible.trailing_zeros() as usize;
    if schema.required[k] & !seen != 0 {
        return None;
    }
    out.kind = BlockKind::ALL[k];
    Some(())
}

/// A string without escapes or control characters (every field name and kind name is one)
/// and where it ends.
fn plain_string(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let rest = b.get(i + 1..)?;
    let at = find::string_stop(rest)?;
    (rest[at] == b'"').then(|| (&rest[..at], i + at + 2))
}

/// A canonical string's text (unescaped UTF-8; the line was checked to be UTF-8) and where
/// it ends.
fn text(b: &[u8], i: usize) -> Option<(std::borrow::Cow<'_, [u8]>, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let rest = b.get(i + 1..)?;
    let at = find::string_stop(rest)?;
    match rest[at] {
        b'"' => Some((rest[..at].into(), i + at + 2)),
        b'\\' => canonical_scan::string_at(b, i),
        _ => None,
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b.get(i..)?.starts_with(word).then_some(i + word.len())
}

/// A canonical integer (plain decimal, no leading zero, no `-0`, within ±(2^53−1), not
/// followed by a fraction or exponent) and where it ends.
fn integer(b: &[u8], i: usize) -> Option<(i64, usize)> {
    let negative = b.get(i) == Some(&b'-');
    let digits = i + usize::from(negative);
    let mut j = digits;
    let mut n: u64 = 0;
    while let Some(d @ b'0'..=b'9') = b.get(j).copied() {
        n = n * 10 + u64::from(d - b'0');
        if n > MAX_SAFE_INTEGER {
            return None;
        }
        j += 1;
    }
    let len = j - digits;
    if len == 0 || (len > 1 && b[digits] == b'0') || (negative && n == 0) {
        return None;
    }
    if matches!(b.get(j), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    let n = n as i64;
    Some((if negative { -n } else { n }, j))
}

/// Where the value at `b[i]` (nested `depth` deep in the line) ends, when it is canonical
/// and fits `node`; `None` when it is not canonical or does not fit.
fn walk(node: &Node, b: &[u8], i: usize, depth: usize) -> Option<usize> {
    if depth > MAX_DEPTH {
        return None;
    }
    match node {
        Node::Foreign => canonical_scan::value_end(b, i, depth),
        Node::Str => canonical_scan::checked_string_end(b, i),
        Node::Bool => literal(b, i, b"true").or_else(|| literal(b, i, b"false")),
        Node::Text(syntax) => {
            let (s, end) = text(b, i)?;
            syntax.matches_bytes(&s).then_some(end)
        }
        Node::Enum(words) => {
            let (s, end) = text(b, i)?;
            words.iter().any(|w| w.as_bytes() == s.as_ref()).then_some(end)
        }
        Node::Int(lo, hi) => {
            let (n, end) = integer(b, i)?;
            (*lo..=*hi).contains(&n).then_some(end)
        }
        Node::Obj(obj) => object(obj, b, i, depth),
        Node::Array(item, max) => array(item, *max, b, i, depth),
        Node::OrNull(inner) => literal(b, i, b"null").or_else(|| walk(inner, b, i, depth)),
        Node::OneOf(nodes) => {
            let mut fitting = nodes.iter().filter_map(|n| walk(n, b, i, depth));
            let end = fitting.next()?;
            fitting.next().is_none().then_some(end)
        }
    }
}

fn object(obj: &Obj, b: &[u8], i: usize, depth: usize) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut seen = 0u64;
    let mut j = i + 1;
    if b.get(j) == Some(&b'}') {
        j += 1;
    } else {
        let mut cursor = 0usize;
        loop {
            let (key, after) = plain_string(b, j)?;
            let key = Key::at(b, j + 1, key.len());
            while cursor < obj.fields.len() && key.after(&obj.fields[cursor].0) {
                cursor += 1;
            }
            let (name, node) = obj.fields.get(cursor)?;
            if !key.is(name) || b.get(after) != Some(&b':') {
                return None;
            }
            seen |= 1 << cursor;
            cursor += 1;
            j = walk(node, b, after + 1, depth + 1)?;
            match b.get(j) {
                Some(b',') => j += 1,
                Some(b'}') => {
                    j += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (obj.required & !seen == 0).then_some(j)
}

fn array(item: &Node, max: Option<usize>, b: &[u8], i: usize, depth: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    if b.get(j) == Some(&b']') {
        return Some(j + 1);
    }
    let mut count = 0usize;
    loop {
        count += 1;
        if max.is_some_and(|m| count > m) {
            return None;
        }
        j = walk(item, b, j, depth + 1)?;
        match b.get(j) {
            Some(b',') => j += 1,
            Some(b']') => return Some(j + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_to_names_in_byte_order() {
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "abcdefghij",
            "abcdefgi",
            "b",
            "era",
            "era_detection",
            "description",
            "description_text",
            "z",
        ];
        for n in names {
            let name = Name::of(n);
            for k in names {
                // A key inside a longer line and at its very end.
                for line in [format!("\"{k}\":null,\"x\":1}}"), format!("\"{k}")] {
                    let key = Key::at(line.as_bytes(), 1, k.len());
                    assert_eq!(key.after(&name), n.as_bytes() < k.as_bytes(), "{n:?} < {k:?}");
                    assert_eq!(key.is(&name), n == k, "{n:?} == {k:?}");
                }
            }
        }
    }

    #[test]
    fn every_table_compiles() {
        let schema = compile_schema().expect("every kind's table compiles for the one-pass check");
        assert!(schema.top.len() <= MAX_MEMBERS);
        for kind in BlockKind::ALL {
            for f in ENVELOPE.iter().chain(kind.spec().fields) {
                assert!(schema.top.iter().any(|t| t.name == f.name));
            }
        }
    }
}
