//! The crate's own JSON Schema validator (`mcp_witness::jsonschema`) measured against the
//! official JSON-Schema-Test-Suite: every required case (not `optional/`) of draft 2020-12
//! and draft-07, with the suite's `remotes/` preloaded at http://localhost:1234/ and the two
//! metaschemas under their `$id`, as the suite intends. Prints the pass count per file
//! (keyword) and every failing case. `tests/setup/install-schema-suite` fetches the suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_witness::jsonschema::{Dialect, Outcome, Registry, Validator};
use serde_json::Value;

/// The suite folder: $MCP_WITNESS_SCHEMA_SUITE, else <target dir>/json-schema-test-suite
/// (the target dir this test binary was built in, so $CARGO_TARGET_DIR is honoured).
fn suite_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("MCP_WITNESS_SCHEMA_SUITE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("current_exe");
    // <target>/debug/deps/json_schema_suite-HASH
    let target = exe
        .ancestors()
        .nth(3)
        .expect("test binary lives in <target>/<profile>/deps");
    target.join("json-schema-test-suite")
}

fn suite() -> PathBuf {
    let dir = suite_dir();
    assert!(
        dir.join("tests/draft2020-12").is_dir()
            && dir.join("remotes").is_dir()
            && dir.join("metaschemas").is_dir(),
        "the JSON-Schema-Test-Suite is not installed at {}: run `tests/setup/install-schema-suite` \
         (with the same CARGO_TARGET_DIR as this test), or set MCP_WITNESS_SCHEMA_SUITE to its folder",
        dir.display()
    );
    dir
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
