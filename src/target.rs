//! The server a run targets, shared by `probe` and `check`: its command as recorded
//! (secrets masked), its folder and variable names, and the program it resolves to.

use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

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

/// The server to run and how to talk to it: what `probe` and `check` share.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The server's argv; the first element is the program.
    pub command: Vec<String>,
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
}

impl ServerOptions {
    /// The documented defaults for `command`.
    pub fn new(command: Vec<String>) -> Self {
        ServerOptions {
            command,
            env: Vec::new(),
            cwd: None,
            era: EraChoice::Legacy,
            protocol_version: None,
            timeout: Duration::from_secs(10),
            deadline: None,
            max_line: DEFAULT_MAX_LINE,
            grace: Grace::default(),
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
    let redactor = Redactor::for_run(&o.command, &o.env);
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
    };
    Prepared {
        cwd,
        redactor,
        target,
    }
}

/// The program's digest being computed (or read from the cache) on a thread.
pub type DigestJob = JoinHandle<std::io::Result<(String, crate::digest_cache::Source)>>;

/// How to start the server, and the program's digest being computed on a thread (a large
/// interpreter takes tens of milliseconds to hash; the handshake need not wait for it).
pub struct Launch {
    pub spec: SpawnSpec,
    pub digest: DigestJob,
}

impl Prepared {
    /// Resolves the program (PATH from the server's env when it sets one) and records its
    /// path. The server gets `cwd` only when the user named one.
    fn launch(&mut self, o: &ServerOptions) -> Result<Launch, String> {
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
        let hashed = path.clone();
        let cache = crate::digest_cache::folder();
        let digest = std::thread::spawn(move || crate::digest_cache::sha256(&hashed, cache.as_deref()));
        let spec = SpawnSpec {
            program: path,
            argv0: name.clone(),
            args: command[1..].to_vec(),
            env: env.to_vec(),
            cwd: o.cwd.is_some().then(|| self.cwd.clone()),
            max_line: o.max_line,
        };
        Ok(Launch { spec, digest })
    }
}
