//! `tools/list` across every page: cursors followed with a page limit and repeat detection,
//! each tool checked for a string `name` and an object `inputSchema`.

use std::collections::HashSet;

use serde_json::Value;

use super::outcome::ToolsSeen;
use super::{MAX_PAGES, Run, Step};
use crate::mcp::modern_meta;
use crate::text::truncate;

/// Names beyond this many (or this many bytes in all) are not recorded: a block stays bounded.
const MAX_NAMES: usize = 10_000;
const MAX_NAME_BYTES: usize = 4 << 20;
/// Invalid tools described in the reason; beyond them only a count is kept, whatever the
/// number of pages or tools.
const PROBLEMS_KEEP: usize = 5;

impl Run<'_> {
    /// Lists every page. `modern` carries the protocol version when requests need `_meta`.
    pub(super) fn list_tools(&mut self, modern: Option<String>) -> Step<()> {
        let timeout = self.opts.server.timeout;
        let started = std::time::Instant::now();
        let mut seen = ToolsSeen {
            names_complete: true,
            ..Default::default()
        };
        let mut cursors = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut name_bytes = 0usize;
        let mut problems = Problems::default();
        let result = loop {
            let mut params = serde_json::Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), c.clone().into());
            }
            if let Some(v) = &modern {
                params.insert("_meta".into(), modern_meta(v));
            }
            let params = (!params.is_empty()).then_some(Value::Object(params));
            let reply = self.rpc().request("tools/list", params, timeout);
            seen.pages += 1;
            let page = match self.result_of("tools/list", ("tools_list_error", "tools_list_malformed"), reply)
            {
                Ok(page) => page,
                Err(stop) => break Err(stop),
            };
            let Some(tools) = page.get("tools").and_then(Value::as_array) else {
                break Err(self.fail(
                    "tools_list_malformed",
                    "the tools/list result has no `tools` array",
                ));
            };
            for (i, tool) in tools.iter().enumerate() {
                let index = seen.count + i as u64;
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
            }
            seen.count += tools.len() as u64;
            if let Some(rt) = page.get("resultType").and_then(Value::as_str)
                && rt != "complete"
            {
                break Err(self.fail(
                    "tools_list_malformed",
                    format!("tools/list returned resultType `{rt}`"),
                ));
            }
            match page.get("nextCursor") {
                None | Some(Value::Null) => break Ok(()),
                Some(Value::String(next)) => {
                    if !cursors.insert(<sha2::Sha256 as sha2::Digest>::digest(next.as_bytes())) {
                        let msg = format!(
                            "tools/list repeated the cursor `{}` on page {}: a client would loop forever",
                            truncate(next, 64),
                            seen.pages
                        );
                        break Err(self.fail("cursor_repeated", msg));
                    }
                    if seen.pages >= MAX_PAGES {
                        let msg = format!("tools/list still had a nextCursor after {MAX_PAGES} pages");
                        break Err(self.fail("too_many_pages", msg));
                    }
                    cursor = Some(next.clone());
                }
                Some(_) => {
                    break Err(self.fail(
                        "tools_list_malformed",
                        "nextCursor is neither a string nor absent",
                    ));
                }
            }
        };
        self.obs.timings.tools_list = Some(started.elapsed().as_millis() as u64);
        if seen.pages > 1 || result.is_ok() || seen.count > 0 {
            self.obs.tools = Some(seen);
        }
        result?;
        let tools = self.obs.tools.as_ref().expect("set when the list was answered");
        if tools.count == 0 {
            return Err(self.fail("no_tools", "tools/list returned an empty list"));
        }
        if problems.count > 0 {
            let kept = problems.kept.len() as u64;
            let more = if problems.count > kept {
                format!(" (and {} more)", problems.count - kept)
            } else {
                String::new()
            };
            return Err(self.fail("invalid_tool", format!("{}{more}", problems.kept.join("; "))));
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
