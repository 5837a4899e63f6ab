//! Every message a server sends, held to the MCP schema of the negotiated version: the
//! JSON-RPC envelope, each result type, error objects, notifications and server requests.
//! Written from the specification's `schema.ts` of 2024-11-05, 2025-03-26, 2025-06-18,
//! 2025-11-25 and 2026-07-28; what a violation costs is graded by what the official clients
//! do with it: the TypeScript SDK's zod schemas and the Python SDK's pydantic types.
//! A violation either of them rejects is `Reject`; one both tolerate is `Tolerated`.
//!
//! This module owns the rules and their ids; `Log` keeps a bounded record of what a run saw.
//! It never recurses into server data past a fixed depth and stops at `MAX_VIOLATIONS` a
//! message, so a hostile message costs at most one walk of what the parse budget let in.

mod content;
mod envelope;
mod lifecycle;
mod lists;
mod notifications;
mod prompts;
mod server_requests;

use serde_json::{Map, Value};

/// Violations kept for one message; the rest are counted.
pub const MAX_VIOLATIONS: usize = 16;
/// Items of one array walked (a list result bigger than this is walked in part).
const MAX_ITEMS: usize = 100_000;
/// Characters of an offending payload kept.
const PAYLOAD_CHARS: usize = 240;

/// A protocol version this validator knows, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V2024_11_05,
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

impl Version {
    pub const ALL: [Version; 5] = [
        Version::V2024_11_05,
        Version::V2025_03_26,
        Version::V2025_06_18,
        Version::V2025_11_25,
        Version::V2026_07_28,
    ];

    pub fn parse(text: &str) -> Option<Version> {
        Version::ALL.into_iter().find(|v| v.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Version::V2024_11_05 => "2024-11-05",
            Version::V2025_03_26 => "2025-03-26",
            Version::V2025_06_18 => "2025-06-18",
            Version::V2025_11_25 => "2025-11-25",
            Version::V2026_07_28 => "2026-07-28",
        }
    }

    /// The stateless era (no `initialize`, `resultType` on results, no server requests).
    pub fn modern(self) -> bool {
        self >= Version::V2026_07_28
    }
}

/// What a client does with a message that breaks a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The specification says otherwise, yet the official clients accept it.
    Tolerated,
    /// An official client (TypeScript or Python SDK) refuses the message.
    Reject,
}

/// One broken rule in one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the message (RFC 6901), `""` for the message itself.
    pub pointer: String,
    /// A stable id fragment: `required`, `type`, `null`, `enum`, `jsonrpc`, …
    pub rule: &'static str,
    pub message: String,
    pub severity: Severity,
    /// The offending value, as one line of inert JSON, cut to `PAYLOAD_CHARS`.
    pub payload: String,
}

/// Which kind of message, and for a reply, to what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind<'m> {
    /// A reply to a request of ours with this method (`None`: a raw line, no method known).
    Reply(Option<&'m str>),
    /// A message with a method and no id.
    Notification,
    /// A message with a method and an id.
    ServerRequest,
}

/// The family of a message: one `wire.*` check grades each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `jsonrpc`, ids, result/error exclusivity, on every message.
    Envelope,
    /// Error objects (`code`, `message`).
    Errors,
    /// `initialize` and `server/discover` results.
    Initialize,
    /// `ping` and `logging/setLevel` (empty results).
    Empty,
    ToolsList,
    ResourcesList,
    TemplatesList,
    PromptsList,
    ToolsCall,
    ResourcesRead,
    PromptsGet,
    Completion,
    Notifications,
    ServerRequests,
}

impl Family {
    pub const ALL: [Family; 14] = [
        Family::Envelope,
        Family::Errors,
        Family::Initialize,
        Family::Empty,
        Family::ToolsList,
        Family::ResourcesList,
        Family::TemplatesList,
        Family::PromptsList,
        Family::ToolsCall,
        Family::ResourcesRead,
        Family::PromptsGet,
        Family::Completion,
        Family::Notifications,
        Family::ServerRequests,
    ];

    /// The family of a reply to `method`.
    pub fn of_method(method: &str) -> Option<Family> {
        Some(match method {
            "initialize" | "server/discover" => Family::Initialize,
            "ping" | "logging/setLevel" => Family::Empty,
            "tools/list" => Family::ToolsList,
            "resources/list" => Family::ResourcesList,
            "resources/templates/list" => Family::TemplatesList,
            "prompts/list" => Family::PromptsList,
            "tools/call" => Family::ToolsCall,
            "resources/read" => Family::ResourcesRead,
            "prompts/get" => Family::PromptsGet,
            "completion/complete" => Family::Completion,
            _ => return None,
        })
    }

