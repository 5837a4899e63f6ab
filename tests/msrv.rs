//! The minimum supported Rust version (Cargo.toml's `rust-version`), checked as far as a
//! machine with one toolchain can: no older compiler builds the crate here.
//!
//! Checked: every crate in Cargo.lock that builds on this platform, with every feature,
//! declares a `rust-version` no newer than ours, or is one of the few reviewed crates that
//! declare none; and nothing turns off clippy's `incompatible_msrv` lint, which (under
//! `cargo clippy --all-targets -- -D warnings`, run by .ci/run) fails on any standard-library
//! item stabilized after our `rust-version`. Not checked: language features (the lint does not
//! see them; they were reviewed against the release notes when `rust-version` was set), the
//! crates of other platforms (Windows-only ones are not downloaded here), and what the
//! undeclared crates need.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::bounded_output;
use serde_json::Value;

/// Crates of the lock that declare no `rust-version` (old RustCrypto and small utility
/// crates): a new one fails the test, to be reviewed and added here.
const UNDECLARED: &[&str] = &[
    "block-buffer",
    "cpufeatures",
    "crypto-common",
    "curve25519-dalek-derive",
    "digest",
    "generic-array",
    "getrandom",
    "num_threads",
    "rand_core",
    "sha2",
    "subtle",
    "untrusted",
    "utf8parse",
    "version_check",
];

/// `1.85` or `1.66.0` as (major, minor, patch).
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text
        .split('.')
        .map(|p| p.parse::<u64>().expect("a numeric version"));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// This machine's target triple, as rustc names it.
fn host() -> String {
    let out = bounded_output(Command::new("rustc").arg("-vV").stdin(Stdio::null()));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

#[test]
fn every_dependency_declares_a_rust_version_no_newer_than_ours() {
    let ours = version(env!("CARGO_PKG_RUST_VERSION"));
    let out = bounded_output(
        Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--locked",
                "--offline",
                "--all-features",
            ])
            .args(["--filter-platform", &host()])
            .arg("--manifest-path")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .stdin(Stdio::null()),
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    assert!(packages.len() > 20, "the lock's crates: {}", packages.len());
    let mut newer = Vec::new();
    let mut undeclared = Vec::new();
    for package in packages {
        let name = package["name"].as_str().unwrap();
        match package["rust_version"].as_str() {
            Some(theirs) if version(theirs) > ours => newer.push(format!("{name} {theirs}")),
            Some(_) => {}
            None => undeclared.push(name),
        }
    }
    assert!(
        newer.is_empty(),
        "crates needing a newer Rust than our {}: {newer:?}",
        env!("CARGO_PKG_RUST_VERSION")
    );
    undeclared.sort_unstable();
    undeclared.dedup();
    assert_eq!(undeclared, UNDECLARED, "crates declaring no rust-version");
}

#[test]
fn nothing_turns_off_the_lint_that_holds_std_to_our_rust_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![root.join("Cargo.toml")];
    let mut folders = vec![root.join("src"), root.join("tests"), root.join("examples")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with(file!()) {
                sources.push(path);
            }
        }
    }
    assert!(sources.len() > 50, "the sources were found: {}", sources.len());
    // Whether `word` is in the code of `file`, comments left out (`//` lines in Rust, `#` to the
    // end of a line in TOML).
    let contains = |file: &Path, word: &str| {
        let toml = file.extension().is_some_and(|e| e == "toml");
        std::fs::read_to_string(file).is_ok_and(|text| {
            text.lines().any(|line| {
                let code = match toml {
                    true => line.split('#').next().unwrap_or(""),
                    false if line.trim_start().starts_with("//") => "",
                    false => line,
                };
                code.contains(word)
            })
        })
    };
    // An `allow` of the lint, in a source file or Cargo.toml's [lints].
    let allowing: Vec<_> = sources
        .iter()
        .filter(|f| contains(f, "incompatible_msrv"))
        .collect();
    assert!(allowing.is_empty(), "{allowing:?}");
    // clippy.toml's `msrv` would take the place of Cargo.toml's rust-version.
    for config in ["clippy.toml", ".clippy.toml"] {
        assert!(!contains(&root.join(config), "msrv"), "{config} sets msrv");
    }
}
