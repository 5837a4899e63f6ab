//! Every check, in the order they run: read-only checks first, robustness next, then what the
//! run saw on the wire (traffic) and hygiene last (they grade what the others left behind). Adding a check is adding one item to `ALL`.

mod hygiene;
mod negative;
mod pagination;
mod protocol;
mod reads;
mod robustness;

mod schema;
mod schema_json;
pub(crate) mod security;
mod transport;
mod wire;

use super::model::{CheckResult, Severity, Status};
use super::session::Ctx;
use crate::redact::Redactor;

/// Payloads are cut to this many characters.
const PAYLOAD_CHARS: usize = 2000;

/// One check: a stable id, what it asserts, where the spec says so, and how to fix a finding.
pub struct Check {
    pub id: &'static str,
    pub title: &'static str,
    pub spec: &'static str,
    pub fix: &'static str,
    /// What it needs from the run: the session prepares exactly what the selected checks
    /// need, and no check is run where it cannot apply.
    pub needs: Needs,
    /// What it sends: a server that dies of it is started again for the checks that remain,
    /// and what it provokes on stderr is not held against the server.
    pub input: Input,
    pub run: fn(&mut Ctx<'_>) -> Outcome,
}

/// What a check needs from the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// A server session (skipped when the suite could not start one).
    pub session: bool,
    /// Lists walked once up front, before the first check.
    pub lists: &'static [List],
    /// Versions sent in an `initialize` of their own, each on a fresh connection beside the
    /// main session (legacy era).
    pub side_runs: &'static [&'static str],
    /// Only on this transport (skipped on others).
    pub transport: Option<crate::wire::Transport>,
    /// Calls tools with valid arguments: runs only with `--call-tools` or `--safe-tool`.
    pub calls: bool,
    /// Every message of the run is validated against the MCP schema for it.
    pub wire: bool,
}

/// A list the session walks up front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    Tools,
    Resources,
    Prompts,
    /// `resources/templates/list` (walked when `resources` is declared).
    Templates,
}

/// What the selected checks need prepared before the first one runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefetch {
    pub lists: Vec<List>,
    pub side_runs: Vec<&'static str>,
    /// Validate every message received (see `mcp::wire`).
    pub wire: bool,
}

impl Prefetch {
    /// The union of the needs of the checks `selected` takes.
    pub fn of(selected: impl Fn(&str) -> bool) -> Prefetch {
        let mut p = Prefetch::default();
        for c in ALL.iter().filter(|c| selected(c.id)) {
            for l in c.needs.lists {
                if !p.lists.contains(l) {
                    p.lists.push(*l);
                }
            }
            p.wire |= c.needs.wire;
            for v in c.needs.side_runs {
                if !p.side_runs.contains(v) {
                    p.side_runs.push(v);
                }
            }
        }
        p
    }
}

/// What a check sends the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Requests a correct server answers.
    Valid,
    /// Well-formed requests a correct server rejects (an unknown method or tool, bad
    /// arguments, a bad `_meta`).
    Rejected,
    /// Lines that are not valid JSON-RPC. A server that exits on one exits on all: the first
    /// such exit is the finding, and the later ones point to it.
    Malformed,
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    pub message: String,
    pub payload: Option<String>,
}

impl Outcome {
    pub fn pass(message: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Pass,
            message: message.into(),
            payload: None,
        }
    }
    pub fn warn(message: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Warn,
            message: message.into(),
            payload: None,
        }
    }
    pub fn fail(message: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Fail,
            message: message.into(),
            payload: None,
        }
    }
    pub fn skip(message: impl Into<String>) -> Outcome {
        Outcome {
            status: Status::Skip,
            message: message.into(),
            payload: None,
        }
    }
    /// Attaches the offending payload.
    pub fn with(mut self, payload: impl Into<String>) -> Outcome {
        self.payload = Some(payload.into());
        self
    }
}

impl Check {
    /// The check's result as reported: redacted whole first, then cut, so no part of a
    /// secret survives the cut.
    pub(crate) fn result(&self, o: Outcome, redactor: &Redactor) -> CheckResult {
        let severity = match o.status {
            Status::Fail => Severity::Error,
            Status::Warn => Severity::Warning,
            _ => Severity::Info,
        };
        CheckResult {
            id: self.id,
            title: self.title,
            status: o.status,
            severity,
            message: crate::text::truncate(&redactor.text(&o.message), PAYLOAD_CHARS),
            fix: self.fix,
            spec: self.spec,
            payload: o
                .payload
                .map(|p| crate::text::truncate(&redactor.text(&p), PAYLOAD_CHARS)),
        }
    }
}

