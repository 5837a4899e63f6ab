//! The canonical serialization that hashes and signatures cover.
//!
//! Canonical means RFC 8785 (JCS) for the values a block may hold: object keys sorted by
//! their UTF-16 code units, no whitespace, strings escaped as JCS (and serde_json) escape
//! them (`\"`, `\\`, `\b \f \n \r \t`, other control characters as `\u00xx`, everything
//! else as UTF-8), and integers only, within ±(2^53−1), in plain decimal (which is how JCS
//! formats those numbers). UTF-16 order differs from the UTF-8 byte order only between a
//! character in U+E000..U+FFFF and one beyond U+FFFF (a surrogate pair sorts first).

use serde_json::Value;

/// The largest integer magnitude a block may hold: exactly representable as an IEEE-754 double,
/// so other languages' JSON parsers read the same number back.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Serializes a value canonically.
pub fn to_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

/// The JCS order of two object keys: by their UTF-16 code units.
pub fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    // Code point order (the UTF-8 byte order) and UTF-16 order agree on ASCII.
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            // serde_json's map iterates in UTF-8 byte order, which is JCS order for ASCII
            // keys (a unit test pins that the map is sorted); only other keys need sorting.
            if map.keys().all(|k| k.is_ascii()) {
                for (i, (k, v)) in map.iter().enumerate() {
                    member(i, k, v, out);
                }
            } else {
                let mut members: Vec<(&String, &Value)> = map.iter().collect();
                members.sort_by(|x, y| key_order(x.0, y.0));
                for (i, (k, v)) in members.into_iter().enumerate() {
                    member(i, k, v, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(v, out);
            }
            out.push(b']');
        }
        leaf => write_leaf(leaf, out),
    }
}

fn member(i: usize, key: &str, value: &Value, out: &mut Vec<u8>) {
    if i > 0 {
        out.push(b',');
    }
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    write(value, out);
}

/// A string, number, boolean or null in its JCS form: serde_json's compact form for strings
/// and safe integers (the same as JCS), `jcs_number` for every other number.
fn write_leaf(value: &Value, out: &mut Vec<u8>) {
    if let Value::Number(n) = value {
        let safe = n.as_i64().is_some_and(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER)
            || n.as_u64().is_some_and(|u| u <= MAX_SAFE_INTEGER);
        if !safe {
            // JCS reads every number as an IEEE-754 double (a block never holds one of
            // these; digests of foreign JSON, like a tool result's, can).
            out.extend_from_slice(jcs_number(n.as_f64().unwrap_or(0.0)).as_bytes());
            return;
        }
    }
    // Writing into a Vec cannot fail, and a leaf holds no map keys to fail on.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// A double as ECMAScript's `Number.prototype.toString` writes it, which JCS (RFC 8785
/// section 3.2.2.3) prescribes: the shortest digits that read back as the same double, in
/// plain notation from 1e-6 up to 1e21, else in exponent notation.
pub fn jcs_number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        // -0 is written 0; JSON holds no NaN or infinity.
        return "0".into();
    }
    // Rust's `{:e}` writes the shortest round-trip digits: `d.ddddde±x`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().unwrap_or(0) + 1;
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e = if e < 0 {
            format!("-{}", -e)
        } else {
            format!("+{e}")
        };
        if k == 1 {
            format!("{digits}e{e}")
        } else {
            format!("{}.{}e{e}", &digits[..1], &digits[1..])
        }
    };
    format!("{sign}{body}")
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
    fn keys_sort_by_utf16_code_units_not_by_utf8_bytes() {
        // U+E000 is one code unit 0xE000; U+1F600 is the pair 0xD83D 0xDE00, which sorts first.
        let v = json!({"\u{e000}": 1, "\u{1f600}": 2, "a": 3, "\u{ffff}": 4, "\u{10000}": 5});
        let text = String::from_utf8(to_bytes(&v)).unwrap();
        assert_eq!(
            text,
            "{\"a\":3,\"\u{10000}\":5,\"\u{1f600}\":2,\"\u{e000}\":1,\"\u{ffff}\":4}"
        );
        // serde_json's own order (UTF-8 bytes) puts the supplementary characters last.
        let serde = serde_json::to_string(&v).unwrap();
        assert!(serde.ends_with("\"\u{1f600}\":2}"), "{serde}");
    }

    #[test]
    fn numbers_that_are_not_safe_integers_are_written_as_ecmascript_writes_them() {
        // Examples from RFC 8785 appendix B and ECMAScript's Number.prototype.toString.
        for (x, text) in [
            (1.5, "1.5"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (123.456e-10, "1.23456e-8"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (9007199254740994.0, "9007199254740994"),
            (-1.0, "-1"),
            (0.1, "0.1"),
            (295147905179352830000.0, "295147905179352830000"),
        ] {
            assert_eq!(jcs_number(x), text, "{x:e}");
        }
        assert_eq!(
            to_bytes(&json!([1.0, 2.5, 18446744073709551615u64])),
            b"[1,2.5,18446744073709552000]"
        );
    }

    #[test]
    fn ascii_keyed_values_are_written_as_serde_json_writes_them() {
        let v = json!({"b": [1, -2, "x\u{1}\n\"é"], "a": {"d": null, "c": true}, "A": 9007199254740991u64});
        assert_eq!(to_bytes(&v), serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn serde_json_maps_iterate_in_byte_order() {
        // The writer relies on this for ASCII keys (the `preserve_order` feature would break it).
        let v = json!({"b": 1, "a": 2, "B": 3, "_": 4});
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["B", "_", "a", "b"]);
    }

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
