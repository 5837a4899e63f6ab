//! The crate's own JSON Schema validator (`mcp_witness::jsonschema`) measured against the
//! official JSON-Schema-Test-Suite: every required case (not `optional/`) of draft 2020-12
//! and draft-07, with the suite's `remotes/` preloaded at http://localhost:1234/ and the two
//! metaschemas under their `$id`, as the suite intends. Prints the pass count per file
//! (keyword) and every failing case. `tests/setup/install-schema-suite` fetches the suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_witness::jsonschema::{Dialect, Outcome, Registry, Validator};
use serde_json::Value;

/// Where the suite may be: $MCP_WITNESS_SCHEMA_SUITE, else `json-schema-test-suite/` in the
/// target dir this test binary was built in (so $CARGO_TARGET_DIR is honoured), in
/// $CARGO_TARGET_DIR, or in `<repo>/target`.
fn suite_candidates() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("MCP_WITNESS_SCHEMA_SUITE").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = Vec::new();
    // <target>/debug/deps/json_schema_suite-HASH
    if let Some(target) = std::env::current_exe()
        .ok()
        .as_deref()
        .and_then(|e| e.ancestors().nth(3))
    {
        dirs.push(target.join("json-schema-test-suite"));
    }
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(target).join("json-schema-test-suite"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/json-schema-test-suite"));
    dirs
}

fn suite() -> PathBuf {
    let candidates = suite_candidates();
    let installed = |d: &&PathBuf| {
        d.join("tests/draft2020-12").is_dir() && d.join("remotes").is_dir() && d.join("metaschemas").is_dir()
    };
    match candidates.iter().find(installed) {
        Some(dir) => dir.clone(),
        None => panic!(
            "the JSON-Schema-Test-Suite is not installed (looked in {}): run `tests/setup/install-schema-suite` \
             (it installs under $CARGO_TARGET_DIR or target/), or set MCP_WITNESS_SCHEMA_SUITE to its folder",
            candidates
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json")
            || p.parent().is_some_and(|d| d.ends_with("vocabularies"))
        {
            out.push(p);
        }
    }
}

fn registry(suite: &Path) -> Registry {
    let mut reg = Registry::new();
    let remotes = suite.join("remotes");
    let mut files = Vec::new();
    json_files(&remotes, &mut files);
    for f in files {
        let rel = f
            .strip_prefix(&remotes)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        reg.insert(&format!("http://localhost:1234/{rel}"), read_json(&f));
    }
    let mut metas = Vec::new();
    json_files(&suite.join("metaschemas"), &mut metas);
    for f in metas {
        let doc = read_json(&f);
        let id = doc["$id"]
            .as_str()
            .unwrap_or_else(|| panic!("{} has no $id", f.display()))
            .to_string();
        reg.insert(&id, doc);
    }
    reg
}

struct Tally {
    per_file: BTreeMap<String, (usize, usize)>,
    failures: Vec<String>,
}

fn run_draft(folder: &str, dialect: Dialect) -> Tally {
    let suite = suite();
    let reg = registry(&suite);
    let mut files = Vec::new();
    for e in std::fs::read_dir(suite.join("tests").join(folder)).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            files.push(p);
        }
    }
    files.sort();
    assert!(
        files.len() > 30,
        "too few test files in {folder}: the suite copy looks incomplete"
    );
    let mut tally = Tally {
        per_file: BTreeMap::new(),
        failures: Vec::new(),
    };
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let groups = read_json(&f);
        for group in groups.as_array().unwrap() {
            let gdesc = group["description"].as_str().unwrap_or("?");
            let validator = Validator::new(&group["schema"], dialect, &reg);
            for test in group["tests"].as_array().unwrap() {
                let tdesc = test["description"].as_str().unwrap_or("?");
                let want = test["valid"].as_bool().unwrap();
                let verdict = match &validator {
                    Err(e) => Err(format!("schema refused: {e}")),
                    Ok(v) => {
                        let full = v.validate(&test["data"]);
                        let quick = v.is_valid(&test["data"]);
                        match (&full, quick) {
                            (Outcome::TooComplex(l), _) => Err(format!("too complex: {l}")),
                            (o, Some(q)) if o.is_valid() == q => Ok(q),
                            (o, q) => Err(format!("validate says {o:?}, is_valid says {q:?}")),
                        }
                    }
                };
                let entry = tally.per_file.entry(name.clone()).or_default();
                entry.1 += 1;
                match verdict {
                    Ok(got) if got == want => entry.0 += 1,
                    Ok(got) => tally.failures.push(format!(
                        "{name}: {gdesc} / {tdesc}: expected valid={want}, got valid={got}"
                    )),
                    Err(why) => tally.failures.push(format!("{name}: {gdesc} / {tdesc}: {why}")),
                }
            }
        }
    }
    tally
}

