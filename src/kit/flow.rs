//! The flows of the client kit beyond list_changed, each a domain of serve, drive and
//! analyze: `roots`, `elicitation` (form mode), `sampling`, `logging` and `completion` (the
//! last two are no questions to the client: serve logs at every level, or offers argument
//! completions for a prompt, and analyze judges what the client did with them). For each: what `serve` asks (legacy: a
//! server request while the call of the flow's ask tool stays open; 2026-07-28: the tool
//! result is `input_required` with `inputRequests` and a `requestState`), the answer the
//! control client gives, and how `analyze` judges the client's answer from the log.

use serde_json::{Value, json};

use super::analyze::{Entry, Row};

/// A flow of the client kit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Roots,
    Elicitation,
    Sampling,
    Logging,
    Completion,
    Subscriptions,
    Progress,
    /// URL mode elicitation (2025-11-25): the client sends the user to serve's loopback page.
    ElicitationUrl,
    /// An elicitation in a mode the client did not declare, sent on purpose: it must refuse.
    UndeclaredMode,
}

/// Bound on a name or URI quoted from a client's answer.
pub(super) const QUOTE: usize = 120;

/// The elicitation modes a client declared (2025-11-25): an empty `elicitation: {}` means
/// form mode only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitModes {
    pub form: bool,
    pub url: bool,
}

impl ElicitModes {
    /// The modes of an `elicitation` capability object.
    pub fn of(cap: &Value) -> ElicitModes {
        ElicitModes {
            form: cap
                .as_object()
                .is_some_and(|m| m.is_empty() || m.contains_key("form")),
            url: cap.get("url").is_some(),
        }
    }

    pub fn words(self) -> String {
        match (self.form, self.url) {
            (true, true) => "form, url".into(),
            (true, false) => "form".into(),
            (false, true) => "url".into(),
            (false, false) => "none".into(),
        }
    }
}

