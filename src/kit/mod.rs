//! The client kit: an instrumented stdio server (`serve`), a control client that drives it
//! as a correct client would (`drive`), and an analysis of the server's log that answers,
//! per session, whether a client reacted to `notifications/*/list_changed` and how it handled
//! the flows of `flow` (roots, elicitation) (`analyze`).

pub mod analyze;
pub mod bridge;
pub mod drive;
pub mod drive_modes;
pub mod elicit_url;
pub mod flow;
pub mod record;
pub mod roots_change;
pub mod serve;
pub mod serve_http;
pub mod through;
pub mod url_page;

/// The three list domains the kit exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    Tools,
    Resources,
    Prompts,
}

impl Domain {
    pub const ALL: [Domain; 3] = [Domain::Tools, Domain::Resources, Domain::Prompts];

    pub fn name(self) -> &'static str {
        match self {
            Domain::Tools => "tools",
            Domain::Resources => "resources",
            Domain::Prompts => "prompts",
        }
    }

    pub fn list_method(self) -> &'static str {
        match self {
            Domain::Tools => "tools/list",
            Domain::Resources => "resources/list",
            Domain::Prompts => "prompts/list",
        }
    }

    /// The request that uses one item of the domain.
    pub fn use_method(self) -> &'static str {
        match self {
            Domain::Tools => "tools/call",
            Domain::Resources => "resources/read",
            Domain::Prompts => "prompts/get",
        }
    }

    /// The params field naming the item used.
    pub fn use_key(self) -> &'static str {
        match self {
            Domain::Resources => "uri",
            _ => "name",
        }
    }

    /// The field of a list result holding the items, and the field naming each item.
    pub fn list_fields(self) -> (&'static str, &'static str) {
        match self {
            Domain::Tools => ("tools", "name"),
            Domain::Resources => ("resources", "uri"),
            Domain::Prompts => ("prompts", "name"),
        }
    }

    pub fn alpha(self) -> &'static str {
        match self {
            Domain::Tools => "witness_probe_alpha",
            Domain::Resources => "probe://alpha",
            Domain::Prompts => "witness_alpha_prompt",
        }
    }

    pub fn beta(self) -> &'static str {
        match self {
            Domain::Tools => "witness_probe_beta",
            Domain::Resources => "probe://beta",
            Domain::Prompts => "witness_beta_prompt",
        }
    }

    pub fn mutate_tool(self) -> &'static str {
        match self {
            Domain::Tools => "witness_mutate_tools",
            Domain::Resources => "witness_mutate_resources",
            Domain::Prompts => "witness_mutate_prompts",
        }
    }

    pub fn notification(self) -> &'static str {
        match self {
            Domain::Tools => "notifications/tools/list_changed",
            Domain::Resources => "notifications/resources/list_changed",
            Domain::Prompts => "notifications/prompts/list_changed",
        }
    }

    /// How the questions word "use": call, read, get.
    pub fn verb(self) -> &'static str {
        match self {
            Domain::Tools => "called",
            Domain::Resources => "read",
            Domain::Prompts => "fetched",
        }
    }
}

/// The `_meta` key with which a control client marks a request it sends on purpose to see
/// it refused (the driver's "alpha must fail" step). Such requests do not count against it.
pub const NEGATIVE_CONTROL: &str = "mcp-witness/negativeControl";

/// Status tool name.
pub const STATUS_TOOL: &str = "witness_status";