fn report_and_assert(folder: &str, tally: &Tally) {
    let (passed, total) = tally
        .per_file
        .values()
        .fold((0, 0), |(p, t), (fp, ft)| (p + fp, t + ft));
    println!(
        "{folder}: {passed}/{total} required cases pass ({:.2}%)",
        100.0 * passed as f64 / total as f64
    );
    for (file, (p, t)) in &tally.per_file {
        println!("  {file:<24} {p:>4}/{t:<4}");
    }
    for f in &tally.failures {
        println!("  FAIL {f}");
    }
    assert!(total > 900, "{folder}: only {total} cases found");
    assert!(
        passed * 100 >= total * 98,
        "{folder}: {passed}/{total} pass, below 98%; failing cases:\n{}",
        tally.failures.join("\n")
    );
}

#[test]
fn draft_2020_12_required_cases_pass_at_least_98_percent() {
    let tally = run_draft("draft2020-12", Dialect::Draft202012);
    report_and_assert("draft2020-12", &tally);
}

#[test]
fn draft_07_required_cases_pass_at_least_98_percent() {
    let tally = run_draft("draft7", Dialect::Draft7);
    report_and_assert("draft7", &tally);
}

/// Every schema of a file against every instance of the same file (most pairs were never
/// meant to meet), in both dialects: no panic, no bound reached, and the full validation and
/// the quick yes/no always agree.
#[test]
fn every_suite_schema_meets_every_instance_of_its_file_without_panic_or_disagreement() {
    let suite = suite();
    let reg = registry(&suite);
    let mut pairs = 0;
    for (folder, dialect) in [
        ("draft2020-12", Dialect::Draft202012),
        ("draft7", Dialect::Draft7),
    ] {
        for e in std::fs::read_dir(suite.join("tests").join(folder)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            let groups = read_json(&p);
            let groups = groups.as_array().unwrap();
            let instances: Vec<&Value> = groups
                .iter()
                .flat_map(|g| g["tests"].as_array().unwrap().iter().map(|t| &t["data"]))
                .collect();
            for g in groups {
                for d in [dialect, Dialect::Draft202012, Dialect::Draft7] {
                    let Ok(v) = Validator::new(&g["schema"], d, &reg) else {
                        continue;
                    };
                    for inst in &instances {
                        let full = v.validate(inst);
                        assert!(
                            !matches!(full, Outcome::TooComplex(_)),
                            "{}: {full:?}",
                            p.display()
                        );
                        assert_eq!(
                            Some(full.is_valid()),
                            v.is_valid(inst),
                            "{}: {}",
                            p.display(),
                            g["description"]
                        );
                        pairs += 1;
                    }
                }
            }
        }
    }
    assert!(pairs > 50_000, "only {pairs} pairs");
    println!("{pairs} schema/instance pairs");
}

/// A small deterministic generator (xorshift64*), so a failure reproduces.
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
}

