//! The judgement of a bridge (`drive --through`): what drive sent and received, as the tap
//! kept it, against what serve's log shows it received and sent. Each message is paired with
//! its counterpart on the other side (same kind and method; identical content first, then in
//! order), and each pair or lone message gets a fate: intact, altered (which JSON paths),
//! delayed, dropped, answered by the bridge itself, or added by the bridge.
//!
//! A proxy may rewrite request ids and progress tokens (it must keep them unique among its
//! clients): pairs whose only difference is the id are intact, and `notifications/cancelled`
//! and `notifications/progress` are compared after translating the ids and tokens back.
//! Changes to `clientInfo`/`serverInfo` alone are relabelling, noted but not held against it.

use std::collections::BTreeMap;

use serde_json::Value;

use super::analyze::Log;
use super::through::{Side, Transcript};

/// A crossing slower than this is a delay.
pub const DELAY_MS: i64 = 1000;
/// Changes listed per altered message.
const CHANGES_SHOWN: usize = 6;
/// Findings listed per run (the rest are counted).
const FINDINGS_SHOWN: usize = 40;
/// Messages named per verb of a verdict (the rest are counted).
const VERDICT_NAMES: usize = 8;
/// The longest method name shown.
const METHOD_SHOWN: usize = 120;

/// Which way a message travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// From drive (the client) toward serve.
    ToServe,
    /// From serve toward drive.
    ToDrive,
}

impl Way {
    fn arrow(self) -> &'static str {
        match self {
            Way::ToServe => "drive → serve",
            Way::ToDrive => "serve → drive",
        }
    }
}

/// What became of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// It never reached the other side.
    Dropped,
    /// It arrived changed: each entry names a JSON path and the change.
    Altered(Vec<String>),
    /// Only `clientInfo`/`serverInfo` changed.
    Relabelled(Vec<String>),
    /// It arrived intact but this many milliseconds after it was sent.
    Delayed(i64),
    /// A request that never reached the other side, yet its sender got an answer.
    AnsweredByBridge,
    /// The bridge sent it on its own (its own handshake, a ping).
    Added,
}

impl Fate {
    /// Whether this is held against the bridge.
    pub fn is_fault(&self) -> bool {
        matches!(
            self,
            Fate::Dropped | Fate::Altered(_) | Fate::Delayed(_) | Fate::AnsweredByBridge
        )
    }
}

/// One thing the comparison found, with where it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub fate: Fate,
    pub way: Way,
    /// The message: a method, `METHOD result`, `METHOD error`.
    pub what: String,
    /// Where it shows: serve log lines and drive's message numbers.
    pub evidence: String,
}

/// The bridge's verdict for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Forwards,
    /// What it did wrong, in words (`drops notifications/tools/list_changed`).
    Faulty(Vec<String>),
}

impl Verdict {
    pub fn word(&self) -> String {
        match self {
            Verdict::Forwards => "forwards".into(),
            Verdict::Faulty(parts) => parts.join("; "),
        }
    }
}

/// Everything judged for one run.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub findings: Vec<Finding>,
    /// Messages that crossed intact, by label, and how many.
    pub intact: BTreeMap<String, usize>,
    /// Request ids the bridge rewrote (drive's, serve's), first few.
    pub ids_rewritten: Vec<(String, String)>,
    pub ids_rewritten_count: usize,
    /// The slowest intact crossing, in ms (not counting the bridge's start).
    pub slowest_ms: i64,
    /// How long after drive's first message the first one came back: while the bridge
    /// starts, what drive sends waits, and is not judged delayed.
    pub startup_ms: Option<i64>,
    /// Lines from the bridge that were no JSON (or too big), and messages past the tap's keep.
    pub unparsed: usize,
    pub past_keep: usize,
    /// Whether capabilities crossed (a handshake pair was seen), and their changes.
    pub capabilities: Option<Vec<String>>,
    /// When drive sent its first message (Unix ms).
    first_ms: Option<i64>,
}

