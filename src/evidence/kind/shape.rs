//! The shape language kinds describe their fields in, and the walk that holds a block to a
//! shape. Every object is closed (a member not in its table is refused), as the schema's
//! `additionalProperties: false` says.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::evidence::block::BlockError;
use crate::evidence::canonical::MAX_SAFE_INTEGER;
use crate::evidence::canonical_scan::{Raw, key_order};

/// A string with a fixed syntax (the schema states each as a `pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Lower-case hex of this many bytes.
    Hex(usize),
    /// `ed25519:` and 64 lower-case hex digits.
    PublicKey,
    /// An RFC 3339 time with milliseconds and a numeric offset (`clock::is_block_stamp`).
    Stamp,
    /// A reason code: a lower-case letter, then lower-case letters, digits and `_`.
    Code,
    /// An integer too large for a safe JSON number, as decimal text.
    IntegerText,
}

impl Syntax {
    pub fn matches(self, s: &str) -> bool {
        self.matches_bytes(s.as_bytes())
    }

    /// `matches` on a string's UTF-8 bytes.
    pub fn matches_bytes(self, b: &[u8]) -> bool {
        match self {
            Syntax::Hex(n) => b.len() == 2 * n && crate::hex::is_lower_hex_bytes(b),
            Syntax::PublicKey => b
                .strip_prefix(b"ed25519:")
                .is_some_and(|h| h.len() == 64 && crate::hex::is_lower_hex_bytes(h)),
            Syntax::Stamp => std::str::from_utf8(b).is_ok_and(crate::clock::is_block_stamp),
            Syntax::Code => {
                b.first().is_some_and(u8::is_ascii_lowercase)
                    && b.iter()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
            }
            Syntax::IntegerText => {
                let digits = b.strip_prefix(b"-").unwrap_or(b);
                !digits.is_empty() && digits.iter().all(|c| c.is_ascii_digit())
            }
        }
    }

    /// The schema's `pattern` for this syntax.
    pub fn pattern(self) -> String {
        match self {
            Syntax::Hex(n) => format!("^[0-9a-f]{{{}}}$", 2 * n),
            Syntax::PublicKey => "^ed25519:[0-9a-f]{64}$".into(),
            Syntax::Stamp => "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)\\.[0-9]{3}[+-]([01][0-9]|2[0-3]):[0-5][0-9]$".into(),
            Syntax::Code => "^[a-z][a-z0-9_]*$".into(),
            Syntax::IntegerText => "^-?[0-9]+$".into(),
        }
    }

    fn problem(self) -> String {
        match self {
            Syntax::Hex(n) => format!("must be {} lower-case hex digits", 2 * n),
            Syntax::PublicKey => "must be `ed25519:<64 lower-case hex>`".into(),
            Syntax::Stamp => "must be an RFC 3339 time with milliseconds and a numeric offset".into(),
            Syntax::Code => "must be a lower-case code (a-z, 0-9, _)".into(),
            Syntax::IntegerText => "must be an integer written as decimal text".into(),
        }
    }
}