    /// What the family's messages are, in words.
    pub fn what(self) -> &'static str {
        match self {
            Family::Envelope => "JSON-RPC envelopes",
            Family::Errors => "error replies",
            Family::Initialize => "initialize / server/discover results",
            Family::Empty => "ping / logging/setLevel results",
            Family::ToolsList => "tools/list results",
            Family::ResourcesList => "resources/list results",
            Family::TemplatesList => "resources/templates/list results",
            Family::PromptsList => "prompts/list results",
            Family::ToolsCall => "tools/call results",
            Family::ResourcesRead => "resources/read results",
            Family::PromptsGet => "prompts/get results",
            Family::Completion => "completion/complete results",
            Family::Notifications => "notifications",
            Family::ServerRequests => "server-to-client requests",
        }
    }
}

/// One violation found, with the family it counts against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub family: Family,
    pub violation: Violation,
}

/// Validates one message against `version`: every violation found (at most
/// `MAX_VIOLATIONS`), each with the family whose check grades it.
pub fn validate(version: Version, kind: Kind<'_>, message: &Value) -> Vec<Found> {
    let mut v = V::new(version);
    let Some(msg) = message.as_object() else {
        v.family = Family::Envelope;
        v.reject("message", "the message is not a JSON object", message);
        return v.out;
    };
    envelope::check(&mut v, kind, msg);
    match kind {
        Kind::Reply(method) => {
            if let Some(error) = msg.get("error") {
                v.family = Family::Errors;
                v.at("error", |v| envelope::error_object(v, error));
            } else if let Some(result) = msg.get("result") {
                let family = method.and_then(Family::of_method);
                if let (Some(family), Some(method)) = (family, method) {
                    v.family = family;
                    v.at("result", |v| result_of(v, method, result));
                }
            }
        }
        Kind::Notification => {
            v.family = Family::Notifications;
            notifications::check(&mut v, msg);
        }
        Kind::ServerRequest => {
            v.family = Family::ServerRequests;
            server_requests::check(&mut v, msg);
        }
    }
    v.out
}

/// The family a message counts towards (even when it breaks no rule).
pub fn family_of(kind: Kind<'_>, message: &Value) -> Family {
    match kind {
        Kind::Reply(_) if message.get("error").is_some() => Family::Errors,
        Kind::Reply(method) => method.and_then(Family::of_method).unwrap_or(Family::Envelope),
        Kind::Notification => Family::Notifications,
        Kind::ServerRequest => Family::ServerRequests,
    }
}

fn result_of(v: &mut V, method: &str, result: &Value) {
    let Some(r) = v.object(result) else { return };
    lifecycle::result_common(v, r);
    match method {
        "initialize" => lifecycle::initialize(v, r),
        "server/discover" => lifecycle::discover(v, r),
        "ping" | "logging/setLevel" => {}
        "tools/list" => lists::tools(v, r),
        "resources/list" => lists::resources(v, r),
        "resources/templates/list" => lists::templates(v, r),
        "prompts/list" => lists::prompts(v, r),
        "tools/call" => content::call_result(v, r),
        "resources/read" => content::read_result(v, r),
        "prompts/get" => prompts::get_result(v, r),
        "completion/complete" => prompts::complete_result(v, r),
        _ => {}
    }
}

/// A JSON type, as the schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Str,
    Bool,
    Num,
    Int,
    Obj,
    Arr,
    /// A JSON-RPC id or progress token: a string or an integer.
    Id,
    /// Anything but `null`... and `null` too: `unknown` in the schema.
    Any,
}

impl Ty {
    fn accepts(self, value: &Value) -> bool {
        match self {
            Ty::Str => value.is_string(),
            Ty::Bool => value.is_boolean(),
            Ty::Num => value.is_number(),
            Ty::Int => value.is_i64() || value.is_u64(),
            Ty::Obj => value.is_object(),
            Ty::Arr => value.is_array(),
            Ty::Id => value.is_string() || value.is_i64() || value.is_u64(),
            Ty::Any => true,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Ty::Str => "a string",
            Ty::Bool => "a boolean",
            Ty::Num => "a number",
            Ty::Int => "an integer",
            Ty::Obj => "an object",
            Ty::Arr => "an array",
            Ty::Id => "a string or an integer",
            Ty::Any => "any value",
        }
    }
}

/// Bytes of a string member kept when an object is quoted by its head.
const HEAD_TEXT: usize = 40;

