//! `drive`: the control client. Spawns `mcp-witness serve` with a fresh log per domain and
//! runs the cycle a correct client runs: list, use alpha, mutate, wait for the notification,
//! re-list, use beta, try alpha (must fail), status. Then analyses the log. With
//! `--through CMD` a bridge stands between drive and serve (`kit::through`), and what crossed
//! it is judged too (`kit::bridge`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::analyze::{self, Analysis};
use super::bridge::{self, Judgement};
use super::flow::{Flow, FlowVerdict};
use super::through::{self, Cmd, Transcript};
use super::{Domain, NEGATIVE_CONTROL, STATUS_TOOL};
use crate::mcp::EraChoice;
use crate::rpc::{Reply, Rpc};
use crate::session::{Connector, Envelope, Handshake, HandshakeError, Plan};
use crate::wire::stdio::{Grace, Server, SpawnSpec};

/// The name the control client gives in `clientInfo`.
pub const DRIVER_NAME: &str = "mcp-witness-drive";
pub(super) const TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the list_changed notification after the mutate reply.
pub(super) const NOTIFY_WAIT: Duration = Duration::from_secs(2);
/// Through a bridge: how long drive keeps reading after its last step, so a late message is
/// seen (and judged delayed) rather than taken for dropped.
const LATE_WAIT: Duration = Duration::from_millis(500);

/// One step of the cycle and whether its answer was the expected one.
#[derive(Debug, Clone)]
pub struct Step {
    pub what: String,
    pub ok: bool,
    pub detail: String,
}

/// The result for one domain.
#[derive(Debug)]
pub struct DomainRun {
    /// The domain's name (a list_changed domain or a flow).
    pub name: &'static str,
    pub era: Era,
    pub log: PathBuf,
    pub steps: Vec<Step>,
    /// One analysis per session of the log (drive's own log holds one).
    pub analysis: Option<Vec<Analysis>>,
    /// With `--through`: the bridge and, once compared, its judgement.
    pub bridge: Option<Bridged>,
}

/// The bridge of a `--through` run.
#[derive(Debug)]
pub struct Bridged {
    /// `--through` as given.
    pub cmd: String,
    /// The argv it was started with (placeholders filled), shell-quoted.
    pub started_as: Option<String>,
    pub judgement: Option<Judgement>,
    /// Sessions in serve's log that held only a handshake (a bridge probing serve before it
    /// connects for real, as mcp-remote does): left out of the analysis.
    pub probes: usize,
    /// Why this run is no fair test of the bridge, when it is not.
    pub caveat: Option<&'static str>,
    /// The end of the bridge's stderr, as a clause (empty when it wrote none).
    pub stderr: String,
}

/// What `serve --http` cannot carry, so a `{url}` bridge cannot be judged on it.
const HTTP_CAVEAT: &str = "serve --http sends what a call produces only with the call's reply (so no server request or progress in the middle of a call reaches a {url} bridge), and refuses subscriptions/listen at the HTTP level, unlogged: a drop, or an answer \"by the bridge itself\", here may be serve --http's, not the bridge's";

/// Whether the run needs what `serve --http` cannot carry: a server request in the middle of
/// a call (legacy roots, elicitation, sampling), progress, or a `subscriptions/listen`
/// stream (the modern list_changed cycle and subscriptions).
fn beyond_serve_http(name: &str, era: Era) -> bool {
    match era {
        Era::Legacy => ["roots", "elicitation", "sampling", "progress"].contains(&name),
        Era::Modern => ["tools", "resources", "prompts", "subscriptions", "progress"].contains(&name),
    }
}

impl DomainRun {
    pub fn passed(&self) -> bool {
        self.steps.iter().all(|s| s.ok)
            && self.analysis.as_ref().is_some_and(|a| {
                a.len() == 1
                    && analyze::all_react(a)
                    && a.iter()
                        .all(|s| s.flows.iter().all(|f| f.verdict == FlowVerdict::Handled))
            })
            && match &self.bridge {
                None => true,
                Some(b) => b
                    .judgement
                    .as_ref()
                    .is_some_and(|j| j.verdict() == bridge::Verdict::Forwards),
            }
    }

    fn new(name: &'static str, era: Era, log: PathBuf, through: Option<&Cmd>) -> DomainRun {
        DomainRun {
            name,
            era,
            log,
            steps: Vec::new(),
            analysis: None,
            bridge: through.map(|c| Bridged {
                cmd: c.text.clone(),
                started_as: None,
                judgement: None,
                probes: 0,
                caveat: (c.reach == through::Reach::Http && beyond_serve_http(name, era))
                    .then_some(HTTP_CAVEAT),
                stderr: String::new(),
            }),
        }
    }

