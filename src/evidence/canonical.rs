//! The canonical serialization that hashes and signatures cover.
//!
//! Canonical means: serde_json's compact output of a `Value` (object keys sorted by their
//! UTF-8 bytes, no whitespace, serde_json's string escaping), with integers only. For the
//! ASCII keys and integers an evidence block holds, this equals RFC 8785 (JCS).

use serde_json::Value;

/// The largest integer magnitude a block may hold: exactly representable as an IEEE-754 double,
/// so other languages' JSON parsers read the same number back.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Serializes a value canonically.
pub fn to_bytes(value: &Value) -> Vec<u8> {
    // serde_json's Map is a BTreeMap unless the `preserve_order` feature is on; a unit test
    // below pins that, since feature unification elsewhere could switch it on silently.
    serde_json::to_vec(value).expect("serializing a Value cannot fail")
}

/// Why a value is not allowed in a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfit {
    /// A number with a fraction or exponent, or one outside ±(2^53−1). Names the JSON path.
    Number(String),
}

/// Checks that a value holds only integers within ±(2^53−1).
pub fn check_fit(value: &Value) -> Result<(), Unfit> {
    fn walk(value: &Value, path: &mut String) -> Result<(), Unfit> {
        match value {
            Value::Number(n) => {
                let ok = n
                    .as_u64()
                    .map(|u| u <= MAX_SAFE_INTEGER)
                    .or_else(|| n.as_i64().map(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER))
                    .unwrap_or(false);
                if ok {
                    Ok(())
                } else {
                    Err(Unfit::Number(path.clone()))
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            Value::Object(map) => {
                for (k, v) in map {
                    let len = path.len();
                    path.push('.');
                    path.push_str(k);
                    walk(v, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
    walk(value, &mut String::from("$"))
}

/// Makes foreign JSON (a server's reply) fit for a block: returned unchanged when it holds
/// only safe integers, otherwise as its compact JSON text in a string, so nothing is lost
/// and the block stays integer-only.
pub fn foreign(value: &Value) -> Value {
    match check_fit(value) {
        Ok(()) => value.clone(),
        Err(_) => Value::String(to_string(value)),
    }
}

/// Foreign JSON larger than this is not kept, only its size and digest.
pub const MAX_FOREIGN: usize = 64 * 1024;

/// Foreign JSON nested deeper than this is not kept (blocks stay far from parsers' limits).
pub const MAX_FOREIGN_DEPTH: usize = 32;

/// `foreign`, bounded: JSON whose canonical text is larger than `MAX_FOREIGN`, or nested
/// deeper than `MAX_FOREIGN_DEPTH`, is replaced by a string giving its size and SHA-256, so
/// a hostile server cannot bloat a block or make it unreadable.
pub fn foreign_bounded(value: &Value) -> Value {
    fn depth(v: &Value) -> usize {
        match v {
            Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
            Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
            _ => 0,
        }
    }
    let bytes = to_bytes(value);
    if bytes.len() <= MAX_FOREIGN && depth(value) <= MAX_FOREIGN_DEPTH {
        return foreign(value);
    }
    use sha2::Digest;
    let digest = crate::hex::encode(&sha2::Sha256::digest(&bytes));
    Value::String(format!(
        "(omitted: {} bytes of JSON, sha256 {digest})",
        bytes.len()
    ))
}

fn to_string(value: &Value) -> String {
    String::from_utf8(to_bytes(value)).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_output_is_compact() {
        let v = json!({"b": 1, "a": {"d": [1, 2], "c": null}});
        assert_eq!(to_bytes(&v), br#"{"a":{"c":null,"d":[1,2]},"b":1}"#);
    }

    #[test]
    fn floats_and_huge_integers_do_not_fit() {
        assert_eq!(
            check_fit(&json!({"a": [1, 2.5]})),
            Err(Unfit::Number("$.a[1]".into()))
        );
        assert!(check_fit(&json!({"n": 9007199254740993u64})).is_err());
        assert!(check_fit(&json!({"n": -9007199254740991i64})).is_ok());
    }

    #[test]
    fn huge_or_deep_foreign_json_is_replaced_by_its_digest() {
        let big = json!({"x": "a".repeat(MAX_FOREIGN)});
        assert!(foreign_bounded(&big).as_str().unwrap().starts_with("(omitted: "));
        let mut deep = json!(1);
        for _ in 0..40 {
            deep = json!([deep]);
        }
        assert!(foreign_bounded(&deep).is_string());
        assert_eq!(foreign_bounded(&json!({"tools": {}})), json!({"tools": {}}));
    }

    #[test]
    fn foreign_json_with_floats_is_kept_as_text() {
        assert_eq!(foreign(&json!({"x": 1})), json!({"x": 1}));
        assert_eq!(foreign(&json!({"x": 1.5})), json!("{\"x\":1.5}"));
    }
}
