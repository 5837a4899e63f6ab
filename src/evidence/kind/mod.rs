//! The block kinds. Each kind lives in one file of this folder (`probe.rs`, `check.rs`,
//! `client.rs`): its fields and their nested shape, how its target id and observation digest
//! are computed, its extra verify rules and its diff. `BlockKind` is the only list of kinds:
//! verify, diff and the record writers go through it, and a unit test holds
//! `schemas/evidence-block.schema.json` and the field lists of README.md to exactly these
//! shapes. Adding a field to a kind is one line in its file (and, if what it records is part
//! of the observation, a line in its `observation`), plus its writer; the tests then demand
//! its line in the schema and in the README.

pub mod check;
pub mod client;
pub mod one_pass;
pub mod probe;
pub mod shape;
pub mod surface;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use std::borrow::Cow;

use super::block::BlockError;
use super::canonical;
use super::canonical_scan::Raw;
use crate::inert::inert;
pub use shape::{Field, Shape, Syntax};

/// Every kind this version writes and verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockKind {
    Probe,
    Check,
    Client,
}

/// What one kind is: everything verify, diff and the writers need to know about it.
pub struct Spec {
    /// The `kind` value.
    pub name: &'static str,
    /// Its fields beyond the envelope (`target` included), in the order verify checks them.
    pub fields: &'static [Field],
    /// The canonical bytes whose SHA-256 is `target.id`, from the block's `target`.
    pub identity: fn(Raw<'_>) -> Vec<u8>,
    /// The canonical bytes whose SHA-256 is `observation_sha256`, from the block.
    pub observation: fn(&View<'_>) -> Vec<u8>,
    /// Rules beyond shape and digests: `Err((field path, problem))`.
    pub rules: fn(&View<'_>) -> Result<(), (String, String)>,
    /// What changed from `old` to `new` (two blocks of this kind and one target).
    pub diff: fn(&Value, &Value, &mut Vec<Change>),
    /// How long the recorded run took, in ms (0 when the kind does not say): how far back
    /// append looks for a duplicate.
    pub run_ms: fn(&View<'_>) -> u64,
}

impl BlockKind {
    /// The only list of kinds.
    pub const ALL: [BlockKind; 3] = [BlockKind::Probe, BlockKind::Check, BlockKind::Client];

    pub const fn spec(self) -> &'static Spec {
        match self {
            BlockKind::Probe => &probe::SPEC,
            BlockKind::Check => &check::SPEC,
            BlockKind::Client => &client::SPEC,
        }
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn from_name(name: &str) -> Option<BlockKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// "probe, check, client": for messages.
    pub fn names() -> String {
        NAMES.join(", ")
    }

    /// `target.id` for a block of this kind with this `target` object.
    pub fn target_id(self, target: &Value) -> String {
        let bytes = canonical::to_bytes(target);
        sha256_hex(&(self.spec().identity)(Raw(&bytes)))
    }

    /// `observation_sha256` for a block of this kind (`fields` holds at least the fields the
    /// observation covers).
    pub fn observation_sha256(self, fields: &Value) -> String {
        let bytes = canonical::to_bytes(fields);
        sha256_hex(&(self.spec().observation)(&View::of(Raw(&bytes))))
    }

    /// Sets `target.id` and `observation_sha256` of a body to what its fields make them
    /// (for a body built or edited field by field).
    pub fn refresh_digests(self, body: &mut serde_json::Map<String, Value>) {
        if let Some(target) = body.get_mut("target").filter(|t| t.is_object()) {
            let id = self.target_id(target);
            target["id"] = id.into();
        }
        let observation = self.observation_sha256(&Value::Object(body.clone()));
        body.insert("observation_sha256".into(), observation.into());
    }

    /// Checks a block of this kind (its top-level members, read in place from a canonical
    /// line) beyond its envelope's syntax: the shape of every field, nested ones included
    /// (envelope first, then the kind's fields, each in table order), then `target.id`, then
    /// `observation_sha256`, then the kind's own rules.
    pub fn check(self, block: &View<'_>) -> Result<(), BlockError> {
        let spec = self.spec();
        let tables = [ENVELOPE, spec.fields];
        shape::check_members(&tables, &block.members, shape::At::Top)?;
        self.check_beyond_shape(block)
    }

    /// What `check` holds a block to after its shape: format v1 holds no v2 field, then
    /// `target.id`, then `observation_sha256`, then the kind's own rules (for a block whose
    /// shape `one_pass::read` has already found to fit).
    pub fn check_beyond_shape(self, block: &View<'_>) -> Result<(), BlockError> {
        let spec = self.spec();
        if block.at("format").str().as_deref() == Some(super::block::FORMAT_V1) {
            v1_holds_no_v2_field(block)?;
        }
        // A digest field matches when it is the lower-case hex of the digest: decoding it
        // (only lower-case hex decodes) and comparing bytes says the same as encoding.
        let matches = |field: Raw<'_>, bytes: &[u8]| field.hex::<32>() == Some(Sha256::digest(bytes).into());
        let target = block.at("target");
        if !matches(target.find("id"), &(spec.identity)(target)) {
            return Err(BlockError::Digest("target.id"));
        }
        if !matches(block.at("observation_sha256"), &(spec.observation)(block)) {
            return Err(BlockError::Digest("observation_sha256"));
        }
        (spec.rules)(block).map_err(|(path, problem)| BlockError::Field(path, problem))
    }

    /// What changed between two blocks of this kind; when the observation digests differ,
    /// never empty.
    pub fn diff(self, old: &Value, new: &Value) -> Vec<Change> {
        let mut out = Vec::new();
        (self.spec().diff)(old, new, &mut out);
        if out.is_empty() && old["observation_sha256"] != new["observation_sha256"] {
            out.push(Change::field(
                "observation",
                "observation_sha256",
                &old["observation_sha256"],
                &new["observation_sha256"],
            ));
        }
        out
    }
}

/// Members added by format v2: a v1 block holding one was not written by any version.
const V2_TOP: &[&str] = &["surface", "expected", "http"];
const V2_TARGET: &[&str] = &["program_sha256_source", "url", "transport", "headers"];

fn v1_holds_no_v2_field(block: &View<'_>) -> Result<(), BlockError> {
    let has = |v: &View<'_>, k: &str| v.members.iter().any(|(m, _)| m.as_ref() == k.as_bytes());
    let v2 = |path: String| BlockError::Field(path, "is a format v2 field, in a v1 block".into());
    if let Some(k) = V2_TOP.iter().find(|k| has(block, k)) {
        return Err(v2((*k).to_string()));
    }
    let target = View::of(block.at("target"));
    if let Some(k) = V2_TARGET.iter().find(|k| has(&target, k)) {
        return Err(v2(format!("target.{k}")));
    }
    if has(&View::of(block.at("session")), "http") {
        return Err(v2("session.http".into()));
    }
    Ok(())
}

/// SHA-256 (lower-case hex) of canonical bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::hex::encode(&Sha256::digest(bytes))
}

/// An object read in place: its members, scanned once, looked up by key.
pub struct View<'a> {
    pub members: Vec<(Cow<'a, [u8]>, Raw<'a>)>,
}

impl<'a> View<'a> {
    /// The members of an object (none when `raw` is not one).
    pub fn of(raw: Raw<'a>) -> View<'a> {
        View {
            members: raw.members().unwrap_or_default(),
        }
    }

    /// A member's value, or `null` when absent.
    pub fn at(&self, key: &str) -> Raw<'a> {
        use crate::evidence::canonical_scan::{byte_order, key_order};
        // Members of a canonical object are in key order: byte order when the key is ASCII
        // (every field name), decided once, not at each step of the search.
        let found = if key.is_ascii() {
            self.members
                .binary_search_by(|(k, _)| byte_order(k, key.as_bytes()))
        } else {
            self.members
                .binary_search_by(|(k, _)| key_order(k, key.as_bytes()))
        };
        found.map_or(Raw(b"null"), |i| self.members[i].1)
    }
}

/// The canonical bytes of an object of these members (ASCII keys, canonical values).
pub(crate) fn object(members: &[(&str, &[u8])]) -> Vec<u8> {
    // Members given in key order (as the kinds list them) are written as they are.
    if members.windows(2).all(|w| w[0].0 < w[1].0) {
        return object_in_order(members.iter().copied(), members);
    }
    // Otherwise sorted in place through their indexes when few: nothing allocated but the
    // output.
    const FEW: usize = 16;
    let mut order = [0usize; FEW];
    let mut many = Vec::new();
    let order: &mut [usize] = if members.len() <= FEW {
        &mut order[..members.len()]
    } else {
        many.resize(members.len(), 0);
        &mut many
    };
    for (n, o) in order.iter_mut().enumerate() {
        *o = n;
    }
    order.sort_by(|&a, &b| members[a].0.cmp(members[b].0));
    object_in_order(order.iter().map(|&n| members[n]), members)
}

/// The canonical bytes of `sorted`, the members of `all` in key order.
fn object_in_order<'m>(sorted: impl Iterator<Item = (&'m str, &'m [u8])>, all: &[(&str, &[u8])]) -> Vec<u8> {
    let size = all.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>();
    let mut out = Vec::with_capacity(size + 2);
    out.push(b'{');
    for (i, (k, v)) in sorted.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(v);
    }
    out.push(b'}');
    out
}

