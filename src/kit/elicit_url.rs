//! The two elicitation-mode flows of the client kit, serve's side and analyze's:
//! `elicitation-url` (URL mode, 2025-11-25: serve sends the user to its loopback page, see
//! `url_page`; legacy: with an `elicitationId` and `notifications/elicitation/complete` once the
//! page is visited; 2026-07-28: neither, the retry's `requestState` names the elicitation and
//! its result says whether the page was visited) and `elicitation-undeclared` (serve sends one
//! request in the mode the client did *not* declare; a correct client refuses it: legacy with
//! a JSON-RPC error, -32602 in the spec; 2026-07-28 by not answering it in its retry).

use serde_json::{Value, json};

use super::analyze::{Entry, Row};
use super::flow::{ElicitModes, Flow, FlowReport, FlowVerdict, QUOTE, ev, id, method, ms, params, reply};

/// The message of serve's URL mode request.
pub const URL_MESSAGE: &str = "mcp-witness asks you to open its page on 127.0.0.1 (nothing to enter): the visit completes this elicitation.";
/// The `requestState` prefix of a modern URL elicitation; the elicitation id follows.
pub const URL_STATE: &str = "mcp-witness-elicitation-url:";

/// The params of a URL mode request; legacy requests carry the `elicitationId` (2025-11-25),
/// modern ones do not (removed in 2026-07-28).
pub fn url_params(elicitation_id: Option<&str>, url: &str) -> Value {
    let mut p = json!({"mode": "url", "message": URL_MESSAGE, "url": url});
    if let Some(id) = elicitation_id {
        p["elicitationId"] = json!(id);
    }
    p
}

/// The mode serve sends to test a client that declared `modes`: the one it left out.
pub fn undeclared_mode(modes: ElicitModes) -> Option<&'static str> {
    match (modes.form, modes.url) {
        (true, false) => Some("url"),
        (false, true) => Some("form"),
        _ => None,
    }
}

/// Judges a client's answer to a URL mode request.
pub fn check_url_answer(result: &Value) -> Result<String, String> {
    let action = result
        .get("action")
        .and_then(Value::as_str)
        .ok_or("the result has no `action` string")?;
    match action {
        "accept" if result.get("content").is_some_and(|c| !c.is_null()) => {
            Err("accepted with `content`: a URL mode answer carries none (the data stays out of band)".into())
        }
        "accept" => Ok("accept (the user consented to open the URL)".into()),
        "decline" | "cancel" => Ok(format!("{action} (the user said no: a valid answer)")),
        other => Err(format!(
            "action `{}` is none of accept, decline, cancel",
            crate::text::truncate(other, QUOTE)
        )),
    }
}

/// Why a result (not an error) to a request in an undeclared mode is wrong.
pub fn accepted_undeclared(result: &Value) -> String {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => "accepted a mode it never declared".into(),
        Some(a @ ("decline" | "cancel")) => format!(
            "answered `{a}` as if it had shown a request in a mode it never declared, instead of refusing it with an error (-32602)"
        ),
        _ => "answered with a result instead of refusing the undeclared mode with an error (-32602)".into(),
    }
}

/// The outcome text of a legacy undeclared-mode request: a refusal is the right answer.
pub fn undeclared_outcome(result: Option<&Value>, error: Option<&Value>) -> (String, bool) {
    match (result, error) {
        (Some(r), _) => (
            format!(
                "elicitation/create in an undeclared mode: the client {}",
                accepted_undeclared(r)
            ),
            true,
        ),
        (None, Some(e)) => (
            format!(
                "elicitation/create in an undeclared mode: refused with error {} (correct)",
                e.get("code").map_or("?".into(), Value::to_string)
            ),
            false,
        ),
        (None, None) => (
            "elicitation/create answered with neither result nor error".into(),
            true,
        ),
    }
}

fn action(result: &Value) -> String {
    result
        .get("action")
        .and_then(Value::as_str)
        .map_or("no action".into(), |a| {
            format!("action `{}`", crate::text::truncate(a, QUOTE))
        })
}

