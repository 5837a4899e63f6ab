//! `analyze`: reads a `serve` log, splits it into sessions (serve writes a `start` entry per
//! process; older logs split at each `initialize`), and answers per session and per domain
//! whether the client reacted to list_changed, each answer with the log line that proves it.
//! A re-list counts as a reaction only inside [`REACTION_WINDOW_MS`] after the notification
//! and when listing is not the client's habit.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::files::{self, BoundedLines, FileError, LineError};

use super::{Domain, NEGATIVE_CONTROL};

/// One log entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based line number in the log file.
    pub line: usize,
    pub ts: String,
    pub dir: String,
    /// The parsed message, `None` for a raw (non-JSON) line.
    pub msg: Option<Value>,
    /// What a `start` or `session` marker entry says (pid, era).
    pub info: Option<Value>,
}

/// A log read back.
#[derive(Debug, Clone, Default)]
pub struct Log {
    pub entries: Vec<Entry>,
    /// Lines that were not log entries at all.
    pub unreadable: usize,
    /// SHA-256 (hex) and size of the bytes read: exactly what was judged.
    pub sha256: String,
    pub bytes: u64,
}

/// A log that could not be read.
#[derive(Debug)]
pub enum LogError {
    /// Not a regular file, or it could not be opened.
    File(FileError),
    /// A line longer than any line `serve` writes.
    TooLong(PathBuf, LineError),
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for LogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogError::File(e) => write!(f, "{e}"),
            LogError::TooLong(p, e) => write!(
                f,
                "log {}: {e}, longer than any line `mcp-witness serve` writes: this is not a serve log",
                p.display()
            ),
            LogError::Io(p, e) => write!(f, "cannot read log {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for LogError {}

/// Counts and hashes what passes through, so the log is read once.
struct Hashing<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Reads a serve log, each line within the bound `serve` writes to.
pub fn read_log(path: &Path) -> Result<Log, LogError> {
    let file = files::open_read(path, "log").map_err(LogError::File)?;
    let mut log = Log::default();
    let mut reader = Hashing {
        inner: file,
        hash: Sha256::new(),
        bytes: 0,
    };
    let mut lines = BoundedLines::new(&mut reader, super::serve::MAX_LOG_LINE);
    for (n, line) in (&mut lines).enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e @ LineError::TooLong { .. }) => return Err(LogError::TooLong(path.into(), e)),
            Err(LineError::Io(e)) => return Err(LogError::Io(path.into(), e)),
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            log.unreadable += 1;
            continue;
        };
        let ts = v.get("ts").and_then(Value::as_str);
        let dir = v.get("dir").and_then(Value::as_str);
        match (ts, dir) {
            (Some(ts), Some(dir)) => log.entries.push(Entry {
                line: n + 1,
                ts: ts.to_string(),
                dir: dir.to_string(),
                msg: v.get("msg").cloned(),
                info: v.get("info").cloned(),
            }),
            _ => log.unreadable += 1,
        }
    }
    drop(lines);
    log.sha256 = crate::hex::encode(&reader.hash.finalize());
    log.bytes = reader.bytes;
    Ok(log)
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub question: String,
    pub answer: String,
    /// (log line, timestamp) of the entry that proves the answer.
    pub evidence: Option<(usize, String)>,
}

/// The verdict on one domain of one session, in the spec's terms: re-listing after
/// list_changed is not a MUST in 2025-11-25, so the words say what the client did.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The client re-listed, prompted by the notification, and used the new item.
    Reacts,
    /// The question (1-based row number) that proves it, and why.
    DoesNotReact { question: usize, why: String },
    /// The server, not the client, broke the cycle.
    ServerFault { question: usize, why: String },
    /// The cycle was not run to the end: what is missing.
    Incomplete { missing: String },
}

