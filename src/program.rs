//! Finding the program a server command names (PATH lookup, relative paths) and its digest.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a program could not be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// A bare name found in no PATH entry.
    NotOnPath(String),
    /// A path that does not name an executable file.
    NotExecutable(PathBuf, String),
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::NotOnPath(name) => write!(f, "`{name}` was not found in any PATH directory"),
            ResolveError::NotExecutable(path, why) => write!(f, "{}: {why}", path.display()),
        }
    }
}

/// Resolves `program` to an absolute path: a name with a `/` against `cwd`, a bare name
/// through `path_var` (PATH), as the OS would.
pub fn resolve(program: &str, cwd: &Path, path_var: Option<&OsStr>) -> Result<PathBuf, ResolveError> {
    if program.is_empty() {
        return Err(ResolveError::NotOnPath(String::new()));
    }
    if program.contains('/') {
        let path = cwd.join(program);
        return check_executable(&path).map(|()| path);
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    for dir in std::env::split_paths(path_var) {
        let dir = if dir.as_os_str().is_empty() {
            cwd.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join(program);
        if check_executable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    Err(ResolveError::NotOnPath(program.to_string()))
}

fn check_executable(path: &Path) -> Result<(), ResolveError> {
    let meta =
        std::fs::metadata(path).map_err(|e| ResolveError::NotExecutable(path.into(), e.to_string()))?;
    if !meta.is_file() {
        return Err(ResolveError::NotExecutable(
            path.into(),
            "not a regular file".into(),
        ));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(ResolveError::NotExecutable(
            path.into(),
            "not executable (no x permission)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_are_found_on_path_and_relative_paths_against_cwd() {
        let sh = resolve(
            "sh",
            Path::new("/"),
            Some(OsStr::new("/nonexistent:/bin:/usr/bin")),
        )
        .unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
        assert_eq!(
            resolve("./sh", Path::new("/bin"), None).unwrap(),
            PathBuf::from("/bin/./sh")
        );
        assert!(matches!(
            resolve("no-such-program-xyz", Path::new("/"), None),
            Err(ResolveError::NotOnPath(_))
        ));
        assert!(matches!(
            resolve("/etc/passwd", Path::new("/"), None),
            Err(ResolveError::NotExecutable(..))
        ));
    }
}