    /// After the run: ends the connection (and the bridge's process tree), analyses serve's
    /// log and, through a bridge, judges what crossed it.
    fn finish(&mut self, mut rpc: Rpc, mut link: Link, domains: &[Domain], flows: &[Flow]) {
        if link.seen.is_some() {
            let _ = rpc.wait_reply(&|_| false, LATE_WAIT);
        }
        if let Some(b) = &mut self.bridge {
            b.stderr = through::stderr_tail(rpc.wire());
        }
        rpc.close(Grace::default());
        if let Some(b) = &mut self.bridge {
            b.started_as = link.started_as.take();
        }
        let seen = link.close();
        match analyze::read_log(&self.log) {
            Ok(l) => {
                let mut analysis = analyze::analyze(&l, domains, flows);
                if let Some(b) = &mut self.bridge {
                    let before = analysis.len();
                    let probe = |a: &Analysis| a.session.as_ref().is_some_and(|s| handshake_only(&l, s));
                    if analysis.iter().any(|a| !probe(a)) {
                        analysis.retain(|a| !probe(a));
                    }
                    b.probes = before - analysis.len();
                }
                self.analysis = Some(analysis);
                if let (Some(b), Some(seen)) = (&mut self.bridge, seen) {
                    let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                    b.judgement = Some(bridge::judge(&l, &seen));
                }
            }
            Err(e) => {
                let hint = match &self.bridge {
                    Some(_) if !self.log.exists() => {
                        " (serve never started: did the bridge run the {serve} command, or reach {url}?)"
                    }
                    _ => "",
                };
                self.steps.push(Step {
                    what: "read the log".into(),
                    ok: false,
                    detail: format!("{e}{hint}"),
                });
            }
        }
    }
}

fn fresh_log(name: &str, era: Era) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |t| t.as_nanos());
    std::env::temp_dir().join(format!(
        "mcp-witness-drive-{}-{}-{}-{nanos}.jsonl",
        name,
        era.as_str(),
        std::process::id()
    ))
}

