//! The probe's gates on the tool list, walked by the session engine across every page: each
//! tool needs a string `name` and an object `inputSchema`, the list must not be empty, and a
//! walk that could not finish (an error, a repeated cursor, too many pages) is a fail.

use serde_json::Value;

use super::outcome::ReasonCode;
use super::outcome::ToolsSeen;
use super::{Run, Step};
use crate::rpc::Reply;
use crate::session::{ListSpec, ListStop, MAX_PAGES};
use crate::surface::ItemKind;
use crate::text::truncate;

/// Names beyond this many (or this many bytes in all) are not recorded: a block stays bounded.
const MAX_NAMES: usize = 10_000;
const MAX_NAME_BYTES: usize = 4 << 20;
/// Invalid tools described in the reason; beyond them only a count is kept, whatever the
/// number of pages or tools.
const PROBLEMS_KEEP: usize = 5;

impl Run<'_> {
    /// Lists every page and applies the gates.
    pub(super) fn list_tools(&mut self) -> Step<()> {
        let timeout = self.opts.server.timeout;
        let mut seen = ToolsSeen {
            names_complete: true,
            ..Default::default()
        };
        let mut name_bytes = 0usize;
        let mut problems = Problems::default();
        let spec = ListSpec {
            keep_items: false,
            ..ListSpec::TOOLS
        };
        let Some(rpc) = self.rpc.as_mut() else {
            return Ok(());
        };
        let mut surface = crate::surface::Surface::new(self.instructions.as_ref());
        let listing = crate::session::walk(rpc, &self.envelope, timeout, spec, &mut |index, tool| {
            surface.add(ItemKind::Tool, tool);
            let name = tool.get("name").and_then(Value::as_str);
            match name {
                Some(n) if seen.names_complete => {
                    if seen.names.len() >= MAX_NAMES || name_bytes + n.len() > MAX_NAME_BYTES {
                        seen.names_complete = false;
                    } else {
                        name_bytes += n.len();
                        seen.names.push(n.to_string());
                    }
                }
                Some(_) => {}
                None => problems.push(|| format!("tool #{index} has no string name")),
            }
            if !tool.get("inputSchema").is_some_and(Value::is_object) {
                problems.push(|| {
                    let label = name
                        .map(|n| format!("`{}`", truncate(n, 64)))
                        .unwrap_or_else(|| format!("#{index}"));
                    format!("tool {label} has no object inputSchema")
                });
            }
        });
        if listing.stop.is_none() {
            self.obs.surface = Some(surface);
        }
        seen.count = listing.items_seen;
        seen.pages = listing.requests;
        self.obs.timings.tools_list = Some(listing.elapsed_ms);
        if seen.pages > 1 || listing.stop.is_none() || seen.count > 0 {
            self.obs.tools = Some(seen);
        }
        if let Some(stop) = listing.stop {
            return Err(match stop {
                ListStop::Reply(Err(why)) => self.no_reply("tools/list", why),
                ListStop::Reply(Ok(Reply::Error { code, message, .. })) => self.fail(
                    ReasonCode::ToolsListError,
                    format!("tools/list got error {code}: {message}"),
                ),
                ListStop::Reply(Ok(_)) => self.fail(
                    ReasonCode::ToolsListMalformed,
                    "the tools/list reply has neither a result nor a valid error",
                ),
                ListStop::NoArray => self.fail(
                    ReasonCode::ToolsListMalformed,
                    "the tools/list result has no `tools` array",
                ),
                ListStop::ResultType(rt) => self.fail(
                    ReasonCode::ToolsListMalformed,
                    format!("tools/list returned resultType `{rt}`"),
                ),
                ListStop::RepeatedCursor(c) => self.fail(
                    ReasonCode::CursorRepeated,
                    format!(
                        "tools/list repeated the cursor `{c}` on page {}: a client would loop forever",
                        listing.pages
                    ),
                ),
                ListStop::TooManyPages => self.fail(
                    ReasonCode::TooManyPages,
                    format!("tools/list still had a nextCursor after {MAX_PAGES} pages"),
                ),
                ListStop::BadCursor => self.fail(
                    ReasonCode::ToolsListMalformed,
                    "nextCursor is neither a string nor absent",
                ),
            });
        }
        if listing.items_seen == 0 {
            return Err(self.fail(ReasonCode::NoTools, "tools/list returned an empty list"));
        }
        if problems.count > 0 {
            let kept = problems.kept.len() as u64;
            let more = if problems.count > kept {
                format!(" (and {} more)", problems.count - kept)
            } else {
                String::new()
            };
            return Err(self.fail(
                ReasonCode::InvalidTool,
                format!("{}{more}", problems.kept.join("; ")),
            ));
        }
        Ok(())
    }

    pub(super) fn listed(&self, tool: &str) -> bool {
        self.obs
            .tools
            .as_ref()
            .is_some_and(|t| t.names.iter().any(|n| n == tool))
    }
}

/// Invalid tools: the first `PROBLEMS_KEEP` described, all counted.
#[derive(Default)]
struct Problems {
    count: u64,
    kept: Vec<String>,
}

impl Problems {
    /// Counts one; describes it (the sentence built only then) while there is room.
    fn push(&mut self, describe: impl FnOnce() -> String) {
        self.count += 1;
        if self.kept.len() < PROBLEMS_KEEP {
            self.kept.push(describe());
        }
    }
}