impl Judgement {
    pub fn verdict(&self) -> Verdict {
        let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        // Past the keep a message that crossed may look dropped: no drop can be told then.
        let flooded = self.past_keep > 0;
        for f in self
            .findings
            .iter()
            .filter(|f| f.fate.is_fault() && !(flooded && f.fate == Fate::Dropped))
        {
            let verb = match f.fate {
                Fate::Dropped => "drops",
                Fate::Altered(_) => "alters",
                Fate::Delayed(_) => "delays",
                _ => "answers itself",
            };
            let what = format!("{} ({})", f.what, f.way.arrow());
            let list = by.entry(verb).or_default();
            if !list.contains(&what) {
                list.push(what);
            }
        }
        let mut parts: Vec<String> = by
            .into_iter()
            .map(|(verb, w)| {
                let more = w.len().saturating_sub(VERDICT_NAMES);
                let mut names = w[..w.len().min(VERDICT_NAMES)].join(", ");
                if more > 0 {
                    names.push_str(&format!(" and {more} more"));
                }
                format!("{verb} {names}")
            })
            .collect();
        if self.unparsed > 0 {
            parts.push(format!("writes {} non-JSON-RPC line(s) to drive", self.unparsed));
        }
        if flooded {
            // A run exchanges a few dozen messages: past the keep, what crossed cannot all be
            // compared, so no verdict of "forwards" can be given.
            parts.push(format!(
                "floods the run ({} message(s) past the first kept, not compared)",
                self.past_keep
            ));
        }
        if parts.is_empty() {
            Verdict::Forwards
        } else {
            Verdict::Faulty(parts)
        }
    }
}

/// A message on one side, with where it is recorded.
#[derive(Debug, Clone, Copy)]
struct Msg<'a> {
    /// drive's message number, or serve's log line.
    at: usize,
    on_drive: bool,
    /// Travelling from drive toward serve (drive sent it, or serve received it).
    to_serve: bool,
    ms: Option<i64>,
    v: &'a Value,
}

impl Msg<'_> {
    fn place(&self) -> String {
        if self.on_drive {
            format!("drive message #{}", self.at)
        } else {
            format!("serve log line {}", self.at)
        }
    }
    fn method(&self) -> Option<&str> {
        self.v.get("method").and_then(Value::as_str)
    }
    fn id(&self) -> Option<&Value> {
        self.v.get("id")
    }
    fn is_request(&self) -> bool {
        self.method().is_some() && self.id().is_some()
    }
    fn is_notification(&self) -> bool {
        self.method().is_some() && self.id().is_none()
    }
    fn is_response(&self) -> bool {
        self.method().is_none() && self.id().is_some()
    }
}

/// The four streams: drive's sent and received, serve's in and out.
struct Sides<'a> {
    drive_sent: Vec<Msg<'a>>,
    drive_got: Vec<Msg<'a>>,
    serve_in: Vec<Msg<'a>>,
    serve_out: Vec<Msg<'a>>,
}

fn sides<'a>(log: &'a Log, seen: &'a Transcript) -> Sides<'a> {
    let mut s = Sides {
        drive_sent: Vec::new(),
        drive_got: Vec::new(),
        serve_in: Vec::new(),
        serve_out: Vec::new(),
    };
    for m in &seen.messages {
        let msg = Msg {
            at: m.n,
            on_drive: true,
            to_serve: m.from == Side::Drive,
            ms: Some(m.ms),
            v: &m.msg,
        };
        match m.from {
            Side::Drive => s.drive_sent.push(msg),
            Side::Bridge => s.drive_got.push(msg),
        }
    }
    for e in &log.entries {
        let Some(v) = &e.msg else { continue };
        let ms = crate::clock::parse(&e.ts).map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64);
        let msg = Msg {
            at: e.line,
            on_drive: false,
            to_serve: e.dir == "in",
            ms,
            v,
        };
        match e.dir.as_str() {
            "in" => s.serve_in.push(msg),
            "out" => s.serve_out.push(msg),
            _ => {}
        }
    }
    s
}

/// Ids and progress tokens as each side knows them: serve's value → drive's.
#[derive(Default)]
struct Translation {
    client_ids: Vec<(Value, Value)>,
    server_ids: Vec<(Value, Value)>,
    tokens: Vec<(Value, Value)>,
}

fn lookup<'a>(map: &'a [(Value, Value)], serve: &Value) -> Option<&'a Value> {
    map.iter().find(|(s, _)| s == serve).map(|(_, d)| d)
}

const TOKEN: &str = "/params/_meta/progressToken";

