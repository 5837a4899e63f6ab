//! mcp-witness: probe stdio MCP servers and keep the results as signed, hash-chained evidence.

pub mod check;
pub mod cli;
pub mod clock;
pub mod config;
pub mod evidence;
pub mod framing;
pub mod hex;
pub mod probe;
pub mod program;
pub mod redact;
pub mod rpc;
pub mod sys;
pub mod transport;