fn names(result: &Value, d: Domain) -> Vec<String> {
    let (field, key) = d.list_fields();
    result
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|it| it.get(key).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn describe(r: &Result<Reply, crate::rpc::NoReply>) -> String {
    match r {
        Ok(Reply::Result(v)) => {
            let s = v.to_string();
            if s.len() > 160 {
                format!("{}…", crate::text::truncate(&s, 160))
            } else {
                s
            }
        }
        Ok(Reply::Error { code, message, .. }) => format!("error {code}: {message}"),
        Ok(Reply::Malformed(_)) => "malformed reply".into(),
        Err(e) => format!("no reply: {e:?}"),
    }
}

fn failed(r: &Result<Reply, crate::rpc::NoReply>) -> bool {
    match r {
        Ok(Reply::Error { .. }) => true,
        Ok(Reply::Result(v)) => v.get("isError").and_then(Value::as_bool) == Some(true),
        _ => false,
    }
}

pub(super) fn succeeded(r: &Result<Reply, crate::rpc::NoReply>) -> bool {
    matches!(r, Ok(Reply::Result(_))) && !failed(r)
}

pub use crate::mcp::Era;

/// The control client: JSON-RPC plus the era's request envelope.
struct Client {
    rpc: Rpc,
    envelope: Envelope,
    /// The id of the open `subscriptions/listen` request (modern era).
    listen: Option<Value>,
}

impl Client {
    /// Sends a request; in the modern era its params carry the `_meta` envelope.
    fn req(&mut self, method: &str, params: Value) -> Result<Reply, crate::rpc::NoReply> {
        let params = self.envelope.wrap(Some(params));
        self.rpc.request(method, params, TIMEOUT)
    }

    fn call_tool(&mut self, name: &str) -> Result<Reply, crate::rpc::NoReply> {
        self.req("tools/call", json!({"name": name, "arguments": {}}))
    }

    /// Waits (bounded) until a notification named `method` has been seen.
    fn wait_notification(&mut self, method: &str, wait: Duration) -> usize {
        let start = Instant::now();
        let count = |rpc: &Rpc| rpc.traffic.notifications.iter().filter(|n| *n == method).count();
        while count(&self.rpc) == 0 && start.elapsed() < wait {
            let slice = wait
                .saturating_sub(start.elapsed())
                .min(Duration::from_millis(10));
            let _ = self.rpc.wait_reply(&|_| false, slice);
        }
        count(&self.rpc)
    }
}

/// The params that use `item` of domain `d`.
fn use_params(d: Domain, item: &str, negative: bool) -> Value {
    let mut p = json!({});
    p[d.use_key()] = Value::from(item);
    if d == Domain::Tools {
        p["arguments"] = json!({});
    }
    if negative {
        p["_meta"] = json!({ NEGATIVE_CONTROL: true });
    }
    p
}

/// The handshake's steps: the session engine opened the session; the server must advertise
/// listChanged for the domain, and (modern era) acknowledge `subscriptions/listen`.
fn handshake(
    c: &mut Client,
    d: Domain,
    opened: &(Handshake, Result<(), HandshakeError>),
    step: &mut impl FnMut(&str, bool, String) -> bool,
) -> bool {
    let (hs, outcome) = opened;
    let advertises = outcome.is_ok()
        && hs
            .capabilities()
            .and_then(|c| c.get(d.name()))
            .and_then(|c| c.get("listChanged"))
            == Some(&Value::Bool(true));
    let detail = match outcome {
        Ok(()) => "returned a result".to_string(),
        Err(e) => e.sentence(),
    };
    match hs.era {
        Era::Legacy => step("initialize (server advertises listChanged)", advertises, detail),
        Era::Modern => {
            if !step(
                "server/discover (server advertises listChanged)",
                advertises,
                detail,
            ) {
                return false;
            }
            let field = crate::kit::serve::listen_field(d);
            let params = c.envelope.wrap(Some(json!({"notifications": { field: true }})));
            let sent = c.rpc.request_nowait("subscriptions/listen", params);
            let acks = c.wait_notification("notifications/subscriptions/acknowledged", NOTIFY_WAIT);
            if !step(
                &format!("subscriptions/listen {field} is acknowledged"),
                sent.is_some() && acks == 1,
                format!("{acks} acknowledgement(s)"),
            ) {
                return false;
            }
            c.listen = sent;
            true
        }
    }
}

fn cycle(
    c: &mut Client,
    d: Domain,
    opened: &(Handshake, Result<(), HandshakeError>),
    step: &mut impl FnMut(&str, bool, String) -> bool,
) {
    if !handshake(c, d, opened, step) {
        return;
    }
    let list = c.req(d.list_method(), json!({}));
    let before = match &list {
        Ok(Reply::Result(v)) => names(v, d),
        _ => Vec::new(),
    };
    let ok = before.iter().any(|n| n == d.alpha()) && !before.iter().any(|n| n == d.beta());
    if !step(
        &format!("{} lists alpha, not beta", d.list_method()),
        ok,
        format!("{before:?}"),
    ) {
        return;
    }
    let alpha = c.req(d.use_method(), use_params(d, d.alpha(), false));
    if !step(
        &format!("{} alpha succeeds", d.use_method()),
        succeeded(&alpha),
        describe(&alpha),
    ) {
        return;
    }
    c.rpc.traffic.notifications.clear();
    let mutate = c.call_tool(d.mutate_tool());
    if !step(
        &format!("{} succeeds", d.mutate_tool()),
        succeeded(&mutate),
        describe(&mutate),
    ) {
        return;
    }
    let start = Instant::now();
    let got = c.wait_notification(d.notification(), NOTIFY_WAIT);
    if !step(
        &format!("{} arrives once", d.notification()),
        got == 1,
        format!(
            "{got} in {} ms: {:?}",
            start.elapsed().as_millis(),
            c.rpc.traffic.notifications
        ),
    ) {
        return;
    }
    let relist = c.req(d.list_method(), json!({}));
    let after = match &relist {
        Ok(Reply::Result(v)) => names(v, d),
        _ => Vec::new(),
    };
    let ok = after.iter().any(|n| n == d.beta()) && !after.iter().any(|n| n == d.alpha());
    step("re-list has beta, not alpha", ok, format!("{after:?}"));
    let beta = c.req(d.use_method(), use_params(d, d.beta(), false));
    step(
        &format!("{} beta succeeds", d.use_method()),
        succeeded(&beta),
        describe(&beta),
    );
    let again = c.req(d.use_method(), use_params(d, d.alpha(), true));
    step(
        &format!("{} alpha fails (marked negative control)", d.use_method()),
        failed(&again),
        describe(&again),
    );
    let twice = c.call_tool(d.mutate_tool());
    step(
        "a second mutate is a tool error",
        failed(&twice),
        describe(&twice),
    );
    let status = c.call_tool(STATUS_TOOL);
    let ok = matches!(&status, Ok(Reply::Result(v))
        if v.pointer(&format!("/structuredContent/{}", d.name())) == Some(&Value::from("beta")));
    step(
        &format!("{STATUS_TOOL} says {} is beta", d.name()),
        ok,
        describe(&status),
    );
}

/// How to start this very binary as `mcp-witness serve --log LOG`.
fn serve_spec(log: &std::path::Path) -> Result<SpawnSpec, String> {
    let program = std::env::current_exe().map_err(|e| e.to_string())?;
    Ok(SpawnSpec {
        argv0: program.display().to_string(),
        program,
        args: vec!["serve".into(), "--log".into(), log.display().to_string()],
        env: Vec::new(),
        cwd: None,
        max_line: crate::wire::framing::DEFAULT_MAX_LINE,
        background: false,
    })
}

/// Runs the cycle for one domain against a fresh `serve`, in the given era, directly or
/// through a bridge.
pub fn drive_domain(d: Domain, era: Era, through: Option<&Cmd>) -> DomainRun {
    let log = fresh_log(d.name(), era);
    let mut run = DomainRun::new(d.name(), era, log.clone(), through);
    let mut step = |what: &str, ok: bool, detail: String| {
        run.steps.push(Step {
            what: what.to_string(),
            ok,
            detail,
        });
        ok
    };
    let spec = match serve_spec(&log) {
        Ok(spec) => spec,
        Err(e) => {
            step("find mcp-witness", false, e);
            return run;
        }
    };
    let mut link = Link::new(spec, through);
    let plan = Plan {
        choice: match era {
            Era::Legacy => EraChoice::Legacy,
            Era::Modern => EraChoice::Modern,
        },
        version: None,
        timeout: TIMEOUT,
        client: DRIVER_NAME,
    };
    let (rpc, hs, outcome) = crate::session::open(&mut link, &plan);
    let Some(rpc) = rpc else {
        let why = outcome.err().map(|e| e.sentence()).unwrap_or_default();
        step(link.what(), false, format!("{why}{}", link.stderr));
        link.close();
        return run;
    };
    let mut c = Client {
        rpc,
        envelope: hs.envelope(),
        listen: None,
    };
    cycle(&mut c, d, &(hs, outcome), &mut step);
    if let Some(id) = c.listen.take() {
        // Close the stream the way a stdio client does: cancel the listen request.
        c.rpc.notify(
            "notifications/cancelled",
            Some(json!({"requestId": id, "reason": "drive done"})),
        );
    }
    run.finish(c.rpc, link, &[d], &[]);
    run
}

/// Whether all the client sent in `session` was a handshake (or pings).
fn handshake_only(log: &analyze::Log, session: &analyze::Session) -> bool {
    let handshake = [
        "initialize",
        "notifications/initialized",
        "server/discover",
        "ping",
    ];
    log.entries
        .iter()
        .filter(|e| (session.first_line..=session.last_line).contains(&e.line) && e.dir == "in")
        .filter_map(|e| e.msg.as_ref()?.get("method")?.as_str())
        .all(|m| handshake.contains(&m))
}

/// The driver's own report: the steps, then the analysis.
pub fn report(runs: &[DomainRun]) -> String {
    let mut s = String::new();
    for r in runs {
        s.push_str(&format!(
            "# drive: {} ({} era, log {}{})\n\n",
            r.name,
            r.era.as_str(),
            r.log.display(),
            match &r.bridge {
                Some(b) => format!(", through `{}`", crate::inert::inert(&b.cmd)),
                None => String::new(),
            }
        ));
        for st in &r.steps {
            s.push_str(&format!(
                "- [{}] {}: {}\n",
                if st.ok { "ok" } else { "FAIL" },
                st.what,
                crate::inert::inert(&st.detail)
            ));
        }
        s.push('\n');
        if let Some(a) = &r.analysis {
            s.push_str(&analyze::markdown(a, &r.log.display().to_string()));
            s.push('\n');
        }
        if let Some(b) = &r.bridge {
            if let Some(started) = &b.started_as {
                s.push_str(&format!(
                    "bridge started as: {}\n\n",
                    crate::inert::inert(started)
                ));
            }
            if !r.passed() && !b.stderr.is_empty() {
                s.push_str(&format!(
                    "bridge{}\n\n",
                    crate::inert::inert(&b.stderr.replace('\n', " | "))
                ));
            }
            if let Some(c) = b.caveat {
                s.push_str(&format!("note: {c}\n\n"));
            }
            if b.probes > 0 {
                s.push_str(&format!(
                    "({} session(s) of serve's log held only a handshake, the bridge probing serve, and were not analysed)\n\n",
                    b.probes
                ));
            }
            if let Some(j) = &b.judgement {
                s.push_str(&bridge::markdown(j, &b.cmd));
                s.push('\n');
            }
        }
        s.push_str(&format!(
            "drive {} ({}): {}\n\n",
            r.name,
            r.era.as_str(),
            if r.passed() { "PASS" } else { "FAIL" }
        ));
    }
    s
}

/// How drive reaches serve for one run: it starts `mcp-witness serve` itself, or starts the
/// bridge (and, for `{url}`, `serve --http`) and keeps a tap on what crosses.
struct Link<'a> {
    serve: SpawnSpec,
    through: Option<&'a Cmd>,
    helper: Option<Server>,
    seen: Option<Arc<Mutex<Transcript>>>,
    started_as: Option<String>,
    /// The end of the bridge's stderr when the session engine gave up on it.
    stderr: String,
}