impl Verdict {
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Reacts => "reacts to list_changed",
            Verdict::DoesNotReact { .. } => "does not react",
            Verdict::ServerFault { .. } => "server at fault",
            Verdict::Incomplete { .. } => "incomplete",
        }
    }
}

/// How long after the notification a re-list still counts as prompted by it.
pub const REACTION_WINDOW_MS: i64 = 5_000;

/// The spec line that applies to a domain (2025-11-25; the client side has no MUST).
pub fn spec_line(d: Domain) -> String {
    format!(
        "Spec 2025-11-25 ({}): \"When the list of available {} changes, servers that declared the `listChanged` capability SHOULD send a notification\"; it sets no MUST for the client's re-list.",
        d.name(),
        d.name()
    )
}

/// One session of a log: a serve process (its `start` entry), or in a log without start
/// entries, the stretch from one `initialize` to the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// 1-based, and how many sessions the log holds.
    pub index: usize,
    pub of: usize,
    /// First and last log line of the session.
    pub first_line: usize,
    pub last_line: usize,
    /// The serve process, from its start entry.
    pub pid: Option<u64>,
    /// Entry indices of the session.
    range: std::ops::Range<usize>,
}

/// Splits a log into sessions; only sessions where the client sent something are kept.
pub fn sessions(log: &Log) -> Vec<Session> {
    let e = &log.entries;
    let has_start = e.iter().any(|x| x.dir == "start");
    let starts_here = |i: usize| {
        if has_start {
            e[i].dir == "start"
        } else {
            is_request(&e[i], "initialize")
        }
    };
    let mut cuts: Vec<usize> = (1..e.len()).filter(|&i| starts_here(i)).collect();
    cuts.insert(0, 0);
    cuts.push(e.len());
    let mut out: Vec<Session> = cuts
        .windows(2)
        .filter(|w| w[0] < w[1])
        .map(|w| w[0]..w[1])
        .filter(|r| e[r.clone()].iter().any(|x| x.dir == "in"))
        .map(|r| Session {
            index: 0,
            of: 0,
            first_line: e[r.start].line,
            last_line: e[r.end - 1].line,
            pid: e[r.clone()]
                .iter()
                .find(|x| x.dir == "start")
                .and_then(|x| x.info.as_ref()?.get("pid")?.as_u64()),
            range: r,
        })
        .collect();
    if out.is_empty() {
        // Nothing from a client at all: one (empty) session, judged incomplete.
        out.push(Session {
            index: 0,
            of: 0,
            first_line: e.first().map_or(0, |x| x.line),
            last_line: e.last().map_or(0, |x| x.line),
            pid: None,
            range: 0..e.len(),
        });
    }
    let n = out.len();
    for (i, s) in out.iter_mut().enumerate() {
        s.index = i + 1;
        s.of = n;
    }
    out
}

#[derive(Debug, Clone)]
pub struct DomainReport {
    pub domain: Domain,
    pub rows: Vec<Row>,
    pub verdict: Verdict,
    /// What the pattern means, in a sentence.
    pub meaning: String,
}

/// The client as it named itself.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// The session judged (a log may hold several; each is judged on its own).
    pub session: Option<Session>,
    pub client: Option<String>,
    /// The client's own name and version, from its clientInfo.
    pub client_info: Option<(String, Option<String>)>,
    pub entries: usize,
    pub unreadable: usize,
    pub domains: Vec<DomainReport>,
    /// The flows beyond list_changed (roots, elicitation), judged in the same session.
    pub flows: Vec<super::flow::FlowReport>,
}

fn method(e: &Entry) -> Option<&str> {
    e.msg.as_ref()?.get("method")?.as_str()
}

fn id(e: &Entry) -> Option<&Value> {
    e.msg.as_ref()?.get("id").filter(|v| !v.is_null())
}

fn params(e: &Entry) -> Option<&Value> {
    e.msg.as_ref()?.get("params")
}