/// The canonical bytes of an array of these items.
pub(crate) fn array<'b>(items: impl IntoIterator<Item = &'b [u8]>) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, v) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(v);
    }
    out.push(b']');
    out
}

/// The kind names, in `BlockKind::ALL` order (derived from it, not a second list).
pub const NAMES: [&str; BlockKind::ALL.len()] = {
    let mut names = [""; BlockKind::ALL.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = BlockKind::ALL[i].spec().name;
        i += 1;
    }
    names
};

/// The `format` values a block may carry.
pub const FORMATS: &[&str] = &[super::block::FORMAT_V1, super::block::FORMAT];

/// Fields every block has, in the order verify checks them (`target` is each kind's own).
pub const ENVELOPE: &[Field] = &[
    Field::req("format", Shape::Enum(FORMATS)),
    Field::req("kind", Shape::Enum(&NAMES)),
    Field::req("seq", Shape::Int(1, canonical::MAX_SAFE_INTEGER as i64)),
    Field::req("prev", shape::SHA256),
    Field::req("file_id", Shape::Text(Syntax::Hex(16))),
    Field::req("key", Shape::Text(Syntax::PublicKey)),
    Field::req("hash", shape::SHA256),
    Field::req("sig", Shape::Text(Syntax::Hex(64))),
    Field::req("observed_at", Shape::Text(Syntax::Stamp)),
    Field::req("tz", Shape::OrNull(&Shape::Str)),
    Field::req("host", Shape::Str),
    Field::req(
        "tool",
        Shape::Obj(&[Field::req("name", Shape::Str), Field::req("version", Shape::Str)]),
    ),
];