const fn check(
    id: &'static str,
    title: &'static str,
    spec: &'static str,
    fix: &'static str,
    run: fn(&mut Ctx<'_>) -> Outcome,
) -> Check {
    Check {
        id,
        title,
        spec,
        fix,
        needs: Needs {
            session: true,
            lists: &[],
            side_runs: &[],
            transport: None,
            calls: false,
            wire: false,
        },
        input: Input::Valid,
        run,
    }
}

const fn rejects(c: Check) -> Check {
    Check {
        input: Input::Rejected,
        ..c
    }
}

const fn malformed(c: Check) -> Check {
    Check {
        input: Input::Malformed,
        ..c
    }
}

/// Grades the handshake itself: runs (and says why) even when no session opened.
const fn about_handshake(c: Check) -> Check {
    Check {
        needs: Needs {
            session: false,
            ..c.needs
        },
        ..c
    }
}

/// Reads the lists `lists`, walked once up front.
const fn reads(lists: &'static [List], c: Check) -> Check {
    Check {
        needs: Needs { lists, ..c.needs },
        ..c
    }
}

/// Reads a fresh connection's `initialize` of `versions`.
const fn side_runs(versions: &'static [&'static str], c: Check) -> Check {
    Check {
        needs: Needs {
            side_runs: versions,
            ..c.needs
        },
        ..c
    }
}

/// Grades what only an HTTP server has (statuses, headers, sessions).
const fn http_only(c: Check) -> Check {
    Check {
        needs: Needs {
            transport: Some(crate::wire::Transport::Http),
            ..c.needs
        },
        ..c
    }
}

/// Grades what only a stdio server has (stdout, stderr, the process).
const fn stdio_only(c: Check) -> Check {
    Check {
        needs: Needs {
            transport: Some(crate::wire::Transport::Stdio),
            ..c.needs
        },
        ..c
    }
}

/// Reads the results of tools called with valid arguments (opt-in).
const fn calls_tools(c: Check) -> Check {
    Check {
        needs: Needs {
            calls: true,
            ..c.needs
        },
        ..c
    }
}

