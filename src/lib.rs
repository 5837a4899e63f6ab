//! mcp-witness: probe and check stdio MCP servers, and keep the results as signed,
//! hash-chained evidence.
//!
//! The three jobs are plain functions with typed results: [`probe()`], [`check()`] and
//! [`verify()`]. The command-line tool is a thin layer over them.
//!
//! ```
//! use mcp_witness::{probe, ProbeOptions, Verdict};
//!
//! // A tiny stdio server written in sh: it answers initialize and tools/list.
//! let server = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"tiny","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}'; cat >/dev/null"#;
//! let seen = probe(&ProbeOptions::new(vec!["sh".into(), "-c".into(), server.into()]));
//! assert_eq!(seen.verdict, Verdict::Pass);
//! assert_eq!(seen.tools.unwrap().names, ["echo"]);
//! ```
//!
//! ```
//! use mcp_witness::{check, CheckOptions, Status};
//!
//! let server = r#"read l; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"tiny","version":"1"}}}'; read l; read l; echo '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}'; cat >/dev/null"#;
//! let mut opts = CheckOptions::new(vec!["sh".into(), "-c".into(), server.into()]);
//! opts.only = vec!["schema.tool_description".into()];
//! let report = check(&opts);
//! // The one tool has no description: a warning, so exit code 0 (1 under `strict`).
//! let missing = report.results.iter().find(|r| r.id == "schema.tool_description.missing").unwrap();
//! assert_eq!(missing.status, Status::Warn);
//! assert_eq!(report.exit_code(), 0);
//! ```
//!
//! ```
//! use mcp_witness::{probe, verify, Expectations, ProbeOptions};
//! use mcp_witness::evidence::append::append;
//! use mcp_witness::probe::record::block_body;
//!
//! let dir = std::env::temp_dir().join(format!("mcpw-doc-{}", std::process::id()));
//! let file = dir.join("evidence.jsonl");
//! let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
//! let seen = probe(&ProbeOptions::new(vec!["/nonexistent/server".into()]));
//! append(&file, block_body(&seen), &key, false).unwrap();
//!
//! let trusted = Expectations { trusted: vec![key.verifying_key()], head: None };
//! let report = verify(&file, &trusted).unwrap();
//! assert!(report.intact());
//! assert_eq!(report.blocks, 1);
//! std::fs::remove_dir_all(dir).unwrap();
//! ```

// The library API: the three jobs, their options and reports, the evidence format, and the
// protocol vocabulary they are expressed in.
pub mod check;
pub mod evidence;
pub mod mcp;
pub mod probe;
pub mod target;

/// The command-line tool (`src/main.rs` only hands over to [`cli::main`]).
pub mod cli;

// Internals. `#[doc(hidden)]` ones are reachable only so that the integration tests and
// benches can drive them directly; they are not part of the API and may change at any time.
#[doc(hidden)]
pub mod clock;
#[doc(hidden)]
pub mod hex;
#[doc(hidden)]
pub mod http;
#[doc(hidden)]
pub mod jsonschema;
#[doc(hidden)]
pub mod sys;
#[doc(hidden)]
pub mod wire;

pub(crate) mod config;
pub(crate) mod digest_cache;
pub(crate) mod envelope;
pub(crate) mod files;
pub(crate) mod inert;
pub(crate) mod json_budget;
pub(crate) mod kit;
pub(crate) mod program;
pub(crate) mod progress;
pub(crate) mod redact;
pub(crate) mod report;
pub(crate) mod rpc;
pub(crate) mod session;
pub mod surface;
#[cfg(test)]
mod test_rng;
pub(crate) mod text;

pub use check::{CheckOptions, CheckReport, CheckResult, Status, check};
pub use evidence::verify::{Expectations, Report, verify_file as verify};
pub use probe::outcome::{Observation, Verdict};
pub use probe::{ProbeOptions, probe};