/// A request from the client with this method.
fn is_request(e: &Entry, m: &str) -> bool {
    e.dir == "in" && method(e) == Some(m) && id(e).is_some()
}

fn any_request(e: &Entry) -> bool {
    e.dir == "in" && method(e).is_some() && id(e).is_some()
}

fn ms_between(a: &str, b: &str) -> Option<i64> {
    let (a, b) = (crate::clock::parse(a)?, crate::clock::parse(b)?);
    Some((b - a).whole_milliseconds() as i64)
}

/// The protocol version in a request's modern `_meta`, if any.
fn modern_meta(e: &Entry) -> Option<&str> {
    params(e)?
        .get("_meta")?
        .get("io.modelcontextprotocol/protocolVersion")?
        .as_str()
}

fn marked(e: &Entry) -> bool {
    params(e)
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(NEGATIVE_CONTROL))
        .and_then(Value::as_bool)
        == Some(true)
}

struct View<'a> {
    e: &'a [Entry],
}

impl<'a> View<'a> {
    /// Index of the first entry at or after `from` (and before `to`) matching `pred`.
    fn find(&self, from: usize, to: usize, pred: impl Fn(&Entry) -> bool) -> Option<usize> {
        (from..to.min(self.e.len())).find(|&i| pred(&self.e[i]))
    }

    /// The server's reply to the request at index `req`.
    fn reply(&self, req: usize) -> Option<usize> {
        let want = id(&self.e[req])?.clone();
        self.find(req + 1, usize::MAX, |e| {
            e.dir == "out" && method(e).is_none() && id(e) == Some(&want)
        })
    }

    fn result(&self, i: usize) -> Option<&'a Value> {
        self.e[i].msg.as_ref()?.get("result")
    }

    /// Whether the reply at `i` is a JSON-RPC error or a tool error.
    fn failed(&self, i: usize) -> bool {
        let msg = self.e[i].msg.as_ref();
        msg.and_then(|m| m.get("error")).is_some()
            || self
                .result(i)
                .and_then(|r| r.get("isError"))
                .and_then(Value::as_bool)
                == Some(true)
    }

    fn uses(&self, d: Domain, item: &str) -> impl Fn(&Entry) -> bool {
        let item = item.to_string();
        move |e: &Entry| {
            is_request(e, d.use_method())
                && params(e).and_then(|p| p.get(d.use_key())).and_then(Value::as_str) == Some(item.as_str())
        }
    }

    fn ev(&self, i: Option<usize>) -> Option<(usize, String)> {
        i.map(|i| (self.e[i].line, self.e[i].ts.clone()))
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes".into() } else { "no".into() }
}

/// Analyses a log for the given domains and flows: one analysis per session, each on its own.
pub fn analyze(log: &Log, domains: &[Domain], flows: &[super::flow::Flow]) -> Vec<Analysis> {
    sessions(log)
        .into_iter()
        .map(|s| {
            let e = &log.entries[s.range.clone()];
            let mut a = analyze_session(e, domains);
            let caps = e
                .iter()
                .find(|x| is_request(x, "initialize"))
                .and_then(|x| params(x)?.get("capabilities"));
            a.flows = flows.iter().map(|&f| super::flow::analyze(e, f, caps)).collect();
            a.unreadable = log.unreadable;
            a.session = Some(s);
            a
        })
        .collect()
}

/// Whether every domain of every session reacted, and no flow failed.
pub fn all_react(analyses: &[Analysis]) -> bool {
    analyses.iter().all(|a| {
        a.domains.iter().all(|d| d.verdict == Verdict::Reacts) && !a.flows.iter().any(|f| f.verdict.fails())
    })
}