/// A `wire.*` check: grades what the messages of its family broke, over the whole run
/// (every list is walked so that `--only wire` still sees them).
const fn wire_check(
    id: &'static str,
    title: &'static str,
    spec: &'static str,
    fix: &'static str,
    run: fn(&mut Ctx<'_>) -> Outcome,
) -> Check {
    let c = check(id, title, spec, fix, run);
    Check {
        needs: Needs {
            wire: true,
            lists: EVERY_LIST,
            ..c.needs
        },
        ..c
    }
}

const TOOLS: &[List] = &[List::Tools];
const EVERY_LIST: &[List] = &[List::Tools, List::Resources, List::Prompts];

pub(crate) const SPEC_LIFECYCLE: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle";
pub(crate) const SPEC_RESOURCES: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/server/resources";
pub(crate) const SPEC_PROMPTS: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/server/prompts";
pub(crate) const SPEC_BASE: &str = "https://modelcontextprotocol.io/specification/2025-11-25/basic";
pub(crate) const SPEC_PING: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/ping";
pub(crate) const SPEC_TOOLS: &str = "https://modelcontextprotocol.io/specification/2025-11-25/server/tools";
pub(crate) const SPEC_PAGINATION: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/pagination";
pub(crate) const SPEC_TRANSPORTS: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports";
pub(crate) const SPEC_HTTP: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http";
pub(crate) const SPEC_DISCOVER: &str =
    "https://modelcontextprotocol.io/specification/2026-07-28/server/discover";
pub(crate) const SPEC_VERSIONING: &str =
    "https://modelcontextprotocol.io/specification/2026-07-28/basic/versioning";
pub(crate) const SPEC_SECURITY: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/security_best_practices";
const SPEC_COMPLETION: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/completion";
const SPEC_LOGGING: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/logging";
const SPEC_CANCELLATION: &str =
    "https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/cancellation";
const SPEC_CHANGELOG_BATCH: &str = "https://modelcontextprotocol.io/specification/2025-06-18/changelog";
const SPEC_SCHEMA: &str = "https://modelcontextprotocol.io/specification/2025-11-25/schema";
/// Unicode Technical Report #36, Unicode Security Considerations (invisible and bidi text).
const UNICODE_SECURITY: &str = "https://www.unicode.org/reports/tr36/";
/// Unicode Technical Standard #39, Unicode Security Mechanisms (confusables, mixed script).
const UNICODE_CONFUSABLES: &str = "https://www.unicode.org/reports/tr39/";

/// All checks, in run order.
pub const ALL: &[Check] = &[
    about_handshake(check(
        "protocol.handshake.version",
        "the handshake names a protocol version this tool knows",
        SPEC_LIFECYCLE,
        "Answer initialize with `protocolVersion`: the client's version when you support it, else your latest supported one.",
        protocol::handshake_version,
    )),
    about_handshake(check(
        "protocol.handshake.serverinfo",
        "the server names itself (serverInfo.name, serverInfo.version)",
        SPEC_LIFECYCLE,
        "Return `serverInfo: {name, version}` with your application's own name and version (not your SDK's).",
        protocol::handshake_serverinfo,
    )),
    reads(
        TOOLS,
        check(
            "protocol.capabilities.tools",
            "declared tools capability answers tools/list with a tools array",
            SPEC_TOOLS,
            "Declare `tools` only if tools/list works, and return `{tools: [...]}` from it.",
            protocol::capability_tools,
        ),
    ),
    reads(
        &[List::Resources],
        check(
            "protocol.capabilities.resources",
            "declared resources capability answers resources/list with a resources array",
            "https://modelcontextprotocol.io/specification/2025-11-25/server/resources",
            "Declare `resources` only if resources/list works (clients tear the session down otherwise), and return `{resources: [...]}`.",
            protocol::capability_resources,
        ),
    ),
    reads(
        &[List::Prompts],
        check(
            "protocol.capabilities.prompts",
            "declared prompts capability answers prompts/list with a prompts array",
            "https://modelcontextprotocol.io/specification/2025-11-25/server/prompts",
            "Declare `prompts` only if prompts/list works, and return `{prompts: [...]}`.",
            protocol::capability_prompts,
        ),
    ),
    rejects(check(
        "protocol.unknown_method",
        "an unknown method gets error -32601",
        SPEC_BASE,
        "Answer methods you do not implement with JSON-RPC error -32601 (Method not found), not a result.",
        protocol::unknown_method,
    )),
    malformed(check(
        "protocol.parse_error",
        "a line that is not JSON gets error -32700",
        SPEC_BASE,
        "Reply to unparseable input with error -32700 (Parse error) and id null, and keep reading.",
        protocol::parse_error,
    )),
    malformed(check(
        "protocol.invalid_request",
        "a request with a non-string method gets error -32600",
        SPEC_BASE,
        "Validate the request envelope: a wrong-typed `method` is -32600 (Invalid Request).",
        protocol::invalid_request,
    )),
    check(
        "protocol.ping",
        "ping answers an empty result",
        SPEC_PING,
        "Implement `ping`: reply `{}` promptly; clients use it as a liveness check.",
        protocol::ping,
    ),
    side_runs(
        &["1999-01-01"],
        check(
            "protocol.version_negotiation.unknown",
            "an unknown protocol version is not echoed back",
            SPEC_LIFECYCLE,
            "When the client asks for a version you do not support, answer with one you do (your latest); never echo it.",
            protocol::version_unknown,
        ),
    ),
    side_runs(
        &["2024-11-05"],
        check(
            "protocol.version_negotiation.older",
            "an older known protocol version does not take the server down",
            SPEC_LIFECYCLE,
            "Accept an older version you support (answer with it) or answer with your own; never crash on it.",
            protocol::version_older,
        ),
    ),
    check(
        "protocol.modern.discover",
        "server/discover returns supportedVersions, capabilities and serverInfo",
        SPEC_DISCOVER,
        "Return `{resultType: \"complete\", supportedVersions, capabilities, _meta: {\"io.modelcontextprotocol/serverInfo\": …}}`.",
        protocol::modern_discover,
    ),
    rejects(check(
        "protocol.modern.bad_version",
        "an unsupported version gets -32022 with data.supported",
        SPEC_VERSIONING,
        "Reject an unsupported protocolVersion with error -32022 and `data: {supported: [...], requested}`.",
        protocol::modern_bad_version,
    )),
    rejects(check(
        "protocol.modern.missing_meta",
        "a request whose _meta lacks a required field is rejected with -32602",
        SPEC_VERSIONING,
        "Requests must carry `_meta` with protocolVersion and clientCapabilities; reject one without with -32602.",
        protocol::modern_missing_meta,
    )),
    check(
        "protocol.capabilities.client_only",
        "the server declares no client capability (sampling, roots, elicitation)",
        SPEC_SCHEMA,
        "Remove `sampling`, `roots` and `elicitation` from the server's capabilities: they are what a client offers, and a client reading them may send requests you do not serve.",
        reads::client_only_capabilities,
    ),
    reads(
        &[List::Resources],
        check(
            "protocol.resources.read",
            "resources/read of the first listed resources (3, each under 1 MiB) returns contents with uri and text or blob",
            SPEC_RESOURCES,
            "Make every listed resource readable: answer resources/read with `{contents: [{uri, mimeType?, text | blob}]}` for each URI resources/list gives.",
            reads::resources_read,
        ),
    ),
    reads(
        &[List::Templates],
        check(
            "protocol.resources.templates",
            "resources/templates/list answers resourceTemplates (each with uriTemplate and name) or -32601",
            SPEC_RESOURCES,
            "Answer resources/templates/list with `{resourceTemplates: [{uriTemplate, name, ...}]}` (an empty array when you have none).",
            reads::resource_templates,
        ),
    ),
    reads(
        &[List::Prompts],
        check(
            "protocol.prompts.get",
            "prompts/get of the first listed prompts (3, required arguments filled with a placeholder) returns user/assistant messages",
            SPEC_PROMPTS,
            "Answer prompts/get of every listed prompt with `{messages: [{role: \"user\"|\"assistant\", content: {type, ...}}]}`; a value you cannot take is error -32602.",
            reads::prompts_get,
        ),
    ),
    reads(
        &[List::Prompts],
        rejects(check(
            "protocol.prompts.missing_argument",
            "prompts/get without a required argument gets error -32602",
            SPEC_PROMPTS,
            "Validate prompt arguments: a missing required argument is error -32602 (Invalid params), not a prompt built from nothing.",
            reads::prompt_missing_argument,
        )),
    ),
    reads(
        &[List::Prompts, List::Templates],
        check(
            "protocol.completion",
            "declared completions answer completion/complete (for a prompt argument or a template variable) with at most 100 string values",
            SPEC_COMPLETION,
            "Declare `completions` only if completion/complete works; answer `{completion: {values: [...], total?, hasMore?}}` (empty values when you have no suggestion).",
            reads::completion,
        ),
    ),
    check(
        "protocol.logging.set_level",
        "declared logging answers logging/setLevel (legacy era)",
        SPEC_LOGGING,
        "Declare `logging` only if logging/setLevel works: answer it with `{}` and send notifications/message at or above that level.",
        reads::logging_set_level,
    ),
    malformed(check(
        "protocol.batch",
        "a JSON-RPC batch is not processed (batches are removed from 2025-06-18 on)",
        SPEC_CHANGELOG_BATCH,
        "Reject a JSON array line with error -32600 (or drop it): MCP has no batches since 2025-06-18, and clients never expect an array reply.",
        negative::batch,
    )),
    rejects(check(
        "protocol.second_initialize",
        "a second initialize in the same session is rejected (legacy era)",
        SPEC_LIFECYCLE,
        "Answer an initialize after the first with an error (-32600, as the Go SDK does): initialize is the first interaction of a session, and a repeat must not renegotiate its version or capabilities.",
        negative::second_initialize,
    )),
    rejects(check(
        "protocol.invalid_cursor",
        "a cursor the server never handed out gets error -32602",
        SPEC_PAGINATION,
        "Validate cursors: answer one you did not issue with error -32602 (Invalid params) instead of a page.",
        negative::invalid_cursor,
    )),
    check(
        "protocol.meta.unknown_keys",
        "a request with an unknown _meta key still succeeds",
        SPEC_BASE,
        "Ignore `_meta` keys you do not know: clients and proxies add their own, and the spec reserves only the io.modelcontextprotocol/ prefix.",
        negative::unknown_meta,
    ),
    // Notifications it does not expect: what they provoke is not held against it, and a
    // server that dies of one is started again.
    rejects(check(
        "protocol.notification.cancel_unknown",
        "notifications/cancelled for an unknown request id is ignored (no reply, the session goes on)",
        SPEC_CANCELLATION,
        "Ignore a cancellation of a request you do not know (it may have finished already); never answer a notification.",
        negative::cancel_unknown,
    )),
    rejects(check(
        "protocol.notification.no_reply",
        "an unknown notification gets no reply",
        SPEC_BASE,
        "Never answer a notification, not even with an error: it has no id, and the receiver MUST NOT respond.",
        negative::notification_no_reply,
    )),
    reads(
        TOOLS,
        check(
            "pagination.tools",
            "tools/list pages end, never repeat a cursor or a name",
            SPEC_PAGINATION,
            "Return a fresh opaque nextCursor per page and none on the last; never repeat a tool across pages.",
            pagination::tools,
        ),
    ),
    reads(
        &[List::Resources],
        check(
            "pagination.resources",
            "resources/list pages end, never repeat a cursor or a URI",
            SPEC_PAGINATION,
            "Return a fresh opaque nextCursor per page and none on the last; never repeat a resource across pages.",
            pagination::resources,
        ),
    ),
    reads(
        &[List::Prompts],
        check(
            "pagination.prompts",
            "prompts/list pages end, never repeat a cursor or a name",
            SPEC_PAGINATION,
            "Return a fresh opaque nextCursor per page and none on the last; never repeat a prompt across pages.",
            pagination::prompts,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_name.missing",
            "every tool has a string name",
            SPEC_TOOLS,
            "Give every tool a string `name`: clients cannot call or show a tool without one.",
            schema::name_missing,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_name.format",
            "tool names are 1-128 characters of A-Z a-z 0-9 _ . -",
            SPEC_TOOLS,
            "Rename tools to 1-128 characters from A-Za-z0-9_.- (no spaces or punctuation).",
            schema::name_format,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_name.duplicate",
            "tool names are unique",
            SPEC_TOOLS,
            "Give each tool its own name: a client keeps only one of two tools with the same name.",
            schema::name_duplicate,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_name.host_compat",
            "tool names fit the strictest hosts (^[a-zA-Z0-9_-]{1,64}$, Claude Desktop)",
            SPEC_TOOLS,
            "Prefer names of at most 64 characters of A-Za-z0-9_-: some hosts reject dots and longer names.",
            schema::name_host_compat,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_description.missing",
            "every tool has a description",
            SPEC_TOOLS,
            "Describe every tool: the model chooses tools by their descriptions.",
            schema::description_missing,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_description.placeholder",
            "no description is a placeholder (TODO, TBD, test, …)",
            SPEC_TOOLS,
            "Replace placeholder descriptions with what the tool does, when to use it and what it returns.",
            schema::description_placeholder,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_description.short",
            "descriptions are at least 20 characters",
            SPEC_TOOLS,
            "Write a sentence a model can act on: what the tool does and when to use it.",
            schema::description_short,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.malformed",
            "every inputSchema is a JSON Schema object",
            SPEC_TOOLS,
            "Give every tool an `inputSchema` object (for no arguments: {\"type\":\"object\",\"additionalProperties\":false}).",
            schema::input_malformed,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.root_type",
            "every inputSchema has root type object",
            SPEC_TOOLS,
            "Set `\"type\": \"object\"` at the root of inputSchema: tool arguments are always an object.",
            schema::input_root_type,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.orphan_required",
            "required names only existing properties",
            SPEC_TOOLS,
            "List in `required` only names defined in `properties`; a client cannot fill in an undefined argument.",
            schema::input_orphan_required,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.undescribed_params",
            "every parameter is described",
            SPEC_TOOLS,
            "Add a `description` to every property so the model knows what to pass.",
            schema::input_undescribed,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.keywords",
            "every inputSchema keyword has a valid value (required an array of strings, known type names, properties an object, …)",
            SPEC_TOOLS,
            "Fix the keyword named: `required` is an array of property names, `type` one of null, boolean, object, array, number, string, integer, `properties` an object of schemas. Clients refuse a tool whose schema does not compile.",
            schema_json::input_keywords,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.refs",
            "every $ref in an inputSchema resolves inside the schema (never fetched)",
            SPEC_TOOLS,
            "Point each $ref at a definition in the same schema (`#/$defs/Name`) and bundle remote schemas under $defs: clients do not fetch them.",
            schema_json::input_refs,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.dialect",
            "every inputSchema is 2020-12 or declares draft-07, and uses only its dialect's keywords",
            SPEC_TOOLS,
            "Omit $schema (2020-12) or declare http://json-schema.org/draft-07/schema#, and use that dialect's keywords (draft-07 has no prefixItems or unevaluatedProperties; 2020-12 has no additionalItems).",
            schema_json::input_dialect,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.patterns",
            "every pattern in an inputSchema is an ECMAScript regex (warn when this validator cannot run it)",
            SPEC_TOOLS,
            "Write `pattern` and `patternProperties` keys as ECMAScript regexes; prefer features every client's engine has (no lookaround, backreferences or \\p{..}).",
            schema_json::input_patterns,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.array_items",
            "every array in an inputSchema declares its items",
            SPEC_TOOLS,
            "Give every `\"type\": \"array\"` an `items` schema: OpenAI and Gemini refuse a tool whose array has none.",
            schema_json::input_array_items,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.input_schema.open_object",
            "argument objects are closed (additionalProperties: false; a warning)",
            SPEC_TOOLS,
            "Add `\"additionalProperties\": false` to argument objects, so a misspelt or invented argument is refused instead of silently ignored.",
            schema_json::input_open_object,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.output_schema",
            "outputSchema, when given, is an object schema",
            SPEC_TOOLS,
            "Make `outputSchema` a JSON Schema with root type object (clients validate structuredContent against it).",
            schema::output_schema,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.output_schema.json_schema",
            "every outputSchema is a JSON Schema a client can use (keywords, $refs, dialect, patterns)",
            SPEC_TOOLS,
            "Fix what is named: clients validate structuredContent against outputSchema and refuse a schema that does not compile.",
            schema_json::output_json_schema,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.annotations",
            "annotation hints are booleans",
            SPEC_TOOLS,
            "Use true/false for readOnlyHint, destructiveHint, idempotentHint and openWorldHint.",
            schema::annotations,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.context_weight",
            "the tool list is not too heavy for a model's context (warn 4,000 tokens, fail 10,000)",
            SPEC_TOOLS,
            "Shorten the heaviest descriptions and schemas, or split the server: every token of the list is sent with each request.",
            schema::context_weight,
        ),
    ),
    reads(
        TOOLS,
        check(
            "schema.tool_count",
            "at most 128 tools (VS Code and Copilot refuse more)",
            SPEC_TOOLS,
            "Expose at most 128 tools, or group them: some hosts refuse requests with more.",
            schema::tool_count,
        ),
    ),
    reads(
        TOOLS,
        rejects(check(
            "robustness.unknown_tool",
            "calling an unknown tool is rejected",
            SPEC_TOOLS,
            "Reject tools/call of a name you do not have with error -32602 (or an isError result).",
            robustness::unknown_tool,
        )),
    ),
    reads(
        TOOLS,
        rejects(check(
            "robustness.missing_required",
            "a call without required arguments is rejected",
            SPEC_TOOLS,
            "Validate arguments against inputSchema before acting; reject missing required ones (isError result).",
            robustness::missing_required,
        )),
    ),
    reads(
        TOOLS,
        rejects(check(
            "robustness.wrong_types",
            "wrong-typed arguments are not accepted silently",
            SPEC_TOOLS,
            "Validate argument types against inputSchema and report a mismatch as an isError result.",
            robustness::wrong_types,
        )),
    ),
    reads(
        TOOLS,
        calls_tools(check(
            "robustness.result_shape",
            "tool results have a content array and a boolean isError (opt-in calls)",
            SPEC_TOOLS,
            "Return `{content: [...], isError?: boolean}`; with an outputSchema also structuredContent that matches it.",
            robustness::result_shape,
        )),
    ),
    reads(
        TOOLS,
        calls_tools(check(
            "robustness.structured_content",
            "structuredContent, and the text block mirroring it, match the tool's outputSchema (opt-in calls)",
            SPEC_TOOLS,
            "Return structuredContent that validates against outputSchema (the errors name the instance path and keyword), and the same JSON serialized in a text block.",
            robustness::structured_content,
        )),
    ),
    reads(
        TOOLS,
        calls_tools(check(
            "robustness.result_size",
            "tool results are not too large (warn 8,000 tokens, fail 25,000; opt-in calls)",
            SPEC_TOOLS,
            "Page or summarize large results: a huge result crowds out the model's context.",
            robustness::result_size,
        )),
    ),
    reads(
        TOOLS,
        malformed(check(
            "robustness.malformed_input",
            "malformed lines on stdin do not kill or wedge the server",
            SPEC_TRANSPORTS,
            "Treat each bad line as an error reply and keep reading; never exit or stop answering on bad input.",
            robustness::malformed_input,
        )),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.hidden_text.tags",
            "no Unicode tag characters (U+E0000-U+E007F) in any server string",
            UNICODE_SECURITY,
            "Remove the tag characters: they are invisible to the user, yet a model reads them as the ASCII text they spell (shown decoded here).",
            security::hidden_tags,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.hidden_text.bidi",
            "no bidi override or isolate characters in any server string",
            UNICODE_SECURITY,
            "Remove U+202A-U+202E and U+2066-U+2069: they make text display in another order than the model reads it.",
            security::hidden_bidi,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.hidden_text.control",
            "no control characters or terminal escapes in any server string (tab and line ends allowed in text)",
            UNICODE_SECURITY,
            "Remove ESC, C0/C1 controls and DEL from names, titles, descriptions and serverInfo: they rewrite terminals and logs that show them.",
            security::hidden_control,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.hidden_text.invisible",
            "no zero-width or other invisible characters (fail in a name, warn in text)",
            UNICODE_SECURITY,
            "Remove zero-width spaces, joiners, soft hyphens, bidi marks and byte-smuggling variation selectors: they hide text or make two names look alike.",
            security::hidden_invisible,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.confusable_name",
            "tool and prompt names are not mixed-script or spelt with lookalike letters",
            UNICODE_CONFUSABLES,
            "Spell names in one script, ideally ASCII: a Cyrillic `а` in `reаd_file` makes a tool that looks like another.",
            security::confusable_names,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.confusable_text",
            "no word in descriptions or instructions mixes Latin letters with Cyrillic or Greek lookalikes (heuristic)",
            UNICODE_CONFUSABLES,
            "Retype the word in one script: lookalike letters inside a Latin word disguise it from the reader and from filters.",
            security::confusable_text,
        ),
    ),
    reads(
        EVERY_LIST,
        check(
            "security.hidden_instructions",
            "descriptions and instructions hold no hidden-instruction pattern (heuristic: <IMPORTANT>, \"ignore previous instructions\", \"do not tell the user\", ~/.ssh, .env, passing file contents in a parameter)",
            SPEC_SECURITY,
            "Describe what the tool does for the user; never address the model with hidden orders, secrecy or requests for files and credentials. Skip with --skip security.hidden_instructions if a match is legitimate.",
            security::hidden_instructions,
        ),
    ),
    reads(
        TOOLS,
        check(
            "security.annotations",
            "annotations do not contradict each other (readOnlyHint with destructiveHint) or the tool's name",
            SPEC_TOOLS,
            "A read-only tool is not destructive: drop destructiveHint (it is ignored when readOnlyHint is true) or readOnlyHint, whichever is false.",
            security::annotations_contradict,
        ),
    ),
    check(
        "security.error_secrets",
        "error replies carry no secret (a token shape, a URL password, or a value given in a secret-named --env or flag)",
        SPEC_SECURITY,
        "Never put credentials in error messages or data: clients show them to the model and log them. Report that authentication failed, not the key.",
        security::error_secrets,
    ),
    check(
        "security.error_internals",
        "error replies show no stack trace or absolute path (heuristic)",
        SPEC_SECURITY,
        "Reply with what was wrong with the request; log stack traces and server paths to stderr, not into the reply the model reads.",
        security::error_internals,
    ),
    reads(
        TOOLS,
        check(
            "security.tool_list_drift",
            "tools/list answers the same twice in one run (no tool changes under the client)",
            SPEC_TOOLS,
            "Keep tool definitions stable for a session; when the list really changes, declare tools.listChanged and send notifications/tools/list_changed. A tool that changes after approval is a rug pull.",
            security::tool_list_drift,
        ),
    ),
    reads(
        TOOLS,
        check(
            "security.tool_shadowing",
            "no tool has the name of another server's tool in the same config (check --config FILE --all)",
            SPEC_SECURITY,
            "Rename the tool, or do not give one client both servers: a client that merges their tools may call the other server's tool, or a malicious server may take over a trusted tool's name.",
            security::tool_shadowing,
        ),
    ),
    wire_check(
        "wire.envelope",
        "every message is a JSON-RPC 2.0 message: \"jsonrpc\": \"2.0\", ids echoed exactly, result xor error",
        SPEC_BASE,
        "Send `\"jsonrpc\": \"2.0\"` on every message (errors too), echo the request's id with its type, and reply with exactly one of result and error.",
        wire::envelope,
    ),
    wire_check(
        "wire.errors",
        "error replies carry an integer code and a string message",
        SPEC_BASE,
        "Reply to a failed request with `error: {code: <integer>, message: <string>, data?}`.",
        wire::errors,
    ),
    wire_check(
        "wire.initialize",
        "the initialize / server/discover result matches the schema (protocolVersion, capabilities, serverInfo, instructions a string)",
        SPEC_LIFECYCLE,
        "Return protocolVersion, a capabilities object whose members are objects, serverInfo {name, version} and, if any, `instructions` as a string.",
        wire::initialize,
    ),
    wire_check(
        "wire.ping",
        "ping and logging/setLevel results are objects",
        SPEC_PING,
        "Answer ping and logging/setLevel with an empty object result `{}`.",
        wire::empty,
    ),
    wire_check(
        "wire.tools_list",
        "tools/list results match the Tool schema of the negotiated version",
        SPEC_TOOLS,
        "Leave optional members out rather than null (title, description, nextCursor); give inputSchema `type: \"object\"`, `properties` an object and `required` an array of strings.",
        wire::tools_list,
    ),
    wire_check(
        "wire.resources_list",
        "resources/list results match the Resource schema",
        SPEC_RESOURCES,
        "Give every resource a string uri and name; leave optional members out rather than null.",
        wire::resources_list,
    ),
    wire_check(
        "wire.resource_templates_list",
        "resources/templates/list results match the ResourceTemplate schema",
        SPEC_RESOURCES,
        "Give every template a string uriTemplate and name; leave optional members out rather than null.",
        wire::templates_list,
    ),
    wire_check(
        "wire.prompts_list",
        "prompts/list results match the Prompt schema",
        SPEC_PROMPTS,
        "Give every prompt a string name and its arguments string names and boolean `required`; leave optional members out rather than null.",
        wire::prompts_list,
    ),
    wire_check(
        "wire.tools_call",
        "tools/call results carry a content array of known content items",
        SPEC_TOOLS,
        "Return `content: [...]` of text, image, audio, resource_link or resource items (each with its required members), structuredContent an object, isError a boolean.",
        wire::tools_call,
    ),
    wire_check(
        "wire.resources_read",
        "resources/read results carry contents with uri and text or blob",
        SPEC_RESOURCES,
        "Return `contents: [{uri, mimeType?, text}]` or `[{uri, mimeType?, blob}]`.",
        wire::resources_read,
    ),
    wire_check(
        "wire.prompts_get",
        "prompts/get results carry messages whose role is user or assistant",
        SPEC_PROMPTS,
        "Use only the roles \"user\" and \"assistant\" (fold a system prompt into the first user message), each message with one content item.",
        wire::prompts_get,
    ),
    wire_check(
        "wire.completion",
        "completion/complete results carry at most 100 string values",
        "https://modelcontextprotocol.io/specification/2025-11-25/server/utilities/completion",
        "Return `completion: {values: [<at most 100 strings>], total?, hasMore?}`.",
        wire::completion,
    ),
    wire_check(
        "wire.notifications",
        "notifications from the server match their schema (logging level, progress token, …)",
        SPEC_BASE,
        "Send notifications without an id, with params of the documented shape (notifications/message: a known level and data).",
        wire::notifications,
    ),
    wire_check(
        "wire.server_requests",
        "requests from the server match their schema, and none in 2026-07-28",
        SPEC_BASE,
        "Send server requests with a string or integer id and documented params; a 2026-07-28 server asks through input_required results instead.",
        wire::server_requests,
    ),
    check(
        "traffic.server_requests",
        "the server requests no client capability mcp-witness did not declare (it declares none: no sampling, roots or elicitation)",
        SPEC_LIFECYCLE,
        "Check the client's capabilities before sending sampling/createMessage, roots/list or elicitation/create; send none when they are not declared (and no request at all in the modern era).",
        negative::server_requests,
    ),
    check(
        "traffic.log_undeclared",
        "no log notification (notifications/message) without the logging capability",
        SPEC_LOGGING,
        "Declare `logging` in your capabilities if you send notifications/message, or log to stderr instead.",
        negative::log_without_capability,
    ),
    http_only(rejects(check(
        "transport.session.unknown",
        "a request with a session id the server never gave gets 404",
        SPEC_HTTP,
        "Answer a request whose Mcp-Session-Id you do not know with 404 Not Found, so the client starts a new session.",
        transport::unknown_session,
    ))),
    http_only(rejects(check(
        "transport.session.deleted",
        "a request in a session ended by DELETE gets 404",
        SPEC_HTTP,
        "Forget a session on DELETE and answer its later requests with 404 Not Found.",
        transport::deleted_session,
    ))),
    http_only(rejects(check(
        "transport.protocol_version.bad",
        "an unsupported MCP-Protocol-Version header gets 400",
        SPEC_HTTP,
        "Validate MCP-Protocol-Version on every request after initialization; answer an unsupported one with 400 Bad Request.",
        transport::bad_protocol_version,
    ))),
    http_only(rejects(check(
        "transport.origin.foreign",
        "a request with a foreign Origin gets 403",
        SPEC_HTTP,
        "Validate the Origin header on every request and answer one you do not serve with 403 Forbidden (DNS rebinding).",
        transport::foreign_origin,
    ))),
    http_only(rejects(check(
        "transport.host.foreign",
        "a local server refuses a foreign Host with 403 (DNS rebinding)",
        SPEC_HTTP,
        "Check the Host header against the names you serve (localhost, 127.0.0.1) and refuse others with 403.",
        transport::foreign_host,
    ))),
    http_only(rejects(check(
        "transport.accept",
        "a POST that accepts neither JSON nor an event stream gets 406",
        SPEC_HTTP,
        "Answer a POST whose Accept lists neither application/json nor text/event-stream with 406 Not Acceptable.",
        transport::accept,
    ))),
    http_only(rejects(check(
        "transport.content_type",
        "a body that is not sent as application/json gets 415",
        SPEC_HTTP,
        "Answer a POST whose Content-Type is not application/json with 415 Unsupported Media Type.",
        transport::content_type,
    ))),
    http_only(rejects(check(
        "transport.batch",
        "a JSON-RPC batch is rejected (batching was removed in 2025-06-18)",
        SPEC_HTTP,
        "Reject a JSON array body with a 4xx: since 2025-06-18 each POST carries one message.",
        transport::batch,
    ))),
    http_only(malformed(check(
        "transport.error_body",
        "an unparsable body gets 400 with a JSON-RPC error (-32700)",
        SPEC_HTTP,
        "Answer a body that is not JSON with 400 and a JSON-RPC error body {\"error\": {\"code\": -32700, …}}, so clients can show why.",
        transport::error_body,
    ))),
    stdio_only(check(
        "hygiene.stdout_purity",
        "stdout carries only JSON-RPC messages",
        SPEC_TRANSPORTS,
        "Send logs and banners to stderr: clients fail on any stdout line that is not a JSON-RPC message.",
        hygiene::stdout_purity,
    )),
    stdio_only(check(
        "hygiene.framing",
        "lines end in \\n alone, without BOM, valid UTF-8, no Content-Length headers, not too long",
        SPEC_TRANSPORTS,
        "Write one UTF-8 JSON object per line ending in \\n; no LSP headers; keep lines under 64 KiB for Go clients.",
        hygiene::framing,
    )),
    stdio_only(check(
        "hygiene.stderr",
        "stderr shows no unhandled exception",
        SPEC_TRANSPORTS,
        "Catch and report errors as JSON-RPC errors; an uncaught exception on stderr means a code path crashed.",
        hygiene::stderr,
    )),
    stdio_only(check(
        "hygiene.survival",
        "the server is still running after the suite",
        SPEC_TRANSPORTS,
        "Survive bad input and errors: a stdio server that exits takes every tool of the session with it.",
        hygiene::survival,
    )),
    stdio_only(check(
        "hygiene.shutdown",
        "the server exits on stdin EOF and leaves no process behind",
        SPEC_LIFECYCLE,
        "Exit when stdin closes (listen for end/close on stdin) and take child processes with you.",
        hygiene::shutdown,
    )),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_prepares_only_what_the_selected_checks_need() {
        let only =
            |prefix: &'static str| move |id: &str| id == prefix || id.starts_with(&format!("{prefix}."));
        assert_eq!(Prefetch::of(only("hygiene")), Prefetch::default());
        assert_eq!(
            Prefetch::of(only("protocol.version_negotiation.unknown")),
            Prefetch {
                lists: vec![],
                side_runs: vec!["1999-01-01"],
                wire: false,
            }
        );
        assert_eq!(Prefetch::of(only("schema")).lists, [List::Tools]);
        // Completion reads a prompt argument or, failing that, a template variable.
        assert_eq!(
            Prefetch::of(only("protocol.completion")).lists,
            [List::Prompts, List::Templates]
        );
        assert_eq!(Prefetch::of(only("protocol.batch")), Prefetch::default());
        assert_eq!(
            Prefetch::of(only("pagination")).lists,
            [List::Tools, List::Resources, List::Prompts]
        );
        let wire = Prefetch::of(only("wire"));
        assert!(wire.wire, "the wire group asks for every message to be validated");
        assert_eq!(wire.lists, [List::Tools, List::Resources, List::Prompts]);
        assert!(!Prefetch::of(only("schema")).wire);
        let all = Prefetch::of(|_| true);
        assert_eq!(all.side_runs, ["1999-01-01", "2024-11-05"]);
    }

    #[test]
    fn only_the_handshake_checks_run_without_a_session_and_only_hygiene_is_stdio_bound() {
        for c in ALL {
            assert_eq!(
                !c.needs.session,
                c.id.starts_with("protocol.handshake."),
                "{}",
                c.id
            );
            let stdio = c.needs.transport == Some(crate::wire::Transport::Stdio);
            assert_eq!(stdio, c.id.starts_with("hygiene."), "{}", c.id);
        }
    }
}
