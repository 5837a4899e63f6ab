//! The state the checks share: the server session, the handshake's result, the lists walked
//! once up front, and the fresh-process version-negotiation runs.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::CheckOptions;
use super::model::{CheckReport, CheckResult};
use crate::clock;
use crate::probe::handshake::{CLIENT_NAME, CLIENT_VERSION, modern_meta, truncate};
use crate::probe::outcome::{ServerInfo, TargetSeen};
use crate::probe::{DEFAULT_LEGACY, DEFAULT_MODERN, EraChoice, MAX_PAGES, MODERN_VERSIONS};
use crate::redact::Redactor;
use crate::rpc::{NoReply, Reply, Rpc};
use crate::transport::{Server, SpawnSpec, StderrLog, Teardown};

/// A list method walked across its pages.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// The capability was declared.
    pub declared: bool,
    /// The list was requested.
    pub fetched: bool,
    /// The items kept for the checks: at most `ITEMS_KEEP` of them and `ITEMS_KEEP_COST`
    /// of estimated structure, in reply order.
    pub items: Vec<Value>,
    /// Items seen across every page (kept or not).
    pub items_seen: u64,
    /// Items or names were left out to stay within the bounds.
    pub cut: bool,
    /// Estimated structure of `items`.
    kept_cost: usize,
    pub pages: u64,
    /// Names (or URIs) per page, in order: at most `NAMES_KEEP` in all.
    pub page_names: Vec<Vec<String>>,
    pub repeated_cursor: Option<String>,
    pub empty_cursor: bool,
    /// An error reply, a wrong shape, or no reply: what stopped the walk.
    pub problem: Option<String>,
}

/// Items of one list kept for the checks, however many the server lists.
const ITEMS_KEEP: usize = 10_000;
/// Estimated structure of the items kept (see `json_budget::cost`).
const ITEMS_KEEP_COST: usize = 16 << 20;
/// Names kept across the pages of one list (for the duplicate check).
const NAMES_KEEP: usize = 20_000;

/// What became of a raw line sent by `probe_line`.
#[derive(Debug, Clone, PartialEq)]
pub enum Probed {
    Reply(Reply),
    /// No reply to it, though the server answered the request sent after it.
    Ignored,
    NoReply(NoReply),
}

/// A fresh process that was sent one `initialize`.
#[derive(Debug, Clone)]
pub struct SideRun {
    pub requested: String,
    /// The reply's protocolVersion, when it replied with a result.
    pub answered: Option<String>,
    /// The error reply, when it replied with one.
    pub error: Option<(i64, String)>,
    /// No reply within the timeout while alive.
    pub silent: bool,
    /// The process exited before or right after replying.
    pub exited: Option<String>,
    /// The reply could not be read within the side run's bounds (`SIDE_RUN_MAX_LINE`, a
    /// small parse budget): why.
    pub unreadable: Option<String>,
}

/// The longest line a version-negotiation process may send: it runs beside the main session,
/// and only its reply's protocolVersion is read, so it never holds a big line at the same time.
const SIDE_RUN_MAX_LINE: usize = 1 << 20;

/// Shared state for the checks.
pub struct Ctx<'o> {
    pub opts: &'o CheckOptions,
    pub rpc: Option<Rpc>,
    pub era: &'static str,
    pub protocol_version: Option<String>,
    /// The initialize (legacy) or server/discover (modern) result.
    pub init: Option<Map<String, Value>>,
    pub server: Option<ServerInfo>,
    pub tools: Listing,
    pub resources: Listing,
    pub prompts: Listing,
    pub could_not_run: Option<String>,
    pub redactor: Redactor,
    pub teardown: Option<Teardown>,
    pub stderr: Option<Arc<Mutex<StderrLog>>>,
    /// The opt-in tool calls, made once for the result checks.
    pub opt_in: Option<Vec<super::checks::OptInCall>>,
    /// Side runs under way: their result arrives on the channel before their teardown ends.
    side: Vec<(String, std::sync::mpsc::Receiver<SideRun>, JoinHandle<()>)>,
    side_done: Vec<SideRun>,
    spec: Option<SpawnSpec>,
    target: TargetSeen,
    stamp: clock::Stamp,
    host: String,
    digest: Option<JoinHandle<std::io::Result<String>>>,
}

