//! The `surface` of probe and check blocks (see `crate::surface`): its shape, its share of
//! the observation digest, and its diff, shared by both kinds.

use serde_json::Value;

use super::shape::{COUNT, Field, SHA256, Shape};
use super::{Change, View};
use crate::evidence::canonical_scan::Raw;

const DIGEST_OR_NULL: Shape = Shape::OrNull(&SHA256);
const TEXT_OR_NULL: Shape = Shape::OrNull(&Shape::Str);

/// One tool: its name, the digest of the whole tool, of each part (null when absent) and the
/// start of its description.
const TOOL: Shape = Shape::Obj(&[
    Field::req("name", Shape::Str),
    Field::req("sha256", SHA256),
    Field::req("title", DIGEST_OR_NULL),
    Field::req("description", DIGEST_OR_NULL),
    Field::req("input_schema", DIGEST_OR_NULL),
    Field::req("output_schema", DIGEST_OR_NULL),
    Field::req("annotations", DIGEST_OR_NULL),
    Field::req("description_text", TEXT_OR_NULL),
]);

/// One resource or resource template (`name` is its URI or URI template).
const RESOURCE: Shape = Shape::Obj(&[
    Field::req("name", Shape::Str),
    Field::req("sha256", SHA256),
    Field::req("display_name", DIGEST_OR_NULL),
    Field::req("title", DIGEST_OR_NULL),
    Field::req("description", DIGEST_OR_NULL),
    Field::req("mime_type", DIGEST_OR_NULL),
    Field::req("annotations", DIGEST_OR_NULL),
    Field::req("description_text", TEXT_OR_NULL),
]);

/// One prompt, its arguments digested as one part.
const PROMPT: Shape = Shape::Obj(&[
    Field::req("name", Shape::Str),
    Field::req("sha256", SHA256),
    Field::req("title", DIGEST_OR_NULL),
    Field::req("description", DIGEST_OR_NULL),
    Field::req("arguments", DIGEST_OR_NULL),
    Field::req("description_text", TEXT_OR_NULL),
]);

/// A list: the items described (at most `MAX_ITEMS`), how many there were, and whether all
/// of them are described.
const TOOLS: Shape = Shape::Obj(&[
    Field::req("items", Shape::Array(&TOOL, Some(crate::surface::MAX_ITEMS))),
    Field::req("count", COUNT),
    Field::req("complete", Shape::Bool),
]);
const RESOURCES: Shape = Shape::Obj(&[
    Field::req("items", Shape::Array(&RESOURCE, Some(crate::surface::MAX_ITEMS))),
    Field::req("count", COUNT),
    Field::req("complete", Shape::Bool),
]);
const PROMPTS: Shape = Shape::Obj(&[
    Field::req("items", Shape::Array(&PROMPT, Some(crate::surface::MAX_ITEMS))),
    Field::req("count", COUNT),
    Field::req("complete", Shape::Bool),
]);

const INSTRUCTIONS: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("sha256", SHA256),
    Field::req("text", Shape::Str),
]));

/// A probe block's `surface`: its tools and instructions; null when the tool list was not
/// walked to its end.
pub const PROBE: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("sha256", SHA256),
    Field::req("instructions", INSTRUCTIONS),
    Field::req("tools", TOOLS),
]));

/// A check block's `surface`: also the resources, templates and prompts it walked.
pub const CHECK: Shape = Shape::OrNull(&Shape::Obj(&[
    Field::req("sha256", SHA256),
    Field::req("instructions", INSTRUCTIONS),
    Field::req("tools", TOOLS),
    Field::opt("resources", RESOURCES),
    Field::opt("resource_templates", RESOURCES),
    Field::opt("prompts", PROMPTS),
]));

/// The observation digest's `surface` member: `surface.sha256`, when the block has a
/// surface (blocks written before it existed keep their digest).
pub fn observed<'a>(b: &View<'a>) -> Option<Raw<'a>> {
    let surface = b.at("surface");
    // `sha256` comes before `tools`: the item lists are not read.
    (!surface.is_null()).then(|| surface.find("sha256"))
}

/// The surface's changes, per item and part, when both blocks have one.
pub fn diff(old: &Value, new: &Value, out: &mut Vec<Change>) {
    let (Some(a), Some(b)) = (
        old.get("surface").filter(|s| s.is_object()),
        new.get("surface").filter(|s| s.is_object()),
    ) else {
        return;
    };
    for change in crate::surface::compare(a, b) {
        let description = match &change {
            crate::surface::Change::Changed { kind, name, parts }
                if parts.iter().any(|p| p == "description") =>
            {
                let text = |s: &Value| -> Option<String> {
                    let list = match *kind {
                        "tool" => "tools",
                        "resource" => "resources",
                        "resource_template" => "resource_templates",
                        _ => "prompts",
                    };
                    s.get(list)?
                        .get("items")?
                        .as_array()?
                        .iter()
                        .find(|i| i.get("name").and_then(Value::as_str) == Some(name))?
                        .get("description_text")?
                        .as_str()
                        .map(str::to_string)
                };
                Some((text(a), text(b)))
            }
            _ => None,
        };
        out.push(Change::Surface { change, description });
    }
}
