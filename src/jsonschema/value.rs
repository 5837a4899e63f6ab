//! JSON values as JSON Schema compares them: numbers by mathematical value (`1 == 1.0`,
//! integers exact), type names (`integer` includes `1.0`), string length in code points, and
//! deep equality for `enum`, `const` and `uniqueItems` that takes one budget step per node.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// Mathematical order of two JSON numbers: exact for integers, f64 otherwise.
pub fn cmp_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from))
}

/// Whether `n` has no fractional part (`1.0` is an integer for JSON Schema).
pub fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Whether `x` is an integer multiple of `m` (`m` > 0; float division tolerates rounding).
pub fn is_multiple_of(x: &Number, m: &Number) -> bool {
    if let (Some(x), Some(m)) = (as_i128(x), as_i128(m)) {
        return m != 0 && x % m == 0;
    }
    let (Some(x), Some(m)) = (x.as_f64(), m.as_f64()) else {
        return false;
    };
    if m == 0.0 {
        return false;
    }
    let q = x / m;
    if !q.is_finite() {
        // The quotient overflows (1e308 / 0.5): the remainder is still exact.
        return x % m == 0.0;
    }
    (q - q.round()).abs() <= 1e-9
}

/// Whether `v` is of the JSON Schema type `name`; None if `name` is no type name.
pub fn has_type(v: &Value, name: &str) -> Option<bool> {
    Some(match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => matches!(v, Value::Number(n) if is_integer(n)),
        _ => return None,
    })
}

/// The JSON Schema type name of `v` (`integer` for integral numbers).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
    }
}

/// Deep equality; each node visited takes one from `*budget`. None: budget spent.
pub fn equal(a: &Value, b: &Value, budget: &mut u64) -> Option<bool> {
    // Iterative, so deeply nested values cannot exhaust the stack.
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        *budget = budget.checked_sub(1)?;
        let same = match (a, b) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::String(x), Value::String(y)) => x == y,
            (Value::Number(x), Value::Number(y)) => cmp_numbers(x, y) == Some(Ordering::Equal),
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                stack.extend(x.iter().zip(y));
                true
            }
            (Value::Object(x), Value::Object(y)) => {
                if x.len() != y.len() {
                    false
                } else {
                    let mut ok = true;
                    for (k, xv) in x {
                        match y.get(k) {
                            Some(yv) => stack.push((xv, yv)),
                            None => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    ok
                }
            }
            _ => false,
        };
        if !same {
            return Some(false);
        }
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_floats_with_no_fraction_are_integers() {
        let mut budget = 100;
        assert_eq!(
            equal(&json!([1, {"a": 2}]), &json!([1.0, {"a": 2.0}]), &mut budget),
            Some(true)
        );
        assert_eq!(equal(&json!(false), &json!(0), &mut budget), Some(false));
        assert_eq!(has_type(&json!(1.0), "integer"), Some(true));
        assert_eq!(has_type(&json!(1.5), "integer"), Some(false));
        assert_eq!(has_type(&json!(1), "strnig"), None);
        assert!(is_multiple_of(
            &Number::from_f64(0.0075).unwrap(),
            &Number::from_f64(0.0001).unwrap()
        ));
        assert!(!is_multiple_of(
            &Number::from_f64(1e308).unwrap(),
            &Number::from_f64(0.123456789).unwrap()
        ));
    }

    #[test]
    fn equality_of_large_values_stops_when_the_budget_is_spent() {
        let big = Value::Array(vec![json!(1); 1000]);
        let mut budget = 10;
        assert_eq!(equal(&big, &big.clone(), &mut budget), None);
    }
}