impl<'o> Ctx<'o> {
    /// Resolves the program, starts the version-negotiation side runs (legacy) and the main
    /// session, runs the handshake and walks the declared lists.
    pub fn start(opts: &'o CheckOptions) -> Ctx<'o> {
        let stamp = clock::now();
        let host = crate::evidence::block::host_name();
        let (prepared, launched) = opts.server.prepare();
        let mut ctx = Ctx {
            opts,
            rpc: None,
            era: "legacy",
            protocol_version: None,
            init: None,
            server: None,
            tools: Listing::default(),
            resources: Listing::default(),
            prompts: Listing::default(),
            could_not_run: None,
            redactor: prepared.redactor,
            teardown: None,
            stderr: None,
            opt_in: None,
            side: Vec::new(),
            side_done: Vec::new(),
            spec: None,
            target: prepared.target,
            stamp,
            host,
            digest: None,
        };
        match launched {
            Ok(launch) => {
                ctx.spec = Some(launch.spec);
                ctx.digest = Some(launch.digest);
            }
            Err(e) => {
                ctx.could_not_run = Some(e);
                return ctx;
            }
        }
        ctx.handshake();
        if ctx.could_not_run.is_none() {
            ctx.walk_lists();
        }
        ctx
    }

    fn spawn(&mut self) -> bool {
        let spec = self.spec.as_ref().expect("resolved");
        match Server::spawn(spec) {
            Ok(server) => {
                self.stderr = Some(Arc::clone(&server.stderr));
                let mut rpc = Rpc::new(server);
                rpc.redactor = self.redactor.clone();
                self.rpc = Some(rpc);
                true
            }
            Err(e) => {
                self.could_not_run = Some(format!("cannot start {}: {e}", spec.program.display()));
                false
            }
        }
    }

    fn handshake(&mut self) {
        let modern_first = matches!(self.opts.server.era, EraChoice::Modern | EraChoice::Auto);
        if !modern_first {
            self.start_side_runs();
        }
        if !self.spawn() {
            return;
        }
        if modern_first {
            let version = self
                .opts
                .server
                .protocol_version
                .clone()
                .unwrap_or_else(|| DEFAULT_MODERN.into());
            let params = json!({"_meta": modern_meta(&version)});
            let timeout = self.opts.server.timeout;
            let reply = self
                .rpc
                .as_mut()
                .expect("spawned")
                .request("server/discover", Some(params), timeout);
            match reply {
                Ok(Reply::Result(Value::Object(map)))
                    if map.get("supportedVersions").is_some_and(Value::is_array) =>
                {
                    self.era = "modern";
                    self.protocol_version = Some(version);
                    self.server = server_info(
                        map.get("_meta")
                            .and_then(|m| m.get("io.modelcontextprotocol/serverInfo")),
                    );
                    self.init = Some(map);
                    return;
                }
                other if self.opts.server.era == EraChoice::Modern => {
                    self.could_not_run = Some(format!("server/discover {}", describe(&other)));
                    return;
                }
                _ => {
                    // auto: fall back to legacy on a fresh process.
                    self.stop_main();
                    self.start_side_runs();
                    if !self.spawn() {
                        return;
                    }
                }
            }
        }
        let version = self
            .opts
            .server
            .protocol_version
            .clone()
            .filter(|v| !MODERN_VERSIONS.contains(&v.as_str()))
            .unwrap_or_else(|| DEFAULT_LEGACY.into());
        let params = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
        });
        let timeout = self.opts.server.timeout;
        let rpc = self.rpc.as_mut().expect("spawned");
        match rpc.request("initialize", Some(params), timeout) {
            Ok(Reply::Result(Value::Object(map))) => {
                self.protocol_version = map
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(|v| truncate(v, 64));
                self.server = server_info(map.get("serverInfo"));
                self.init = Some(map);
                rpc.notify("notifications/initialized", None);
            }
            other => self.could_not_run = Some(format!("initialize {}", describe(&other))),
        }
    }

    /// Starts the fresh-process initialize runs of the version-negotiation checks.
    fn start_side_runs(&mut self) {
        let Some(spec) = self.spec.clone() else { return };
        for version in ["1999-01-01", "2024-11-05"] {
            let wanted = self.opts.selected(&format!(
                "protocol.version_negotiation.{}",
                if version == "1999-01-01" {
                    "unknown"
                } else {
                    "older"
                }
            ));
            if !wanted {
                continue;
            }
            let spec = spec.clone();
            let timeout = self.opts.server.timeout;
            let grace = self.opts.server.grace;
            let (tx, rx) = std::sync::mpsc::channel();
            let handle = std::thread::spawn(move || side_run(&spec, version, timeout, grace, tx));
            self.side.push((version.to_string(), rx, handle));
        }
    }

    /// The side run for `version`, waiting for it if needed.
    pub fn side_run(&mut self, version: &str) -> Option<SideRun> {
        if let Some((_, rx, _)) = self.side.iter().find(|(v, _, _)| v == version)
            && let Ok(run) = rx.recv()
        {
            self.side_done.push(run);
        }
        self.side_done.iter().find(|r| r.requested == version).cloned()
    }

    /// Walks every declared list once; the checks read the results.
    fn walk_lists(&mut self) {
        let caps = self
            .init
            .as_ref()
            .and_then(|i| i.get("capabilities"))
            .cloned()
            .unwrap_or(Value::Null);
        for (cap, method, key) in [
            ("tools", "tools/list", "tools"),
            ("resources", "resources/list", "resources"),
            ("prompts", "prompts/list", "prompts"),
        ] {
            let declared = caps.get(cap).is_some();
            let wanted = match cap {
                // Hygiene grades the session too, but needs no list.
                "tools" => [
                    "protocol.capabilities.tools",
                    "pagination.tools",
                    "schema",
                    "robustness",
                ]
                .iter()
                .any(|id| self.opts.any_selected(id)),
                other => {
                    self.opts.any_selected(&format!("protocol.capabilities.{other}"))
                        || self.opts.any_selected(&format!("pagination.{other}"))
                }
            };
            let mut listing = if declared && wanted {
                self.walk(method, key)
            } else {
                Listing::default()
            };
            listing.declared = declared;
            match cap {
                "tools" => self.tools = listing,
                "resources" => self.resources = listing,
                _ => self.prompts = listing,
            }
        }
    }

    fn walk(&mut self, method: &str, key: &str) -> Listing {
        let mut l = Listing {
            fetched: true,
            ..Default::default()
        };
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let reply = self.request(method, params);
            let mut page = match reply {
                Ok(Reply::Result(r)) => r,
                other => {
                    l.problem = Some(format!("{method} {}", describe(&other)));
                    return l;
                }
            };
            l.pages += 1;
            let Some(Value::Array(items)) = page.get_mut(key).map(Value::take) else {
                l.problem = Some(format!("the {method} result has no `{key}` array"));
                return l;
            };
            keep_page(&mut l, items, if key == "resources" { "uri" } else { "name" });
            match page.get("nextCursor") {
                None | Some(Value::Null) => return l,
                Some(Value::String(next)) => {
                    if next.is_empty() {
                        l.empty_cursor = true;
                    }
                    if !seen.insert(<sha2::Sha256 as sha2::Digest>::digest(next.as_bytes())) {
                        l.repeated_cursor = Some(truncate(next, 64));
                        return l;
                    }
                    if l.pages >= MAX_PAGES {
                        l.problem = Some(format!("{method} still had a nextCursor after {MAX_PAGES} pages"));
                        return l;
                    }
                    cursor = Some(next.clone());
                }
                Some(_) => {
                    l.problem = Some(format!("{method}: nextCursor is neither a string nor absent"));
                    return l;
                }
            }
        }
    }

    /// Sends a request on the main session (with `_meta` in the modern era).
    pub fn request(&mut self, method: &str, params: Option<Value>) -> Result<Reply, NoReply> {
        self.request_with(method, params, true)
    }

    /// Sends a request; `meta` false leaves `_meta` out even in the modern era.
    pub fn request_with(
        &mut self,
        method: &str,
        params: Option<Value>,
        meta: bool,
    ) -> Result<Reply, NoReply> {
        let mut params = params;
        if meta && self.era == "modern" {
            let version = self.protocol_version.clone().unwrap_or_default();
            let mut p = params.take().unwrap_or_else(|| json!({}));
            if let Some(obj) = p.as_object_mut() {
                obj.insert("_meta".into(), modern_meta(&version));
            }
            params = Some(p);
        }
        let timeout = self.opts.server.timeout;
        match self.rpc.as_mut() {
            Some(rpc) => rpc.request(method, params, timeout),
            None => Err(NoReply::Exited),
        }
    }

    /// Writes a raw line, then a harmless request behind it, and waits for a reply `accept`
    /// takes. A server answers in order, so when the later request's reply comes first (plus
    /// a short grace), the raw line got no reply: this costs a round trip, not a timeout.
    pub fn probe_line(&mut self, line: &[u8], accept: &dyn Fn(Option<&Value>) -> bool) -> Probed {
        let timeout = self.opts.server.timeout;
        let sentinel = if self.era == "modern" {
            let version = self.protocol_version.clone().unwrap_or_default();
            ("tools/list", Some(json!({"_meta": modern_meta(&version)})))
        } else {
            ("ping", None)
        };
        let Some(rpc) = self.rpc.as_mut() else {
            return Probed::NoReply(NoReply::Exited);
        };
        if !rpc.send_raw(line) {
            return Probed::NoReply(NoReply::StdinClosed);
        }
        let Some(sid) = rpc.request_nowait(sentinel.0, sentinel.1) else {
            return Probed::NoReply(NoReply::StdinClosed);
        };
        let hit = std::cell::Cell::new(false);
        let first = rpc.wait_reply(
            &|id| {
                if id == Some(&sid) {
                    hit.set(true);
                    true
                } else {
                    accept(id)
                }
            },
            timeout,
        );
        match first {
            Ok(reply) if !hit.get() => {
                // Drain the sentinel's reply so it is not counted as unmatched later.
                let _ = rpc.wait_for(&sid, timeout);
                Probed::Reply(reply)
            }
            Ok(_) => match rpc.wait_reply(accept, Duration::from_millis(150)) {
                Ok(reply) => Probed::Reply(reply),
                Err(_) => Probed::Ignored,
            },
            Err(e) => Probed::NoReply(e),
        }
    }

    /// Writes a raw line and waits for a reply `accept` takes.
    pub fn send_raw_and_wait(
        &mut self,
        line: &[u8],
        accept: &dyn Fn(Option<&Value>) -> bool,
    ) -> Result<Reply, NoReply> {
        let timeout = self.opts.server.timeout;
        let Some(rpc) = self.rpc.as_mut() else {
            return Err(NoReply::Exited);
        };
        if !rpc.send_raw(line) {
            return Err(NoReply::StdinClosed);
        }
        rpc.wait_reply(accept, timeout)
    }

    /// Whether the main server process is still running.
    pub fn alive(&mut self) -> bool {
        let Some(rpc) = self.rpc.as_mut() else {
            return false;
        };
        // Take in whatever events are already there (an exit, say) without waiting.
        let _ = rpc.wait_reply(&|_| false, Duration::from_millis(0));
        rpc.server.exit_status().is_none()
    }

    /// Stops the main process and keeps its teardown.
    pub fn stop_main(&mut self) -> Option<&Teardown> {
        let rpc = self.rpc.take()?;
        self.teardown = Some(rpc.server.teardown(self.opts.server.grace));
        self.teardown.as_ref()
    }

    pub fn stderr_text(&self) -> String {
        self.stderr
            .as_ref()
            .and_then(|s| {
                s.lock().ok().map(|l| {
                    let mut t = String::from_utf8_lossy(&l.head).into_owned();
                    if l.bytes as usize > l.head.len() {
                        t.push('\n');
                        t.push_str(&String::from_utf8_lossy(&l.tail));
                    }
                    t
                })
            })
            .unwrap_or_default()
    }

    pub(super) fn finish(mut self, results: Vec<CheckResult>, duration_ms: u64) -> CheckReport {
        self.stop_main();
        for (_, _, h) in self.side.drain(..) {
            let _ = h.join();
        }
        if let Some(h) = self.digest.take()
            && let Ok(Ok(hex)) = h.join()
        {
            self.target.program_sha256 = Some(hex);
        }
        CheckReport {
            stamp: self.stamp,
            host: self.host,
            target: self.target,
            era: self.era,
            protocol_version: self.protocol_version,
            server: self.server,
            results,
            could_not_run: self.could_not_run,
            duration_ms,
            strict: self.opts.strict,
        }
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    /// The tools as listed (each a JSON object as replied).
    pub fn tool_list(&self) -> &[Value] {
        &self.tools.items
    }

    pub fn started(&self) -> Instant {
        Instant::now()
    }
}