impl Flow {
    pub const ALL: [Flow; 9] = [
        Flow::Roots,
        Flow::Elicitation,
        Flow::Sampling,
        Flow::Logging,
        Flow::Completion,
        Flow::Subscriptions,
        Flow::Progress,
        Flow::ElicitationUrl,
        Flow::UndeclaredMode,
    ];
    /// The flows with a tool of serve that starts them.
    pub const WITH_TOOL: [Flow; 8] = [
        Flow::Roots,
        Flow::Elicitation,
        Flow::Sampling,
        Flow::Logging,
        Flow::Subscriptions,
        Flow::Progress,
        Flow::ElicitationUrl,
        Flow::UndeclaredMode,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Flow::Roots => "roots",
            Flow::Elicitation => "elicitation",
            Flow::Sampling => "sampling",
            Flow::Logging => "logging",
            Flow::Completion => "completion",
            Flow::Subscriptions => "subscriptions",
            Flow::Progress => "progress",
            Flow::ElicitationUrl => "elicitation-url",
            Flow::UndeclaredMode => "elicitation-undeclared",
        }
    }

    /// The client capability the flow needs (`elicitation` for both URL flows).
    pub fn capability(self) -> &'static str {
        match self {
            Flow::ElicitationUrl | Flow::UndeclaredMode => "elicitation",
            f => f.name(),
        }
    }

    /// The tool of `serve` whose call makes it ask.
    pub fn ask_tool(self) -> &'static str {
        match self {
            Flow::Roots => "witness_ask_roots",
            Flow::Elicitation => "witness_ask_elicitation",
            Flow::Sampling => "witness_ask_sampling",
            Flow::Logging => "witness_log_all_levels",
            // No tool: the prompt whose arguments complete.
            Flow::Completion => COMPLETE_PROMPT,
            Flow::Subscriptions => "witness_touch_resource",
            Flow::Progress => "witness_slow",
            Flow::ElicitationUrl => "witness_ask_url_elicitation",
            Flow::UndeclaredMode => "witness_ask_undeclared_mode",
        }
    }

    /// The request the server sends (legacy) or puts in `inputRequests` (modern).
    pub fn method(self) -> &'static str {
        match self {
            Flow::Roots => "roots/list",
            Flow::Elicitation | Flow::ElicitationUrl | Flow::UndeclaredMode => "elicitation/create",
            Flow::Sampling => "sampling/createMessage",
            // Not a question: what the server sends.
            Flow::Logging => "notifications/message",
            Flow::Completion => "completion/complete",
            Flow::Subscriptions => "notifications/resources/updated",
            Flow::Progress => "notifications/progress",
        }
    }

    pub fn request_params(self) -> Value {
        match self {
            Flow::Roots => json!({}),
            Flow::Elicitation => json!({
                "mode": "form",
                "message": "mcp-witness asks for a name and a count (any values do).",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 64, "description": "Any name"},
                        "count": {"type": "integer", "minimum": 1, "description": "Any count from 1"},
                    },
                    "required": ["name"],
                },
            }),
            Flow::Sampling => json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say one word, any word."}}],
                "maxTokens": 32,
            }),
            // Built by serve per request (`url_elicitation`): they carry a fresh URL.
            Flow::Logging
            | Flow::Completion
            | Flow::Subscriptions
            | Flow::Progress
            | Flow::ElicitationUrl
            | Flow::UndeclaredMode => json!({}),
        }
    }

    /// The capability the control client declares for the flow.
    pub fn control_capability(self) -> Value {
        match self {
            Flow::Roots => json!({"listChanged": true}),
            Flow::Elicitation => json!({"form": {}}),
            Flow::ElicitationUrl => json!({"form": {}, "url": {}}),
            // Form only, so serve's URL mode request is one it never declared.
            Flow::UndeclaredMode => json!({}),
            Flow::Sampling | Flow::Logging | Flow::Completion | Flow::Subscriptions | Flow::Progress => {
                json!({})
            }
        }
    }

    /// The answer the control client gives.
    pub fn control_answer(self) -> Value {
        match self {
            Flow::Roots => {
                json!({"roots": [{"uri": "file:///tmp/mcp-witness-root", "name": "witness root"}]})
            }
            Flow::Elicitation => json!({"action": "accept", "content": {"name": "witness", "count": 1}}),
            Flow::Sampling => json!({"role": "assistant", "content": {"type": "text", "text": "witness"},
                "model": "mcp-witness-drive", "stopReason": "endTurn"}),
            // Consent only: URL mode answers carry no content.
            Flow::ElicitationUrl => json!({"action": "accept"}),
            Flow::Logging
            | Flow::Completion
            | Flow::Subscriptions
            | Flow::Progress
            | Flow::UndeclaredMode => {
                json!({})
            }
        }
    }

    /// The `requestState` serve hands out in the modern era, and expects back.
    pub fn request_state(self) -> String {
        format!("mcp-witness-{}", self.name())
    }

    pub fn tool_description(self) -> &'static str {
        match self {
            Flow::Roots => "Asks the client for its roots (roots/list) and says what it answered.",
            Flow::Elicitation => {
                "Asks the user, through the client, for a name and a count (elicitation/create, form mode) and says what came back."
            }
            Flow::Sampling => {
                "Asks the client's model for one word (sampling/createMessage) and says what came back."
            }
            Flow::Logging => {
                "Sends one notifications/message per log level at or above the client's (legacy: logging/setLevel; 2026-07-28: the request's _meta logLevel)."
            }
            Flow::Completion => {
                "A prompt whose arguments complete: language, then framework given the language."
            }
            Flow::Subscriptions => {
                "Adds one to probe://counter and sends notifications/resources/updated to its subscribers."
            }
            Flow::Progress => {
                "Reports progress (3 of 5 steps, with a progressToken) and never finishes: cancel it."
            }
            Flow::ElicitationUrl => {
                "Asks the user, through the client, to open a page of this server on 127.0.0.1 (elicitation/create, URL mode); visiting it completes the elicitation."
            }
            Flow::UndeclaredMode => {
                "Sends one elicitation/create in a mode the client did NOT declare (a test of the client): a correct client refuses it with an error."
            }
        }
    }

    /// Whether the capabilities a client declared cover this flow, and how they read.
    pub fn declared(self, caps: Option<&Value>) -> (bool, String) {
        if self == Flow::Logging {
            return (true, "no client capability is needed".into());
        }
        let Some(cap) = caps.and_then(|c| c.get(self.capability())) else {
            return (false, format!("no `{}` capability", self.capability()));
        };
        match self {
            Flow::Roots => {
                let lc = cap.get("listChanged").and_then(Value::as_bool) == Some(true);
                (true, format!("yes, `roots` with listChanged {lc}"))
            }
            Flow::Logging | Flow::Completion | Flow::Subscriptions | Flow::Progress => {
                (true, "no client capability is needed".into())
            }
            Flow::Elicitation | Flow::ElicitationUrl | Flow::UndeclaredMode => {
                let modes = ElicitModes::of(cap);
                let text = format!("modes declared: {}", modes.words());
                match self {
                    Flow::Elicitation => (modes.form, text),
                    Flow::ElicitationUrl => (modes.url, text),
                    // Something is left undeclared to send.
                    _ => (modes.form != modes.url, text),
                }
            }
            Flow::Sampling => {
                let has = |k: &str| if cap.get(k).is_some() { "yes" } else { "no" };
                (
                    true,
                    format!(
                        "yes, `sampling` (tools: {}, context: {})",
                        has("tools"),
                        has("context")
                    ),
                )
            }
        }
    }

    /// Judges the client's result: a summary, or why it is not a valid answer.
    pub fn check_answer(self, result: &Value) -> Result<String, String> {
        match self {
            Flow::Logging | Flow::Completion | Flow::Subscriptions | Flow::Progress => {
                Ok("nothing to answer".into())
            }
            Flow::ElicitationUrl => super::elicit_url::check_url_answer(result),
            Flow::UndeclaredMode => Err(super::elicit_url::accepted_undeclared(result)),
            Flow::Roots => {
                let roots = result
                    .get("roots")
                    .and_then(Value::as_array)
                    .ok_or("the result has no `roots` array")?;
                for (i, r) in roots.iter().enumerate() {
                    let uri = r
                        .get("uri")
                        .and_then(Value::as_str)
                        .ok_or(format!("root {}: no `uri` string", i + 1))?;
                    if !uri.starts_with("file://") {
                        return Err(format!(
                            "root {}: `{}` is not a file:// URI (roots MUST be file:// URIs)",
                            i + 1,
                            crate::text::truncate(uri, QUOTE)
                        ));
                    }
                }
                Ok(format!("{} root(s), every URI file://", roots.len()))
            }
            Flow::Elicitation => {
                let action = result
                    .get("action")
                    .and_then(Value::as_str)
                    .ok_or("the result has no `action` string")?;
                match action {
                    "accept" => {
                        let content = result.get("content").ok_or("accepted, but no `content`")?;
                        validate_form(content)?;
                        Ok("accept, content valid against requestedSchema".into())
                    }
                    "decline" | "cancel" => Ok(format!("{action} (the user said no: a valid answer)")),
                    other => Err(format!(
                        "action `{}` is none of accept, decline, cancel",
                        crate::text::truncate(other, QUOTE)
                    )),
                }
            }
            Flow::Sampling => {
                if result.get("role").and_then(Value::as_str) != Some("assistant") {
                    return Err("`role` is not \"assistant\"".into());
                }
                let content = result.get("content").ok_or("no `content`")?;
                let typed = |c: &Value| c.get("type").and_then(Value::as_str).is_some();
                let ok = match content {
                    Value::Array(a) => !a.is_empty() && a.iter().all(typed),
                    c => typed(c),
                };
                if !ok {
                    return Err("`content` is not a content block with a `type`".into());
                }
                if result.get("model").and_then(Value::as_str).is_none() {
                    return Err("no `model` string".into());
                }
                let stop = if result.get("stopReason").is_some() {
                    "given"
                } else {
                    "absent"
                };
                Ok(format!("an assistant message, model named, stopReason {stop}"))
            }
        }
    }
}