/// The message as compared: no `jsonrpc` or `id`, the progress token of a request blanked,
/// and (serve's side) the ids and tokens it names translated to drive's.
fn comparable(m: &Msg, tr: &Translation) -> Value {
    let mut v = m.v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("jsonrpc");
        o.remove("id");
    }
    if m.is_request()
        && let Some(t) = v.pointer_mut(TOKEN)
    {
        *t = Value::from("(token)");
    }
    if !m.on_drive {
        let method = m.method().unwrap_or("");
        if method == "notifications/cancelled"
            && let Some(r) = v.pointer_mut("/params/requestId")
        {
            // A cancel toward serve names a client request; toward drive, a server request.
            let ids = if m.to_serve {
                &tr.client_ids
            } else {
                &tr.server_ids
            };
            if let Some(d) = lookup(ids, r) {
                *r = d.clone();
            }
        }
        if method == "notifications/progress"
            && let Some(t) = v.pointer_mut("/params/progressToken")
            && let Some(d) = lookup(&tr.tokens, t)
        {
            *t = d.clone();
        }
    }
    v
}

/// Pairs `from` (the sender's) with `to` (the receiver's) messages of the same method:
/// identical content first, then each of the rest with the closest (fewest changes, then
/// earliest) left: a bridge's own handshake does not take the place of drive's. Returns the
/// pairs (indices) and the unpaired on each side.
fn pair(from: &[Msg], to: &[Msg], tr: &Translation) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let a: Vec<Value> = from.iter().map(|m| comparable(m, tr)).collect();
    let b: Vec<Value> = to.iter().map(|m| comparable(m, tr)).collect();
    let mut taken = vec![false; to.len()];
    let mut paired: Vec<Option<usize>> = vec![None; from.len()];
    for (i, m) in from.iter().enumerate() {
        if let Some(j) = (0..to.len()).find(|&j| !taken[j] && to[j].method() == m.method() && b[j] == a[i]) {
            taken[j] = true;
            paired[i] = Some(j);
        }
    }
    for (i, m) in from.iter().enumerate() {
        if paired[i].is_some() {
            continue;
        }
        let closest = (0..to.len())
            .filter(|&j| !taken[j] && to[j].method() == m.method())
            .min_by_key(|&j| (distance(&a[i], &b[j]), j));
        if let Some(j) = closest {
            taken[j] = true;
            paired[i] = Some(j);
        }
    }
    let pairs: Vec<(usize, usize)> = paired
        .iter()
        .enumerate()
        .filter_map(|(i, j)| j.map(|j| (i, j)))
        .collect();
    let lone_from = (0..from.len()).filter(|&i| paired[i].is_none()).collect();
    let lone_to = (0..to.len()).filter(|&j| !taken[j]).collect();
    (pairs, lone_from, lone_to)
}

/// How `b` differs from `a`, as JSON paths, at most `CHANGES_SHOWN` (then a count).
pub fn changes(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut count = 0;
    walk(a, b, &mut String::new(), &mut out, &mut count);
    if count > out.len() {
        out.push(format!("and {} more change(s)", count - out.len()));
    }
    out
}

/// How many changes turn `a` into `b`.
fn distance(a: &Value, b: &Value) -> usize {
    let mut count = 0;
    walk(a, b, &mut String::new(), &mut Vec::new(), &mut count);
    count
}

fn shown(v: &Value) -> String {
    crate::text::truncate(&crate::inert::json(v), 80)
}

/// A key as a JSON pointer token (`~` and `/` escaped), the same for a key removed or added.
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn walk(a: &Value, b: &Value, path: &mut String, out: &mut Vec<String>, count: &mut usize) {
    fn note(out: &mut Vec<String>, count: &mut usize, text: String) {
        *count += 1;
        if out.len() < CHANGES_SHOWN {
            out.push(text);
        }
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let len = path.len();
                path.push('/');
                path.push_str(&pointer_token(k));
                match y.get(k) {
                    Some(vb) => walk(va, vb, path, out, count),
                    None => note(out, count, format!("{path} removed (was {})", shown(va))),
                }
                path.truncate(len);
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                note(
                    out,
                    count,
                    format!("{path}/{} added ({})", pointer_token(k), shown(vb)),
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                walk(va, vb, path, out, count);
                path.truncate(len);
            }
        }
        _ if a == b => {}
        _ => {
            let at = if path.is_empty() {
                "(the whole message)"
            } else {
                path.as_str()
            };
            note(
                out,
                count,
                format!("{at} changed from {} to {}", shown(a), shown(b)),
            );
        }
    }
}

