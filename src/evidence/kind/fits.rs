//! The shape walk's fast path: whether a block's members fit its kind's shape, answered in
//! one pass over the canonical bytes, reading each value once and allocating nothing (the
//! walk in `shape` reads a nested value once per level it is nested in, and builds a member
//! list for every object). It says only yes or no; on no, `shape::check_members` walks again
//! to name what is wrong, so a block that does not fit fails exactly as the walk says.
//!
//! `fits` agrees with `shape::check` on every value (a unit test holds them together on many
//! mutated blocks): the fast path may only ever be faster, never more lenient.

use std::borrow::Cow;

use super::shape::{At, Field, Shape, check};
use crate::evidence::canonical_scan::{Raw, key_order, skip, string_end};

/// Whether an object's members (a canonical line's top level, read by the scan) fit the union
/// of `tables`: `shape::check_members(tables, members, ..)` finds nothing wrong.
pub fn fits_members(tables: &[&[Field]], members: &[(Cow<'_, [u8]>, Raw<'_>)]) -> bool {
    let mut found = 0usize;
    for field in tables.iter().flat_map(|t| t.iter()) {
        // Members of a canonical object are in key order.
        match members.binary_search_by(|(k, _)| key_order(k, field.name.as_bytes())) {
            Ok(m) => {
                found += 1;
                let value = members[m].1.0;
                if fits(&field.shape, value, 0) != Some(value.len()) {
                    return false;
                }
            }
            Err(_) if field.required => return false,
            Err(_) => {}
        }
    }
    // No table names a field twice and no key comes twice: every member was found once.
    found == members.len()
}

/// Where the value at `i` ends, when it fits `shape`; `None` when it does not.
fn fits(shape: &Shape, b: &[u8], i: usize) -> Option<usize> {
    match shape {
        Shape::Foreign => skip(b, i),
        Shape::Str => match b.get(i) {
            Some(b'"') => string_end(b, i),
            _ => None,
        },
        Shape::Bool => literal(b, i, b"true").or_else(|| literal(b, i, b"false")),
        Shape::Text(syntax) => {
            let (s, end) = text(b, i)?;
            syntax.matches(&s).then_some(end)
        }
        Shape::Enum(words) => {
            let (s, end) = text(b, i)?;
            words.contains(&s.as_ref()).then_some(end)
        }
        Shape::Int(lo, hi) => {
            let end = number_end(b, i);
            let n = Raw(b.get(i..end)?).int()?;
            (*lo..=*hi).contains(&n).then_some(end)
        }
        Shape::Obj(fields) => object(fields, b, i),
        Shape::Array(item, max) => array(item, *max, b, i),
        Shape::OrNull(inner) => literal(b, i, b"null").or_else(|| fits(inner, b, i)),
        Shape::OneOf(shapes) => {
            let mut fitting = shapes.iter().filter_map(|s| fits(s, b, i));
            let end = fitting.next()?;
            fitting.next().is_none().then_some(end)
        }
    }
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b.get(i..)?.starts_with(word).then_some(i + word.len())
}

/// A number (or literal) runs to the next delimiter of the canonical text.
fn number_end(b: &[u8], i: usize) -> usize {
    let rest = b.get(i..).unwrap_or_default();
    i + rest
        .iter()
        .position(|&c| matches!(c, b',' | b'}' | b']' | b':'))
        .unwrap_or(rest.len())
}

/// A string's text (unescaped; borrowed unless it holds an escape) and where it ends.
fn text(b: &[u8], i: usize) -> Option<(Cow<'_, str>, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let rest = b.get(i + 1..)?;
    let at = crate::evidence::find::quote_or_backslash(rest)?;
    if rest[at] == b'"' {
        return Some((Cow::Borrowed(std::str::from_utf8(&rest[..at]).ok()?), i + at + 2));
    }
    let end = string_end(b, i)?;
    Some((Raw(&b[i..end]).str()?, end))
}