/// The shape of one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Any string.
    Str,
    /// A string of this syntax.
    Text(Syntax),
    /// One of these strings.
    Enum(&'static [&'static str]),
    /// An integer from the first to the second bound.
    Int(i64, i64),
    Bool,
    /// JSON as a server sent it: anything a block may hold (the canonical scan has already
    /// held every number to a safe integer).
    Foreign,
    /// An object with exactly these members (those not `required` may be absent).
    Obj(&'static [Field]),
    /// An array of items of a shape, with at most this many items when bounded.
    Array(&'static Shape, Option<usize>),
    /// This shape or null.
    OrNull(&'static Shape),
    /// Exactly one of these shapes.
    OneOf(&'static [Shape]),
}

/// One member of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    /// Absent only in blocks written before the field existed.
    pub required: bool,
}

impl Field {
    pub const fn req(name: &'static str, shape: Shape) -> Field {
        Field {
            name,
            shape,
            required: true,
        }
    }

    pub const fn opt(name: &'static str, shape: Shape) -> Field {
        Field {
            name,
            shape,
            required: false,
        }
    }
}

const SAFE: i64 = MAX_SAFE_INTEGER as i64;
/// SHA-256 as 64 lower-case hex digits.
pub const SHA256: Shape = Shape::Text(Syntax::Hex(32));
/// A count or size: a non-negative safe integer.
pub const COUNT: Shape = Shape::Int(0, SAFE);
/// A duration in whole milliseconds.
pub const MILLIS: Shape = COUNT;
/// A list of strings.
pub const STRINGS: Shape = Shape::Array(&Shape::Str, None);

/// Where a value is in a block, built on the stack as the walk descends and written out
/// only for an error (a walk that finds nothing wrong allocates nothing).
#[derive(Clone, Copy)]
pub enum At<'a> {
    Top,
    Member(&'a At<'a>, &'a str),
    Item(&'a At<'a>, usize),
}

impl At<'_> {
    /// `tools.count`, `teardown.escapees[0].pid`; `$` for the block itself.
    pub fn render(&self) -> String {
        match self {
            At::Top => "$".into(),
            At::Member(At::Top, name) => (*name).chars().take(128).collect(),
            At::Member(parent, name) => {
                format!(
                    "{}.{}",
                    parent.render(),
                    name.chars().take(128).collect::<String>()
                )
            }
            At::Item(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

/// Holds an object (its members, in order) to the union of `tables`: each listed member in
/// table order (missing, then its shape), then any member no table lists.
pub fn check_members(
    tables: &[&[Field]],
    members: &[(Cow<'_, [u8]>, Raw<'_>)],
    at: At<'_>,
) -> Result<(), BlockError> {
    let mut found = 0usize;
    for field in tables.iter().flat_map(|t| t.iter()) {
        let here = At::Member(&at, field.name);
        // Members of a canonical object are in key order.
        let member = members
            .binary_search_by(|(k, _)| key_order(k, field.name.as_bytes()))
            .ok()
            .map(|i| &members[i]);
        match member {
            None if field.required => return Err(BlockError::Field(here.render(), "is missing".into())),
            None => {}
            Some((_, v)) => {
                found += 1;
                check(&field.shape, *v, here)?;
            }
        }
    }
    if found < members.len() {
        for (name, _) in members {
            if !tables
                .iter()
                .any(|t| t.iter().any(|f| f.name.as_bytes() == name.as_ref()))
            {
                let name = String::from_utf8_lossy(name);
                return Err(BlockError::UnknownField(At::Member(&at, &name).render()));
            }
        }
    }
    Ok(())
}

/// Holds one value (canonical bytes, read in place) to a shape.
pub fn check(shape: &Shape, v: Raw<'_>, at: At<'_>) -> Result<(), BlockError> {
    match shape {
        Shape::Foreign => Ok(()),
        Shape::Str => match v.first() {
            Some(b'"') => Ok(()),
            _ => Err(bad(at, "must be a string".into())),
        },
        Shape::Bool => match v.bool() {
            Some(_) => Ok(()),
            None => Err(bad(at, "must be true or false".into())),
        },
        Shape::Text(syntax) => match v.str() {
            Some(s) if syntax.matches(&s) => Ok(()),
            _ => Err(bad(at, syntax.problem())),
        },
        Shape::Enum(words) => match v.str() {
            Some(s) if words.contains(&s.as_ref()) => Ok(()),
            _ => Err(bad(at, format!("must be one of: {}", words.join(", ")))),
        },
        Shape::Int(lo, hi) => match v.int() {
            Some(n) if (*lo..=*hi).contains(&n) => Ok(()),
            _ => Err(bad(at, format!("must be an integer from {lo} to {hi}"))),
        },
        Shape::Obj(fields) => match v.members() {
            Some(members) => check_members(&[fields], &members, at),
            None => Err(bad(at, "must be an object".into())),
        },
        Shape::Array(item, max) => {
            let Some(items) = v.items() else {
                return Err(bad(at, "must be an array".into()));
            };
            if let Some(max) = max
                && items.len() > *max
            {
                return Err(bad(at, format!("must have at most {max} items")));
            }
            for (i, x) in items.into_iter().enumerate() {
                check(item, x, At::Item(&at, i))?;
            }
            Ok(())
        }
        Shape::OrNull(_) if v.is_null() => Ok(()),
        Shape::OrNull(inner) => check(inner, v, at),
        Shape::OneOf(shapes) => {
            let fits = shapes.iter().filter(|s| check(s, v, at).is_ok()).count();
            if fits == 1 {
                Ok(())
            } else {
                Err(bad(at, "matches none of its allowed forms".into()))
            }
        }
    }
}

fn bad(at: At<'_>, problem: String) -> BlockError {
    BlockError::Field(at.render(), problem)
}

/// The shape in the normal form the schema test compares: what a JSON Schema for it says,
/// with descriptions and spelling differences removed.
pub fn normal(shape: &Shape) -> Value {
    match shape {
        Shape::Str => json!({"string": null}),
        Shape::Text(s) => json!({"string": s.pattern()}),
        Shape::Enum(words) => {
            let mut w: Vec<&str> = words.to_vec();
            w.sort_unstable();
            json!({"enum": w})
        }
        Shape::Int(lo, hi) => json!({"integer": [lo, hi]}),
        Shape::Bool => json!({"boolean": true}),
        Shape::Foreign => json!({"foreign": true}),
        Shape::Obj(fields) => normal_object(&[fields]),
        Shape::Array(item, max) => json!({"array": normal(item), "maxItems": max}),
        Shape::OrNull(inner) => json!({"nullable": normal(inner)}),
        Shape::OneOf(shapes) => {
            let mut alts: Vec<Value> = shapes.iter().map(normal).collect();
            alts.sort_by_key(|a| a.to_string());
            json!({"oneOf": alts})
        }
    }
}

/// An object shape (the union of `tables`) in normal form.
pub fn normal_object(tables: &[&[Field]]) -> Value {
    let mut props = serde_json::Map::new();
    let mut required: Vec<&str> = Vec::new();
    for f in tables.iter().flat_map(|t| t.iter()) {
        props.insert(f.name.into(), normal(&f.shape));
        if f.required {
            required.push(f.name);
        }
    }
    required.sort_unstable();
    json!({"object": props, "required": required})
}

/// The shape in the README's notation: `string`, `count` (an integer 0..2^53−1), `int a..b`,
/// `bool`, `json` (foreign JSON), `sha256` (64 hex digits), `hexN` (N hex digits), `stamp`,
/// `code`, `"a"|"b"` (one of these strings), `X|null`, `[X]` (`[X; ≤n]`: at most n items),
/// `{a: X, b?: Y}` (exactly these members; `?`: absent in blocks written before it existed),
/// `(X) or (Y)` (exactly one of).
pub fn describe(shape: &Shape) -> String {
    match shape {
        Shape::Str => "string".into(),
        Shape::Text(Syntax::Hex(32)) => "sha256".into(),
        Shape::Text(Syntax::Hex(n)) => format!("hex{}", 2 * n),
        Shape::Text(Syntax::PublicKey) => "ed25519:<64 hex>".into(),
        Shape::Text(Syntax::Stamp) => "stamp".into(),
        Shape::Text(Syntax::Code) => "code".into(),
        Shape::Text(Syntax::IntegerText) => "\"<decimal integer>\"".into(),
        Shape::Enum(words) => words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join("|"),
        Shape::Int(0, hi) if *hi == SAFE => "count".into(),
        Shape::Int(lo, hi) => format!("int {lo}..{hi}"),
        Shape::Bool => "bool".into(),
        Shape::Foreign => "json".into(),
        Shape::Obj(fields) => describe_object(fields),
        Shape::Array(item, None) => format!("[{}]", describe(item)),
        Shape::Array(item, Some(n)) => format!("[{}; ≤{n}]", describe(item)),
        Shape::OrNull(inner @ Shape::OneOf(_)) => format!("{} or null", describe(inner)),
        Shape::OrNull(inner) => format!("{}|null", describe(inner)),
        Shape::OneOf(shapes) => shapes
            .iter()
            .map(|s| format!("({})", describe(s)))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// An object's members in the README's notation, in table order.
pub fn describe_object(fields: &[Field]) -> String {
    let members: Vec<String> = fields
        .iter()
        .map(|f| {
            let opt = if f.required { "" } else { "?" };
            format!("{}{opt}: {}", f.name, describe(&f.shape))
        })
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// A table of fields as the README lists them: one `- `name`: shape` line each.
pub fn describe_fields(fields: &[Field]) -> String {
    fields
        .iter()
        .map(|f| {
            let opt = if f.required { "" } else { "?" };
            format!("- `{}{opt}`: `{}`\n", f.name, describe(&f.shape))
        })
        .collect()
}
