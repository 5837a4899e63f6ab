//! The server a run targets, shared by `probe` and `check`: its command as recorded
//! (secrets masked), its folder and variable names, and the program it resolves to; or its
//! URL (redacted) and header names. [`Endpoint::connect`] is the one place a wire is made
//! from a target: a spawned stdio process or a Streamable HTTP endpoint.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::http::{HttpOptions, HttpUrl};
use crate::wire::Wire;

use crate::wire::framing::DEFAULT_MAX_LINE;
use crate::wire::stdio::Grace;

use crate::mcp::EraChoice;
use crate::probe::outcome::TargetSeen;
use crate::program;
use crate::redact::Redactor;
use crate::wire::stdio::SpawnSpec;

/// The whole probe is bounded by this unless `--deadline` says otherwise.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(60);
/// The whole check suite is bounded by this unless `--deadline` says otherwise.
pub const CHECK_DEADLINE: Duration = Duration::from_secs(300);

/// A header value given by the user: a secret, never printed (not even by `Debug`).
#[derive(Clone, PartialEq, Eq)]
pub struct HeaderValue(pub String);

impl std::fmt::Debug for HeaderValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How the wire reaches the server, as the block records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Stdio,
    StreamableHttp,
    /// The HTTP+SSE transport of 2024-11-05.
    HttpSse,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::StreamableHttp => "streamable_http",
            Transport::HttpSse => "http_sse",
        }
    }
}

/// The server to run and how to talk to it: what `probe` and `check` share.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The server's argv; the first element is the program. Empty for an HTTP target.
    pub command: Vec<String>,
    /// The MCP endpoint of an HTTP server (instead of a command).
    pub url: Option<String>,
    /// Request headers for an HTTP server: names recorded, values never.
    pub headers: Vec<(String, HeaderValue)>,
    /// `--cacert`: the roots for an https:// URL (else the built-in ones).
    pub cacert: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    pub era: EraChoice,
    /// Overrides the era's default version.
    pub protocol_version: Option<String>,
    /// Bound on each wait for a reply.
    pub timeout: Duration,
    /// Bound on the whole run; `None` takes the command's default ([`PROBE_DEADLINE`] or
    /// [`CHECK_DEADLINE`]).
    pub deadline: Option<Duration>,
    /// Bound on one stdout line.
    pub max_line: usize,
    pub grace: Grace,
    /// `--config FILE --server NAME`: where the server's entry is (for reports to point at).
    pub origin: Option<crate::config::Origin>,
}

impl ServerOptions {
    /// The documented defaults for `command`.
    pub fn new(command: Vec<String>) -> Self {
        ServerOptions {
            command,
            url: None,
            headers: Vec::new(),
            cacert: None,
            env: Vec::new(),
            cwd: None,
            era: EraChoice::Legacy,
            protocol_version: None,
            timeout: Duration::from_secs(10),
            deadline: None,
            max_line: DEFAULT_MAX_LINE,
            grace: Grace::default(),
            origin: None,
        }
    }

    /// Describes the target (its program is recorded when it resolves) and resolves the
    /// program, starting its digest on a thread.
    pub fn prepare(&self) -> (Prepared, Result<Launch, String>) {
        let mut prepared = describe(self);
        let launched = prepared.launch(self);
        (prepared, launched)
    }
}

/// A run's target before anything is started.
pub struct Prepared {
    /// The server's folder, absolute.
    pub cwd: PathBuf,
    pub redactor: Redactor,
    pub target: TargetSeen,
}

/// Describes the target: absolute folder, redacted argv, sorted variable names.
fn describe(o: &ServerOptions) -> Prepared {
    let cwd = match &o.cwd {
        Some(c) => std::path::absolute(c).unwrap_or_else(|_| c.clone()),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    };
    let mut redactor = Redactor::for_run(&o.command, &o.env);
    if !o.headers.is_empty() {
        // Every header value is a secret: a server that echoes one gets it masked.
        redactor.add_secrets(o.headers.iter().map(|(_, v)| v.0.clone()));
    }
    let url = o.url.as_deref().map(|u| match HttpUrl::parse(u) {
        Ok(parsed) => parsed.redacted(),
        Err(_) => crate::http::url::redact_reference(u),
    });
    let mut env_names: Vec<String> = o.env.iter().map(|(k, _)| k.clone()).collect();
    env_names.sort();
    env_names.dedup();
    let target = TargetSeen {
        command: redactor.argv(&o.command),
        program: None,
        program_sha256: None,
        program_sha256_source: None,
        cwd: cwd.display().to_string(),
        env_names,
        era: o.era,
        protocol_version: o.protocol_version.clone(),
        transport: if url.is_some() {
            Transport::StreamableHttp
        } else {
            Transport::Stdio
        },
        url,
        header_names: o.headers.iter().map(|(n, _)| n.clone()).collect(),
    };
    Prepared {
        cwd,
        redactor,
        target,
    }
}

/// The program's digest being computed (or read from the cache) on a thread.
/// The program's digest: found in the digest cache at once, or being computed on a thread.
pub enum DigestJob {
    Ready(std::io::Result<(String, crate::digest_cache::Source)>),
    Running(JoinHandle<std::io::Result<(String, crate::digest_cache::Source)>>),
}