fn side_run(
    spec: &SpawnSpec,
    version: &str,
    timeout: Duration,
    grace: crate::transport::Grace,
    done: std::sync::mpsc::Sender<SideRun>,
) {
    let mut run = SideRun {
        requested: version.into(),
        answered: None,
        error: None,
        silent: false,
        exited: None,
        unreadable: None,
    };
    let mut spec = spec.clone();
    spec.max_line = spec.max_line.min(SIDE_RUN_MAX_LINE);
    let server = match Server::spawn(&spec) {
        Ok(s) => s,
        Err(e) => {
            run.exited = Some(format!("could not start: {e}"));
            let _ = done.send(run);
            return;
        }
    };
    let mut rpc = Rpc::new(server);
    // Only protocolVersion and an error are read: a reply needs no more than this, text too.
    rpc.parse_budget = crate::json_budget::Budget::small(1 << 20);
    let params = json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
    });
    match rpc.request("initialize", Some(params), timeout) {
        Ok(Reply::Result(r)) => {
            run.answered = Some(
                r.get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(|v| truncate(v, 64))
                    .unwrap_or_default(),
            )
        }
        Ok(Reply::Error { code, message, .. }) => run.error = Some((code, truncate(&message, 200))),
        Ok(Reply::Malformed(_)) => run.error = Some((0, "a reply with neither result nor error".into())),
        Err(NoReply::Timeout { .. }) => run.silent = true,
        Err(NoReply::Oversize { bytes }) => {
            run.unreadable = Some(format!(
                "its reply passed {SIDE_RUN_MAX_LINE} bytes ({bytes} seen)"
            ))
        }
        Err(NoReply::TooComplex { bytes }) => {
            run.unreadable = Some(format!("its reply ({bytes} bytes) held more than it needs to"))
        }
        Err(_) => {}
    }
    // Did it stay up? Give an exit a moment to show.
    let _ = rpc.wait_reply(&|_| false, Duration::from_millis(100));
    if let Some(status) = rpc.server.exit_status() {
        run.exited = Some(match crate::transport::ExitInfo::from(status) {
            crate::transport::ExitInfo::Code(c) => format!("exited with code {c}"),
            crate::transport::ExitInfo::Signal(s) => format!("was killed by signal {s}"),
        });
    }
    // The result goes out first: a slow teardown does not hold the checks up.
    let _ = done.send(run);
    let _ = rpc.server.teardown(grace);
}

