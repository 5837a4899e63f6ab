//! Pagination checks: every page of each list was walked once up front (session.rs); these
//! grade the walk.

use std::collections::HashSet;

use super::Outcome;
use crate::check::session::Ctx;
use crate::session::Listing;

fn grade(listing: &Listing, what: &str) -> Outcome {
    if !listing.declared {
        return Outcome::skip(format!("`{what}` is not declared"));
    }
    if listing.pages == 0 {
        return Outcome::skip(format!(
            "{what}/list did not answer (see protocol.capabilities.{what})"
        ));
    }
    if let Some(c) = listing.repeated_cursor() {
        return Outcome::fail(format!(
            "page {} repeated the cursor `{c}`: a client following nextCursor loops forever",
            listing.pages
        ));
    }
    let mut seen = HashSet::new();
    let mut dups = Vec::new();
    for (page, names) in listing.page_names.iter().enumerate() {
        for n in names {
            if !seen.insert(n.as_str()) && dups.len() < 10 {
                dups.push(format!("`{n}` (again on page {})", page + 1));
            }
        }
    }
    if !dups.is_empty() {
        return Outcome::fail(format!(
            "the same entry on more than one place: {}",
            dups.join(", ")
        ));
    }
    if let Some(p) = listing.problem(&format!("{what}/list")) {
        return Outcome::fail(p);
    }
    if listing.empty_cursor {
        return Outcome::warn(
            "a page returned nextCursor \"\": some clients take it for the end, others loop",
        );
    }
    Outcome::pass(format!("{} pages, {} entries", listing.pages, listing.items_seen))
}

pub fn tools(ctx: &mut Ctx<'_>) -> Outcome {
    grade(&ctx.tools, "tools")
}

pub fn resources(ctx: &mut Ctx<'_>) -> Outcome {
    grade(&ctx.resources, "resources")
}

pub fn prompts(ctx: &mut Ctx<'_>) -> Outcome {
    grade(&ctx.prompts, "prompts")
}