impl DigestJob {
    /// Starts finding the digest of the program at `path`: a cache hit needs no thread.
    pub fn start(path: PathBuf) -> DigestJob {
        let cache = crate::digest_cache::folder();
        match crate::digest_cache::cached(&path, cache.as_deref()) {
            Some(hex) => DigestJob::Ready(Ok((hex, crate::digest_cache::Source::Cache))),
            None => DigestJob::Running(std::thread::spawn(move || {
                crate::digest_cache::sha256(&path, cache.as_deref())
            })),
        }
    }

    /// The digest; `Err` when the thread computing it panicked.
    pub fn join(self) -> std::thread::Result<std::io::Result<(String, crate::digest_cache::Source)>> {
        match self {
            DigestJob::Ready(r) => Ok(r),
            DigestJob::Running(h) => h.join(),
        }
    }
}

/// How to start the server, and the program's digest being computed on a thread (a large
/// interpreter takes tens of milliseconds to hash; the handshake need not wait for it). An
/// HTTP target has no program, so no digest.
pub struct Launch {
    pub endpoint: Endpoint,
    pub digest: Option<DigestJob>,
}

/// Where a run's connections go.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio(SpawnSpec),
    Http(HttpTarget),
}

/// An HTTP server's endpoint, its headers (secret values) and the wire's bounds.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub url: HttpUrl,
    pub headers: Vec<(String, HeaderValue)>,
    pub options: HttpOptions,
}

impl Endpoint {
    /// The spawn spec of a stdio target.
    pub fn spec(&self) -> Option<&SpawnSpec> {
        match self {
            Endpoint::Stdio(spec) => Some(spec),
            Endpoint::Http(_) => None,
        }
    }

    /// A fresh connection over the HTTP+SSE transport of 2024-11-05 (an HTTP target only):
    /// the GET stream open and its endpoint named within `reply_wait`. On failure, why, and
    /// the attempt's HTTP facts for the record.
    pub fn connect_legacy_sse(
        &self,
        reply_wait: Duration,
        deadline: Instant,
    ) -> Option<Result<Box<dyn Wire>, crate::wire::http::SseFallbackFailed>> {
        let Endpoint::Http(t) = self else {
            return None;
        };
        let headers = t.headers.iter().map(|(n, v)| (n.clone(), v.0.clone())).collect();
        let endpoint_wait = (Instant::now() + reply_wait).min(deadline);
        Some(
            crate::wire::http::HttpEndpointWire::connect_legacy_sse(
                t.url.clone(),
                headers,
                t.options.clone(),
                endpoint_wait,
                deadline,
            )
            .map(|w| Box::new(w) as Box<dyn Wire>),
        )
    }

    /// A fresh connection: the process spawned, or the HTTP host resolved. Each reply
    /// stream is read for `reply_wait` at most, never past `deadline`. The error says what
    /// to do, without any header value.
    pub fn connect(&self, reply_wait: Duration, deadline: Instant) -> Result<Box<dyn Wire>, String> {
        match self {
            Endpoint::Stdio(spec) => match crate::wire::stdio::Server::spawn(spec) {
                Ok(server) => Ok(Box::new(server)),
                Err(e) => Err(format!("cannot start {}: {e}", spec.program.display())),
            },
            Endpoint::Http(t) => {
                let mut options = t.options.clone();
                let left = deadline.saturating_duration_since(Instant::now());
                options.stream_timeout = reply_wait.min(left).max(Duration::from_millis(1));
                let headers = t.headers.iter().map(|(n, v)| (n.clone(), v.0.clone())).collect();
                crate::wire::http::HttpEndpointWire::connect(t.url.clone(), headers, options)
                    .map(|w| Box::new(w) as Box<dyn Wire>)
                    .map_err(|e| format!("cannot reach {}: {e}", t.url.redacted()))
            }
        }
    }
}

impl Prepared {
    /// Resolves the program (PATH from the server's env when it sets one) and records its
    /// path. The server gets `cwd` only when the user named one.
    fn launch(&mut self, o: &ServerOptions) -> Result<Launch, String> {
        if let Some(url) = &o.url {
            let url = HttpUrl::parse(url).map_err(|e| format!("--url: {e}"))?;
            url.require_plain().map_err(|e| format!("--url: {e}"))?;
            return Ok(Launch {
                endpoint: Endpoint::Http(HttpTarget {
                    url,
                    headers: o.headers.clone(),
                    options: HttpOptions {
                        tls: crate::http::tls::TlsOptions {
                            cacert: o.cacert.clone(),
                        },
                        ..HttpOptions::default()
                    },
                }),
                digest: None,
            });
        }
        let (command, env) = (&o.command, &o.env);
        let Some(name) = command.first() else {
            return Err("no server command was given".into());
        };
        let path_var = env
            .iter()
            .rev()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| std::ffi::OsString::from(v))
            .or_else(|| std::env::var_os("PATH"));
        let path = program::resolve(name, &self.cwd, path_var.as_deref())
            .map_err(|e| format!("cannot start the server: {e}"))?;
        self.target.program = Some(path.display().to_string());
        let digest = DigestJob::start(path.clone());
        let spec = SpawnSpec {
            program: path,
            argv0: name.clone(),
            args: command[1..].to_vec(),
            env: env.to_vec(),
            cwd: o.cwd.is_some().then(|| self.cwd.clone()),
            max_line: o.max_line,
            background: false,
        };
        Ok(Launch {
            endpoint: Endpoint::Stdio(spec),
            digest: Some(digest),
        })
    }
}
