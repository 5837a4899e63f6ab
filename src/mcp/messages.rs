//! The messages a client of this crate builds, and the one reading of `serverInfo`.

use serde_json::{Value, json};

use super::{CLIENT_NAME, CLIENT_VERSION, meta};
use crate::text::truncate;

/// The `_meta` every modern request carries, naming this crate as the client.
pub(crate) fn modern_meta(version: &str) -> Value {
    modern_meta_as(version, CLIENT_NAME)
}

/// The `_meta` of a modern request from the client called `client`.
pub(crate) fn modern_meta_as(version: &str, client: &str) -> Value {
    json!({
        meta::PROTOCOL_VERSION: version,
        meta::CLIENT_CAPABILITIES: {},
        meta::CLIENT_INFO: {"name": client, "version": CLIENT_VERSION},
    })
}

/// `initialize` params. No client capabilities: declaring `roots` makes reference servers
/// ask `roots/list` and then never exit on stdin close.
pub(crate) fn initialize_params(version: &str, client: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": client, "version": CLIENT_VERSION},
    })
}

/// The server's identity as it replied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    pub name: String,
    pub version: Option<String>,
}

/// `serverInfo` as replied: a string `name` is required; `version` is kept when a string.
/// Each is cut to 1024 bytes.
pub(crate) fn server_info(value: Option<&Value>) -> Option<ServerInfo> {
    let map = value?.as_object()?;
    let name = map.get("name")?.as_str()?;
    Some(ServerInfo {
        name: truncate(name, 1024),
        version: map
            .get("version")
            .and_then(Value::as_str)
            .map(|v| truncate(v, 1024)),
    })
}