/// Later in the session, a request of the client that the server answered: the answer to
/// the first such request. One pass from the end (the ids answered after each point), so a
/// log of many unanswered requests costs no more than its length.
fn went_on(e: &[Entry], after: usize) -> Option<usize> {
    let mut answered = std::collections::HashSet::new();
    let mut first = None;
    for i in (after + 1..e.len()).rev() {
        let Some(key) = id(&e[i]).map(Value::to_string) else {
            continue;
        };
        match (e[i].dir.as_str(), method(&e[i]).is_some()) {
            ("out", false) => {
                answered.insert(key);
            }
            ("in", true) if answered.contains(&key) => first = Some(i),
            _ => {}
        }
    }
    first.and_then(|i| reply(e, i, "out"))
}

/// Judges a URL flow in one session, from the call of its ask tool at `ask` (the first two
/// rows, the call and the modes declared, are in `rows`).
pub fn analyze(e: &[Entry], f: Flow, ask: usize, declared: bool, modern: bool, rows: Vec<Row>) -> FlowReport {
    let judge = Judge { e, rows };
    if !declared {
        let meaning = match f {
            Flow::ElicitationUrl => {
                "The client did not declare URL mode, so serve did not send a URL request (a server must not)."
            }
            _ => {
                "The client declared both modes, or no elicitation: there is no undeclared mode to send, so serve sent nothing."
            }
        };
        return judge.report(f, FlowVerdict::NotDeclared, meaning.into());
    }
    match f {
        Flow::ElicitationUrl => judge.url(ask, modern),
        _ => judge.undeclared(ask, modern),
    }
}

struct Judge<'a> {
    e: &'a [Entry],
    rows: Vec<Row>,
}

/// Where the question went out and what came back: the request (or the `input_required`
/// reply), the answer's entry, and the answer (a result, or `{"error": …}`).
struct Asked {
    question: Option<usize>,
    answer: Option<usize>,
    value: Option<Value>,
    /// Modern: the retry's id differs from the call's.
    new_id: bool,
}