/// Analyses the entries of one session.
fn analyze_session(entries: &[Entry], domains: &[Domain]) -> Analysis {
    let v = View { e: entries };
    // The handshake: initialize or server/discover; a modern client may skip discover,
    // so failing both, its first request carrying the modern `_meta`.
    let init = v
        .find(0, usize::MAX, |e| {
            is_request(e, "initialize") || is_request(e, "server/discover")
        })
        .or_else(|| v.find(0, usize::MAX, |e| any_request(e) && modern_meta(e).is_some()));
    let client_info = init.and_then(|i| {
        let p = params(&v.e[i])?;
        let info = p
            .get("clientInfo")
            .or_else(|| p.get("_meta")?.get("io.modelcontextprotocol/clientInfo"))?;
        let name = info.get("name")?.as_str()?.to_string();
        Some((
            name,
            info.get("version").and_then(Value::as_str).map(str::to_string),
        ))
    });
    let client = client_info
        .as_ref()
        .map(|(n, v)| format!("{n} {}", v.as_deref().unwrap_or("?")));
    Analysis {
        session: None,
        client,
        client_info,
        entries: entries.len(),
        unreadable: 0,
        domains: domains.iter().map(|&d| domain(&v, init, d)).collect(),
        flows: Vec::new(),
    }
}

