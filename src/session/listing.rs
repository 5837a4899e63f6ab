//! The paginated walk of a list method (`tools/list`, `resources/list`, `prompts/list`,
//! `resources/templates/list`):
//! cursors followed until absent, a repeated cursor or too many pages stop it, and every
//! item is shown to the caller once. What is kept is bounded however much the server lists.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::Envelope;
use crate::rpc::{NoReply, Reply, Rpc};
use crate::text::truncate;

/// The most pages followed before a list counts as endless.
pub const MAX_PAGES: u64 = 1000;
/// Items of one list kept, however many the server lists.
const ITEMS_KEEP: usize = 10_000;
/// Estimated structure of the items kept (see `json_budget::cost`).
const ITEMS_KEEP_COST: usize = 16 << 20;
/// Names kept across the pages of one list (for the duplicate check).
const NAMES_KEEP: usize = 20_000;

/// Which list to walk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListSpec {
    pub method: &'static str,
    /// The result's array of items.
    pub key: &'static str,
    /// The field that names an item (`name`, or `uri` for resources).
    pub name_key: &'static str,
    /// Keep the items and names (bounded) for the caller to read afterwards.
    pub keep_items: bool,
}

impl ListSpec {
    pub const TOOLS: ListSpec = ListSpec::new("tools/list", "tools", "name");
    pub const RESOURCES: ListSpec = ListSpec::new("resources/list", "resources", "uri");
    pub const PROMPTS: ListSpec = ListSpec::new("prompts/list", "prompts", "name");
    pub const TEMPLATES: ListSpec =
        ListSpec::new("resources/templates/list", "resourceTemplates", "uriTemplate");

    const fn new(method: &'static str, key: &'static str, name_key: &'static str) -> ListSpec {
        ListSpec {
            method,
            key,
            name_key,
            keep_items: true,
        }
    }
}

/// What stopped a walk before the last page.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListStop {
    /// A page request got an error reply, a malformed one, or none.
    Reply(Result<Reply, NoReply>),
    /// The result has no array under the list's key.
    NoArray,
    /// A modern result whose `resultType` is not `complete`.
    ResultType(String),
    /// `nextCursor` came back a second time: a client would loop forever.
    RepeatedCursor(String),
    /// Still a `nextCursor` after `MAX_PAGES` pages.
    TooManyPages,
    /// `nextCursor` is neither a string nor absent.
    BadCursor,
}

/// A list walked across its pages.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// The capability was declared.
    pub declared: bool,
    /// The list was requested.
    pub fetched: bool,
    /// The items kept: at most `ITEMS_KEEP` of them and `ITEMS_KEEP_COST` of estimated
    /// structure, in reply order (none unless the spec keeps items).
    pub items: Vec<Value>,
    /// Items seen across every page (kept or not).
    pub items_seen: u64,
    /// Items or names were left out to stay within the bounds.
    pub cut: bool,
    /// Estimated structure of `items`.
    kept_cost: usize,
    /// Pages answered with a result.
    pub pages: u64,
    /// Page requests sent.
    pub requests: u64,
    /// Names (or URIs) per page, in order: at most `NAMES_KEEP` in all.
    pub page_names: Vec<Vec<String>>,
    /// A page's `nextCursor` was the empty string.
    pub empty_cursor: bool,
    /// What ended the walk early.
    pub(crate) stop: Option<ListStop>,
    /// Milliseconds the walk took.
    pub elapsed_ms: u64,
}

impl Listing {
    /// A list the walk did not fetch.
    pub(crate) fn not_fetched(declared: bool) -> Listing {
        Listing {
            declared,
            ..Listing::default()
        }
    }

    /// The repeated cursor, when that ended the walk (64 bytes at most).
    pub fn repeated_cursor(&self) -> Option<&str> {
        match &self.stop {
            Some(ListStop::RepeatedCursor(c)) => Some(c),
            _ => None,
        }
    }

    /// The first page was refused with -32601 (Method not found).
    pub fn method_not_found(&self) -> bool {
        self.pages == 0
            && matches!(
                &self.stop,
                Some(ListStop::Reply(Ok(Reply::Error { code: -32601, .. })))
            )
    }

    /// What stopped the walk, in words, other than a repeated cursor.
    pub fn problem(&self, method: &str) -> Option<String> {
        Some(match self.stop.as_ref()? {
            ListStop::Reply(reply) => format!("{method} {}", crate::rpc::describe(reply)),
            ListStop::NoArray => format!("the {method} result has no `{}` array", key_of(method)),
            ListStop::ResultType(rt) => format!("{method} returned resultType `{}`", truncate(rt, 64)),
            ListStop::RepeatedCursor(_) => return None,
            ListStop::TooManyPages => format!("{method} still had a nextCursor after {MAX_PAGES} pages"),
            ListStop::BadCursor => format!("{method}: nextCursor is neither a string nor absent"),
        })
    }
}

/// The array key of a list method (`tools/list` → `tools`).
fn key_of(method: &str) -> &str {
    method.split('/').next().unwrap_or(method)
}

/// Walks every page of `spec` on the session, showing each item to `visit` (with its index
/// across pages) before deciding whether to keep it.
pub(crate) fn walk(
    rpc: &mut Rpc,
    envelope: &Envelope,
    timeout: Duration,
    spec: ListSpec,
    visit: &mut dyn FnMut(u64, &Value),
) -> Listing {
    let started = std::time::Instant::now();
    let mut l = Listing {
        fetched: true,
        ..Listing::default()
    };
    let mut cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    l.stop = loop {
        let params = cursor.as_ref().map(|c| json!({"cursor": c}));
        l.requests += 1;
        let mut page = match rpc.request(spec.method, envelope.wrap(params), timeout) {
            Ok(Reply::Result(r)) => r,
            other => break Some(ListStop::Reply(other)),
        };
        l.pages += 1;
        let Some(Value::Array(items)) = page.get_mut(spec.key).map(Value::take) else {
            break Some(ListStop::NoArray);
        };
        for (i, item) in items.iter().enumerate() {
            visit(l.items_seen + i as u64, item);
        }
        keep_page(&mut l, items, spec);
        if let Some(rt) = page.get("resultType").and_then(Value::as_str)
            && rt != "complete"
        {
            break Some(ListStop::ResultType(truncate(rt, 64)));
        }
        match page.get("nextCursor") {
            None | Some(Value::Null) => break None,
            Some(Value::String(next)) => {
                if next.is_empty() {
                    l.empty_cursor = true;
                }
                if !cursors.insert(Sha256::digest(next.as_bytes())) {
                    break Some(ListStop::RepeatedCursor(truncate(next, 64)));
                }
                if l.pages >= MAX_PAGES {
                    break Some(ListStop::TooManyPages);
                }
                cursor = Some(next.clone());
            }
            Some(_) => break Some(ListStop::BadCursor),
        }
    };
    l.elapsed_ms = started.elapsed().as_millis() as u64;
    l
}

/// Keeps what the bounds allow of one page: names for the duplicate check, items (moved,
/// not copied) for the caller.
fn keep_page(l: &mut Listing, items: Vec<Value>, spec: ListSpec) {
    if !spec.keep_items {
        l.items_seen += items.len() as u64;
        return;
    }
    let room = NAMES_KEEP.saturating_sub(l.page_names.iter().map(Vec::len).sum());
    let mut names = Vec::new();
    for n in items
        .iter()
        .filter_map(|t| t.get(spec.name_key).and_then(Value::as_str))
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