impl<'a> Link<'a> {
    fn new(serve: SpawnSpec, through: Option<&'a Cmd>) -> Link<'a> {
        Link {
            serve,
            through,
            helper: None,
            seen: None,
            started_as: None,
            stderr: String::new(),
        }
    }

    /// The step that failed when no connection could be made.
    fn what(&self) -> &'static str {
        if self.through.is_some() {
            "start the bridge"
        } else {
            "spawn serve"
        }
    }

    fn open(&mut self) -> Result<Rpc, String> {
        let Some(cmd) = self.through else {
            return Server::spawn(&self.serve)
                .map(|s| Rpc::new(Box::new(s)))
                .map_err(|e| format!("cannot start {}: {e}", self.serve.program.display()));
        };
        if let Some(old) = self.helper.take() {
            old.teardown(Grace::default());
        }
        let started = through::start(cmd, &self.serve)?;
        self.helper = started.helper;
        self.seen = Some(started.seen);
        self.started_as = Some(
            started
                .argv
                .iter()
                .map(|w| through::shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        );
        Ok(Rpc::new(Box::new(started.wire)))
    }

    /// Tears down `serve --http` when the bridge needed one; the tap's transcript.
    fn close(self) -> Option<Arc<Mutex<Transcript>>> {
        if let Some(h) = self.helper {
            h.teardown(Grace::default());
        }
        self.seen
    }
}

impl Connector for Link<'_> {
    fn connect(&mut self) -> Result<Rpc, String> {
        self.open()
    }