/// The first members of an object, to quote it without copying all of it (each member is
/// still copied whole: a payload is cut only when serialized).
pub(crate) fn head(m: &Map<String, Value>) -> Value {
    let mut head = Map::new();
    for (k, v) in m.iter().take(8) {
        // A member too big to quote is shown by its type alone.
        let shown = match v {
            Value::String(s) if s.len() > HEAD_TEXT => Value::String(crate::text::truncate(s, HEAD_TEXT)),
            Value::Array(a) if !a.is_empty() => Value::String(format!("[{} items]", a.len())),
            Value::Object(o) if !o.is_empty() => Value::String(format!("{{{} members}}", o.len())),
            other => other.clone(),
        };
        head.insert(k.clone(), shown);
    }
    Value::Object(head)
}

/// `value` as one line of JSON, at most `max` bytes of it (serialization stops soon after,
/// whatever the value's size), with every terminal hazard escaped (`crate::inert`).
fn bounded_json(value: &Value, max: usize) -> String {
    struct Upto(Vec<u8>, usize);
    impl std::io::Write for Upto {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.1.saturating_sub(self.0.len());
            if room == 0 {
                return Err(std::io::Error::other("payload cut"));
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Upto(Vec::new(), max + 1);
    if serde_json::to_writer(&mut out, value).is_ok() {
        return crate::text::truncate(&crate::inert::json(value), max);
    }
    let text = String::from_utf8_lossy(&out.0);
    crate::text::truncate(&crate::inert::inert(&text), max)
}

/// The JSON type of a value, in words.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a non-integer number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The walker: where it is in the message, what it found.
pub(crate) struct V {
    pub version: Version,
    pub family: Family,
    pointer: String,
    out: Vec<Found>,
}

impl V {
    fn new(version: Version) -> V {
        V {
            version,
            family: Family::Envelope,
            pointer: String::new(),
            out: Vec::new(),
        }
    }

    /// Whether the cap is reached (walkers stop early then).
    pub fn full(&self) -> bool {
        self.out.len() >= MAX_VIOLATIONS
    }

    /// Runs `f` one member or item deeper.
    pub fn at<R>(&mut self, segment: &str, f: impl FnOnce(&mut V) -> R) -> R {
        let len = self.pointer.len();
        self.pointer.push('/');
        for c in segment.chars() {
            match c {
                '~' => self.pointer.push_str("~0"),
                '/' => self.pointer.push_str("~1"),
                c => self.pointer.push(c),
            }
        }
        let r = f(self);
        self.pointer.truncate(len);
        r
    }

    fn report(&mut self, severity: Severity, rule: &'static str, message: String, value: &Value) {
        if self.full() {
            return;
        }
        let payload = bounded_json(value, PAYLOAD_CHARS);
        self.out.push(Found {
            family: self.family,
            violation: Violation {
                pointer: self.pointer.clone(),
                rule,
                message,
                severity,
                payload,
            },
        });
    }

    pub fn reject(&mut self, rule: &'static str, message: impl Into<String>, value: &Value) {
        self.report(Severity::Reject, rule, message.into(), value);
    }

    pub fn tolerate(&mut self, rule: &'static str, message: impl Into<String>, value: &Value) {
        self.report(Severity::Tolerated, rule, message.into(), value);
    }

    /// `value` as an object, or a violation.
    pub fn object<'a>(&mut self, value: &'a Value) -> Option<&'a Map<String, Value>> {
        let o = value.as_object();
        if o.is_none() {
            self.reject(
                "type",
                format!("{} where an object is due", type_name(value)),
                value,
            );
        }
        o
    }

    /// Member `key` of `m`, which the schema requires, of type `ty`.
    pub fn required<'a>(&mut self, m: &'a Map<String, Value>, key: &str, ty: Ty) -> Option<&'a Value> {
        match m.get(key) {
            None => {
                if !self.full() {
                    // Only the start of the object is quoted: copy no more of it than that.
                    let message = format!("`{key}` is missing ({} required)", ty.name());
                    self.reject("required", message, &head(m));
                }
                None
            }
            Some(value) => self.typed(key, value, ty),
        }
    }

    /// Member `key` of `m`, which the schema allows to be absent, of type `ty`.
    pub fn optional<'a>(&mut self, m: &'a Map<String, Value>, key: &str, ty: Ty) -> Option<&'a Value> {
        m.get(key).and_then(|value| self.typed(key, value, ty))
    }

    fn typed<'a>(&mut self, key: &str, value: &'a Value, ty: Ty) -> Option<&'a Value> {
        if ty.accepts(value) {
            return Some(value);
        }
        self.at(key, |v| {
            if value.is_null() {
                v.reject(
                    "null",
                    format!(
                        "`{key}` is null: the schema allows {} or no member at all",
                        ty.name()
                    ),
                    value,
                );
            } else {
                v.reject(
                    "type",
                    format!("`{key}` is {}, not {}", type_name(value), ty.name()),
                    value,
                );
            }
        });
        None
    }

    /// An optional string member whose value must be one of `allowed`.
    pub fn optional_enum(&mut self, m: &Map<String, Value>, key: &str, allowed: &[&str]) {
        if let Some(Value::String(s)) = self.optional(m, key, Ty::Str)
            && !allowed.contains(&s.as_str())
        {
            let value = &m[key];
            self.at(key, |v| {
                v.reject(
                    "enum",
                    format!("`{key}` is not one of {}", allowed.join(", ")),
                    value,
                )
            });
        }
    }

    /// Member `key`, an array: `each` on every item (at most `MAX_ITEMS`), one level deeper.
    pub fn each(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        required: bool,
        mut each: impl FnMut(&mut V, &Value),
    ) {
        let items = if required {
            self.required(m, key, Ty::Arr)
        } else {
            self.optional(m, key, Ty::Arr)
        };
        let Some(Value::Array(items)) = items else { return };
        self.at(key, |v| {
            for (i, item) in items.iter().take(MAX_ITEMS).enumerate() {
                if v.full() {
                    break;
                }
                v.at(&i.to_string(), |v| each(v, item));
            }
        });
    }

    /// `_meta`, where present, is an object.
    pub fn meta(&mut self, m: &Map<String, Value>) {
        self.optional(m, "_meta", Ty::Obj);
    }
}

