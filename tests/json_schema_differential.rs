//! The crate's JSON Schema validator against the Python reference implementation
//! (`jsonschema` 4.26.0, in the verifier venv that `tests/setup/install-verifier-tools`
//! installs): thousands of random well-formed 2020-12 schemas, each with random instances,
//! validated by both in real processes; every verdict must match.
//!
//! The generator keeps to what both sides define the same way: patterns without `\w`, `\s`,
//! `\d` on non-ASCII text or line ends (Python's `re` and ECMAScript differ there), and
//! multipleOf values exact in binary floating point.

mod common;

use std::process::Command;

use common::{TempDir, verifier_python};
use mcp_witness::jsonschema::{Dialect, Outcome, Registry, Validator};
use serde_json::{Map, Value, json};

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const KEYS: [&str; 5] = ["a", "b", "c", "ab", "x"];
const STRINGS: [&str; 9] = ["", "a", "ab", "abc", "ba", "1", "12", "é", "a-b"];
const PATTERNS: [&str; 9] = [
    "^a", "b", "^[a-c]+$", "^[0-9]+$", "^.{2}$", "a|c", "^(ab)+$", "^$", "[^a]",
];
const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

fn instance(r: &mut Rng, depth: usize) -> Value {
    match r.below(if depth == 0 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => json!(r.chance(2)),
        2 => json!(*r.pick(&[-3i64, 0, 1, 2, 3, 7, 10, 12])),
        3 => json!(*r.pick(&[0.5f64, 1.5, 2.0, 4.5, 7.0, 3.25, -1.5])),
        4 => json!(*r.pick(&STRINGS)),
        5 => Value::Array((0..r.below(4)).map(|_| instance(r, depth - 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..r.below(4) {
                m.insert(r.pick(&KEYS).to_string(), instance(r, depth - 1));
            }
            Value::Object(m)
        }
    }
}

fn schemas(r: &mut Rng, depth: usize, n: usize, defs: &mut Map<String, Value>) -> Vec<Value> {
    (0..n).map(|_| schema(r, depth, defs)).collect()
}

/// A random well-formed 2020-12 schema: one to three keyword groups merged. `$ref` targets
/// go to `defs`, which the caller puts under the root's `$defs`.
fn schema(r: &mut Rng, depth: usize, defs: &mut Map<String, Value>) -> Value {
    if r.chance(8) {
        return json!(r.chance(3));
    }
    let mut s = Map::new();
    for _ in 0..1 + r.below(3) {
        let group = r.below(if depth == 0 { 5 } else { 12 });
        let mut put = |k: &str, v: Value| {
            s.insert(k.to_string(), v);
        };
        match group {
            0 => {
                if r.chance(3) {
                    let t: Vec<&str> = (0..1 + r.below(2)).map(|_| *r.pick(&TYPES)).collect();
                    put("type", json!(t));
                } else {
                    put("type", json!(r.pick(&TYPES)));
                }
            }
            1 => {
                if r.chance(2) {
                    put(
                        "enum",
                        Value::Array((0..1 + r.below(3)).map(|_| instance(r, 1)).collect()),
                    );
                } else {
                    put("const", instance(r, 1));
                }
            }
            2 => {
                let kw = *r.pick(&[
                    "minimum",
                    "maximum",
                    "exclusiveMinimum",
                    "exclusiveMaximum",
                    "multipleOf",
                ]);
                let v = if kw == "multipleOf" {
                    json!(*r.pick(&[2.0, 3.0, 0.5, 1.5, 0.25]))
                } else {
                    json!(r.below(10) as i64 - 2)
                };
                put(kw, v);
            }
            3 => match r.below(3) {
                0 => put("minLength", json!(r.below(3))),
                1 => put("maxLength", json!(r.below(3))),
                _ => put("pattern", json!(r.pick(&PATTERNS))),
            },
            4 => match r.below(5) {
                0 => put("required", json!([r.pick(&KEYS), r.pick(&KEYS)])),
                1 => put("minProperties", json!(r.below(3))),
                2 => put("maxItems", json!(r.below(3))),
                3 => put("uniqueItems", json!(true)),
                _ => put("dependentRequired", json!({ *r.pick(&KEYS): [r.pick(&KEYS)] })),
            },
            5 => {
                let mut props = Map::new();
                for _ in 0..1 + r.below(2) {
                    props.insert(r.pick(&KEYS).to_string(), schema(r, depth - 1, defs));
                }
                put("properties", Value::Object(props));
                if r.chance(2) {
                    put("additionalProperties", schema(r, depth - 1, defs));
                }
            }
            6 => {
                put(
                    "patternProperties",
                    json!({ *r.pick(&PATTERNS): schema(r, depth - 1, defs) }),
                );
                if r.chance(2) {
                    put("propertyNames", json!({"maxLength": 1 + r.below(2)}));
                }
                if r.chance(2) {
                    put(
                        "dependentSchemas",
                        json!({ *r.pick(&KEYS): schema(r, depth - 1, defs) }),
                    );
                }
            }
            7 => {
                if r.chance(2) {
                    let n = 1 + r.below(2);
                    put("prefixItems", Value::Array(schemas(r, depth - 1, n, defs)));
                }
                put("items", schema(r, depth - 1, defs));
                if r.chance(2) {
                    put("contains", schema(r, depth - 1, defs));
                    if r.chance(2) {
                        put(
                            if r.chance(2) { "minContains" } else { "maxContains" },
                            json!(r.below(3)),
                        );
                    }
                }
            }
            8 => {
                let kw = *r.pick(&["allOf", "anyOf", "oneOf"]);
                let n = 1 + r.below(3);
                put(kw, Value::Array(schemas(r, depth - 1, n, defs)));
            }
            9 => {
                if r.chance(2) {
                    put("not", schema(r, depth - 1, defs));
                } else {
                    put("if", schema(r, depth - 1, defs));
                    put("then", schema(r, depth - 1, defs));
                    if r.chance(2) {
                        put("else", schema(r, depth - 1, defs));
                    }
                }
            }
            10 => {
                put(
                    if r.chance(2) {
                        "unevaluatedProperties"
                    } else {
                        "unevaluatedItems"
                    },
                    schema(r, depth - 1, defs),
                );
            }
            _ => {
                // A $ref to a new entry of the root's $defs, or to an earlier one.
                let name = if defs.is_empty() || r.chance(2) {
                    let target = schema(r, depth - 1, defs);
                    let name = format!("d{}", defs.len());
                    defs.insert(name.clone(), target);
                    name
                } else {
                    format!("d{}", r.below(defs.len()))
                };
                s.insert("$ref".into(), json!(format!("#/$defs/{name}")));
            }
        }
    }
    Value::Object(s)
}

const PYTHON: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
cases = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for case in cases:
    try:
        v = Draft202012Validator(case["schema"])
        out.append([v.is_valid(i) for i in case["instances"]])
    except Exception:
        out.append(None)
json.dump(out, open(sys.argv[2], "w"))
"#;

#[test]
fn random_schemas_get_the_same_verdicts_as_the_python_reference_implementation() {
    let python = verifier_python();
    let mut r = Rng(0xD1B5_4A32_D192_ED03);
    let registry = Registry::new();
    let mut cases = Vec::new();
    for _ in 0..3000 {
        let mut defs = Map::new();
        let mut root = schema(&mut r, 3, &mut defs);
        if !defs.is_empty() {
            root = json!({"$defs": defs, "allOf": [root]});
        }
        let instances: Vec<Value> = (0..8).map(|_| instance(&mut r, 3)).collect();
        cases.push(json!({"schema": root, "instances": instances}));
    }
    let dir = TempDir::new("schema-diff");
    let input = dir.join("cases.json");
    let output = dir.join("verdicts.json");
    std::fs::write(&input, serde_json::to_vec(&cases).unwrap()).unwrap();
    let run = Command::new(&python)
        .arg("-c")
        .arg(PYTHON)
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "python: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let theirs: Vec<Value> = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert_eq!(theirs.len(), cases.len());

    let (mut compared, mut valid, mut python_raised, mut too_complex) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for (case, verdicts) in cases.iter().zip(&theirs) {
        let v = Validator::new(&case["schema"], Dialect::Draft202012, &registry)
            .unwrap_or_else(|e| panic!("{e}: {}", case["schema"]));
        let Some(verdicts) = verdicts.as_array() else {
            python_raised += 1;
            continue;
        };
        for (inst, want) in case["instances"].as_array().unwrap().iter().zip(verdicts) {
            let ours = v.validate(inst);
            if matches!(ours, Outcome::TooComplex(_)) {
                too_complex += 1;
                continue;
            }
            compared += 1;
            valid += usize::from(ours.is_valid());
            if Some(ours.is_valid()) != want.as_bool() {
                disagreements.push(format!(
                    "schema {} instance {inst}: python {want}, ours {ours:?}",
                    case["schema"]
                ));
            }
        }
    }
    println!(
        "{compared} verdicts compared ({valid} valid); python raised on {python_raised} schemas; {too_complex} too complex"
    );
    assert!(compared > 20_000, "only {compared} verdicts compared");
    assert!(
        valid > compared / 5 && valid < compared * 4 / 5,
        "{valid} of {compared} valid: the generator is lopsided"
    );
    assert_eq!(
        (python_raised, too_complex),
        (0, 0),
        "the generator makes only plain, acyclic schemas"
    );
    assert!(
        disagreements.is_empty(),
        "{} disagreements with python jsonschema, first ones:\n{}",
        disagreements.len(),
        disagreements
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