    fn retire(&mut self, rpc: Rpc) -> String {
        if self.through.is_some() {
            self.stderr = through::stderr_tail(rpc.wire());
        }
        rpc.close(Grace::default());
        String::new()
    }
}

/// Runs a flow (roots, elicitation) against a fresh `serve`, as a correct client would:
/// declares the capability, calls the flow's ask tool and answers what serve asks (legacy: a
/// server request; modern: `input_required`, answered by a retry with `inputResponses`).
pub fn drive_flow(f: Flow, era: Era, through: Option<&Cmd>) -> DomainRun {
    let log = fresh_log(f.name(), era);
    let mut run = DomainRun::new(f.name(), era, log.clone(), through);
    let mut step = |what: &str, ok: bool, detail: String| {
        run.steps.push(Step {
            what: what.to_string(),
            ok,
            detail,
        });
        ok
    };
    let spec = match serve_spec(&log) {
        Ok(spec) => spec,
        Err(e) => {
            step("find mcp-witness", false, e);
            return run;
        }
    };
    let mut link = Link::new(spec, through);
    let mut rpc = match link.open() {
        Ok(rpc) => rpc,
        Err(e) => {
            step(link.what(), false, e);
            link.close();
            return run;
        }
    };
    let mut caps = serde_json::Map::new();
    caps.insert(f.name().into(), f.control_capability());
    let caps = Value::Object(caps);
    let info = json!({"name": DRIVER_NAME, "version": env!("CARGO_PKG_VERSION")});
    let call = json!({"name": f.ask_tool(), "arguments": {}});
    let done = |r: &Result<Reply, crate::rpc::NoReply>| {
        matches!(r, Ok(Reply::Result(v)) if v.get("isError") != Some(&Value::Bool(true))
            && v.pointer("/content/0/text").and_then(Value::as_str)
                .is_some_and(|t| t.starts_with(&format!("{} answered: ", f.method()))))
    };
    if f == Flow::Logging {
        drive_logging(&mut rpc, era, info, &mut step);
    } else if f == Flow::Completion {
        drive_completion(&mut rpc, era, info, &mut step);
    } else if f == Flow::Subscriptions {
        drive_subscriptions(&mut rpc, era, info, &mut step);
    } else if f == Flow::Progress {
        drive_progress(&mut rpc, era, info, &mut step);
    } else if f == Flow::ElicitationUrl {
        super::drive_modes::url(&mut rpc, era, info, &log, &mut step);
    } else if f == Flow::UndeclaredMode {
        super::drive_modes::undeclared(&mut rpc, era, info, &mut step);
    } else {
        match era {
            Era::Legacy => {
                rpc.answers = vec![(f.method(), f.control_answer())];
                let init = rpc.request(
                    "initialize",
                    Some(json!({"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": info})),
                    TIMEOUT,
                );
                if step(
                    &format!("initialize declaring `{}`", f.name()),
                    succeeded(&init),
                    describe(&init),
                ) {
                    rpc.notify("notifications/initialized", None);
                    let r = rpc.request("tools/call", Some(call), TIMEOUT);
                    if step(
                        &format!(
                            "{} is answered after serve's {} was answered",
                            f.ask_tool(),
                            f.method()
                        ),
                        done(&r),
                        describe(&r),
                    ) && f == Flow::Roots
                    {
                        super::drive_modes::roots_changed(&mut rpc, &mut step);
                    }
                }
            }
            Era::Modern => {
                let meta = json!({
                    crate::mcp::meta::PROTOCOL_VERSION: crate::mcp::DEFAULT_MODERN,
                    crate::mcp::meta::CLIENT_CAPABILITIES: caps,
                    crate::mcp::meta::CLIENT_INFO: info,
                });
                let mut first = call.clone();
                first["_meta"] = meta.clone();
                let r = rpc.request("tools/call", Some(first), TIMEOUT);
                let state = match &r {
                    Ok(Reply::Result(v))
                        if v.get("resultType") == Some(&Value::from("input_required"))
                            && v.pointer(&format!("/inputRequests/{}/method", f.name()))
                                == Some(&Value::from(f.method())) =>
                    {
                        v.get("requestState").cloned()
                    }
                    _ => None,
                };
                if step(
                    &format!("{} answers input_required asking {}", f.ask_tool(), f.method()),
                    state.is_some(),
                    describe(&r),
                ) {
                    let mut retry = call;
                    retry["_meta"] = meta.clone();
                    let mut responses = serde_json::Map::new();
                    responses.insert(f.name().into(), json!({"result": f.control_answer()}));
                    retry["inputResponses"] = Value::Object(responses);
                    retry["requestState"] = state.unwrap_or(Value::Null);
                    // A new request: Rpc gives it a new id, as a retry MUST have.
                    let r = rpc.request("tools/call", Some(retry), TIMEOUT);
                    if step(
                        "the retry with inputResponses completes the call",
                        done(&r),
                        describe(&r),
                    ) && f == Flow::Roots
                    {
                        super::drive_modes::roots_asked_again(&mut rpc, meta, &mut step);
                    }
                }
            }
        }
    }
    run.finish(rpc, link, &[], &[f]);
    run
}