/// The content of an accepted form against serve's `requestedSchema`.
fn validate_form(content: &Value) -> Result<(), String> {
    let m = content.as_object().ok_or("content is not an object")?;
    match m.get("name") {
        Some(Value::String(s)) if s.chars().count() <= 64 => {}
        Some(Value::String(_)) => return Err("`name` is longer than maxLength 64".into()),
        Some(_) => return Err("`name` is not a string".into()),
        None => return Err("`name` is required but absent".into()),
    }
    match m.get("count") {
        None => {}
        Some(v) if v.as_i64().is_some_and(|n| n >= 1) || v.as_u64().is_some_and(|n| n >= 1) => {}
        Some(_) => return Err("`count` is not an integer of at least 1".into()),
    }
    Ok(())
}

/// The verdict on a flow in one session.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowVerdict {
    /// The client answered what the server asked, in the right shape.
    Handled,
    NotHandled {
        question: usize,
        why: String,
    },
    /// The client did not declare the capability: serve did not ask (and must not).
    NotDeclared,
    /// The flow's ask tool was never called in this session.
    NotExercised,
    Incomplete {
        missing: String,
    },
}

impl FlowVerdict {
    pub fn word(&self) -> &'static str {
        match self {
            FlowVerdict::Handled => "handled",
            FlowVerdict::NotHandled { .. } => "not handled",
            FlowVerdict::NotDeclared => "not declared",
            FlowVerdict::NotExercised => "not exercised",
            FlowVerdict::Incomplete { .. } => "incomplete",
        }
    }

    /// Counts against the client when analyze sets its exit code.
    pub fn fails(&self) -> bool {
        matches!(
            self,
            FlowVerdict::NotHandled { .. } | FlowVerdict::Incomplete { .. }
        )
    }
}

#[derive(Debug, Clone)]
pub struct FlowReport {
    pub flow: Flow,
    pub rows: Vec<Row>,
    pub verdict: FlowVerdict,
    pub meaning: String,
}

pub(super) fn method(e: &Entry) -> Option<&str> {
    e.msg.as_ref()?.get("method")?.as_str()
}

pub(super) fn id(e: &Entry) -> Option<&Value> {
    e.msg.as_ref()?.get("id").filter(|v| !v.is_null())
}

pub(super) fn params(e: &Entry) -> Option<&Value> {
    e.msg.as_ref()?.get("params")
}

pub(super) fn ev(e: &[Entry], i: Option<usize>) -> Option<(usize, String)> {
    i.map(|i| (e[i].line, e[i].ts.clone()))
}

pub(super) fn ms(e: &[Entry], a: usize, b: usize) -> String {
    match (crate::clock::parse(&e[a].ts), crate::clock::parse(&e[b].ts)) {
        (Some(x), Some(y)) => format!("{} ms", (y - x).whole_milliseconds()),
        _ => "? ms".into(),
    }
}