/// Whether `a` and `b` differ in the peer's name and version only (an initialize's
/// `params.clientInfo` or its result's `serverInfo`), judged on the messages themselves, not
/// on the text of the changes, which a value or key of the bridge's choosing could imitate.
fn relabel_only(a: &Value, b: &Value) -> bool {
    fn without_info(v: &Value) -> Value {
        let mut v = v.clone();
        for (outer, inner) in [("params", "clientInfo"), ("result", "serverInfo")] {
            if let Some(o) = v.get_mut(outer).and_then(Value::as_object_mut) {
                o.remove(inner);
            }
        }
        v
    }
    a != b && without_info(a) == without_info(b)
}

/// The label of a message: its method, or for a response what it answers.
fn label(m: &Msg, answers: &str) -> String {
    let answers = crate::text::truncate(answers, METHOD_SHOWN);
    match m.method() {
        Some(method) => crate::text::truncate(method, METHOD_SHOWN),
        None if m.v.get("error").is_some() => format!("{answers} error"),
        None => format!("{answers} result"),
    }
}

/// The messages of `list` that `keep` takes.
fn only<'a>(list: &[Msg<'a>], keep: fn(&Msg<'a>) -> bool) -> Vec<Msg<'a>> {
    list.iter().filter(|m| keep(m)).copied().collect()
}

/// Judges one pair: intact (counted), delayed, relabelled or altered.
fn judge_pair(j: &mut Judgement, way: Way, what: String, from: &Msg, to: &Msg, tr: &Translation) {
    let (a, b) = (comparable(from, tr), comparable(to, tr));
    let ch = changes(&a, &b);
    let starting = from.on_drive
        && from
            .ms
            .zip(j.startup_ms.zip(j.first_ms))
            .is_some_and(|(m, (s, f))| m < f + s);
    let late = match (from.ms, to.ms) {
        (Some(a), Some(b)) if !starting => (b - a).max(0),
        _ => 0,
    };
    let evidence = format!("{} → {} ({late} ms)", from.place(), to.place());
    let fate = if ch.is_empty() {
        j.slowest_ms = j.slowest_ms.max(late);
        if late > DELAY_MS {
            Fate::Delayed(late)
        } else {
            *j.intact.entry(what.clone()).or_default() += 1;
            return;
        }
    } else if relabel_only(&a, &b) {
        Fate::Relabelled(ch)
    } else {
        Fate::Altered(ch)
    };
    j.findings.push(Finding {
        fate,
        way,
        what,
        evidence,
    });
}

/// Judges one run: drive's transcript against serve's log.
pub fn judge(log: &Log, seen: &Transcript) -> Judgement {
    let s = sides(log, seen);
    let mut j = Judgement {
        findings: Vec::new(),
        intact: BTreeMap::new(),
        ids_rewritten: Vec::new(),
        ids_rewritten_count: 0,
        slowest_ms: 0,
        unparsed: seen.unparsed,
        past_keep: seen.past_keep,
        capabilities: None,
        startup_ms: None,
        first_ms: None,
    };
    j.first_ms = s.drive_sent.first().and_then(|m| m.ms);
    j.startup_ms = j
        .first_ms
        .zip(s.drive_got.first().and_then(|m| m.ms))
        .map(|(a, b)| (b - a).max(0));
    let mut tr = Translation::default();
    let (ds, dg, si, so) = (&s.drive_sent, &s.drive_got, &s.serve_in, &s.serve_out);

    // Requests each way: pair them, learn the id and token translations.
    let client_reqs = (only(ds, Msg::is_request), only(si, Msg::is_request));
    let server_reqs = (only(so, Msg::is_request), only(dg, Msg::is_request));
    let (cpairs, c_lone_drive, c_lone_serve) = pair(&client_reqs.0, &client_reqs.1, &tr);
    let (spairs, s_lone_serve, s_lone_drive) = pair(&server_reqs.0, &server_reqs.1, &tr);
    for &(d, sv) in &cpairs {
        let (dm, sm) = (&client_reqs.0[d], &client_reqs.1[sv]);
        if let (Some(di), Some(si)) = (dm.id(), sm.id()) {
            tr.client_ids.push((si.clone(), di.clone()));
            if di != si {
                j.ids_rewritten_count += 1;
                if j.ids_rewritten.len() < 3 {
                    j.ids_rewritten.push((shown(di), shown(si)));
                }
            }
        }
        if let (Some(dt), Some(st)) = (dm.v.pointer(TOKEN), sm.v.pointer(TOKEN)) {
            tr.tokens.push((st.clone(), dt.clone()));
        }
    }
    for &(sv, d) in &spairs {
        let (sm, dm) = (&server_reqs.0[sv], &server_reqs.1[d]);
        if let (Some(si), Some(di)) = (sm.id(), dm.id()) {
            tr.server_ids.push((si.clone(), di.clone()));
            if di != si {
                j.ids_rewritten_count += 1;
            }
        }
    }
    for &(d, sv) in &cpairs {
        let (dm, sm) = (&client_reqs.0[d], &client_reqs.1[sv]);
        judge_pair(&mut j, Way::ToServe, label(dm, ""), dm, sm, &tr);
    }
    for &(sv, d) in &spairs {
        let (sm, dm) = (&server_reqs.0[sv], &server_reqs.1[d]);
        judge_pair(&mut j, Way::ToDrive, label(sm, ""), sm, dm, &tr);
    }

    // The answers to each pair of requests.
    // The first answer after the request (a bridge may reuse an id in a later session).
    let answer = |list: &[Msg<'_>], req: &Msg<'_>| -> Option<usize> {
        let id = req.id()?;
        list.iter()
            .position(|m| m.at > req.at && m.is_response() && m.id() == Some(id))
    };
    for &(d, sv) in &cpairs {
        let (dm, sm) = (&client_reqs.0[d], &client_reqs.1[sv]);
        let method = dm.method().unwrap_or("");
        match (answer(so, sm), answer(dg, dm)) {
            (Some(a), Some(b)) => {
                judge_pair(&mut j, Way::ToDrive, label(&so[a], method), &so[a], &dg[b], &tr)
            }
            (Some(a), None) => j.findings.push(Finding {
                fate: Fate::Dropped,
                way: Way::ToDrive,
                what: label(&so[a], method),
                evidence: format!(
                    "serve answered ({}); drive never received the answer",
                    so[a].place()
                ),
            }),
            (None, Some(b)) => j.findings.push(Finding {
                fate: Fate::AnsweredByBridge,
                way: Way::ToDrive,
                what: label(&dg[b], method),
                evidence: format!(
                    "serve received the request ({}) but never answered it; drive got an answer ({})",
                    sm.place(),
                    dg[b].place()
                ),
            }),
            (None, None) => {}
        }
    }
    for &(sv, d) in &spairs {
        let (sm, dm) = (&server_reqs.0[sv], &server_reqs.1[d]);
        let method = sm.method().unwrap_or("");
        match (answer(ds, dm), answer(si, sm)) {
            (Some(a), Some(b)) => {
                judge_pair(&mut j, Way::ToServe, label(&ds[a], method), &ds[a], &si[b], &tr)
            }
            (Some(a), None) => j.findings.push(Finding {
                fate: Fate::Dropped,
                way: Way::ToServe,
                what: label(&ds[a], method),
                evidence: format!(
                    "drive answered ({}); serve never received the answer",
                    ds[a].place()
                ),
            }),
            (None, Some(b)) => j.findings.push(Finding {
                fate: Fate::AnsweredByBridge,
                way: Way::ToServe,
                what: label(&si[b], method),
                evidence: format!("drive never answered; serve got an answer ({})", si[b].place()),
            }),
            (None, None) => {}
        }
    }

    // Requests that found no counterpart.
    for &i in &c_lone_drive {
        let m = &client_reqs.0[i];
        let method = label(m, "");
        let (fate, evidence) = match answer(dg, m) {
            Some(b) => (
                Fate::AnsweredByBridge,
                format!(
                    "serve never received it ({}); drive got an answer ({})",
                    m.place(),
                    dg[b].place()
                ),
            ),
            None => (
                Fate::Dropped,
                format!("sent as {}; serve never received it", m.place()),
            ),
        };
        j.findings.push(Finding {
            fate,
            way: Way::ToServe,
            what: method,
            evidence,
        });
    }
    for &i in &s_lone_serve {
        let m = &server_reqs.0[i];
        let (fate, evidence) = match answer(si, m) {
            Some(b) => (
                Fate::AnsweredByBridge,
                format!(
                    "drive never received it ({}); serve got an answer ({})",
                    m.place(),
                    si[b].place()
                ),
            ),
            None => (
                Fate::Dropped,
                format!("sent as {}; drive never received it", m.place()),
            ),
        };
        j.findings.push(Finding {
            fate,
            way: Way::ToDrive,
            what: label(m, ""),
            evidence,
        });
    }
    for (list, way) in [(&c_lone_serve, Way::ToServe), (&s_lone_drive, Way::ToDrive)] {
        let msgs = if way == Way::ToServe {
            &client_reqs.1
        } else {
            &server_reqs.1
        };
        for &i in list {
            let m = &msgs[i];
            j.findings.push(Finding {
                fate: Fate::Added,
                way,
                what: label(m, ""),
                evidence: format!("{}: the bridge's own request", m.place()),
            });
        }
    }

    // Notifications each way.
    for (from, to, way) in [(ds, si, Way::ToServe), (so, dg, Way::ToDrive)] {
        let a = only(from, Msg::is_notification);
        let b = only(to, Msg::is_notification);
        let (pairs, lone_a, lone_b) = pair(&a, &b, &tr);
        for (x, y) in pairs {
            judge_pair(&mut j, way, label(&a[x], ""), &a[x], &b[y], &tr);
        }
        for x in lone_a {
            j.findings.push(Finding {
                fate: Fate::Dropped,
                way,
                what: label(&a[x], ""),
                evidence: format!(
                    "sent as {}; {} never received it",
                    a[x].place(),
                    if way == Way::ToServe { "serve" } else { "drive" }
                ),
            });
        }
        for y in lone_b {
            j.findings.push(Finding {
                fate: Fate::Added,
                way,
                what: label(&b[y], ""),
                evidence: format!("{}: sent by the bridge itself", b[y].place()),
            });
        }
    }

    // Capabilities: what the handshake pairs showed.
    let handshake = |w: &str| w.starts_with("initialize") || w.starts_with("server/discover");
    let seen_handshake =
        j.intact.keys().any(|k| handshake(k)) || j.findings.iter().any(|f| handshake(&f.what));
    if seen_handshake {
        let caps: Vec<String> = j
            .findings
            .iter()
            .filter_map(|f| match &f.fate {
                Fate::Altered(ch) => Some(
                    ch.iter()
                        .filter(|c| c.contains("apabilities"))
                        .map(move |c| format!("{} ({}): {c}", f.what, f.way.arrow())),
                ),
                _ => None,
            })
            .flatten()
            .collect();
        j.capabilities = Some(caps);
    }
    j
}

/// The judgement as Markdown lines, every bridge or server text made inert.
pub fn markdown(j: &Judgement, cmd: &str) -> String {
    let inert = |t: &str| crate::inert::inert(t).into_owned();
    let mut s = format!(
        "### bridge `{}`: {}\n\n",
        inert(&crate::text::truncate(cmd, 200)),
        inert(&j.verdict().word())
    );
    let intact: Vec<String> = j
        .intact
        .iter()
        .map(|(k, n)| {
            if *n == 1 {
                inert(k)
            } else {
                format!("{} ×{n}", inert(k))
            }
        })
        .collect();
    if let Some(ms) = j.startup_ms {
        s.push_str(&format!(
            "- start: the first message came back {ms} ms after drive's first (what drive sent meanwhile is not judged delayed)\n"
        ));
    }
    s.push_str(&format!(
        "- crossed intact ({} message(s), slowest {} ms after the start): {}\n",
        j.intact.values().sum::<usize>(),
        j.slowest_ms,
        if intact.is_empty() {
            "nothing".into()
        } else {
            intact.join(", ")
        }
    ));
    match &j.capabilities {
        None => s.push_str("- capabilities: no handshake crossed, so none could be compared\n"),
        Some(c) if c.is_empty() => s.push_str("- capabilities: crossed intact both ways\n"),
        Some(c) => {
            for line in c {
                s.push_str(&format!("- capabilities altered: {}\n", inert(line)));
            }
        }
    }
    if j.ids_rewritten_count > 0 {
        let ex: Vec<String> = j
            .ids_rewritten
            .iter()
            .map(|(d, v)| format!("{} → {}", inert(d), inert(v)))
            .collect();
        s.push_str(&format!(
            "- ids: the bridge rewrote {} request id(s) (drive's → serve's: {}); a proxy may rewrite ids to keep them unique among its clients, so this is not held against it\n",
            j.ids_rewritten_count,
            ex.join(", ")
        ));
    }
    if j.unparsed > 0 {
        s.push_str(&format!(
            "- the bridge wrote {} line(s) to drive that were no JSON-RPC message (or too big to read)\n",
            j.unparsed
        ));
    }
    if j.past_keep > 0 {
        s.push_str(&format!(
            "- {} message(s) past the first kept were not compared\n",
            j.past_keep
        ));
    }
    for f in j.findings.iter().take(FINDINGS_SHOWN) {
        let (tag, more) = match &f.fate {
            Fate::Dropped => ("dropped", String::new()),
            Fate::Altered(ch) => ("altered", format!(": {}", ch.join("; "))),
            Fate::Relabelled(ch) => ("relabelled (not held against it)", format!(": {}", ch.join("; "))),
            Fate::Delayed(ms) => ("delayed", format!(" by {ms} ms")),
            Fate::AnsweredByBridge => ("answered by the bridge itself", String::new()),
            Fate::Added => ("added by the bridge (not held against it)", String::new()),
        };
        s.push_str(&format!(
            "- [{tag}] {} ({}){}: {}\n",
            inert(&f.what),
            f.way.arrow(),
            inert(&more),
            inert(&f.evidence)
        ));
    }
    if j.findings.len() > FINDINGS_SHOWN {
        s.push_str(&format!(
            "- and {} more finding(s)\n",
            j.findings.len() - FINDINGS_SHOWN
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_name_each_path_removed_added_or_changed() {
        let a = json!({"result": {"capabilities": {"tools": {"listChanged": true}}, "x": 1}});
        let b = json!({"result": {"capabilities": {"tools": {}}, "x": 2, "y": 3}});
        let ch = changes(&a, &b);
        assert_eq!(
            ch,
            vec![
                "/result/capabilities/tools/listChanged removed (was true)",
                "/result/x changed from 1 to 2",
                "/result/y added (3)",
            ]
        );
        assert!(changes(&a, &a).is_empty());
    }

    #[test]
    fn a_key_added_with_a_slash_or_tilde_is_named_by_its_pointer_token() {
        let ch = changes(&json!({"a": {}}), &json!({"a": {"x/y": 1, "~z": 2}}));
        assert_eq!(ch, vec!["/a/x~1y added (1)", "/a/~0z added (2)"]);
    }

    #[test]
    fn a_change_to_client_info_alone_is_relabelling() {
        assert!(relabel_only(
            &json!({"params": {"clientInfo": {"name": "a"}}}),
            &json!({"params": {"clientInfo": {"name": "a (via proxy)"}}}),
        ));
        assert!(relabel_only(
            &json!({"result": {"serverInfo": {"name": "s"}}}),
            &json!({"result": {"serverInfo": {"name": "s", "version": "2"}}}),
        ));
        assert!(!relabel_only(&json!({"a": 1}), &json!({"a": 2})));
    }

    #[test]
    fn an_alteration_that_only_mentions_client_info_is_no_relabelling() {
        // A value, or a key elsewhere, named like the peer's info: an alteration all the same.
        let a = json!({"params": {"arguments": {"q": "a"}}});
        let b = json!({"params": {"arguments": {"q": "/clientInfo"}}});
        assert!(changes(&a, &b)[0].contains("/clientInfo"));
        assert!(!relabel_only(&a, &b));
        let b = json!({"params": {"arguments": {"q": "a", "clientInfo x": 1}}});
        assert!(!relabel_only(&a, &b));
        let a = json!({"params": {"clientInfo": {"name": "c"}, "x": 1}});
        let b = json!({"params": {"clientInfo": {"name": "d"}, "x": 2}});
        assert!(!relabel_only(&a, &b), "a relabelling alongside an alteration");
    }

    #[test]
    fn pairing_prefers_identical_content_so_a_drop_is_not_read_as_an_alteration() {
        let tr = Translation::default();
        let (x, y, z) = (
            json!({"id": 1, "method": "tools/call", "params": {"name": "alpha"}}),
            json!({"id": 2, "method": "tools/call", "params": {"name": "mutate"}}),
            json!({"id": 3, "method": "tools/call", "params": {"name": "beta"}}),
        );
        let (x2, z2) = (
            json!({"id": 7, "method": "tools/call", "params": {"name": "alpha"}}),
            json!({"id": 8, "method": "tools/call", "params": {"name": "beta"}}),
        );
        let msg = |v, on_drive| Msg {
            at: 1,
            on_drive,
            to_serve: true,
            ms: None,
            v,
        };
        let from = [msg(&x, true), msg(&y, true), msg(&z, true)];
        let to = [msg(&x2, false), msg(&z2, false)];
        let (pairs, lone_from, lone_to) = pair(&from, &to, &tr);
        assert_eq!(pairs, vec![(0, 0), (2, 1)]);
        assert_eq!(lone_from, vec![1]);
        assert!(lone_to.is_empty());
    }

    #[test]
    fn a_serve_side_cancel_is_compared_after_translating_its_request_id() {
        let tr = Translation {
            client_ids: vec![(json!(70), json!(3))],
            ..Translation::default()
        };
        let drive = json!({"method": "notifications/cancelled", "params": {"requestId": 3}});
        let serve = json!({"method": "notifications/cancelled", "params": {"requestId": 70}});
        let d = Msg {
            at: 1,
            on_drive: true,
            to_serve: true,
            ms: None,
            v: &drive,
        };
        let s = Msg {
            at: 1,
            on_drive: false,
            to_serve: true,
            ms: None,
            v: &serve,
        };
        assert_eq!(comparable(&d, &tr), comparable(&s, &tr));
    }

    /// serve's log from entries (dir, message), one a line.
    fn log(entries: &[(&str, Value)]) -> Log {
        let mut l = Log::default();
        for (n, (dir, msg)) in entries.iter().enumerate() {
            l.entries.push(crate::kit::analyze::Entry {
                line: n + 1,
                ts: "2026-12-03T08:00:00.000+00:00".into(),
                dir: (*dir).into(),
                msg: Some(msg.clone()),
                info: None,
            });
        }
        l
    }

    fn transcript(messages: &[(Side, Value)]) -> Transcript {
        let mut t = Transcript::default();
        for (n, (from, msg)) in messages.iter().enumerate() {
            t.messages.push(crate::kit::through::Seen {
                n: n + 1,
                from: *from,
                ms: 1_796_284_800_000,
                msg: msg.clone(),
            });
        }
        t
    }

    #[test]
    fn a_probe_session_reusing_an_id_is_not_taken_for_drives_answer() {
        let init = |name: &str, id: u64| {
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": {"capabilities": {}, "clientInfo": {"name": name}}})
        };
        let result = |id: u64, list_changed: bool| {
            json!({"jsonrpc": "2.0", "id": id,
                "result": {"capabilities": {"tools": {"listChanged": list_changed}}}})
        };
        // The bridge probes serve with id 0, then passes drive's initialize on, again as id 0.
        let l = log(&[
            ("in", init("probe", 0)),
            ("out", result(0, false)),
            ("in", init("drive", 0)),
            ("out", result(0, true)),
        ]);
        let t = transcript(&[(Side::Drive, init("drive", 1)), (Side::Bridge, result(1, true))]);
        let j = judge(&l, &t);
        assert_eq!(j.verdict(), Verdict::Forwards, "{j:?}");
        assert_eq!(j.intact.get("initialize result"), Some(&1));
        assert_eq!(j.capabilities, Some(Vec::new()));
        assert_eq!(j.ids_rewritten_count, 1);
        assert!(
            j.findings
                .iter()
                .any(|f| f.fate == Fate::Added && f.what == "initialize")
        );
    }

    #[test]
    fn a_stripped_capability_is_an_alteration_named_by_its_path() {
        let l = log(&[
            (
                "in",
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            ),
            (
                "out",
                json!({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {"tools": {"listChanged": true}}}}),
            ),
        ]);
        let t = transcript(&[
            (
                Side::Drive,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
            ),
            (
                Side::Bridge,
                json!({"jsonrpc": "2.0", "id": 1, "result": {"capabilities": {"tools": {}}}}),
            ),
        ]);
        let j = judge(&l, &t);
        assert_eq!(
            j.verdict(),
            Verdict::Faulty(vec!["alters initialize result (serve → drive)".into()])
        );
        assert_eq!(
            j.capabilities,
            Some(vec![
                "initialize result (serve → drive): /result/capabilities/tools/listChanged removed (was true)"
                    .to_string()
            ])
        );
    }
}
