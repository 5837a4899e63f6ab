//! The opt-in call of one named tool, after the list. Only a listed tool is ever called.
//! Its outcome is recorded; it does not change the verdict.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::outcome::{CallOutcome, CallSeen};
use super::{CallRequest, Run};
use crate::evidence::canonical;
use crate::hex;
use crate::rpc::{NoReply, Reply};
use crate::text::truncate;

/// Characters of text content kept as a preview.
const PREVIEW_CHARS: usize = 512;

impl Run<'_> {
    pub(super) fn call(&mut self, req: &CallRequest) {
        let mut seen = CallSeen {
            tool: self.redactor.text(&req.tool),
            outcome: CallOutcome::NotListed,
            argument_names: req
                .arguments
                .as_object()
                .map(|m| m.keys().map(|k| self.redactor.text(k)).collect())
                .unwrap_or_default(),
            content_types: Vec::new(),
            preview: None,
            result_sha256: None,
            error: None,
            elapsed_ms: None,
        };
        if self.rpc.is_none() || !self.listed(&req.tool) || !self.obs.reasons.is_empty() {
            // Never call a tool the server did not list, nor one of a server that failed.
            if !self.obs.reasons.is_empty() {
                seen.outcome = CallOutcome::NotAttempted;
            }
            self.obs.call = Some(seen);
            return;
        }
        let params = self
            .envelope
            .wrap(Some(json!({"name": req.tool, "arguments": req.arguments})));
        let started = std::time::Instant::now();
        let reply = self.rpc().request("tools/call", params, req.timeout);
        let elapsed = started.elapsed().as_millis() as u64;
        seen.elapsed_ms = Some(elapsed);
        self.obs.timings.call = Some(elapsed);
        match reply {
            Ok(Reply::Result(result)) => {
                seen.result_sha256 = Some(hex::encode(&Sha256::digest(canonical::to_bytes(&result))));
                let content = result.get("content").and_then(Value::as_array);
                seen.content_types = content
                    .map(|c| {
                        c.iter()
                            .take(64)
                            .map(|b| {
                                b.get("type")
                                    .and_then(Value::as_str)
                                    .unwrap_or("(none)")
                                    .chars()
                                    .take(64)
                                    .collect()
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let text: String = content
                    .map(|c| {
                        c.iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                if !text.is_empty() {
                    // Redact the whole text first, then cut the preview.
                    let text = self.redactor.text(&text);
                    let cut: String = text.chars().take(PREVIEW_CHARS).collect();
                    seen.preview = Some(if cut.len() < text.len() {
                        format!("{cut}…")
                    } else {
                        cut
                    });
                }
                seen.outcome = match (content, result.get("isError")) {
                    (None, _) => CallOutcome::Malformed,
                    (_, Some(Value::Bool(true))) => CallOutcome::ToolError,
                    _ => CallOutcome::Ok,
                };
            }
            Ok(Reply::Error { code, message, .. }) => {
                seen.outcome = CallOutcome::RpcError;
                seen.error = Some((code, truncate(&self.redactor.text(&message), 512)));
            }
            Ok(Reply::Malformed(_)) => seen.outcome = CallOutcome::Malformed,
            Err(NoReply::Timeout { .. }) => seen.outcome = CallOutcome::Silent,
            Err(_) => seen.outcome = CallOutcome::Exited,
        }
        self.obs.call = Some(seen);
    }
}