impl Judge<'_> {
    fn row(&mut self, q: impl Into<String>, a: impl Into<String>, at: Option<usize>) -> usize {
        self.rows.push(Row {
            question: q.into(),
            answer: a.into(),
            evidence: ev(self.e, at),
        });
        self.rows.len()
    }

    fn report(self, flow: Flow, verdict: FlowVerdict, meaning: String) -> FlowReport {
        FlowReport {
            flow,
            rows: self.rows,
            verdict,
            meaning,
        }
    }

    /// Finds the question of flow `f` and the client's answer, in either era.
    fn asked(&self, f: Flow, ask: usize, modern: bool) -> Asked {
        let e = self.e;
        if modern {
            let first = reply(e, ask, "out").filter(|&r| {
                e[r].msg
                    .as_ref()
                    .and_then(|m| m.pointer(&format!("/result/inputRequests/{}/method", f.name())))
                    == Some(&Value::from(f.method()))
            });
            let state = first.and_then(|r| e[r].msg.as_ref()?.pointer("/result/requestState").cloned());
            // The last retry: a client may retry before the out-of-band step is done.
            let retry = first.and_then(|r| {
                (r + 1..e.len()).rev().find(|&i| {
                    e[i].dir == "in"
                        && method(&e[i]) == Some("tools/call")
                        && params(&e[i]).and_then(|p| p.get("requestState")) == state.as_ref()
                        && state.is_some()
                })
            });
            let value = retry.map(|r| {
                let got = params(&e[r])
                    .and_then(|p| p.get("inputResponses"))
                    .and_then(|x| x.get(f.name()));
                match got {
                    None => Value::Null,
                    Some(v) if v.get("error").is_some() => json!({"error": v["error"]}),
                    Some(v) => v.get("result").unwrap_or(v).clone(),
                }
            });
            Asked {
                question: first,
                answer: retry,
                value,
                new_id: retry.is_some_and(|r| id(&e[r]) != id(&e[ask])),
            }
        } else {
            let sent = (ask..e.len())
                .find(|&i| e[i].dir == "out" && method(&e[i]) == Some(f.method()) && id(&e[i]).is_some());
            let answered = sent.and_then(|s| reply(e, s, "in"));
            let value = answered.and_then(|a| {
                let m = e[a].msg.as_ref()?;
                m.get("result")
                    .cloned()
                    .or_else(|| m.get("error").map(|x| json!({"error": x})))
            });
            Asked {
                question: sent,
                answer: answered,
                value,
                new_id: true,
            }
        }
    }

    /// The mode of the request asked (legacy: the server request; modern: in `inputRequests`).
    fn mode_asked(&self, f: Flow, at: usize, modern: bool) -> Option<&'_ Value> {
        let m = self.e[at].msg.as_ref()?;
        if modern {
            m.pointer(&format!("/result/inputRequests/{}/params", f.name()))
        } else {
            m.get("params")
        }
    }

    fn url(mut self, ask: usize, modern: bool) -> FlowReport {
        let f = Flow::ElicitationUrl;
        let e = self.e;
        let a = self.asked(f, ask, modern);
        let request = a.question.and_then(|q| self.mode_asked(f, q, modern)).cloned();
        let url = request
            .as_ref()
            .and_then(|p| p.get("url"))
            .and_then(Value::as_str)
            .map(str::to_string);
        // The elicitation's id: legacy in the request; modern in serve's requestState.
        let eid = if modern {
            a.question
                .and_then(|q| e[q].msg.as_ref()?.pointer("/result/requestState")?.as_str())
                .and_then(|s| s.strip_prefix(URL_STATE))
                .map(str::to_string)
        } else {
            request
                .as_ref()
                .and_then(|p| p.get("elicitationId"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let q_ask = self.row(
            if modern {
                "Did the server answer `input_required` asking `elicitation/create` in URL mode?"
            } else {
                "Did the server send `elicitation/create` in URL mode (with an `elicitationId`)?"
            },
            match (&url, &eid) {
                (Some(u), Some(_)) => format!("yes, url `{}`", crate::text::truncate(u, QUOTE)),
                _ => "no".into(),
            },
            a.question,
        );
        let q_answer = self.row(
            if modern {
                "Did the client retry with `inputResponses` (new id, requestState back), and how many ms later?"
            } else {
                "Did the client answer, and how many ms later?"
            },
            match (a.answer, a.question, &a.value) {
                (Some(r), Some(q), Some(v)) if v.get("error").is_some() => {
                    format!("yes, {} after, with an error, not a result", ms(e, q, r))
                }
                (Some(r), Some(q), Some(Value::Null)) => {
                    format!("a retry {} after, without an answer to the request", ms(e, q, r))
                }
                (Some(r), Some(q), Some(v)) => format!(
                    "yes, {} after, {}{}",
                    ms(e, q, r),
                    action(v),
                    if a.new_id { "" } else { "; the retry reused the call's id" }
                ),
                _ => "no".into(),
            },
            a.answer,
        );
        let checked = a
            .value
            .as_ref()
            .filter(|v| v.is_object() && v.get("error").is_none())
            .map(check_url_answer);
        let q_valid = self.row(
            "Is the answer valid?",
            match &checked {
                Some(Ok(s)) => format!("yes: {s}"),
                Some(Err(why)) => format!("no: {why}"),
                None => "absent".into(),
            },
            a.answer,
        );
        let visit = eid.as_ref().and_then(|id| {
            (ask..e.len()).find(|&i| {
                e[i].dir == "page"
                    && e[i]
                        .info
                        .as_ref()
                        .and_then(|x| x.get("elicitationId"))
                        .and_then(Value::as_str)
                        == Some(id.as_str())
            })
        });
        let q_visit = self.row(
            "Did the client open the URL (serve's page visited: the out-of-band step done)?",
            match (visit, a.question) {
                (Some(v), Some(q)) => format!("yes, {} after the request", ms(e, q, v)),
                _ => "no".into(),
            },
            visit,
        );
        let done = if modern {
            // The retry's result says whether serve saw the visit.
            a.answer.and_then(|r| reply(e, r, "out")).filter(|&r| {
                e[r].msg.as_ref().and_then(|m| m.pointer("/result/isError")) != Some(&Value::Bool(true))
                    && e[r].msg.as_ref().and_then(|m| m.pointer("/result/resultType"))
                        == Some(&Value::from("complete"))
            })
        } else {
            eid.as_ref().and_then(|id| {
                (ask..e.len()).find(|&i| {
                    e[i].dir == "out"
                        && method(&e[i]) == Some(super::url_page::COMPLETE)
                        && params(&e[i])
                            .and_then(|p| p.get("elicitationId"))
                            .and_then(Value::as_str)
                            == Some(id.as_str())
                })
            })
        };
        self.row(
            if modern {
                "Did the retry complete the call (serve saw the visit)?"
            } else {
                "Did the server send `notifications/elicitation/complete` with that `elicitationId`?"
            },
            if done.is_some() { "yes" } else { "no" },
            done,
        );
        let accepted = a.value.as_ref().and_then(|v| v.get("action")) == Some(&Value::from("accept"));
        let (verdict, meaning) = match (&a.question, &a.value, &checked) {
            (None, _, _) => (
                FlowVerdict::Incomplete {
                    missing: format!("Q{q_ask}: serve never asked"),
                },
                "The log has no URL mode request from serve after the call.".to_string(),
            ),
            (Some(_), None, _) => (
                FlowVerdict::NotHandled {
                    question: q_answer,
                    why: "the client never answered the URL mode request".into(),
                },
                "The client left the URL mode request unanswered.".into(),
            ),
            _ if !a.new_id => (
                FlowVerdict::NotHandled {
                    question: q_answer,
                    why: "the retry reused the JSON-RPC id".into(),
                },
                "A retry after input_required MUST use a different JSON-RPC id.".into(),
            ),
            (Some(_), Some(_), None) => (
                FlowVerdict::NotHandled {
                    question: q_answer,
                    why: "the client declared URL mode but did not answer the request with a result".into(),
                },
                "The client declared URL mode but refused (or skipped) the request.".into(),
            ),
            (Some(_), Some(_), Some(Err(why))) => (
                FlowVerdict::NotHandled {
                    question: q_valid,
                    why: why.clone(),
                },
                "The client answered, but not in the shape the spec requires.".into(),
            ),
            (Some(_), Some(_), Some(Ok(_))) if !accepted => (
                FlowVerdict::Handled,
                "The user declined or cancelled: a valid answer; the URL flow was not completed (nothing to complete).".into(),
            ),
            _ if visit.is_none() => (
                FlowVerdict::NotHandled {
                    question: q_visit,
                    why: "the client accepted but never opened the URL: the URL flow was not completed".into(),
                },
                "Consent without the out-of-band step: serve's page was never visited.".into(),
            ),
            _ => (
                FlowVerdict::Handled,
                if modern {
                    "The client completed the URL flow: consented, opened serve's page, and retried with the requestState."
                } else {
                    "The client completed the URL flow: consented, opened serve's page, and serve sent notifications/elicitation/complete."
                }
                .into(),
            ),
        };
        self.report(f, verdict, meaning)
    }

    fn undeclared(mut self, ask: usize, modern: bool) -> FlowReport {
        let f = Flow::UndeclaredMode;
        let e = self.e;
        let a = self.asked(f, ask, modern);
        let mode = a.question.and_then(|q| self.mode_asked(f, q, modern)).map(|p| {
            p.get("mode")
                .and_then(Value::as_str)
                .unwrap_or("form")
                .to_string()
        });
        let q_ask = self.row(
            "Did the server send `elicitation/create` in a mode the client did not declare, and which?",
            match &mode {
                Some(m) => format!("yes, mode `{}`", crate::text::truncate(m, QUOTE)),
                None => "no".into(),
            },
            a.question,
        );
        let refused = match &a.value {
            Some(v) => v.is_null() || v.get("error").is_some(),
            None => false,
        };
        let code = a
            .value
            .as_ref()
            .and_then(|v| v.pointer("/error/code"))
            .and_then(Value::as_i64);
        let later = a.answer.or(a.question).and_then(|i| went_on(e, i));
        let q_answer = self.row(
            "How did the client answer it (a correct client refuses: an error, -32602 in the spec)?",
            match (&a.value, a.question) {
                (Some(Value::Null), _) => "refused: its retry left the request unanswered".into(),
                (Some(v), _) if v.get("error").is_some() => format!(
                    "refused with error {}{}",
                    code.map_or("?".into(), |c| c.to_string()),
                    if code == Some(-32602) {
                        ""
                    } else {
                        " (the spec names -32602)"
                    }
                ),
                (Some(v), _) => format!("with a result: {}", action(v)),
                (None, Some(_)) if modern && later.is_some() => {
                    "refused: no retry, and the session went on".into()
                }
                (None, _) => "no answer".into(),
            },
            a.answer,
        );
        let q_after = self.row(
            "Did the session go on afterwards (a later request answered)?",
            if later.is_some() { "yes" } else { "no" },
            later,
        );
        let no_retry_refusal = modern && a.answer.is_none() && a.question.is_some() && later.is_some();
        let (verdict, meaning) = match &a.value {
            _ if a.question.is_none() => (
                FlowVerdict::Incomplete {
                    missing: format!("Q{q_ask}: serve never asked"),
                },
                "The log has no undeclared-mode request from serve after the call.".to_string(),
            ),
            Some(_) | None if refused || no_retry_refusal => (
                FlowVerdict::Handled,
                format!(
                    "refused undeclared mode: the client refused the `{}` mode request it never declared.",
                    mode.as_deref().unwrap_or("?")
                ),
            ),
            Some(v) => (
                FlowVerdict::NotHandled {
                    question: q_answer,
                    why: accepted_undeclared(v),
                },
                "A client MUST refuse an elicitation in a mode it did not declare (2025-11-25: error -32602).".into(),
            ),
            None if a.answer.is_none() && later.is_none() => (
                FlowVerdict::Incomplete {
                    missing: format!("Q{q_after}: the log ends after the request"),
                },
                "The session ended before the client's answer.".into(),
            ),
            None => (
                FlowVerdict::NotHandled {
                    question: q_answer,
                    why: "the client never answered the request".into(),
                },
                "The client left the server's request unanswered.".into(),
            ),
        };
        self.report(f, verdict, meaning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_went_on_at_the_first_later_request_that_was_answered() {
        let entry = |dir: &str, msg: Value| Entry {
            line: 0,
            ts: String::new(),
            dir: dir.into(),
            msg: Some(msg),
            info: None,
        };
        let e = vec![
            entry("out", json!({"id": "q", "method": "elicitation/create"})),
            // Unanswered requests, a reply to none of them, and one answered before it was asked.
            entry("in", json!({"id": 5, "method": "ping"})),
            entry("out", json!({"id": 9, "result": {}})),
            entry("in", json!({"id": 9, "method": "ping"})),
            entry("in", json!({"id": 7, "method": "tools/list"})),
            entry("in", json!({"id": 8, "method": "ping"})),
            entry("out", json!({"id": 8, "result": {}})),
            entry("out", json!({"id": 7, "result": {}})),
        ];
        assert_eq!(went_on(&e, 0), Some(7), "the answer to id 7, the first answered");
        assert_eq!(
            went_on(&e, 4),
            Some(6),
            "from after id 7's request: id 8's answer"
        );
        assert_eq!(went_on(&e[..4], 0), None);
    }

    #[test]
    fn the_mode_sent_to_test_a_client_is_the_one_it_left_out() {
        let modes = |c: Value| ElicitModes::of(&c);
        // An empty capability is form mode only (2025-11-25).
        assert_eq!(undeclared_mode(modes(json!({}))), Some("url"));
        assert_eq!(undeclared_mode(modes(json!({"form": {}}))), Some("url"));
        assert_eq!(undeclared_mode(modes(json!({"url": {}}))), Some("form"));
        assert_eq!(undeclared_mode(modes(json!({"form": {}, "url": {}}))), None);
    }

    #[test]
    fn a_url_answer_is_consent_without_content() {
        assert!(check_url_answer(&json!({"action": "accept"})).is_ok());
        assert!(check_url_answer(&json!({"action": "cancel"})).is_ok());
        assert!(check_url_answer(&json!({"action": "accept", "content": {"k": 1}})).is_err());
        assert!(check_url_answer(&json!({"action": "maybe"})).is_err());
        assert!(check_url_answer(&json!({})).is_err());
    }

    #[test]
    fn a_result_to_an_undeclared_mode_says_what_the_client_did() {
        assert_eq!(
            accepted_undeclared(&json!({"action": "accept"})),
            "accepted a mode it never declared"
        );
        assert!(accepted_undeclared(&json!({"action": "decline"})).contains("instead of refusing"));
        let (text, bad) = undeclared_outcome(None, Some(&json!({"code": -32602, "message": "no"})));
        assert!(!bad && text.contains("refused with error -32602"), "{text}");
        assert!(undeclared_outcome(Some(&json!({"action": "accept"})), None).1);
    }
}