fn domain(v: &View, init: Option<usize>, d: Domain) -> DomainReport {
    let end = usize::MAX;
    let mut rows = Vec::new();
    let mut row = |q: String, a: String, ev: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence: ev,
        });
        rows.len()
    };
    // Modern era: the client did not send initialize.
    let modern = init.is_some_and(|i| method(&v.e[i]) != Some("initialize"));
    let handshake = init.and_then(|i| match method(&v.e[i]) {
        Some("initialize" | "server/discover") => Some(i),
        _ => None,
    });
    let (q_init, q_adv) = if d == Domain::Tools {
        let qi = row(
            "Did the client initialize (or discover)?".into(),
            init.map_or("no".into(), |i| match method(&v.e[i]) {
                Some(m @ ("initialize" | "server/discover")) => format!("yes ({m})"),
                _ => "no handshake: modern era, `_meta` on every request".into(),
            }),
            v.ev(init),
        );
        let caps = init.and_then(|i| {
            let p = params(&v.e[i])?;
            p.get("capabilities")
                .or_else(|| p.get("_meta")?.get("io.modelcontextprotocol/clientCapabilities"))
        });
        row(
            "What capabilities did the client send?".into(),
            caps.map_or("absent".into(), |c| {
                format!("`{}`", c.to_string().replace('`', "'"))
            }),
            v.ev(init.filter(|_| caps.is_some())),
        );
        let reply = handshake.and_then(|i| v.reply(i));
        let adv = reply
            .and_then(|r| v.result(r))
            .and_then(|r| r.pointer("/capabilities/tools/listChanged"))
            .and_then(Value::as_bool)
            == Some(true);
        let qa = row(
            "Did the server advertise `tools.listChanged: true`?".into(),
            if reply.is_some() || handshake.is_some() {
                yes_no(adv)
            } else {
                "not asked (no server/discover)".into()
            },
            v.ev(reply),
        );
        // Only a handshake that was answered without the capability counts against.
        (Some(qi), Some((qa, adv || handshake.is_none())))
    } else {
        (None, None)
    };
    let lm = d.list_method();
    let mutate = v.find(0, end, |e| {
        is_request(e, "tools/call")
            && params(e).and_then(|p| p.get("name")).and_then(Value::as_str) == Some(d.mutate_tool())
    });
    let before = mutate.unwrap_or(end);
    let list0 = v.find(0, before, |e| is_request(e, lm));
    let q_list0 = row(format!("Initial `{lm}`?"), yes_no(list0.is_some()), v.ev(list0));
    let alpha0 = v.find(0, before, v.uses(d, d.alpha()));
    let q_alpha0 = row(
        format!("Alpha ({}) {}?", d.alpha(), d.verb()),
        yes_no(alpha0.is_some()),
        v.ev(alpha0),
    );
    // Modern era: list_changed reaches only a client with an open subscriptions/listen.
    let listen_field = super::serve::listen_field(d);
    let listen = modern
        .then(|| {
            v.find(0, before, |e| {
                is_request(e, "subscriptions/listen")
                    && params(e)
                        .and_then(|p| p.get("notifications"))
                        .and_then(|n| n.get(listen_field))
                        .and_then(Value::as_bool)
                        == Some(true)
            })
        })
        .flatten();
    let q_listen = modern.then(|| {
        row(
            format!("Modern era: did the client open `subscriptions/listen` with `{listen_field}: true` before the mutate?"),
            yes_no(listen.is_some()),
            v.ev(listen),
        )
    });
    let q_mutate = row(
        format!("Mutate (`{}`) called?", d.mutate_tool()),
        yes_no(mutate.is_some()),
        v.ev(mutate),
    );
    let notif =
        mutate.and_then(|m| v.find(m, end, |e| e.dir == "out" && method(e) == Some(d.notification())));
    let tag = notif.and_then(|n| {
        params(&v.e[n])?
            .get("_meta")?
            .get(super::serve::META_SUBSCRIPTION)
            .cloned()
    });
    let q_notif = row(
        format!("Did the server send `{}` after the mutate?", d.notification()),
        match (notif, tag) {
            (Some(_), Some(t)) => format!("yes, on subscription {t}"),
            (n, _) => yes_no(n.is_some()),
        },
        v.ev(notif),
    );
    let relist = notif.and_then(|n| v.find(n, end, |e| is_request(e, lm)));
    let gap = relist
        .zip(notif)
        .and_then(|(r, n)| ms_between(&v.e[n].ts, &v.e[r].ts));
    let relist_reply = relist.and_then(|r| v.reply(r));
    let (field, key) = d.list_fields();
    let lists_beta = |reply: Option<usize>| {
        reply
            .and_then(|r| v.result(r))
            .and_then(|r| r.get(field))
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .any(|it| it.get(key).and_then(Value::as_str) == Some(d.beta()))
            })
    };
    let has_beta = lists_beta(relist_reply);
    // The client's habit before it was told: listing before every use, or polling. A re-list
    // that is its habit is no reaction to the notification.
    let told = notif.or(mutate).unwrap_or(end).min(v.e.len());
    let lists_before = (0..told).filter(|&i| is_request(&v.e[i], lm)).count();
    let uses_before: Vec<usize> = (0..told)
        .filter(|&i| is_request(&v.e[i], d.use_method()) || is_request(&v.e[i], "tools/call"))
        .collect();
    let listed_first = uses_before
        .iter()
        .filter(|&&i| {
            (0..i)
                .rev()
                .find(|&j| any_request(&v.e[j]))
                .is_some_and(|j| is_request(&v.e[j], lm))
        })
        .count();
    let habit = if uses_before.len() >= 2 && listed_first == uses_before.len() {
        Some(format!(
            "it lists before every call ({listed_first} of {} uses before the notification came right after a `{lm}`)",
            uses_before.len()
        ))
    } else if lists_before >= 3 {
        Some(format!(
            "it polls ({lists_before} `{lm}` before the notification)"
        ))
    } else {
        None
    };
    let in_window = gap.is_some_and(|ms| (0..=REACTION_WINDOW_MS).contains(&ms));
    let prompted = relist.is_some() && in_window && habit.is_none();
    let not_prompted_why = match (&habit, gap) {
        (Some(h), _) => h.clone(),
        (None, Some(_)) => format!("outside the {REACTION_WINDOW_MS} ms window"),
        (None, None) => "no time between the two could be read".into(),
    };
    let relist_answer = match (relist, gap) {
        (Some(_), Some(ms)) if prompted => {
            format!("yes, {ms} ms after the notification (within the {REACTION_WINDOW_MS} ms window)")
        }
        (Some(_), ms) => format!(
            "re-listed, not prompted by the notification: {} after, {not_prompted_why}",
            ms.map_or("?".into(), |ms| format!("{ms} ms"))
        ),
        (None, _) => "no".into(),
    };
    // Modern era without a listen stream: a re-list after the mutate, which nothing told it of.
    let relist_unlistened = mutate
        .filter(|_| modern && listen.is_none())
        .and_then(|m| v.find(m + 1, end, |e| is_request(e, lm)));
    let unlistened_ms = relist_unlistened
        .zip(mutate)
        .and_then(|(r, m)| ms_between(&v.e[m].ts, &v.e[r].ts));
    let q_relist;
    let q_hasbeta;
    if d == Domain::Tools {
        q_relist = row(
            format!("Did the client send `{lm}` after the notification, and how many ms later?"),
            relist_answer,
            v.ev(relist),
        );
        q_hasbeta = row(
            format!("Did that list include beta ({})?", d.beta()),
            if relist_reply.is_some() {
                yes_no(has_beta)
            } else {
                "absent".into()
            },
            v.ev(relist_reply),
        );
    } else {
        let a = if relist_reply.is_some() {
            format!(
                "{relist_answer}; the list {} beta",
                if has_beta { "included" } else { "did not include" }
            )
        } else {
            relist_answer
        };
        q_relist = row(
            format!("Did the client send `{lm}` after the notification, and how many ms later?"),
            a,
            v.ev(relist),
        );
        q_hasbeta = q_relist;
    }
    let beta_after = mutate.and_then(|m| v.find(m, end, v.uses(d, d.beta())));
    let q_beta = row(
        format!("Beta ({}) {} after the mutation?", d.beta(), d.verb()),
        yes_no(beta_after.is_some()),
        v.ev(beta_after),
    );
    // Alpha used once the client had been told the list changed (before the notification
    // arrived it could not know). Marked negative controls are counted apart.
    let since = notif.or(mutate);
    let alpha_uses: Vec<usize> = since
        .map(|s| {
            (s..v.e.len())
                .filter(|&i| v.uses(d, d.alpha())(&v.e[i]))
                .collect()
        })
        .unwrap_or_default();
    let unmarked: Vec<usize> = alpha_uses.iter().copied().filter(|&i| !marked(&v.e[i])).collect();
    let controls: Vec<usize> = alpha_uses.iter().copied().filter(|&i| marked(&v.e[i])).collect();
    let alpha_answer = if let Some(&i) = unmarked.first() {
        let refused = v.reply(i).is_some_and(|r| v.failed(r));
        format!(
            "yes, {} time(s){}",
            unmarked.len(),
            if refused { " (the server refused it)" } else { "" }
        )
    } else if let Some(&i) = controls.first() {
        let refused = v.reply(i).is_some_and(|r| v.failed(r));
        format!(
            "no (only as a marked negative control, {})",
            if refused {
                "refused as expected"
            } else {
                "NOT refused"
            }
        )
    } else {
        "no".into()
    };
    let alpha_ev = unmarked.first().or(controls.first()).copied();
    let q_alpha_after = row(
        format!("Was alpha still {} after the mutation?", d.verb()),
        alpha_answer,
        v.ev(alpha_ev),
    );

    // The verdict: the first question that settles it.
    let dnr = |question: usize, why: &str| Verdict::DoesNotReact {
        question,
        why: why.to_string(),
    };
    let fault = |question: usize, why: &str| Verdict::ServerFault {
        question,
        why: why.to_string(),
    };
    let inc = |question: usize, what: &str| Verdict::Incomplete {
        missing: format!("Q{question}: {what}"),
    };
    let after_notif_activity = notif.is_some_and(|n| v.find(n, end, any_request).is_some());
    let (verdict, meaning) = if let Some(q) = q_init.filter(|_| init.is_none()) {
        (
            inc(q, "the client never initialized"),
            "No session with this client is in the log.".to_string(),
        )
    } else if let Some((q, false)) = q_adv {
        (
            fault(q, "the server did not advertise listChanged"),
            "The server is at fault, not the client.".into(),
        )
    } else if list0.is_none() {
        (
            inc(q_list0, "no initial list"),
            "The client never listed this domain before the mutation.".into(),
        )
    } else if alpha0.is_none() {
        (
            inc(q_alpha0, "alpha was never used"),
            "The cycle stopped before alpha was used.".into(),
        )
    } else if let Some(q) = q_listen.filter(|_| listen.is_none() && mutate.is_some()) {
        match relist_unlistened {
            Some(r) if lists_beta(v.reply(r)) => (
                dnr(q, "no listen stream: the client was never told of the change"),
                format!(
                    "A successful re-list without a listen stream: the client listed again {} after the mutate and saw beta, but no list_changed could reach it (it never opened subscriptions/listen); it found the change by listing.",
                    unlistened_ms.map_or("?".into(), |ms| format!("{ms} ms"))
                ),
            ),
            _ => (
                dnr(q, "the client never subscribed to list changes"),
                "A modern client that opens no subscriptions/listen stream is never told that a list changed: it can only see changes by polling.".into(),
            ),
        }
    } else if mutate.is_none() {
        (
            inc(q_mutate, "mutate was never called"),
            "The cycle stopped before the mutation.".into(),
        )
    } else if notif.is_none() {
        (
            inc(q_notif, "no notification in the log"),
            "The log ends before the server's notification.".into(),
        )
    } else if relist.is_none() && beta_after.is_some() {
        (
            dnr(q_relist, "the client used beta without re-listing"),
            "The client learned of the change another way (the mutate result names beta, or it guessed): it used the new item without listing again, so list_changed played no part.".into(),
        )
    } else if relist.is_none() && after_notif_activity {
        (
            dnr(
                q_relist,
                "the client kept working after the notification and never re-listed",
            ),
            "The client does not react to list_changed: it keeps the list it fetched at session start."
                .into(),
        )
    } else if relist.is_none() {
        (
            inc(q_relist, "the log ends after the notification"),
            "The session ended before the client could re-list.".into(),
        )
    } else if relist_reply.is_some() && !has_beta {
        (
            fault(q_hasbeta, "the re-list did not include beta"),
            "The server's list did not change: the server is at fault.".into(),
        )
    } else if !unmarked.is_empty() {
        (
            dnr(q_alpha_after, "alpha was still used after the notification"),
            "The client re-listed (or was told to) but did not invalidate its cache: it still offers the removed item.".into(),
        )
    } else if controls.iter().any(|&i| !v.reply(i).is_some_and(|r| v.failed(r))) {
        (
            fault(q_alpha_after, "the server did not refuse alpha"),
            "The server is at fault: a removed item still works.".into(),
        )
    } else if !prompted {
        (
            dnr(q_relist, "re-listed, not prompted by the notification"),
            format!(
                "The client listed again {} after the notification, but {not_prompted_why}: that re-list is its own pattern, not a reaction to list_changed.",
                gap.map_or("?".into(), |ms| format!("{ms} ms"))
            ),
        )
    } else if beta_after.is_none() {
        (
            inc(q_beta, "beta was never used"),
            "The client refreshed its registry, but beta was not used afterwards: if the user asked for it in the same turn, the model saw the new item only later.".into(),
        )
    } else {
        (
            Verdict::Reacts,
            format!(
                "The client re-listed {} after the notification and used the new item.",
                gap.map_or("".into(), |ms| format!("{ms} ms"))
            ),
        )
    };
    DomainReport {
        domain: d,
        rows,
        verdict,
        meaning,
    }
}

