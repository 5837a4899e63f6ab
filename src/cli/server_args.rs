//! Arguments shared by `probe` and `check`: which server, how to talk to it, and where the
//! evidence goes; and the one place that records a block and says what happened.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value};

use crate::config;
use crate::evidence::append::{Mark, Outcome, append_after};
use crate::evidence::keys;
use crate::probe::EraChoice;
use crate::target::{HeaderValue, ServerOptions};
use crate::wire::framing::DEFAULT_MAX_LINE;

/// One server of a config, by name, with its options or why its entry cannot be used.
pub type Named = (String, Result<ServerOptions, String>);

/// The server to run and how to talk to it.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Bound on each wait for a reply, in seconds (fractions allowed).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = parse_secs)]
    pub timeout: Duration,
    /// Bound on the whole run, in seconds [default: 60 for probe, 300 for check]. Each wait
    /// ends at the deadline at the latest; the block says which bound ended the run.
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    pub deadline: Option<Duration>,
    /// Handshake era: legacy (initialize), modern (server/discover), or auto (try modern, fall back).
    #[arg(long, value_enum, default_value = "legacy")]
    pub era: EraArg,
    /// Protocol version to request [default: 2025-11-25 legacy, 2026-07-28 modern].
    #[arg(long, value_name = "V")]
    pub protocol_version: Option<String>,
    /// Environment variable for the server (repeatable). Only names are recorded.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// Working folder for the server.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Client config file (mcpServers or servers shape) to take the server from.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The folder `${workspaceFolder}` stands for in --config (VS Code's variable) [default:
    /// the folder holding the config's `.vscode`, else the config's folder].
    #[arg(long, value_name = "DIR", requires = "config")]
    pub workspace: Option<PathBuf>,
    /// Name of the server in --config.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub server: Option<String>,
    /// Every server of --config: each probed or checked (as many at once as there are cores),
    /// one block each, a summary table, the worst exit code; check also finds tools that
    /// shadow another server's tool.
    #[arg(long, requires = "config", conflicts_with = "server")]
    pub all: bool,
    /// Bound on one stdout line, in bytes; a longer line is a fail.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE)]
    pub max_line: usize,
    /// The MCP endpoint of a Streamable HTTP server (http://, or https:// in a build with the
    /// `https` feature), instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// A request header for --url (repeatable). Its value is masked everywhere; only the
    /// name is recorded. Prefer --header-env: a value here is visible in the process list.
    #[arg(long = "header", value_name = "'NAME: VALUE'")]
    pub header: Vec<String>,
    /// A request header for --url whose value is read from environment variable VAR
    /// (repeatable), so it never appears in argv. Only the name is recorded.
    #[arg(long = "header-env", value_name = "NAME=VAR", value_parser = parse_header_env)]
    pub header_env: Vec<(String, String)>,
    /// For an https:// --url: trust the PEM certificates in FILE (only those) instead of the
    /// built-in Mozilla roots. Needs the `https` feature.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Show no progress line on stderr (it is shown only on a terminal, during waits over 1 s).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// The server command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EraArg {
    Legacy,
    Modern,
    Auto,
}

impl From<EraArg> for EraChoice {
    fn from(e: EraArg) -> Self {
        match e {
            EraArg::Legacy => EraChoice::Legacy,
            EraArg::Modern => EraChoice::Modern,
            EraArg::Auto => EraChoice::Auto,
        }
    }
}