/// The reply (an `out` entry without a method) to the `in` request at `req`.
pub(super) fn reply(e: &[Entry], req: usize, dir: &str) -> Option<usize> {
    let want = id(&e[req])?.clone();
    (req + 1..e.len()).find(|&i| e[i].dir == dir && method(&e[i]).is_none() && id(&e[i]) == Some(&want))
}

/// Judges one flow in the entries of one session. `caps` are the capabilities of the
/// session's handshake (legacy `initialize`), if any.
pub fn analyze(e: &[Entry], f: Flow, legacy_caps: Option<&Value>) -> FlowReport {
    if f == Flow::Completion {
        return completion(e);
    }
    let mut rows = Vec::new();
    let mut row = |q: String, a: String, evidence: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence,
        });
        rows.len()
    };
    let is_ask = |x: &Entry| {
        x.dir == "in"
            && method(x) == Some("tools/call")
            && id(x).is_some()
            && params(x).and_then(|p| p.get("name")).and_then(Value::as_str) == Some(f.ask_tool())
    };
    let ask = (0..e.len()).find(|&i| is_ask(&e[i]));
    let q_ask = row(
        format!("Did the client call `{}`?", f.ask_tool()),
        if ask.is_some() { "yes".into() } else { "no".into() },
        ev(e, ask),
    );
    let Some(ask) = ask else {
        return FlowReport {
            flow: f,
            rows,
            verdict: FlowVerdict::NotExercised,
            meaning: format!("Nothing in this session asked the client for {}.", f.name()),
        };
    };
    if f == Flow::Logging {
        return logging(e, ask, rows);
    }
    if f == Flow::Subscriptions {
        return subscriptions(e, ask, rows);
    }
    if f == Flow::Progress {
        return progress(e, ask, rows);
    }
    let modern_caps = params(&e[ask])
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::mcp::meta::CLIENT_CAPABILITIES));
    let modern = modern_caps.is_some();
    let caps = if modern { modern_caps } else { legacy_caps };
    let (declared, how) = f.declared(caps);
    row(
        format!("Did the client declare `{}`?", f.capability()),
        how,
        ev(e, Some(ask)),
    );
    if matches!(f, Flow::ElicitationUrl | Flow::UndeclaredMode) {
        return super::elicit_url::analyze(e, f, ask, declared, modern, rows);
    }
    if !declared {
        let refused = reply(e, ask, "out");
        return FlowReport {
            flow: f,
            rows,
            verdict: FlowVerdict::NotDeclared,
            meaning: format!(
                "The client did not declare the capability, so serve did not send `{}` (a server must not){}.",
                f.method(),
                if refused.is_some() {
                    " and refused the call"
                } else {
                    ""
                }
            ),
        };
    }
    // Where the question went out, and where the client's answer is.
    let (asked, answer, answer_result) = if modern {
        let first = reply(e, ask, "out");
        let input_required = first.filter(|&r| {
            e[r].msg
                .as_ref()
                .and_then(|m| m.pointer(&format!("/result/inputRequests/{}/method", f.name())))
                == Some(&Value::from(f.method()))
        });
        row(
            format!("Did the server answer `input_required` asking `{}`?", f.method()),
            if input_required.is_some() {
                "yes".into()
            } else {
                "no".into()
            },
            ev(e, input_required),
        );
        let retry = input_required.and_then(|r| {
            (r + 1..e.len()).find(|&i| {
                is_ask(&e[i])
                    && params(&e[i])
                        .and_then(|p| p.get("inputResponses"))
                        .and_then(|x| x.get(f.name()))
                        .is_some()
            })
        });
        let new_id = retry.is_some_and(|r| id(&e[r]) != id(&e[ask]));
        let state_back = retry.is_some_and(|r| {
            params(&e[r])
                .and_then(|p| p.get("requestState"))
                .and_then(Value::as_str)
                == Some(f.request_state().as_str())
        });
        let result = retry.and_then(|r| {
            let resp = params(&e[r])?.get("inputResponses")?.get(f.name())?;
            Some(resp.get("result").unwrap_or(resp).clone())
        });
        (input_required, retry.map(|r| (r, new_id, state_back)), result)
    } else {
        let sent = (ask..e.len())
            .find(|&i| e[i].dir == "out" && method(&e[i]) == Some(f.method()) && id(&e[i]).is_some());
        row(
            format!("Did the server send `{}`?", f.method()),
            if sent.is_some() { "yes".into() } else { "no".into() },
            ev(e, sent),
        );
        let answered = sent.and_then(|s| reply(e, s, "in"));
        let result = answered.and_then(|a| e[a].msg.as_ref()?.get("result").cloned());
        (sent, answered.map(|a| (a, true, true)), result)
    };
    let q_answer = row(
        if modern {
            format!(
                "Did the client retry with `inputResponses.{}` (new id, requestState back), and how many ms later?",
                f.name()
            )
        } else {
            format!("Did the client answer `{}`, and how many ms later?", f.method())
        },
        match (&answer, asked) {
            (Some((a, new_id, state)), Some(s)) => {
                let mut t = format!("yes, {} after", ms(e, s, *a));
                if modern {
                    t.push_str(&format!(
                        "; new id: {}; requestState back: {}",
                        if *new_id { "yes" } else { "no" },
                        if *state { "yes" } else { "no" }
                    ));
                }
                if answer_result.is_none() {
                    t.push_str("; with an error, not a result");
                }
                t
            }
            _ => "no".into(),
        },
        ev(e, answer.as_ref().map(|a| a.0)),
    );
    let checked = answer_result.as_ref().map(|r| f.check_answer(r));
    let q_valid = row(
        "Is the answer valid?".into(),
        match &checked {
            Some(Ok(s)) => format!("yes: {s}"),
            Some(Err(why)) => format!("no: {why}"),
            None => "absent".into(),
        },
        ev(e, answer.as_ref().map(|a| a.0)),
    );
    let (verdict, meaning) = match (&answer, &checked) {
        (None, _) if asked.is_none() => (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_ask}: serve never asked"),
            },
            "The log has no question from serve after the call.".to_string(),
        ),
        (None, _) => (
            FlowVerdict::NotHandled {
                question: q_answer,
                why: format!("the client never answered `{}`", f.method()),
            },
            "The client left the server's question unanswered.".into(),
        ),
        (Some((_, false, _)), _) => (
            FlowVerdict::NotHandled {
                question: q_answer,
                why: "the retry reused the JSON-RPC id".into(),
            },
            "A retry after input_required MUST use a different JSON-RPC id.".into(),
        ),
        (Some(_), None) if f == Flow::Sampling => (
            FlowVerdict::Handled,
            "The client denied `sampling/createMessage` with an error: a valid answer (the user or client may decline).".into(),
        ),
        (Some(_), None) => (
            FlowVerdict::NotHandled {
                question: q_answer,
                why: "the client answered with an error".into(),
            },
            format!("The client declared `{}` but refused the request.", f.name()),
        ),
        (Some(_), Some(Err(why))) => (
            FlowVerdict::NotHandled {
                question: q_valid,
                why: why.clone(),
            },
            "The client answered, but not in the shape the spec requires.".into(),
        ),
        (Some(_), Some(Ok(s))) => (
            FlowVerdict::Handled,
            format!("The client answered `{}`: {s}.", f.method()),
        ),
    };
    let report = FlowReport {
        flow: f,
        rows,
        verdict,
        meaning,
    };
    if f == Flow::Roots {
        return super::roots_change::extend(e, ask, modern, report);
    }
    report
}

