//! The two handshakes: legacy (`initialize`, then `notifications/initialized`) and modern
//! (`server/discover` with per-request `_meta`), and `auto`, which tries modern first.

use serde_json::{Value, json};

use super::{Run, Step, Stop};
use crate::evidence::canonical;
use crate::mcp::code::UNSUPPORTED_VERSION;
use crate::mcp::{
    CLIENT_NAME, DEFAULT_MODERN, Era, LEGACY_VERSIONS, MODERN_VERSIONS, modern_meta, server_info,
};
use crate::rpc::{NoReply, Reply};
use crate::text::truncate;

impl Run<'_> {
    pub(super) fn legacy(&mut self) -> Step<()> {
        self.spawn()?;
        self.obs.era = Era::Legacy;
        let version = self.obs.protocol_requested.clone();
        let params = crate::mcp::initialize_params(&version, CLIENT_NAME);
        let timeout = self.opts.server.timeout;
        let sent = std::time::Instant::now();
        let reply = self.rpc().request("initialize", Some(params), timeout);
        self.obs.timings.initialize = Some(sent.elapsed().as_millis() as u64);
        let result = self.result_of("initialize", ("initialize_error", "initialize_malformed"), reply)?;
        self.check_initialize(&result)?;
        self.rpc().notify("notifications/initialized", None);
        self.list_tools(None)
    }

    fn check_initialize(&mut self, result: &Value) -> Step<()> {
        let Some(map) = result.as_object() else {
            return Err(self.fail("initialize_malformed", "the initialize result is not an object"));
        };
        self.obs.capabilities = map.get("capabilities").map(canonical::foreign_bounded);
        let server = server_info(map.get("serverInfo"));
        self.obs.server = server.clone();
        let mut ok = true;
        match map.get("protocolVersion").and_then(Value::as_str) {
            None => {
                self.fail(
                    "missing_protocol_version",
                    "the initialize result has no string protocolVersion",
                );
                ok = false;
            }
            Some(v) => {
                self.obs.protocol_version = Some(v.chars().take(64).collect());
                if !LEGACY_VERSIONS.contains(&v) {
                    self.fail(
                        "unknown_protocol_version",
                        format!(
                            "the server answered protocolVersion `{}`, which this tool does not know",
                            truncate(v, 64)
                        ),
                    );
                    ok = false;
                }
            }
        }
        if server.is_none() {
            self.fail(
                "missing_server_info",
                "the initialize result has no serverInfo with a string name",
            );
            ok = false;
        }
        if ok { Ok(()) } else { Err(Stop) }
    }

    pub(super) fn modern(&mut self) -> Step<()> {
        self.spawn()?;
        self.obs.era = Era::Modern;
        match self.discover()? {
            Discovered::Modern => self.list_tools(Some(self.obs.protocol_requested.clone())),
            Discovered::NotModern(why) => Err(self.fail("discover_failed", format!("server/discover {why}"))),
        }
    }

    pub(super) fn auto(&mut self) -> Step<()> {
        if self.opts.server.protocol_version.is_none() {
            self.obs.protocol_requested = DEFAULT_MODERN.to_string();
        }
        self.spawn()?;
        match self.discover()? {
            Discovered::Modern => {
                self.obs.era = Era::Modern;
                self.obs.era_detection = Some("server/discover answered".into());
                self.list_tools(Some(self.obs.protocol_requested.clone()))
            }
            Discovered::NotModern(why) => {
                // Fall back to legacy on a fresh process, as the spec asks.
                let ended = match self.stop_server() {
                    Some(td) => {
                        self.earlier_survivors.extend(td.survivors.iter().copied());
                        self.earlier_escapees.extend(td.escapees.iter().cloned());
                        format!(
                            " (that process ended by {} after {} ms)",
                            td.ended_by, td.after_ms
                        )
                    }
                    None => String::new(),
                };
                self.obs.era_detection = Some(format!(
                    "server/discover {why}; fell back to legacy on a fresh process{ended}"
                ));
                self.obs.timings.discover = self.obs.timings.discover.or(Some(0));
                self.obs.protocol_requested = self
                    .opts
                    .server
                    .protocol_version
                    .clone()
                    .filter(|v| LEGACY_VERSIONS.contains(&v.as_str()))
                    .unwrap_or_else(|| crate::mcp::DEFAULT_LEGACY.to_string());
                self.obs.capabilities = None;
                self.obs.server = None;
                self.legacy()
            }
        }
    }

    /// Sends `server/discover`; on -32022 with a version we share, retries once with it.
    fn discover(&mut self) -> Step<Discovered> {
        let timeout = self.opts.server.timeout;
        let sent = std::time::Instant::now();
        let mut retried = false;
        loop {
            let version = self.obs.protocol_requested.clone();
            let params = json!({"_meta": modern_meta(&version)});
            let reply = self.rpc().request("server/discover", Some(params), timeout);
            self.obs.timings.discover = Some(sent.elapsed().as_millis() as u64);
            match reply {
                Ok(Reply::Result(result)) => return self.check_discover(&result),
                Ok(Reply::Error {
                    code: UNSUPPORTED_VERSION,
                    data,
                    ..
                }) => {
                    // Only a modern server answers -32022: the era is known even when no
                    // version is shared.
                    self.obs.era = Era::Modern;
                    if self.opts.server.era == crate::mcp::EraChoice::Auto {
                        self.obs.era_detection =
                            Some("server/discover answered -32022 (unsupported protocol version)".into());
                    }
                    let supported: Vec<String> = data
                        .as_ref()
                        .and_then(|d| d.get("supported"))
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default();
                    match supported.iter().find(|v| MODERN_VERSIONS.contains(&v.as_str())) {
                        Some(v) if !retried && *v != version => {
                            self.obs.protocol_requested = v.clone();
                            retried = true;
                        }
                        _ => {
                            return Err(self.fail(
                                "no_common_version",
                                format!(
                                    "the server supports {:?}; this tool speaks {:?} in the modern era",
                                    bounded_list(&supported),
                                    MODERN_VERSIONS
                                ),
                            ));
                        }
                    }
                }
                Ok(Reply::Error { code, message, .. }) => {
                    return Ok(Discovered::NotModern(format!(
                        "got error {code}: {}",
                        truncate(&message, 200)
                    )));
                }
                Ok(Reply::Malformed(_)) => return Ok(Discovered::NotModern("got a malformed reply".into())),
                Err(NoReply::Timeout { waited_ms })
                    if self.opts.server.era == crate::mcp::EraChoice::Auto =>
                {
                    return Ok(Discovered::NotModern(format!(
                        "got no reply within {waited_ms} ms"
                    )));
                }
                Err(NoReply::Exited) if self.opts.server.era == crate::mcp::EraChoice::Auto => {
                    return Ok(Discovered::NotModern("made the server exit".into()));
                }
                Err(e) => return Err(self.no_reply("server/discover", e)),
            }
        }
    }

    fn check_discover(&mut self, result: &Value) -> Step<Discovered> {
        let Some(map) = result.as_object() else {
            return Ok(Discovered::NotModern(
                "returned a result that is not an object".into(),
            ));
        };
        let versions: Option<Vec<&str>> = map
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect());
        let Some(versions) = versions else {
            return Ok(Discovered::NotModern(
                "returned a result without supportedVersions".into(),
            ));
        };
        self.obs.capabilities = map.get("capabilities").map(canonical::foreign_bounded);
        self.obs.server = server_info(
            map.get("_meta")
                .and_then(|m| m.get(crate::mcp::meta::SERVER_INFO)),
        );
        let requested = self.obs.protocol_requested.clone();
        if versions.contains(&requested.as_str()) {
            self.obs.protocol_version = Some(requested);
        } else if let Some(v) = versions.iter().find(|v| MODERN_VERSIONS.contains(v)) {
            self.obs.protocol_version = Some(v.to_string());
            self.obs.protocol_requested = v.to_string();
        } else {
            self.obs.era = Era::Modern;
            return Err(self.fail(
                "no_common_version",
                format!(
                    "server/discover lists {:?}; this tool speaks {MODERN_VERSIONS:?}",
                    bounded_list(&versions)
                ),
            ));
        }
        if !map.get("capabilities").is_some_and(Value::is_object) {
            return Err(self.fail(
                "discover_malformed",
                "the server/discover result has no capabilities object",
            ));
        }
        if let Some(rt) = map.get("resultType").and_then(Value::as_str)
            && rt != "complete"
        {
            return Err(self.fail(
                "discover_malformed",
                format!("server/discover returned resultType `{rt}`"),
            ));
        }
        Ok(Discovered::Modern)
    }
}

pub(super) enum Discovered {
    Modern,
    /// Why the server is not modern, for the record.
    NotModern(String),
}

/// At most 8 entries of 64 characters: a server's list, as quoted in a reason.
fn bounded_list<S: AsRef<str>>(items: &[S]) -> Vec<String> {
    items.iter().take(8).map(|s| truncate(s.as_ref(), 64)).collect()
}