impl ServerArgs {
    /// `--config auto`: the well-known config files of installed clients that exist here, in
    /// the order they are searched (the project's own first). Says on stderr which it read.
    fn auto_configs(&self) -> Option<Result<Vec<PathBuf>, String>> {
        if self.config.as_deref() != Some(std::path::Path::new("auto")) {
            return None;
        }
        let found = config::well_known()
            .into_iter()
            .filter(|p| p.is_file())
            .collect::<Vec<_>>();
        if found.is_empty() {
            return Some(Err(format!(
                "--config auto found no client config here; it looks for {}",
                config::well_known()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let shown: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
        eprintln!("mcp-witness: --config auto read {}", shown.join(", "));
        Some(Ok(found))
    }

    /// The options of every server of `--config`, by name, in the config's order; a server
    /// whose entry cannot be used carries its error. With `--config auto`, every server of
    /// every client config found, named `NAME (FILE)`.
    pub fn options_all(&self, verb: &str) -> Result<Vec<Named>, String> {
        let files = match self.auto_configs() {
            Some(found) => found?,
            None => vec![self.config.clone().ok_or("--all needs --config FILE")?],
        };
        let auto = files.len() > 1 || self.config.as_deref() == Some(std::path::Path::new("auto"));
        let mut all = Vec::new();
        for file in files {
            let names = config::names(&file).map_err(|e| e.to_string())?;
            for name in names {
                let mut one = self.clone();
                one.config = Some(file.clone());
                one.server = Some(name.clone());
                one.all = false;
                let opts = one.options(verb);
                let label = if auto {
                    format!("{name} ({})", file.display())
                } else {
                    name
                };
                all.push((label, opts));
            }
        }
        Ok(all)
    }

    /// The server options: the command, environment and folder from `-- COMMAND` or
    /// `--config/--server`, and how to talk to it.
    pub fn options(&self, verb: &str) -> Result<ServerOptions, String> {
        if let Some(found) = self.auto_configs() {
            let found = found?;
            let mut one = self.clone();
            let pick = match &self.server {
                Some(name) => found
                    .iter()
                    .find(|f| config::names(f).is_ok_and(|n| n.contains(name))),
                None => None,
            };
            match (pick, &self.server) {
                (Some(file), _) => {
                    eprintln!(
                        "mcp-witness: using server `{}` from {}",
                        crate::inert::inert(self.server.as_deref().unwrap_or_default()),
                        file.display()
                    );
                    one.config = Some(file.clone());
                    return one.options(verb);
                }
                (None, _) => {
                    let listed: Vec<String> = found
                        .iter()
                        .map(|f| {
                            format!(
                                "{}: {}",
                                f.display(),
                                config::names(f)
                                    .map(|n| n.join(", "))
                                    .unwrap_or_else(|e| e.to_string())
                            )
                        })
                        .collect();
                    let what = match &self.server {
                        Some(name) => format!("no client config here has a server `{name}`"),
                        None => "name a server with --server NAME, or use --all".to_string(),
                    };
                    return Err(format!("{what}; the servers are: {}", listed.join("; ")));
                }
            }
        }
        let mut url = self.url.clone();
        let mut headers: Vec<(String, HeaderValue)> = Vec::new();
        if let (Some(path), None) = (&self.config, &self.server) {
            let known = config::names(path).map_err(|e| e.to_string())?;
            return Err(config::ConfigError::NameOne {
                path: path.clone(),
                known,
            }
            .to_string());
        }
        // clap's `requires` does not hold these back when the target group is met otherwise.
        if self.config.is_none() && (self.server.is_some() || self.workspace.is_some()) {
            return Err("--server and --workspace go with --config FILE".into());
        }
        if let Some(dir) = &self.workspace
            && !dir.is_dir()
        {
            return Err(format!("--workspace {}: not a folder", dir.display()));
        }
        let origin = match (&self.config, &self.server) {
            (Some(file), Some(name)) => Some(config::Origin {
                file: file.clone(),
                name: name.clone(),
            }),
            _ => None,
        };
        let (command, mut env, mut cwd) = match (&self.config, &self.server) {
            (Some(path), Some(name)) => {
                if !self.command.is_empty() || url.is_some() {
                    return Err(
                        "give either --config/--server, --url, or a command after --, not two".into(),
                    );
                }
                let entry = config::load(path, name, self.workspace.as_deref()).map_err(|e| e.to_string())?;
                if entry.url.is_some() {
                    url = entry.url;
                    headers.extend(entry.headers.into_iter().map(|(n, v)| (n, HeaderValue(v))));
                    (Vec::new(), Vec::new(), None)
                } else {
                    let mut command = vec![entry.command];
                    command.extend(entry.args);
                    (command, entry.env, entry.cwd)
                }
            }
            _ => (self.command.clone(), Vec::new(), None),
        };
        if let Some(first) = command.first() {
            let lower = first.to_ascii_lowercase();
            if lower.starts_with("http://") || lower.starts_with("https://") {
                return Err(format!(
                    "the command after -- is a URL: probe an HTTP server with `mcp-witness {verb} --url URL`"
                ));
            }
        }
        // Parsed here, not by clap, whose error would echo the value.
        for text in &self.header {
            let (name, value) = parse_header(text)?;
            headers.push((name, HeaderValue(value)));
        }
        for (name, var) in &self.header_env {
            match std::env::var(var) {
                Ok(v) => headers.push((name.clone(), HeaderValue(v))),
                Err(_) => {
                    return Err(format!(
                        "--header-env {name}={var}: environment variable {var} is not set (or not UTF-8); export it first"
                    ));
                }
            }
        }
        if let Some(u) = &url {
            // A URL that cannot be probed is a usage error, before any run or record.
            let parsed = crate::http::HttpUrl::parse(u).map_err(|e| format!("--url: {e}"))?;
            parsed.require_plain().map_err(|e| format!("--url: {e}"))?;
        }
        for (name, value) in &headers {
            // Checked now (a reserved name, a line break in a value), naming the header only.
            crate::http::message::SecretHeader::new(name, &value.0).map_err(|e| e.to_string())?;
        }
        if self.cacert.is_some()
            && !url
                .as_deref()
                .is_some_and(|u| u.to_ascii_lowercase().starts_with("https://"))
        {
            return Err("--cacert goes with an https:// --url".into());
        }
        #[cfg(feature = "https")]
        if let Some(path) = &self.cacert {
            crate::http::tls::check_cacert(path).map_err(|e| e.to_string())?;
        }
        if url.is_none() && !headers.is_empty() {
            return Err("--header and --header-env go with --url (a stdio server takes --env)".into());
        }
        if url.is_some() && (!self.env.is_empty() || self.cwd.is_some()) {
            return Err(
                "--env and --cwd are for a server command; an HTTP server takes --header or --header-env"
                    .into(),
            );
        }
        // The progress line is for a person watching a terminal, never for a log or a pipe.
        crate::progress::enable(!self.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()));
        if command.is_empty() && url.is_none() {
            return Err(format!(
                "no server: put its command after `--`, e.g. `mcp-witness {verb} -- npx -y my-server`, or give --url"
            ));
        }
        env.extend(self.env.iter().cloned());
        if self.cwd.is_some() {
            cwd = self.cwd.clone();
        }
        let mut opts = ServerOptions::new(command);
        opts.url = url;
        opts.headers = headers;
        opts.cacert = self.cacert.clone();
        opts.env = env;
        opts.cwd = cwd;
        opts.era = self.era.into();
        opts.protocol_version = self.protocol_version.clone();
        opts.timeout = self.timeout;
        opts.deadline = self.deadline;
        opts.max_line = self.max_line.max(1024);
        opts.origin = origin;
        Ok(opts)
    }
}

/// Where the evidence goes.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Evidence file to append to [default: evidence/<probes|checks>.jsonl under the current folder].
    #[arg(short = 'e', long, value_name = "FILE")]
    pub evidence: Option<PathBuf>,
    /// Signing key [default: $MCP_WITNESS_KEY, $XDG_CONFIG_HOME/mcp-witness/signing.key or ~/.config/mcp-witness/signing.key; created on first use].
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Run and report; write nothing.
    #[arg(long)]
    pub no_record: bool,
}

fn parse_secs(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        return Err(format!("`{text}` must be more than 0 and at most 86400 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn parse_call_secs(text: &str) -> Result<Duration, String> {
    parse_secs(text)
}

/// `Name: value`: a header name (an HTTP token) and its value.
fn parse_header(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((n, v)) if valid_header_name(n.trim()) => Ok((n.trim().to_string(), v.trim().to_string())),
        // The text may hold a secret: never echo it.
        _ => Err("--header must be 'Name: value' with a name of letters, digits and - (the value is not shown here)".into()),
    }
}

/// `Name=VAR`: a header name and the environment variable holding its value.
fn parse_header_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((n, var)) if valid_header_name(n.trim()) && !var.is_empty() => {
            Ok((n.trim().to_string(), var.to_string()))
        }
        _ => Err(format!(
            "`{text}` is not NAME=VAR (a header name, then the variable holding its value)"
        )),
    }
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// A ready signer and file, prepared before the run (a bad key must not cost a run).
pub struct Recorder {
    signer: Option<SigningKey>,
    path: PathBuf,
    /// Where the evidence file ended before the run: its append reads back only past it.
    mark: Option<Mark>,
}

/// What recording did, for the caller to print.
pub enum Recorded {
    Off,
    Appended { seq: u64, hash: String, line: Vec<u8> },
    NotAppended(String),
}

impl Recorder {
    pub fn new(args: &RecordArgs, default_name: &str) -> Result<Recorder, String> {
        let path = match &args.evidence {
            Some(p) => std::path::absolute(p),
            None => std::env::current_dir().map(|d| d.join("evidence").join(default_name)),
        }
        .map_err(|e| format!("cannot resolve the evidence path: {e}"))?;
        let signer = if args.no_record {
            None
        } else {
            // A FIFO, device, folder or dangling link as the evidence file must not cost a run.
            crate::files::check_write_target(&path, "evidence file").map_err(|e| match e.problem {
                crate::files::Problem::NotWritable { .. } => {
                    format!("{e} (-e FILE), or record nothing with --no-record")
                }
                _ => e.to_string(),
            })?;
            Some(signing_key(args.key.clone()).map_err(|e| e.to_string())?)
        };
        let mark = signer.as_ref().and_then(|_| Mark::take(&path));
        Ok(Recorder { signer, path, mark })
    }

    /// Appends the block; `Err` is the message for "evidence not written".
    pub fn record(&self, body: Map<String, Value>, if_changed: bool) -> Result<Recorded, String> {
        let Some(signer) = &self.signer else {
            return Ok(Recorded::Off);
        };
        let file = self.path.display();
        match append_after(&self.path, body, signer, if_changed, self.mark) {
            Ok(Outcome::Appended(s)) => Ok(Recorded::Appended {
                seq: s.seq,
                hash: s.hash,
                line: s.line,
            }),
            Ok(Outcome::Duplicate { seq, hash }) => Ok(Recorded::NotAppended(format!(
                "not appended to {file}: an identical block (same target and time) is already there; it matches block seq {seq} hash {hash}"
            ))),
            Ok(Outcome::Unchanged { seq, hash }) => Ok(Recorded::NotAppended(format!(
                "not appended to {file}: the observation is unchanged; it matches block seq {seq} hash {hash}"
            ))),
            Err(e) => Err(format!("evidence not written: {e}")),
        }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

fn signing_key(explicit: Option<PathBuf>) -> Result<SigningKey, keys::KeyError> {
    let path = super::keys::key_path(explicit)?;
    let (key, created) = keys::load_or_create(&path)?;
    if created {
        eprintln!(
            "mcp-witness: created signing key {}; public key {}",
            path.display(),
            keys::public_text(&key.verifying_key())
        );
    }
    Ok(key)
}