/// A table cell: inert (one line, nothing that acts on a terminal), with the characters
/// Markdown tables and HTML act on escaped.
fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::inert::inert(text).chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Text a client or the log chose (a name, a path), made inert in Markdown: one line, no
/// table or code breakouts, no control, bidi or tag characters.
fn inert(text: &str) -> String {
    cell(text).replace('`', "'")
}

/// The analysis as markdown: every session of the log, each judged on its own.
pub fn markdown(analyses: &[Analysis], log_name: &str) -> String {
    let mut s = String::new();
    s.push_str("# mcp-witness client analysis\n\n");
    let entries: usize = analyses.iter().map(|a| a.entries).sum();
    s.push_str(&format!("- Log: `{}` ({entries} entries", inert(log_name)));
    if let Some(u) = analyses.first().map(|a| a.unreadable).filter(|&u| u > 0) {
        s.push_str(&format!(", {u} unreadable lines skipped"));
    }
    s.push_str(")\n");
    if analyses.len() > 1 {
        s.push_str(&format!(
            "- Sessions: {} (one per serve process or handshake), each judged on its own\n",
            analyses.len()
        ));
    }
    for a in analyses {
        let many = analyses.len() > 1;
        if let Some(ss) = a.session.as_ref().filter(|_| many) {
            s.push_str(&format!(
                "\n# Session {} of {}: log lines {}–{}{}\n\n",
                ss.index,
                ss.of,
                ss.first_line,
                ss.last_line,
                ss.pid.map_or(String::new(), |p| format!(", serve pid {p}"))
            ));
        }
        s.push_str(&format!(
            "- Client: {}\n",
            a.client
                .as_deref()
                .map(inert)
                .unwrap_or_else(|| "unknown (no clientInfo)".into())
        ));
        let which = a
            .session
            .as_ref()
            .filter(|_| many)
            .map_or(String::new(), |ss| format!(" (session {})", ss.index));
        for d in &a.domains {
            s.push_str(&format!("\n## Domain: {}{which}\n\n", d.domain.name()));
            s.push_str("| # | Question | Answer | Evidence |\n|---|---|---|---|\n");
            for (i, r) in d.rows.iter().enumerate() {
                let ev = r
                    .evidence
                    .as_ref()
                    .map_or("absent".into(), |(n, ts)| format!("log line {n}, {}", cell(ts)));
                s.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    i + 1,
                    cell(&r.question),
                    cell(&r.answer),
                    ev
                ));
            }
            let detail = match &d.verdict {
                Verdict::Reacts => String::new(),
                Verdict::DoesNotReact { question, why } | Verdict::ServerFault { question, why } => {
                    format!(" (Q{question}: {why})")
                }
                Verdict::Incomplete { missing } => format!(" ({missing})"),
            };
            s.push_str(&format!(
                "\n**Verdict: {}**{detail}. {}\n\n{}\n",
                d.verdict.word(),
                d.meaning,
                spec_line(d.domain)
            ));
        }
        for f in &a.flows {
            s.push_str(&format!("\n## Domain: {}{which}\n\n", f.flow.name()));
            s.push_str("| # | Question | Answer | Evidence |\n|---|---|---|---|\n");
            for (i, r) in f.rows.iter().enumerate() {
                let ev = r
                    .evidence
                    .as_ref()
                    .map_or("absent".into(), |(n, ts)| format!("log line {n}, {}", cell(ts)));
                s.push_str(&format!(
                    "| {} | {} | {} | {} |\n",
                    i + 1,
                    cell(&r.question),
                    cell(&r.answer),
                    ev
                ));
            }
            let detail = match &f.verdict {
                super::flow::FlowVerdict::NotHandled { question, why } => {
                    format!(" (Q{question}: {})", cell(why))
                }
                super::flow::FlowVerdict::Incomplete { missing } => format!(" ({missing})"),
                _ => String::new(),
            };
            s.push_str(&format!(
                "\n**Verdict: {}**{detail}. {}\n",
                f.verdict.word(),
                f.meaning
            ));
        }
    }
    s
}
