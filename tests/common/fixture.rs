//! Where the test fixture server is: the example `mcp-witness-fixture`
//! (examples/mcp-witness-fixture/), which is an example rather than a `[[bin]]` so that
//! `cargo install` installs `mcp-witness` alone.
//!
//! Cargo builds it into `<target>/<profile>/examples/`, beside the `deps/` folder that holds
//! the running test or bench binary. `cargo test` and `cargo nextest run` build every example
//! before any test runs; a narrower run (`--test NAME`) and `cargo bench` do not, so the first
//! call in a process builds it with the same cargo, target folder and profile when it is
//! missing or older than one of its sources (its folder, Cargo.toml, Cargo.lock). Not covered:
//! a cross-compiled layout (`--target TRIPLE`), and a change of toolchain or RUSTFLAGS alone
//! (cargo would rebuild, this check does not ask it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::SystemTime;

const NAME: &str = "mcp-witness-fixture";

/// The fixture's path, built first if it is missing or stale (once per process).
pub fn fixture() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let layout = Layout::of_this_binary();
        let built = layout.profile_dir.join("examples").join(NAME);
        if !is_fresh(&built) {
            build(&layout);
            // Cargo may have found it up to date (an edit to Cargo.toml that does not
            // change it): mark it checked, so the next process does not ask cargo again.
            if let Ok(file) = std::fs::File::open(&built) {
                let _ = file.set_modified(SystemTime::now());
            }
        }
        built.to_str().expect("a UTF-8 target path").to_owned()
    })
}

/// Where cargo put the running test or bench binary: `<target>/<profile>/deps/<binary>`.
pub struct Layout {
    /// `<target>`, as `--target-dir` takes it.
    pub target_dir: PathBuf,
    /// `<target>/<profile>`.
    pub profile_dir: PathBuf,
    /// The profile, as `--profile` takes it (`dev` builds into `debug`).
    pub profile: String,
}

impl Layout {
    pub fn of_this_binary() -> Layout {
        let exe = std::env::current_exe().expect("the running test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("a <profile>/deps folder");
        let target_dir = profile_dir.parent().expect("a target folder").to_path_buf();
        let profile = match profile_dir.file_name().and_then(|name| name.to_str()) {
            Some("debug") => "dev".to_string(),
            Some(name) => name.to_string(),
            None => panic!("no profile folder in {}", profile_dir.display()),
        };
        Layout {
            target_dir,
            profile_dir: profile_dir.to_path_buf(),
            profile,
        }
    }
}

/// Whether `built` exists and is newer than every source it is built from.
fn is_fresh(built: &Path) -> bool {
    let Some(built_at) = modified(built) else {
        return false;
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec![manifest.join("Cargo.toml"), manifest.join("Cargo.lock")];
    let folder = manifest.join("examples").join(NAME);
    match std::fs::read_dir(&folder) {
        Ok(entries) => sources.extend(entries.flatten().map(|entry| entry.path())),
        Err(_) => return false,
    }
    sources
        .iter()
        .all(|source| modified(source).is_some_and(|at| at <= built_at))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|meta| meta.modified()).ok()
}

/// `cargo build --example mcp-witness-fixture` into the running binary's target and profile.
fn build(layout: &Layout) {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--example",
            NAME,
            "--profile",
            &layout.profile,
        ])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&layout.target_dir)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the {NAME} example failed: {status}");
}