/// The logging flow as a correct client runs it: sets the level to debug (legacy
/// `logging/setLevel`; modern: the request's `_meta` logLevel), receives all eight levels
/// during the call, and goes on with another request.
fn drive_logging(rpc: &mut Rpc, era: Era, info: Value, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let call = json!({"name": Flow::Logging.ask_tool(), "arguments": {}});
    let status = json!({"name": STATUS_TOOL, "arguments": {}});
    let (call, status) = match era {
        Era::Legacy => {
            let init = rpc.request(
                "initialize",
                Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})),
                TIMEOUT,
            );
            let logs = matches!(&init, Ok(Reply::Result(v)) if v.pointer("/capabilities/logging").is_some());
            if !step("initialize (server declares logging)", logs, describe(&init)) {
                return;
            }
            rpc.notify("notifications/initialized", None);
            let set = rpc.request("logging/setLevel", Some(json!({"level": "debug"})), TIMEOUT);
            if !step("logging/setLevel debug", succeeded(&set), describe(&set)) {
                return;
            }
            (call, status)
        }
        Era::Modern => {
            let meta = json!({
                crate::mcp::meta::PROTOCOL_VERSION: crate::mcp::DEFAULT_MODERN,
                crate::mcp::meta::CLIENT_CAPABILITIES: {},
                crate::mcp::meta::CLIENT_INFO: info,
            });
            let (mut c, mut s) = (call, status);
            c["_meta"] = meta.clone();
            c["_meta"][super::serve::META_LOG_LEVEL] = json!("debug");
            s["_meta"] = meta;
            (c, s)
        }
    };
    let before = rpc.traffic.log_messages;
    let r = rpc.request("tools/call", Some(call), TIMEOUT);
    let got = rpc.traffic.log_messages - before;
    step(
        &format!("{} sends all eight levels", Flow::Logging.ask_tool()),
        succeeded(&r) && got == 8,
        format!("{got} message(s); {}", describe(&r)),
    );
    let s = rpc.request("tools/call", Some(status), TIMEOUT);
    step(
        "the session goes on (status answered)",
        succeeded(&s),
        describe(&s),
    );
}

