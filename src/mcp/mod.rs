//! The MCP protocol vocabulary, with no I/O: eras and their versions, error codes, the
//! `_meta` keys of the modern era, and the messages every client of this crate sends. Probe,
//! check, drive and serve take these from here, so they cannot disagree on a name or a number.

mod messages;
pub mod wire;

pub use messages::ServerInfo;
pub(crate) use messages::{initialize_params, modern_meta, modern_meta_as, server_info};

/// Legacy protocol versions this tool knows (the `initialize` handshake).
pub const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Modern protocol versions this tool knows (stateless, `server/discover`).
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];
/// The version a legacy handshake asks for unless told otherwise.
pub const DEFAULT_LEGACY: &str = "2025-11-25";
/// The version a modern request carries unless told otherwise.
pub const DEFAULT_MODERN: &str = "2026-07-28";

/// The name and version this crate gives as a client.
pub const CLIENT_NAME: &str = "mcp-witness";
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// JSON-RPC and MCP error codes this crate sends or recognises.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// `UnsupportedProtocolVersionError` (2026-07-28): `data.supported` lists the versions
    /// the server speaks.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
}

/// `_meta` keys of the modern era (2026-07-28).
pub mod meta {
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
}

/// The handshake a session used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize`, then `notifications/initialized`; the session has state.
    Legacy,
    /// `server/discover`, and `_meta` on every request (2026-07-28, stateless).
    Modern,
}

impl Era {
    /// The word used in evidence, reports and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }

    /// The version asked for when none is named.
    pub fn default_version(self) -> &'static str {
        match self {
            Era::Legacy => DEFAULT_LEGACY,
            Era::Modern => DEFAULT_MODERN,
        }
    }

    /// The versions of this era the crate speaks.
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            Era::Legacy => LEGACY_VERSIONS,
            Era::Modern => MODERN_VERSIONS,
        }
    }

    /// The era a known version belongs to.
    pub fn of_version(version: &str) -> Option<Era> {
        if LEGACY_VERSIONS.contains(&version) {
            Some(Era::Legacy)
        } else if MODERN_VERSIONS.contains(&version) {
            Some(Era::Modern)
        } else {
            None
        }
    }
}

/// Which handshake to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraChoice {
    Legacy,
    Modern,
    /// Try `server/discover`; fall back to legacy on a fresh connection.
    Auto,
}

impl EraChoice {
    /// The word used in evidence and flags.
    pub fn as_str(self) -> &'static str {
        match self {
            EraChoice::Legacy => "legacy",
            EraChoice::Modern => "modern",
            EraChoice::Auto => "auto",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_version_belongs_to_exactly_one_era() {
        for v in LEGACY_VERSIONS {
            assert_eq!(Era::of_version(v), Some(Era::Legacy));
        }
        for v in MODERN_VERSIONS {
            assert_eq!(Era::of_version(v), Some(Era::Modern));
        }
        assert_eq!(Era::of_version("1999-01-01"), None);
        assert!(Era::Legacy.versions().contains(&Era::Legacy.default_version()));
        assert!(Era::Modern.versions().contains(&Era::Modern.default_version()));
    }
}