/// One difference between two blocks, as data; `text` gives its sentence.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A value that differs: its field path, a label for the sentence, before and after.
    Field {
        label: &'static str,
        field: &'static str,
        from: Value,
        to: Value,
    },
    /// Names that appeared in a list (`list`: tools).
    Added { list: &'static str, items: Vec<String> },
    /// Names that left a list.
    Removed { list: &'static str, items: Vec<String> },
    /// An item of the surface added, removed or changed (which parts), with the start of a
    /// changed description before and after.
    Surface {
        change: crate::surface::Change,
        description: Option<(Option<String>, Option<String>)>,
    },
    /// One item of a list (check results, client domains) whose status changed, appeared
    /// (`from` null) or went (`to` null).
    Item {
        list: &'static str,
        id: String,
        from: Option<String>,
        to: Option<String>,
    },
}

impl Change {
    pub fn field(label: &'static str, field: &'static str, from: &Value, to: &Value) -> Change {
        Change::Field {
            label,
            field,
            from: from.clone(),
            to: to.clone(),
        }
    }

    /// The change as `diff --json` prints it.
    pub fn to_json(&self) -> Value {
        match self {
            Change::Field { field, from, to, .. } => {
                json!({"change": "changed", "field": field, "from": from, "to": to})
            }
            Change::Added { list, items } => json!({"change": "added", "list": list, "items": items}),
            Change::Removed { list, items } => {
                json!({"change": "removed", "list": list, "items": items})
            }
            Change::Item { list, id, from, to } => {
                json!({"change": "item", "list": list, "id": id, "from": from, "to": to})
            }
            Change::Surface { change, description } => {
                let mut v = change.to_json();
                v["list"] = "surface".into();
                if let Some((from, to)) = description {
                    v["description"] = json!({"from": from, "to": to});
                }
                v
            }
        }
    }

    /// The change as one line of text; everything quoted from a block is made inert.
    pub fn text(&self) -> String {
        let names = |items: &[String]| items.iter().map(|s| inert(s)).collect::<Vec<_>>().join(", ");
        match self {
            Change::Field { label, from, to, .. } => {
                format!("{label}: {} -> {}", bounded(from), bounded(to))
            }
            Change::Added { list, items } => format!("{list} added: {}", names(items)),
            Change::Removed { list, items } => format!("{list} removed: {}", names(items)),
            Change::Surface { change, description } => {
                let mut line = inert(&change.sentence()).into_owned();
                if let Some((from, to)) = description {
                    let quote = |t: &Option<String>| {
                        t.as_deref().map_or_else(
                            || "(none)".to_string(),
                            |t| format!("{:?}", crate::text::truncate(&inert(t), 200)),
                        )
                    };
                    line.push_str(&format!(" (description {} -> {})", quote(from), quote(to)));
                }
                line
            }
            Change::Item { list, id, from, to } => match (from, to) {
                (Some(a), Some(b)) => format!("{}: {} -> {}", inert(id), inert(a), inert(b)),
                (None, Some(b)) => format!("{}: new ({})", inert(id), inert(b)),
                (Some(a), None) if *list == "results" => {
                    format!("{}: no longer run (was {})", inert(id), inert(a))
                }
                (Some(a), None) => format!("{}: no longer present (was {})", inert(id), inert(a)),
                (None, None) => inert(id).into_owned(),
            },
        }
    }
}

/// A value as one bounded, inert line of text (`--json` keeps it whole).
fn bounded(v: &Value) -> String {
    const MAX: usize = 200;
    let text = v.to_string();
    let cut: String = text.chars().take(MAX).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    format!("{}{more}", inert(&cut))
}

/// A field's change, when it differs.
pub(crate) fn field_change(
    out: &mut Vec<Change>,
    label: &'static str,
    field: &'static str,
    a: &Value,
    b: &Value,
) {
    if a != b {
        out.push(Change::field(label, field, a, b));
    }
}

/// Names added to and removed from a list of strings.
pub(crate) fn list_change(out: &mut Vec<Change>, list: &'static str, a: &[String], b: &[String]) {
    let added: Vec<String> = b.iter().filter(|n| !a.contains(n)).cloned().collect();
    let removed: Vec<String> = a.iter().filter(|n| !b.contains(n)).cloned().collect();
    if !added.is_empty() {
        out.push(Change::Added { list, items: added });
    }
    if !removed.is_empty() {
        out.push(Change::Removed { list, items: removed });
    }
}

/// Items `(id, status)` compared by id: changed, new, gone.
pub(crate) fn item_changes(
    out: &mut Vec<Change>,
    list: &'static str,
    a: &[(String, String)],
    b: &[(String, String)],
) {
    for (id, s) in b {
        match a.iter().find(|(i, _)| i == id) {
            Some((_, was)) if was != s => out.push(Change::Item {
                list,
                id: id.clone(),
                from: Some(was.clone()),
                to: Some(s.clone()),
            }),
            None => out.push(Change::Item {
                list,
                id: id.clone(),
                from: None,
                to: Some(s.clone()),
            }),
            _ => {}
        }
    }
    for (id, s) in a {
        if !b.iter().any(|(i, _)| i == id) {
            out.push(Change::Item {
                list,
                id: id.clone(),
                from: Some(s.clone()),
                to: None,
            });
        }
    }
}

/// The strings of a JSON array (others skipped).
pub(crate) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The server and program changes probe and check blocks share.
pub(crate) fn server_changes(old: &Value, new: &Value, out: &mut Vec<Change>) {
    field_change(
        out,
        "server name",
        "server.name",
        &old["server"]["name"],
        &new["server"]["name"],
    );
    field_change(
        out,
        "server version",
        "server.version",
        &old["server"]["version"],
        &new["server"]["version"],
    );
    field_change(
        out,
        "protocol version",
        "protocol_version",
        &old["protocol_version"],
        &new["protocol_version"],
    );
    field_change(
        out,
        "program",
        "target.program_sha256",
        &old["target"]["program_sha256"],
        &new["target"]["program_sha256"],
    );
}

#[cfg(test)]
mod tests;