/// The completion flow as a correct client runs it: completes `language` from a prefix, then
/// `framework` with `context.arguments` naming the language chosen, then fetches the prompt
/// with the suggested values.
fn drive_completion(rpc: &mut Rpc, era: Era, info: Value, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let meta = match era {
        Era::Legacy => {
            let init = rpc.request(
                "initialize",
                Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})),
                TIMEOUT,
            );
            let completes =
                matches!(&init, Ok(Reply::Result(v)) if v.pointer("/capabilities/completions").is_some());
            if !step(
                "initialize (server declares completions)",
                completes,
                describe(&init),
            ) {
                return;
            }
            rpc.notify("notifications/initialized", None);
            None
        }
        Era::Modern => Some(json!({
            crate::mcp::meta::PROTOCOL_VERSION: crate::mcp::DEFAULT_MODERN,
            crate::mcp::meta::CLIENT_CAPABILITIES: {},
            crate::mcp::meta::CLIENT_INFO: info,
        })),
    };
    let req = |rpc: &mut Rpc, method: &str, mut params: Value| {
        if let Some(m) = &meta {
            params["_meta"] = m.clone();
        }
        rpc.request(method, Some(params), TIMEOUT)
    };
    let prompt = super::flow::COMPLETE_PROMPT;
    let values = |r: &Result<Reply, crate::rpc::NoReply>| -> Vec<String> {
        match r {
            Ok(Reply::Result(v)) => v
                .pointer("/completion/values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    };
    let r = req(
        rpc,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": "language", "value": "ru"}}),
    );
    let languages = values(&r);
    if !step(
        "completion/complete language `ru` suggests rust",
        languages == ["rust"],
        describe(&r),
    ) {
        return;
    }
    let r = req(
        rpc,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": "framework", "value": ""},
            "context": {"arguments": {"language": "rust"}}}),
    );
    let frameworks = values(&r);
    if !step(
        "completion/complete framework with context.arguments language=rust suggests rust frameworks",
        frameworks == ["actix", "axum"],
        describe(&r),
    ) {
        return;
    }
    let r = req(
        rpc,
        "prompts/get",
        json!({"name": prompt, "arguments": {"language": "rust", "framework": frameworks[0]}}),
    );
    step(
        "prompts/get with the suggested values succeeds",
        succeeded(&r),
        describe(&r),
    );
}

/// Waits (bounded) until a notification named `method` has been seen; how many were.
pub(super) fn wait_for_notification(rpc: &mut Rpc, method: &str, wait: Duration) -> usize {
    let start = Instant::now();
    let count = |rpc: &Rpc| rpc.traffic.notifications.iter().filter(|n| *n == method).count();
    while count(rpc) == 0 && start.elapsed() < wait {
        let slice = wait
            .saturating_sub(start.elapsed())
            .min(Duration::from_millis(10));
        let _ = rpc.wait_reply(&|_| false, slice);
    }
    count(rpc)
}