/// Values a hostile schema author might put anywhere.
fn hostile_value(rng: &mut Rng) -> Value {
    let pool = [
        serde_json::json!("#"),
        serde_json::json!("#/"),
        serde_json::json!("#/$defs/%ZZ"),
        serde_json::json!("#/items/99999999999999999999"),
        serde_json::json!("#/~2"),
        serde_json::json!("../../../../x"),
        serde_json::json!("://"),
        serde_json::json!("urn:"),
        serde_json::json!("http://localhost:1234/nope.json#frag"),
        serde_json::json!("(a"),
        serde_json::json!("[\\d-z]"),
        serde_json::json!("\\u{110000}"),
        serde_json::json!("a{99999}"),
        serde_json::json!(-1),
        serde_json::json!(0),
        serde_json::json!(1e308),
        serde_json::json!(-1e308),
        serde_json::json!(18446744073709551615u64),
        serde_json::json!(0.0000001),
        serde_json::json!(null),
        serde_json::json!(true),
        serde_json::json!(false),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::json!([{"$ref": "#"}]),
        serde_json::json!({"$ref": "#"}),
        serde_json::json!({"$dynamicRef": "#meta"}),
        serde_json::json!({"$id": "http://x/y", "$anchor": "a"}),
        serde_json::json!(["string", "nope"]),
    ];
    pool[rng.below(pool.len())].clone()
}

/// `v` with one node (chosen by `rng`) replaced by a hostile value.
fn mutate(v: &mut Value, rng: &mut Rng, depth: usize) {
    let descend = depth < 6 && rng.below(3) != 0;
    match v {
        Value::Object(m) if descend && !m.is_empty() => {
            let k = m.keys().nth(rng.below(m.len())).cloned().unwrap_or_default();
            if let Some(child) = m.get_mut(&k) {
                mutate(child, rng, depth + 1);
            }
        }
        Value::Array(a) if descend && !a.is_empty() => {
            let i = rng.below(a.len());
            mutate(&mut a[i], rng, depth + 1);
        }
        Value::Object(m) if rng.below(2) == 0 => {
            let keys = [
                "$ref",
                "$dynamicRef",
                "$id",
                "$anchor",
                "pattern",
                "items",
                "properties",
                "type",
                "enum",
                "minLength",
                "allOf",
                "$schema",
            ];
            m.insert(keys[rng.below(keys.len())].to_string(), hostile_value(rng));
        }
        _ => *v = hostile_value(rng),
    }
}

/// Suite schemas with random hostile edits: `new` refuses them with a typed error or the
/// validator answers (or reaches a bound); never a panic, and the two paths agree.
#[test]
fn randomly_corrupted_suite_schemas_are_refused_or_answered_never_a_panic() {
    let suite = suite();
    let reg = registry(&suite);
    let mut schemas = Vec::new();
    let mut instances = Vec::new();
    for folder in ["draft2020-12", "draft7"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(suite.join("tests").join(folder))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            for g in read_json(&f).as_array().unwrap() {
                schemas.push(g["schema"].clone());
                instances.extend(g["tests"].as_array().unwrap().iter().map(|t| t["data"].clone()));
            }
        }
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut refused, mut answered) = (0, 0);
    for round in 0..4000 {
        let mut schema = schemas[rng.below(schemas.len())].clone();
        for _ in 0..1 + rng.below(3) {
            mutate(&mut schema, &mut rng, 0);
        }
        let dialect = if round % 2 == 0 {
            Dialect::Draft202012
        } else {
            Dialect::Draft7
        };
        match Validator::new(&schema, dialect, &reg) {
            Err(e) => {
                assert!(!e.to_string().is_empty());
                refused += 1;
            }
            Ok(v) => {
                for _ in 0..8 {
                    let inst = &instances[rng.below(instances.len())];
                    let full = v.validate(inst);
                    let quick = v.is_valid(inst);
                    // The quick path stops at the first failure, so it may answer where the
                    // full one reached a bound; where the full one answers, they agree.
                    if !matches!(full, Outcome::TooComplex(_)) {
                        assert_eq!(Some(full.is_valid()), quick, "{schema} on {inst}");
                    }
                }
                answered += 1;
            }
        }
    }
    println!("corrupted schemas: {refused} refused, {answered} answered");
    assert!(
        refused > 100 && answered > 100,
        "{refused} refused, {answered} answered: the mutations miss"
    );
}