fn server_info(value: Option<&Value>) -> Option<ServerInfo> {
    let map = value?.as_object()?;
    Some(ServerInfo {
        name: truncate(map.get("name")?.as_str()?, 1024),
        version: map
            .get("version")
            .and_then(Value::as_str)
            .map(|v| truncate(v, 1024)),
    })
}

/// Keeps what the bounds allow of one page: names for the duplicate check, items (moved,
/// not copied) for the other checks.
fn keep_page(l: &mut Listing, items: Vec<Value>, name_key: &str) {
    let room = NAMES_KEEP.saturating_sub(l.page_names.iter().map(Vec::len).sum());
    let mut names = Vec::new();
    for n in items
        .iter()
        .filter_map(|t| t.get(name_key).and_then(Value::as_str))
    {
        if names.len() >= room {
            l.cut = true;
            break;
        }
        names.push(truncate(n, 256));
    }
    l.page_names.push(names);
    for item in items {
        l.items_seen += 1;
        let cost = crate::json_budget::cost(&item);
        if l.items.len() >= ITEMS_KEEP || l.kept_cost + cost > ITEMS_KEEP_COST {
            l.cut = true;
            continue;
        }
        l.kept_cost += cost;
        l.items.push(item);
    }
}

/// A reply in words, for reasons and messages.
pub fn describe(reply: &Result<Reply, NoReply>) -> String {
    match reply {
        Ok(Reply::Result(_)) => "returned a result".into(),
        Ok(Reply::Error { code, message, .. }) => {
            format!("returned error {code}: {}", truncate(message, 200))
        }
        Ok(Reply::Malformed(_)) => "returned a reply with neither result nor error".into(),
        Err(NoReply::Timeout { waited_ms }) => format!("got no reply within {waited_ms} ms"),
        Err(NoReply::Exited) => "got no reply: the server exited".into(),
        Err(NoReply::StdoutClosed) => "got no reply: the server closed its stdout".into(),
        Err(NoReply::Oversize { bytes }) => format!("got a line longer than the bound ({bytes} bytes)"),
        Err(NoReply::StdinClosed) => "could not be sent: the server's stdin is closed".into(),
        Err(NoReply::TooComplex { bytes }) => {
            format!("got a reply too complex to hold ({bytes} bytes, past the parse budget)")
        }
        Err(NoReply::DuplicateIdKey { keys }) => {
            format!("got a reply with the `id` key {keys} times (ambiguous)")
        }
        Err(NoReply::ErrorWithNullId { code, message }) => format!(
            "got an error with id null ({}: {})",
            code.map_or_else(|| "no code".to_string(), |c| c.to_string()),
            truncate(message, 200)
        ),
    }
}