/// The subscriptions flow as a correct client runs it: subscribes to the counter resource
/// (legacy `resources/subscribe`; modern `subscriptions/listen` with `resourceSubscriptions`),
/// touches it, waits for `notifications/resources/updated`, re-reads it, unsubscribes.
fn drive_subscriptions(
    rpc: &mut Rpc,
    era: Era,
    info: Value,
    step: &mut impl FnMut(&str, bool, String) -> bool,
) {
    let counter = super::serve::COUNTER;
    let meta = match era {
        Era::Legacy => {
            let init = rpc.request(
                "initialize",
                Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})),
                TIMEOUT,
            );
            let subscribable = matches!(&init, Ok(Reply::Result(v))
                if v.pointer("/capabilities/resources/subscribe") == Some(&Value::Bool(true)));
            if !step(
                "initialize (server declares resources.subscribe)",
                subscribable,
                describe(&init),
            ) {
                return;
            }
            rpc.notify("notifications/initialized", None);
            let sub = rpc.request("resources/subscribe", Some(json!({"uri": counter})), TIMEOUT);
            if !step(
                &format!("resources/subscribe {counter}"),
                succeeded(&sub),
                describe(&sub),
            ) {
                return;
            }
            None
        }
        Era::Modern => Some(json!({
            crate::mcp::meta::PROTOCOL_VERSION: crate::mcp::DEFAULT_MODERN,
            crate::mcp::meta::CLIENT_CAPABILITIES: {},
            crate::mcp::meta::CLIENT_INFO: info,
        })),
    };
    let with_meta = |mut p: Value| {
        if let Some(m) = &meta {
            p["_meta"] = m.clone();
        }
        p
    };
    let mut listen = None;
    if meta.is_some() {
        let params = with_meta(json!({"notifications": {"resourceSubscriptions": [counter]}}));
        listen = rpc.request_nowait("subscriptions/listen", Some(params));
        let acks = wait_for_notification(rpc, "notifications/subscriptions/acknowledged", NOTIFY_WAIT);
        if !step(
            &format!("subscriptions/listen resourceSubscriptions [{counter}] is acknowledged"),
            listen.is_some() && acks == 1,
            format!("{acks} acknowledgement(s)"),
        ) {
            return;
        }
    }
    rpc.traffic.notifications.clear();
    let touch = rpc.request(
        "tools/call",
        Some(with_meta(
            json!({"name": Flow::Subscriptions.ask_tool(), "arguments": {}}),
        )),
        TIMEOUT,
    );
    if !step(
        "witness_touch_resource succeeds",
        succeeded(&touch),
        describe(&touch),
    ) {
        return;
    }
    let got = wait_for_notification(rpc, "notifications/resources/updated", NOTIFY_WAIT);
    if !step(
        "notifications/resources/updated arrives once",
        got == 1,
        format!("{got}"),
    ) {
        return;
    }
    let read = rpc.request(
        "resources/read",
        Some(with_meta(json!({"uri": counter}))),
        TIMEOUT,
    );
    let fresh = matches!(&read, Ok(Reply::Result(v))
        if v.pointer("/contents/0/text") == Some(&Value::from("count 1")));
    step("the re-read has the new text (count 1)", fresh, describe(&read));
    match listen {
        Some(id) => {
            rpc.notify(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": "drive done"})),
            );
        }
        None => {
            let un = rpc.request("resources/unsubscribe", Some(json!({"uri": counter})), TIMEOUT);
            step("resources/unsubscribe", succeeded(&un), describe(&un));
        }
    }
}

/// The progress flow as a correct client runs it: calls the slow tool with a fresh
/// `progressToken`, waits while the three progress notifications come, gives up with
/// `notifications/cancelled` naming the call, and goes on (serve's late reply is ignored).
fn drive_progress(rpc: &mut Rpc, era: Era, info: Value, step: &mut impl FnMut(&str, bool, String) -> bool) {
    let mut meta = json!({"progressToken": "drive-progress-1"});
    match era {
        Era::Legacy => {
            let init = rpc.request(
                "initialize",
                Some(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})),
                TIMEOUT,
            );
            if !step("initialize", succeeded(&init), describe(&init)) {
                return;
            }
            rpc.notify("notifications/initialized", None);
        }
        Era::Modern => {
            meta[crate::mcp::meta::PROTOCOL_VERSION] = json!(crate::mcp::DEFAULT_MODERN);
            meta[crate::mcp::meta::CLIENT_CAPABILITIES] = json!({});
            meta[crate::mcp::meta::CLIENT_INFO] = info;
        }
    }
    rpc.traffic.notifications.clear();
    let call = json!({"name": Flow::Progress.ask_tool(), "arguments": {}, "_meta": meta.clone()});
    let Some(id) = rpc.request_nowait("tools/call", Some(call)) else {
        step("send the slow call", false, "the pipe to serve is closed".into());
        return;
    };
    let start = Instant::now();
    let count = |rpc: &Rpc| {
        rpc.traffic
            .notifications
            .iter()
            .filter(|n| *n == "notifications/progress")
            .count()
    };
    while count(rpc) < 3 && start.elapsed() < NOTIFY_WAIT {
        let _ = rpc.wait_reply(&|_| false, Duration::from_millis(10));
    }
    let got = count(rpc);
    if !step(
        "three progress notifications arrive while the call is open",
        got == 3,
        format!("{got}"),
    ) {
        return;
    }
    rpc.notify(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": "drive gives up on the slow call"})),
    );
    let mut status = json!({"name": STATUS_TOOL, "arguments": {}});
    if era == Era::Modern {
        let mut m = meta;
        if let Some(o) = m.as_object_mut() {
            o.remove("progressToken");
        }
        status["_meta"] = m;
    }
    let r = rpc.request("tools/call", Some(status), TIMEOUT);
    step(
        "after cancelling, the session goes on (the late reply is ignored)",
        succeeded(&r),
        describe(&r),
    );
}