/// The logging flow in one session: the level the client chose, the messages sent while its
/// call was open, and whether the session went on afterwards.
fn logging(e: &[Entry], ask: usize, mut rows: Vec<Row>) -> FlowReport {
    let mut row = |q: String, a: String, evidence: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence,
        });
        rows.len()
    };
    let meta_level = params(&e[ask])
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(super::serve::META_LOG_LEVEL));
    let modern = params(&e[ask])
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(crate::mcp::meta::CLIENT_CAPABILITIES))
        .is_some();
    let set = (0..ask)
        .rev()
        .find(|&i| e[i].dir == "in" && method(&e[i]) == Some("logging/setLevel") && id(&e[i]).is_some());
    let level_of = |v: Option<&Value>| v.and_then(Value::as_str).map(|l| crate::text::truncate(l, QUOTE));
    let (answer, evidence) = if modern {
        match level_of(meta_level) {
            Some(l) => (format!("yes, per request: `_meta` logLevel `{l}`"), Some(ask)),
            None => ("no `_meta` logLevel on the request (no opt-in)".into(), None),
        }
    } else {
        match set.map(|i| level_of(params(&e[i]).and_then(|p| p.get("level")))) {
            Some(Some(l)) => (format!("yes, `logging/setLevel` `{l}`"), set),
            Some(None) => ("`logging/setLevel` without a level".into(), set),
            None => (
                "no `logging/setLevel` (the server's default: every level)".into(),
                None,
            ),
        }
    };
    row(
        if modern {
            "Did the client opt in to log messages on the request?".into()
        } else {
            "Did the client set a log level before the call?".into()
        },
        answer,
        ev(e, evidence),
    );
    let done = reply(e, ask, "out");
    let end = done.unwrap_or(e.len());
    let sent: Vec<usize> = (ask..end)
        .filter(|&i| e[i].dir == "out" && method(&e[i]) == Some("notifications/message"))
        .collect();
    let levels: Vec<String> = sent
        .iter()
        .filter_map(|&i| level_of(params(&e[i]).and_then(|p| p.get("level"))))
        .collect();
    row(
        "How many `notifications/message` did the server send during the call, at which levels?".into(),
        format!(
            "{}: {}",
            sent.len(),
            if levels.is_empty() {
                "none".into()
            } else {
                levels.join(", ")
            }
        ),
        ev(e, sent.first().copied()),
    );
    let after = done.and_then(|d| {
        (d + 1..e.len()).find(|&i| e[i].dir == "in" && id(&e[i]).is_some() && method(&e[i]).is_some())
    });
    let answered = after.and_then(|a| reply(e, a, "out"));
    let q_after = row(
        "Did the session go on after the messages (a request answered)?".into(),
        match (after, answered) {
            (Some(a), Some(r)) => format!("yes, {} later", ms(e, done.unwrap_or(a), r)),
            (Some(_), None) => "a request, not answered".into(),
            (None, _) => "no request after the call".into(),
        },
        ev(e, answered.or(after)),
    );
    let (verdict, meaning) = if sent.is_empty() {
        (
            FlowVerdict::NotDeclared,
            "No message was sent: the client did not opt in to logging on the request.".to_string(),
        )
    } else if answered.is_some() {
        (
            FlowVerdict::Handled,
            format!("The session survived {} log message(s) and went on.", sent.len()),
        )
    } else {
        (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_after}: no request answered after the messages"),
            },
            "The log ends after the messages: whether the client survived them is not shown.".into(),
        )
    };
    FlowReport {
        flow: Flow::Logging,
        rows,
        verdict,
        meaning,
    }
}

