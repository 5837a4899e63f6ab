//! The server a run targets, shared by `probe` and `check`: its command as recorded
//! (secrets masked), its folder and variable names, and the program it resolves to.

use std::path::PathBuf;
use std::thread::JoinHandle;

use crate::probe::EraChoice;
use crate::probe::outcome::TargetSeen;
use crate::program;
use crate::redact::Redactor;
use crate::transport::SpawnSpec;

/// A run's target before anything is started.
pub struct Prepared {
    /// The server's folder, absolute.
    pub cwd: PathBuf,
    pub redactor: Redactor,
    pub target: TargetSeen,
}

/// Describes the target: absolute folder, redacted argv, sorted variable names.
pub fn prepare(
    command: &[String],
    env: &[(String, String)],
    cwd: Option<&PathBuf>,
    era: EraChoice,
    protocol_version: Option<&String>,
) -> Prepared {
    let cwd = match cwd {
        Some(c) => std::path::absolute(c).unwrap_or_else(|_| c.clone()),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
    };
    let redactor = Redactor::for_run(command, env);
    let mut env_names: Vec<String> = env.iter().map(|(k, _)| k.clone()).collect();
    env_names.sort();
    env_names.dedup();
    let target = TargetSeen {
        command: redactor.argv(command),
        program: None,
        program_sha256: None,
        cwd: cwd.display().to_string(),
        env_names,
        era: match era {
            EraChoice::Legacy => "legacy",
            EraChoice::Modern => "modern",
            EraChoice::Auto => "auto",
        },
        protocol_version: protocol_version.cloned(),
    };
    Prepared {
        cwd,
        redactor,
        target,
    }
}

/// How to start the server, and the program's digest being computed on a thread (a large
/// interpreter takes tens of milliseconds to hash; the handshake need not wait for it).
pub struct Launch {
    pub spec: SpawnSpec,
    pub digest: JoinHandle<std::io::Result<String>>,
}

impl Prepared {
    /// Resolves the program (PATH from `env` when it sets one) and records its path.
    /// `explicit_cwd`: the server gets `cwd` only when the user named one.
    pub fn launch(
        &mut self,
        command: &[String],
        env: &[(String, String)],
        explicit_cwd: bool,
        max_line: usize,
    ) -> Result<Launch, String> {
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
        let digest = std::thread::spawn(move || program::sha256_file(&hashed));
        let spec = SpawnSpec {
            program: path,
            argv0: name.clone(),
            args: command[1..].to_vec(),
            env: env.to_vec(),
            cwd: explicit_cwd.then(|| self.cwd.clone()),
            max_line,
        };
        Ok(Launch { spec, digest })
    }
}
