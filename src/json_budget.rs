//! The parse budget: building a `serde_json::Value` from a server's line, with the memory the
//! values take bounded, not just the line's length. A 60 MiB line of `[0,0,…]` is 30 million
//! values, about 2 GiB as a `Value`; under the budget it is refused after a bounded cost.
//!
//! Costs are estimates in bytes of the structure built (value slots, map nodes, string
//! headers). The text of strings is not charged: it is never longer than the line, which
//! `--max-line` already bounds.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// The most structure one parse of one line may build, in estimated bytes (about a million
/// values; a tool list of several thousand tools with rich schemas fits). A line past it is
/// refused as too complex, whatever its length.
pub const PARSE_BUDGET: usize = 32 << 20;

/// One value in its parent: a `Value` slot, doubled for the growth of the array holding it.
const SLOT: usize = 2 * std::mem::size_of::<Value>();
/// The first node of a non-empty map (a `BTreeMap` leaf of 11 keys and values).
const MAP_NODE: usize = 640;
/// One map entry beyond the node: the key's header and allocation, its share of nodes.
const ENTRY: usize = 96;
/// The smallest allocation behind a string (charged to every string, empty ones too).
const STRING_ALLOC: usize = 32;

/// What one parse may build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Estimated bytes of structure.
    pub structure: usize,
    /// The text of strings (keys too) is charged as well. Without it, text is bounded by the
    /// line alone; with it, a reader that needs a few short fields keeps a huge string out.
    pub text_counts: bool,
}

impl Budget {
    /// `PARSE_BUDGET` of structure; text bounded by the line.
    pub const REPLY: Budget = Budget {
        structure: PARSE_BUDGET,
        text_counts: false,
    };

    /// For a reader that needs only a few short fields: `bytes` for structure and text.
    pub const fn small(bytes: usize) -> Budget {
        Budget {
            structure: bytes,
            text_counts: true,
        }
    }
}

/// Why a line was not turned into a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Valid or not, it would build more than the budget allows.
    TooComplex,
    /// Not a JSON value.
    Invalid,
}

struct Meter {
    left: Cell<usize>,
    exhausted: Cell<bool>,
    text_counts: bool,
}

impl Meter {
    /// The cost of a string of `len` bytes.
    fn string(&self, len: usize) -> usize {
        STRING_ALLOC + if self.text_counts { len } else { 0 }
    }

    fn charge<E: de::Error>(&self, cost: usize) -> Result<(), E> {
        match self.left.get().checked_sub(cost) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.exhausted.set(true);
                Err(E::custom("the parse budget is spent"))
            }
        }
    }
}

/// Parses `bytes` as one JSON value, building no more than `budget` allows.
pub fn parse(bytes: &[u8], budget: Budget) -> Result<Value, ParseError> {
    let b = Meter {
        left: Cell::new(budget.structure),
        exhausted: Cell::new(false),
        text_counts: budget.text_counts,
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match Seed(&b).deserialize(&mut de) {
        Ok(v) => de.end().map(|()| v).map_err(|_| ParseError::Invalid),
        Err(_) if b.exhausted.get() => Err(ParseError::TooComplex),
        Err(_) => Err(ParseError::Invalid),
    }
}

/// Parses `bytes` as one JSON object under the budget.
pub fn parse_object(bytes: &[u8], budget: Budget) -> Result<Map<String, Value>, ParseError> {
    match parse(bytes, budget)? {
        Value::Object(map) => Ok(map),
        _ => Err(ParseError::Invalid),
    }
}

/// The estimated structure cost of a value already built, as `parse` would charge it under
/// `Budget::REPLY` (text not counted).
pub fn cost(value: &Value) -> usize {
    SLOT + match value {
        Value::String(_) => STRING_ALLOC,
        Value::Array(items) => items.iter().map(cost).sum(),
        Value::Object(map) if !map.is_empty() => {
            MAP_NODE
                + map
                    .values()
                    .map(|v| ENTRY + STRING_ALLOC + cost(v))
                    .sum::<usize>()
        }
        _ => 0,
    }
}

struct Seed<'b>(&'b Meter);

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.charge(SLOT)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.charge(SLOT)?;
        Ok(Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.charge(SLOT)?;
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.charge(SLOT)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.charge(SLOT + self.0.string(v.len()))?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.0.charge(SLOT + self.0.string(v.len()))?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.charge(SLOT)?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.charge(SLOT)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed(self.0))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        self.0.charge(SLOT)?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let node = if map.is_empty() { MAP_NODE } else { 0 };
            self.0.charge(node + ENTRY + self.0.string(key.len()))?;
            let value = access.next_value_seed(Seed(self.0))?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinary_message_parses_as_serde_json_would() {
        let text = br#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"c":"\u00e9"}"#;
        let want: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(parse(text, Budget::REPLY), Ok(want.clone()));
        assert!(cost(&want) < 4096);
    }

    #[test]
    fn a_long_array_of_zeros_is_refused_past_the_budget_and_invalid_text_is_invalid() {
        let mut text = b"[0".to_vec();
        text.extend(std::iter::repeat_n(&b",0"[..], 100_000).flatten());
        text.push(b']');
        let structure = |bytes| Budget {
            structure: bytes,
            text_counts: false,
        };
        assert_eq!(parse(&text, structure(1 << 20)), Err(ParseError::TooComplex));
        assert!(parse(&text, structure(16 << 20)).is_ok());
        assert_eq!(parse(b"[0,", Budget::REPLY), Err(ParseError::Invalid));
        assert_eq!(parse(b"{} {}", Budget::REPLY), Err(ParseError::Invalid));
    }

    #[test]
    fn a_small_budget_counts_the_text_of_strings() {
        let long = format!(
            r#"{{"protocolVersion":"2025-11-25","padding":"{}"}}"#,
            "x".repeat(2 << 20)
        );
        assert!(parse(long.as_bytes(), Budget::REPLY).is_ok());
        assert_eq!(
            parse(long.as_bytes(), Budget::small(1 << 20)),
            Err(ParseError::TooComplex)
        );
        assert!(parse(br#"{"protocolVersion":"2025-11-25"}"#, Budget::small(1 << 20)).is_ok());
    }

    #[test]
    fn the_cost_of_a_built_value_matches_what_parsing_charged() {
        let text = br#"{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":""}]}"#;
        let v = parse(text, Budget::REPLY).unwrap();
        let c = cost(&v);
        let structure = |bytes| Budget {
            structure: bytes,
            text_counts: false,
        };
        assert_eq!(parse(text, structure(c)), Ok(v.clone()));
        assert_eq!(parse(text, structure(c - 1)), Err(ParseError::TooComplex));
    }
}