/// An object whose members are exactly `fields` (the required ones present).
fn object(fields: &'static [Field], b: &[u8], i: usize) -> Option<usize> {
    if fields.len() > 64 {
        // More members than the bit set holds: the walk answers, exactly.
        let end = skip(b, i)?;
        let fit = check(&Shape::Obj(fields), Raw(&b[i..end]), At::Top);
        return fit.is_ok().then_some(end);
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut seen = 0u64;
    let mut j = i + 1;
    if b.get(j) == Some(&b'}') {
        j += 1;
    } else {
        loop {
            if b.get(j) != Some(&b'"') {
                return None;
            }
            let key_end = string_end(b, j)?;
            // A key with an escape holds `"`, `\` or a control character: no field's name.
            let key = &b[j + 1..key_end - 1];
            let n = fields.iter().position(|f| f.name.as_bytes() == key)?;
            seen |= 1 << n;
            if b.get(key_end) != Some(&b':') {
                return None;
            }
            j = fits(&fields[n].shape, b, key_end + 1)?;
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
    let complete = fields
        .iter()
        .enumerate()
        .all(|(n, f)| !f.required || seen & (1 << n) != 0);
    complete.then_some(j)
}

/// An array of items of `item`, at most `max` of them.
fn array(item: &Shape, max: Option<usize>, b: &[u8], i: usize) -> Option<usize> {
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
        j = fits(item, b, j)?;
        match b.get(j) {
            Some(b',') => j += 1,
            Some(b']') => return Some(j + 1),
            _ => return None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::HashSet;

    use serde_json::{Map, Value, json};

    use super::*;
    use crate::evidence::block::tests::mutate;
    use crate::evidence::canonical;
    use crate::evidence::canonical_scan::scan;
    use crate::evidence::kind::{BlockKind, ENVELOPE, shape};

    /// A probe block with every optional part present: a surface, a call with an error, a
    /// teardown with an exit and escapees.
    pub(crate) fn rich_block() -> Map<String, Value> {
        let mut b = crate::evidence::block::tests::body("srv", "2026-12-02T10:00:00.000+00:00");
        let hex = "ab".repeat(32);
        b.insert("format".into(), crate::evidence::block::FORMAT.into());
        b.insert("seq".into(), 1.into());
        b.insert("prev".into(), hex.clone().into());
        b.insert("file_id".into(), "cd".repeat(16).into());
        b.insert("key".into(), format!("ed25519:{hex}").into());
        b.insert("hash".into(), hex.clone().into());
        b.insert("sig".into(), "ef".repeat(64).into());
        b.insert(
            "call".into(),
            json!({"tool": "t", "outcome": "rpc_error", "argument_names": ["a"], "content_types": [],
                   "preview": null, "result_sha256": null, "elapsed_ms": 3,
                   "error": {"code": -32601, "message": "no"}}),
        );
        b.insert(
            "teardown".into(),
            json!({"ended_by": "sigterm", "after_ms": 5, "exit": {"signal": 15},
                   "group_signals": ["sigterm"], "survivors": [7],
                   "escapees": [{"pid": 7, "argv": ["x"], "left": "group", "ended": "survived"}]}),
        );
        let tool = json!({"name": "echo", "sha256": hex, "title": null, "description": hex,
                          "input_schema": hex, "output_schema": null, "annotations": null,
                          "description_text": "Echo \"it\""});
        b.insert(
            "surface".into(),
            json!({"sha256": hex, "instructions": {"sha256": hex, "text": "hi"},
                   "tools": {"items": [tool.clone(), tool], "count": 2, "complete": true}}),
        );
        b.insert("reasons".into(), json!([{"code": "slow_start", "message": "m"}]));
        b
    }

    #[test]
    fn the_fast_path_agrees_with_the_walk_on_many_mutated_blocks() {
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut fit, mut unfit) = (0, 0);
        for round in 0..6000 {
            let mut v = Value::Object(rich_block());
            for _ in 0..(round % 3) {
                mutate(&mut v, &mut next);
            }
            let line = canonical::to_bytes(&v);
            // The palette holds numbers no block may carry (1.5, 2^53): those lines are not
            // canonical blocks, and not this test's.
            let Ok(scanned) = scan(&line) else { continue };
            let members: Vec<(Cow<'_, [u8]>, Raw<'_>)> = scanned
                .members
                .iter()
                .map(|m| (m.key.clone(), Raw(&line[m.value.clone()])))
                .collect();
            for kind in BlockKind::ALL {
                let tables = [ENVELOPE, kind.spec().fields];
                let walk = shape::check_members(&tables, &members, At::Top);
                assert_eq!(
                    fits_members(&tables, &members),
                    walk.is_ok(),
                    "round {round}, {kind:?}: {walk:?} on {}",
                    String::from_utf8_lossy(&line)
                );
                if walk.is_ok() { fit += 1 } else { unfit += 1 }
            }
        }
        assert!(
            fit > 1000 && unfit > 1000,
            "both answers exercised: {fit} fit, {unfit} not"
        );
    }

    /// The fast path finds a member by its first field of that name: no table may name one
    /// twice (the walk would check it against each).
    #[test]
    fn no_table_names_a_field_twice() {
        fn walk(shape: &Shape) {
            match shape {
                Shape::Obj(fields) => tables(&[fields]),
                Shape::Array(item, _) | Shape::OrNull(item) => walk(item),
                Shape::OneOf(shapes) => shapes.iter().for_each(walk),
                _ => {}
            }
        }
        fn tables(t: &[&[Field]]) {
            let mut names = HashSet::new();
            for f in t.iter().flat_map(|t| t.iter()) {
                assert!(names.insert(f.name), "{} named twice", f.name);
                assert!(!f.name.contains(['"', '\\']) && !f.name.contains(char::is_control));
                walk(&f.shape);
            }
        }
        for kind in BlockKind::ALL {
            tables(&[ENVELOPE, kind.spec().fields]);
        }
    }
}