/// Every violation of one family, over a run: counts, and the first few kept.
#[derive(Debug, Clone, Default)]
pub struct FamilyLog {
    /// Messages of the family validated.
    pub messages: u64,
    pub rejects: u64,
    pub tolerated: u64,
    pub kept: Vec<Violation>,
}

/// Violations kept per family (the rest counted).
const KEPT_PER_FAMILY: usize = 12;
/// Notifications and server requests validated per run (later ones are only counted).
pub const SAMPLE_UNSOLICITED: u64 = 256;

/// What a run's messages showed, family by family.
#[derive(Debug, Clone, Default)]
pub struct Log {
    /// The negotiated version (messages before the handshake names it are read against the
    /// version they answer, or the default).
    pub version: Option<Version>,
    pub families: std::collections::BTreeMap<Family, FamilyLog>,
    /// Notifications and server requests not parsed: past the sample, or past their budget.
    pub unsampled: u64,
}

impl Log {
    /// Validates `message` and records what it broke.
    pub fn record(&mut self, kind: Kind<'_>, message: &Value) {
        let version = self.version.unwrap_or_else(|| guess_version(kind, message));
        let family = family_of(kind, message);
        self.families.entry(family).or_default().messages += 1;
        if family != Family::Envelope {
            self.families.entry(Family::Envelope).or_default().messages += 1;
        }
        for found in validate(version, kind, message) {
            self.add(found);
        }
    }

    /// Records a violation found outside `validate` (an id echoed with another type).
    pub fn add(&mut self, found: Found) {
        let log = self.families.entry(found.family).or_default();
        match found.violation.severity {
            Severity::Reject => log.rejects += 1,
            Severity::Tolerated => log.tolerated += 1,
        }
        keep(&mut log.kept, found.violation);
    }

    /// Adds what another log (an earlier process of the same run) saw.
    pub fn merge(&mut self, other: Log) {
        self.version = self.version.or(other.version);
        self.unsampled += other.unsampled;
        for (family, o) in other.families {
            let log = self.families.entry(family).or_default();
            log.messages += o.messages;
            log.rejects += o.rejects;
            log.tolerated += o.tolerated;
            for k in o.kept {
                keep(&mut log.kept, k);
            }
        }
    }
}

/// Keeps a violation unless the same rule at the same pointer is kept already (a server
/// repeats its defect in every reply of the kind) or `KEPT_PER_FAMILY` are.
fn keep(kept: &mut Vec<Violation>, v: Violation) {
    if kept.len() < KEPT_PER_FAMILY && !kept.iter().any(|k| k.rule == v.rule && k.pointer == v.pointer) {
        kept.push(v);
    }
}

/// Before the handshake has named a version: an initialize result is read against the version
/// it names, server/discover against the modern one, anything else the default legacy one.
fn guess_version(kind: Kind<'_>, message: &Value) -> Version {
    match kind {
        Kind::Reply(Some("server/discover")) => Version::V2026_07_28,
        Kind::Reply(Some("initialize")) => message
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
            .and_then(Version::parse)
            .unwrap_or(Version::V2025_11_25),
        _ => Version::V2025_11_25,
    }
}

#[cfg(test)]
mod tests;