/// The prompt of serve whose arguments complete.
pub const COMPLETE_PROMPT: &str = "witness_complete_prompt";

/// The completions serve offers for an argument of [`COMPLETE_PROMPT`], given the other
/// arguments already chosen (`context.arguments`), filtered by the prefix typed.
pub fn completions(argument: &str, prefix: &str, context: Option<&Value>) -> Vec<&'static str> {
    let all: &[&str] = match argument {
        "language" => &["python", "rust", "typescript"],
        "framework" => match context.and_then(|c| c.get("language")).and_then(Value::as_str) {
            Some("python") => &["django", "flask"],
            Some("rust") => &["actix", "axum"],
            Some("typescript") => &["express", "nest"],
            _ => &[],
        },
        _ => &[],
    };
    all.iter().copied().filter(|v| v.starts_with(prefix)).collect()
}

/// The completion flow in one session: which arguments the client completed (with
/// `context.arguments`?), and whether its `prompts/get` used a suggested value.
fn completion(e: &[Entry]) -> FlowReport {
    let mut rows = Vec::new();
    let mut row = |q: String, a: String, evidence: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence,
        });
        rows.len()
    };
    let for_prompt = |x: &Entry| {
        x.dir == "in"
            && method(x) == Some("completion/complete")
            && id(x).is_some()
            && params(x)
                .and_then(|p| p.get("ref"))
                .and_then(|r| r.get("name"))
                .and_then(Value::as_str)
                == Some(COMPLETE_PROMPT)
    };
    let asks: Vec<usize> = (0..e.len()).filter(|&i| for_prompt(&e[i])).collect();
    row(
        format!("Did the client send `completion/complete` for `{COMPLETE_PROMPT}`?"),
        if asks.is_empty() {
            "no".into()
        } else {
            format!("yes, {} time(s)", asks.len())
        },
        ev(e, asks.first().copied()),
    );
    if asks.is_empty() {
        return FlowReport {
            flow: Flow::Completion,
            rows,
            verdict: FlowVerdict::NotExercised,
            meaning: "No completion was asked for in this session.".into(),
        };
    }
    let with_context = asks.iter().copied().find(|&i| {
        params(&e[i])
            .and_then(|p| p.pointer("/context/arguments"))
            .is_some_and(Value::is_object)
    });
    row(
        "Did a request carry `context.arguments` (the arguments already chosen)?".into(),
        if with_context.is_some() {
            "yes".into()
        } else {
            "no".into()
        },
        ev(e, with_context),
    );
    // Every value suggested, per argument name.
    let mut suggested: Vec<(String, String)> = Vec::new();
    for &i in &asks {
        let arg = params(&e[i])
            .and_then(|p| p.pointer("/argument/name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(r) = reply(e, i, "out")
            && let Some(values) = e[r]
                .msg
                .as_ref()
                .and_then(|m| m.pointer("/result/completion/values"))
                .and_then(Value::as_array)
        {
            for v in values.iter().filter_map(Value::as_str) {
                suggested.push((arg.to_string(), v.to_string()));
            }
        }
    }
    row(
        "Which values did the server suggest?".into(),
        if suggested.is_empty() {
            "none".into()
        } else {
            suggested
                .iter()
                .map(|(a, v)| format!("{a}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        ev(e, asks.first().and_then(|&i| reply(e, i, "out"))),
    );
    let last = *asks.last().unwrap_or(&0);
    let get = (last..e.len()).find(|&i| {
        e[i].dir == "in"
            && method(&e[i]) == Some("prompts/get")
            && params(&e[i]).and_then(|p| p.get("name")).and_then(Value::as_str) == Some(COMPLETE_PROMPT)
    });
    let used: Vec<String> = get
        .and_then(|g| params(&e[g])?.get("arguments")?.as_object().cloned())
        .map(|args| {
            args.iter()
                .filter_map(|(k, v)| {
                    let v = v.as_str()?;
                    suggested
                        .iter()
                        .any(|(a, s)| a == k && s == v)
                        .then(|| format!("{k}={v}"))
                })
                .collect()
        })
        .unwrap_or_default();
    let q_used = row(
        format!("Did the client's `prompts/get {COMPLETE_PROMPT}` use a suggested value?"),
        match (get, used.is_empty()) {
            (None, _) => "no `prompts/get` after the completions".into(),
            (Some(_), true) => "no suggested value in its arguments".into(),
            (Some(_), false) => format!("yes: {}", used.join(", ")),
        },
        ev(e, get),
    );
    let (verdict, meaning) = match (get, used.is_empty()) {
        (Some(_), false) => (
            FlowVerdict::Handled,
            "The client asked for completions and used a suggested value.".to_string(),
        ),
        (Some(_), true) => (
            FlowVerdict::NotHandled {
                question: q_used,
                why: "the prompt was fetched without a suggested value".into(),
            },
            "The client asked for completions but did not use any.".into(),
        ),
        (None, _) => (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_used}: no prompts/get after the completions"),
            },
            "The session ended before the prompt was fetched.".into(),
        ),
    };
    FlowReport {
        flow: Flow::Completion,
        rows,
        verdict,
        meaning,
    }
}

/// The subscriptions flow in one session: subscribed to the counter (legacy
/// `resources/subscribe`; modern `subscriptions/listen` with `resourceSubscriptions`), told of
/// the update, re-read it with the new text, unsubscribed.
fn subscriptions(e: &[Entry], ask: usize, mut rows: Vec<Row>) -> FlowReport {
    let counter = super::serve::COUNTER;
    let mut row = |q: String, a: String, evidence: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence,
        });
        rows.len()
    };
    let on_counter =
        |x: &Entry| params(x).and_then(|p| p.get("uri")).and_then(Value::as_str) == Some(counter);
    let sub = (0..ask).find(|&i| {
        let x = &e[i];
        x.dir == "in"
            && id(x).is_some()
            && ((method(x) == Some("resources/subscribe") && on_counter(x))
                || (method(x) == Some("subscriptions/listen")
                    && params(x)
                        .and_then(|p| p.pointer("/notifications/resourceSubscriptions"))
                        .and_then(Value::as_array)
                        .is_some_and(|u| u.iter().any(|u| u.as_str() == Some(counter)))))
    });
    row(
        format!("Did the client subscribe to `{counter}` before the touch?"),
        sub.map_or("no".into(), |i| {
            format!("yes, with `{}`", method(&e[i]).unwrap_or(""))
        }),
        ev(e, sub),
    );
    let updated = (ask..e.len()).find(|&i| {
        e[i].dir == "out" && method(&e[i]) == Some("notifications/resources/updated") && on_counter(&e[i])
    });
    row(
        "Did the server send `notifications/resources/updated` after the touch?".into(),
        if updated.is_some() {
            "yes".into()
        } else {
            "no".into()
        },
        ev(e, updated),
    );
    let reread = updated.and_then(|u| {
        (u..e.len())
            .find(|&i| e[i].dir == "in" && method(&e[i]) == Some("resources/read") && on_counter(&e[i]))
    });
    let text = reread.and_then(|r| reply(e, r, "out")).and_then(|r| {
        e[r].msg
            .as_ref()?
            .pointer("/result/contents/0/text")?
            .as_str()
            .map(|t| crate::text::truncate(t, QUOTE))
    });
    let q_reread = row(
        "Did the client re-read it after the update, and with which text?".into(),
        match (reread, updated, &text) {
            (Some(r), Some(u), Some(t)) => format!("yes, {} after: `{t}`", ms(e, u, r)),
            (Some(r), Some(u), None) => format!("yes, {} after, no text in the reply", ms(e, u, r)),
            _ => "no".into(),
        },
        ev(e, reread),
    );
    let unsub = sub.and_then(|s| {
        let listen = id(&e[s]).cloned();
        (s + 1..e.len()).find(|&i| {
            let x = &e[i];
            x.dir == "in"
                && ((method(x) == Some("resources/unsubscribe") && on_counter(x))
                    || (method(x) == Some("notifications/cancelled")
                        && method(&e[s]) == Some("subscriptions/listen")
                        && params(x).and_then(|p| p.get("requestId")) == listen.as_ref()))
        })
    });
    row(
        "Did the client unsubscribe (legacy `resources/unsubscribe`; modern: cancel the listen)?".into(),
        if unsub.is_some() {
            "yes".into()
        } else {
            "no".into()
        },
        ev(e, unsub),
    );
    let after = updated.is_some_and(|u| (u + 1..e.len()).any(|i| e[i].dir == "in" && id(&e[i]).is_some()));
    let (verdict, meaning) = if sub.is_none() {
        (
            FlowVerdict::NotDeclared,
            "The client did not subscribe to the resource, so no update was sent.".to_string(),
        )
    } else if updated.is_none() {
        (
            FlowVerdict::Incomplete {
                missing: "no update in the log after the touch".into(),
            },
            "The log has no update after the touch.".into(),
        )
    } else if reread.is_some() {
        (
            FlowVerdict::Handled,
            "The client subscribed, was told of the update and read the resource again.".into(),
        )
    } else if after {
        (
            FlowVerdict::NotHandled {
                question: q_reread,
                why: "the client went on without re-reading the updated resource".into(),
            },
            "The client subscribed but ignored the update.".into(),
        )
    } else {
        (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_reread}: the log ends after the update"),
            },
            "The session ended before the client could re-read.".into(),
        )
    };
    FlowReport {
        flow: Flow::Subscriptions,
        rows,
        verdict,
        meaning,
    }
}

/// The progress flow in one session: a `progressToken` unique among the open requests,
/// waiting while progress came, `notifications/cancelled` with the call's id when it gave up,
/// and the session going on past serve's (deliberate) late reply.
fn progress(e: &[Entry], ask: usize, mut rows: Vec<Row>) -> FlowReport {
    let mut row = |q: String, a: String, evidence: Option<(usize, String)>| {
        rows.push(Row {
            question: q,
            answer: a,
            evidence,
        });
        rows.len()
    };
    let token = params(&e[ask])
        .and_then(|p| p.pointer("/_meta/progressToken"))
        .cloned();
    // Requests before the call still open (no reply yet) that carry the same token.
    let clash = token.as_ref().and_then(|t| {
        (0..ask).find(|&i| {
            e[i].dir == "in"
                && id(&e[i]).is_some()
                && params(&e[i]).and_then(|p| p.pointer("/_meta/progressToken")) == Some(t)
                && reply(e, i, "out").is_none_or(|r| r > ask)
        })
    });
    let q_token = row(
        "Did the call carry a `progressToken`, unique among the open requests?".into(),
        match (&token, clash) {
            (None, _) => "no progressToken".into(),
            (Some(_), Some(_)) => "yes, but another open request has the same token".into(),
            (Some(_), None) => "yes, unique".into(),
        },
        ev(e, clash.or(Some(ask))),
    );
    let call_id = id(&e[ask]).cloned();
    let cancel =
        (ask + 1..e.len()).find(|&i| e[i].dir == "in" && method(&e[i]) == Some("notifications/cancelled"));
    let end = cancel.unwrap_or(e.len());
    let progress: Vec<usize> = (ask..end)
        .filter(|&i| e[i].dir == "out" && method(&e[i]) == Some("notifications/progress"))
        .collect();
    row(
        "How many progress notifications came before the client gave up?".into(),
        progress.len().to_string(),
        ev(e, progress.last().copied()),
    );
    let right_id = cancel.is_some_and(|c| params(&e[c]).and_then(|p| p.get("requestId")) == call_id.as_ref());
    let q_cancel = row(
        "Did the client send `notifications/cancelled` with the call's `requestId`, and when?".into(),
        match cancel {
            Some(c) if right_id => format!("yes, {} after the call", ms(e, ask, c)),
            Some(_) => "a cancellation, with another requestId".into(),
            None => "no".into(),
        },
        ev(e, cancel),
    );
    let late = cancel.and_then(|c| {
        (c..e.len()).find(|&i| e[i].dir == "out" && method(&e[i]).is_none() && id(&e[i]) == call_id.as_ref())
    });
    let went_on = late.and_then(|l| {
        (l + 1..e.len())
            .find(|&i| e[i].dir == "in" && id(&e[i]).is_some() && method(&e[i]).is_some())
            .and_then(|i| reply(e, i, "out"))
    });
    let q_late = row(
        "After serve's late reply to the cancelled call, did the session go on?".into(),
        match (late, went_on) {
            (None, _) => "no late reply in the log".into(),
            (Some(_), Some(_)) => "yes: a later request was answered".into(),
            (Some(_), None) => "no request after the late reply".into(),
        },
        ev(e, went_on.or(late)),
    );
    let (verdict, meaning) = if token.is_none() || clash.is_some() {
        (
            FlowVerdict::NotHandled {
                question: q_token,
                why: "no unique progressToken on the call".into(),
            },
            "Without a unique progressToken the client cannot be told of progress.".to_string(),
        )
    } else if cancel.is_none() {
        (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_cancel}: the call was never cancelled"),
            },
            "The client has not given up on the call (yet).".into(),
        )
    } else if !right_id {
        (
            FlowVerdict::NotHandled {
                question: q_cancel,
                why: "the cancellation names another request".into(),
            },
            "The cancellation does not name the call it gives up on.".into(),
        )
    } else if went_on.is_none() {
        (
            FlowVerdict::Incomplete {
                missing: format!("Q{q_late}: no request answered after the late reply"),
            },
            "Whether the client ignores a late reply is not shown.".into(),
        )
    } else {
        (
            FlowVerdict::Handled,
            "The client waited while progress came, cancelled the call by its id, and went on past the late reply.".into(),
        )
    };
    FlowReport {
        flow: Flow::Progress,
        rows,
        verdict,
        meaning,
    }
}
