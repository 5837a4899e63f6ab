//! Reading a server entry from an MCP client's config file: the `mcpServers` shape (Claude
//! Desktop, Claude Code, Cursor) and the `servers` shape (VS Code, which allows comments and
//! trailing commas). Stdio entries (`command`) and HTTP entries (`url` or `serverUrl`, `type`
//! `http`, `streamable-http` or `sse`, optional `headers`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod locate;

/// Config files larger than this are refused.
const MAX_CONFIG: u64 = 16 << 20;

/// A server as a config file describes it: a stdio command, or an HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// The program; empty for an HTTP entry.
    pub command: String,
    /// The endpoint of an HTTP entry.
    pub url: Option<String>,
    /// The request headers of an HTTP entry (values are secrets: never printed).
    pub headers: Vec<(String, String)>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
    /// VS Code's `envFile`, read by `parse` into `env`.
    pub env_file: Option<String>,
}

/// Where a server was taken from: its config file and its name there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub file: PathBuf,
    pub name: String,
}

#[derive(Debug)]
pub enum ConfigError {
    Io(PathBuf, std::io::Error),
    /// Not a regular file, or it could not be opened.
    File(crate::files::FileError),
    TooLarge(PathBuf),
    Json(PathBuf, String),
    NoServers(PathBuf),
    /// No `--server` was named: the names there are.
    NameOne {
        path: PathBuf,
        known: Vec<String>,
    },
    /// The same server name twice in one servers object (a JSON reader keeps only one).
    Duplicate {
        path: PathBuf,
        name: String,
    },
    /// A `${input:ID}` variable: VS Code asks the user for it; mcp-witness cannot.
    Input {
        name: String,
        input: String,
    },
    /// The `envFile` could not be read.
    EnvFile {
        name: String,
        why: String,
    },
    NoSuchServer {
        path: PathBuf,
        name: String,
        known: Vec<String>,
    },
    NotStdio {
        name: String,
        why: String,
    },
    Field {
        name: String,
        field: &'static str,
        expected: &'static str,
    },
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Io(p, e) => write!(f, "config {}: {e}", p.display()),
            ConfigError::File(e) => write!(f, "{e}"),
            ConfigError::TooLarge(p) => {
                write!(f, "config {} is larger than {} bytes", p.display(), MAX_CONFIG)
            }
            ConfigError::Json(p, e) => write!(f, "config {} is not valid JSON: {e}", p.display()),
            ConfigError::NoServers(p) => write!(
                f,
                "config {} has neither an `mcpServers` nor a `servers` object",
                p.display()
            ),
            ConfigError::NameOne { path, known } => write!(
                f,
                "config {} has these servers: {}; name one with --server NAME",
                path.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
            ConfigError::Duplicate { path, name } => write!(
                f,
                "config {} names server `{name}` twice; a client would silently use only one of the two entries: rename or remove one",
                path.display()
            ),
            ConfigError::Input { name, input } => write!(
                f,
                "server `{name}` uses ${{input:{input}}}, which VS Code asks the user for; give the value with --env NAME=VALUE (or --header-env for a header) and a server entry without it"
            ),
            ConfigError::EnvFile { name, why } => write!(f, "server `{name}`: envFile: {why}"),
            ConfigError::NoSuchServer { path, name, known } => write!(
                f,
                "config {} has no server `{name}`; it has: {}",
                path.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ),
            ConfigError::NotStdio { name, why } => write!(
                f,
                "server `{name}` uses a transport mcp-witness cannot probe ({why}); it probes stdio and Streamable HTTP servers"
            ),
            ConfigError::Field {
                name,
                field,
                expected,
            } => {
                write!(f, "server `{name}`: `{field}` must be {expected}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// The config files `--config auto` looks for, in order: this folder's own (Claude Code's
/// `.mcp.json`, VS Code, Cursor), then the user's (Cursor, Claude Code, Claude Desktop on Linux
/// and macOS, Windsurf, Zed).
pub fn well_known() -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        for f in [".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"] {
            files.push(cwd.join(f));
        }
    }
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
        for f in [
            ".cursor/mcp.json",
            ".claude.json",
            ".config/Claude/claude_desktop_config.json",
            "Library/Application Support/Claude/claude_desktop_config.json",
            ".codeium/windsurf/mcp_config.json",
            ".config/zed/settings.json",
        ] {
            files.push(home.join(f));
        }
    }
    files
}

/// Reads server `name` from the config at `path`; `workspace` is the folder
/// `${workspaceFolder}` stands for (see [`parse`]).
pub fn load(path: &Path, name: &str, workspace: Option<&Path>) -> Result<ServerEntry, ConfigError> {
    parse(&read(path)?, name, path, workspace)
}

/// The server names of the config at `path`, in file order... as its reader sorts them.
pub fn names(path: &Path) -> Result<Vec<String>, ConfigError> {
    let text = read(path)?;
    let value = value_of(&text, path)?;
    Ok(servers_of(&value, path)?.keys().cloned().collect())
}

/// The config's text, bounded.
fn read(path: &Path) -> Result<String, ConfigError> {
    let file = crate::files::open_read(path, "config").map_err(ConfigError::File)?;
    let mut text = String::new();
    file.take(MAX_CONFIG + 1)
        .read_to_string(&mut text)
        .map_err(|e| ConfigError::Io(path.into(), e))?;
    if text.len() as u64 > MAX_CONFIG {
        return Err(ConfigError::TooLarge(path.into()));
    }
    Ok(text)
}

/// The config as JSON: a UTF-8 byte-order mark, comments and trailing commas allowed; the
/// same server name twice refused.
fn value_of(text: &str, path: &Path) -> Result<Value, ConfigError> {
    let text = strip_jsonc(text.strip_prefix('\u{feff}').unwrap_or(text));
    if let Some(name) = duplicate_server(&text) {
        return Err(ConfigError::Duplicate {
            path: path.into(),
            name,
        });
    }
    serde_json::from_str(&text).map_err(|e| ConfigError::Json(path.into(), e.to_string()))
}

/// The servers object of a config.
/// The `mcpServers` object (Claude Desktop, Claude Code, Cursor, Windsurf), `servers` (VS
/// Code) or `context_servers` (Zed); in Claude Code's `~/.claude.json`, the current folder's
/// own servers (`projects.<folder>.mcpServers`) join the user's and win over them.
fn servers_of(value: &Value, path: &Path) -> Result<serde_json::Map<String, Value>, ConfigError> {
    let mut servers = serde_json::Map::new();
    let mut found = false;
    if let Some(m) = ["mcpServers", "servers", "context_servers"]
        .iter()
        .find_map(|k| value.get(*k).and_then(Value::as_object))
    {
        servers.extend(m.clone());
        found = true;
    }
    let project = std::env::current_dir().ok().and_then(|cwd| {
        value
            .get("projects")?
            .get(cwd.display().to_string())?
            .get("mcpServers")?
            .as_object()
            .cloned()
    });
    if let Some(m) = project {
        servers.extend(m);
        found = true;
    }
    if found {
        Ok(servers)
    } else {
        Err(ConfigError::NoServers(path.into()))
    }
}

/// A name given twice in the top-level `mcpServers` or `servers` object, if one is.
fn duplicate_server(text: &str) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Names(Option<String>);
    impl<'de> serde::Deserialize<'de> for Names {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Names;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Names, A::Error> {
                    let mut seen = std::collections::HashSet::new();
                    let mut dup = None;
                    while let Some(k) = m.next_key::<String>()? {
                        m.next_value::<IgnoredAny>()?;
                        if !seen.insert(k.clone()) && dup.is_none() {
                            dup = Some(k);
                        }
                    }
                    Ok(Names(dup))
                }
            }
            d.deserialize_any(V)
        }
    }
    struct Top(Option<String>);
    impl<'de> serde::Deserialize<'de> for Top {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Top;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Top, A::Error> {
                    let mut dup = None;
                    while let Some(k) = m.next_key::<String>()? {
                        if k == "mcpServers" || k == "servers" || k == "context_servers" {
                            let Names(d) = m.next_value()?;
                            dup = dup.or(d);
                        } else {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(Top(dup))
                }
            }
            d.deserialize_any(V)
        }
    }
    serde_json::from_str::<Top>(text).ok().and_then(|t| t.0)
}

/// Parses config text; `path` names the file in errors and places the default workspace.
/// `workspace` (`--workspace DIR`) is the folder `${workspaceFolder}` stands for; without it,
/// the folder holding the config's `.vscode`, else the config's folder.
pub fn parse(
    text: &str,
    name: &str,
    path: &Path,
    workspace: Option<&Path>,
) -> Result<ServerEntry, ConfigError> {
    let value = value_of(text, path)?;
    let servers = &servers_of(&value, path)?;
    let mut entry = parse_entry(servers, name, path)?;
    let workspace = match workspace {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        None => default_workspace(path),
    };
    substitute(&mut entry, name, &workspace)?;
    Ok(entry)
}

/// The folder VS Code opens a config in: the one holding `.vscode`, else the config's folder.
fn default_workspace(path: &Path) -> PathBuf {
    let folder = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    if folder.file_name().is_some_and(|f| f == ".vscode") {
        folder.parent().map(Path::to_path_buf).unwrap_or(folder)
    } else {
        folder
    }
}

/// VS Code's variables, as VS Code resolves them: `${workspaceFolder}` (`workspace`),
/// `${userHome}`, `${env:VAR}` (empty when unset); `${input:ID}` is refused, naming it. Then
/// `envFile` (KEY=VALUE lines, relative to `workspace`) under the entry's own `env`.
fn substitute(entry: &mut ServerEntry, name: &str, workspace: &Path) -> Result<(), ConfigError> {
    let home = std::env::var("HOME").unwrap_or_default();
    let one = |text: &str| -> Result<String, ConfigError> {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find('}') else {
                out.push_str(&rest[start..]);
                return Ok(out);
            };
            let var = &rest[start + 2..start + len];
            match var {
                "workspaceFolder" => out.push_str(&workspace.display().to_string()),
                "userHome" => out.push_str(&home),
                v if v.starts_with("env:") => out.push_str(&std::env::var(&v[4..]).unwrap_or_default()),
                v if v.starts_with("input:") => {
                    return Err(ConfigError::Input {
                        name: name.to_string(),
                        input: v[6..].to_string(),
                    });
                }
                other => out.push_str(&format!("${{{other}}}")),
            }
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        Ok(out)
    };
    entry.command = one(&entry.command)?;
    for a in &mut entry.args {
        *a = one(a)?;
    }
    for (_, v) in &mut entry.env {
        *v = one(v)?;
    }
    for (_, v) in &mut entry.headers {
        *v = one(v)?;
    }
    if let Some(u) = &entry.url {
        entry.url = Some(one(u)?);
    }
    if let Some(c) = &entry.cwd {
        entry.cwd = Some(PathBuf::from(one(&c.display().to_string())?));
    }
    if let Some(file) = entry.env_file.take() {
        let file = PathBuf::from(one(&file)?);
        let file = if file.is_relative() {
            workspace.join(file)
        } else {
            file
        };
        let text = read(&file).map_err(|e| ConfigError::EnvFile {
            name: name.to_string(),
            why: e.to_string(),
        })?;
        let mut from_file: Vec<(String, String)> = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let line = line.strip_prefix("export ").unwrap_or(line);
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim();
                let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
                if !entry.env.iter().any(|(e, _)| e == k.trim()) {
                    from_file.push((k.trim().to_string(), v.to_string()));
                }
            }
        }
        entry.env.extend(from_file);
        entry.env.sort();
    }
    Ok(())
}

/// The entry `name` of a servers object, as written.
fn parse_entry(
    servers: &serde_json::Map<String, Value>,
    name: &str,
    path: &Path,
) -> Result<ServerEntry, ConfigError> {
    let entry = servers.get(name).ok_or_else(|| ConfigError::NoSuchServer {
        path: path.into(),
        name: name.to_string(),
        known: servers.keys().cloned().collect(),
    })?;
    // Zed writes `command` as an object: {"path", "args", "env"}.
    let zed;
    let entry = match entry.get("command") {
        Some(Value::Object(cmd)) => {
            let mut flat = entry.as_object().cloned().unwrap_or_default();
            flat.insert("command".into(), cmd.get("path").cloned().unwrap_or(Value::Null));
            for k in ["args", "env"] {
                if let Some(v) = cmd.get(k) {
                    flat.insert(k.into(), v.clone());
                }
            }
            zed = Value::Object(flat);
            &zed
        }
        _ => entry,
    };
    let field_err = |field, expected| ConfigError::Field {
        name: name.to_string(),
        field,
        expected,
    };
    let entry = entry.as_object().ok_or(field_err("(entry)", "an object"))?;
    let kind = entry.get("type").and_then(Value::as_str);
    if let Some(kind) = kind
        && !matches!(
            kind,
            "stdio" | "http" | "streamable-http" | "streamableHttp" | "sse"
        )
    {
        return Err(ConfigError::NotStdio {
            name: name.into(),
            why: format!("type `{kind}`"),
        });
    }
    let url = entry.get("url").or_else(|| entry.get("serverUrl"));
    // `sse` (HTTP+SSE, 2024-11-05) is reached through the fallback: the initialize POST it
    // refuses leads to its event stream.
    if url.is_some() || matches!(kind, Some("http" | "streamable-http" | "streamableHttp" | "sse")) {
        let url = match url {
            Some(Value::String(u)) if !u.is_empty() => u.clone(),
            _ => return Err(field_err("url", "a non-empty string")),
        };
        let headers = match entry.get("headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect::<Option<Vec<_>>>()
                .ok_or(field_err("headers", "an object of string values"))?,
            Some(_) => return Err(field_err("headers", "an object of string values")),
        };
        return Ok(ServerEntry {
            command: String::new(),
            url: Some(url),
            headers,
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            env_file: None,
        });
    }
    let command = match entry.get("command") {
        Some(Value::String(c)) if !c.is_empty() => c.clone(),
        _ => return Err(field_err("command", "a non-empty string")),
    };
    let args = match entry.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or(field_err("args", "an array of strings"))?,
        Some(_) => return Err(field_err("args", "an array of strings")),
    };
    let env = match entry.get("env") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => {
            let mut env = BTreeMap::new();
            for (k, v) in map {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return Err(field_err("env", "an object of string values")),
                };
                env.insert(k.clone(), v);
            }
            env.into_iter().collect()
        }
        Some(_) => return Err(field_err("env", "an object of string values")),
    };
    let cwd = match entry.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(PathBuf::from(c)),
        Some(_) => return Err(field_err("cwd", "a string")),
    };
    let env_file = match entry.get("envFile") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(f.clone()),
        Some(_) => return Err(field_err("envFile", "a string")),
    };
    Ok(ServerEntry {
        command,
        url: None,
        headers: Vec::new(),
        args,
        env,
        cwd,
        env_file,
    })
}

/// Removes `//` and `/* */` comments and trailing commas outside strings (JSON with
/// comments, as VS Code writes it). Plain JSON passes through unchanged. Comments go first,
/// so a trailing comma followed by a comment is still seen as trailing.
fn strip_jsonc(text: &str) -> String {
    let without_comments = outside_strings(text, |bytes, i| match (bytes[i], bytes.get(i + 1)) {
        (b'/', Some(b'/')) => Some(
            bytes[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(bytes.len(), |n| i + n),
        ),
        (b'/', Some(b'*')) => Some(
            bytes[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2),
        ),
        _ => None,
    });
    outside_strings(&without_comments, |bytes, i| {
        let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
        (bytes[i] == b',' && matches!(next, Some(b'}') | Some(b']'))).then_some(i + 1)
    })
}

/// Copies `text`, skipping the byte ranges `skip` asks for, but never inside a JSON string:
/// `skip(bytes, i)` returns where to resume when bytes from `i` are to be dropped.
fn outside_strings(text: &str, skip: impl Fn(&[u8], usize) -> Option<usize>) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'"' {
            let end = string_end(bytes, i);
            out.extend_from_slice(&bytes[i..end]);
            i = end;
        } else if let Some(resume) = skip(bytes, i) {
            i = resume.min(bytes.len());
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // Only whole ASCII bytes were removed, so the rest is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Offset just past the JSON string starting at `start` (a `"`), escapes included.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("cfg.json")
    }

    #[test]
    fn reads_the_claude_desktop_shape() {
        let text =
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "srv"], "env": {"TOKEN": "t"}}}}"#;
        let e = parse(text, "fs", p(), None).unwrap();
        assert_eq!(e.command, "npx");
        assert_eq!(e.args, vec!["-y", "srv"]);
        assert_eq!(e.env, vec![("TOKEN".to_string(), "t".to_string())]);
    }

    #[test]
    fn reads_the_vs_code_shape_with_comments_and_trailing_commas() {
        let text = "{\n // my servers\n \"servers\": {\"t\": {\"type\": \"stdio\", \"command\": \"srv\", /* x */ \"args\": [\"a//b\", // c\n],},},}";
        let e = parse(text, "t", p(), None).unwrap();
        assert_eq!((e.command.as_str(), e.args), ("srv", vec!["a//b".to_string()]));
    }

    #[test]
    fn http_and_sse_entries_give_their_url_and_headers_and_other_transports_are_clear_errors() {
        let text = r#"{"servers": {"web": {"type": "http", "url": "http://x/mcp", "headers": {"Authorization": "Bearer t0k3n"}},
            "s": {"url": "http://y"}, "old": {"type": "sse", "url": "http://z"}, "nourl": {"type": "http"},
            "ws": {"serverUrl": "http://w"}, "sock": {"type": "websocket", "url": "ws://v"}}}"#;
        let web = parse(text, "web", p(), None).unwrap();
        assert_eq!(web.url.as_deref(), Some("http://x/mcp"));
        assert_eq!(
            web.headers,
            [("Authorization".to_string(), "Bearer t0k3n".to_string())]
        );
        assert!(web.command.is_empty());
        assert_eq!(
            parse(text, "s", p(), None).unwrap().url.as_deref(),
            Some("http://y")
        );
        assert_eq!(
            parse(text, "ws", p(), None).unwrap().url.as_deref(),
            Some("http://w")
        );
        assert_eq!(
            parse(text, "old", p(), None).unwrap().url.as_deref(),
            Some("http://z")
        );
        assert!(matches!(
            parse(text, "sock", p(), None),
            Err(ConfigError::NotStdio { .. })
        ));
        assert!(matches!(
            parse(text, "nourl", p(), None),
            Err(ConfigError::Field { field: "url", .. })
        ));
        let err = parse(text, "nope", p(), None).unwrap_err().to_string();
        assert!(err.contains("has: nourl, old, s, sock, web, ws"), "{err}");
        assert!(matches!(
            parse("[]", "x", p(), None),
            Err(ConfigError::NoServers(_))
        ));
        assert!(matches!(parse("{", "x", p(), None), Err(ConfigError::Json(..))));
    }

    #[test]
    fn a_byte_order_mark_is_accepted_and_a_name_given_twice_is_refused_naming_it() {
        let bom = "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"srv\"}}}";
        assert_eq!(parse(bom, "a", p(), None).unwrap().command, "srv");
        let twice =
            r#"{"servers": {"a": {"command": "one"}, "b": {"command": "x"}, "a": {"command": "two"}}}"#;
        let err = parse(twice, "b", p(), None).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Duplicate { name, .. } if name == "a"),
            "{err}"
        );
        assert!(err.to_string().contains("names server `a` twice"));
    }

    #[test]
    fn vs_code_variables_are_resolved_an_input_is_refused_by_name_and_an_env_file_is_read() {
        let dir = std::env::temp_dir().join(format!("mcpw-cfg-{}", std::process::id()));
        let vscode = dir.join(".vscode");
        std::fs::create_dir_all(&vscode).unwrap();
        std::fs::write(
            dir.join(".env"),
            "# secrets\nAPI_KEY=from-file\nexport MODE=\"fast\"\n",
        )
        .unwrap();
        let path = vscode.join("mcp.json");
        let text = r#"{"servers": {
            "s": {"command": "${workspaceFolder}/bin/srv", "args": ["--home", "${userHome}", "${unknown}"],
                  "env": {"MODE": "slow"}, "envFile": "${workspaceFolder}/.env"},
            "ask": {"command": "srv", "env": {"TOKEN": "${input:token}"}}}}"#;
        let s = parse(text, "s", &path, None).unwrap();
        assert_eq!(s.command, format!("{}/bin/srv", dir.display()));
        assert_eq!(
            s.args,
            [
                "--home",
                std::env::var("HOME").unwrap_or_default().as_str(),
                "${unknown}"
            ]
        );
        assert_eq!(
            s.env,
            [
                ("API_KEY".to_string(), "from-file".to_string()),
                ("MODE".to_string(), "slow".to_string())
            ]
        );
        let err = parse(text, "ask", &path, None).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Input { input, .. } if input == "token"),
            "{err}"
        );
        assert!(err.to_string().contains("${input:token}"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn zed_context_servers_and_claude_code_project_servers_are_read() {
        let zed = r#"{"theme": "One", "context_servers": {"z": {"source": "custom",
            "command": {"path": "srv", "args": ["--x"], "env": {"K": "v"}}}}}"#;
        let z = parse(zed, "z", p(), None).unwrap();
        assert_eq!(
            (z.command.as_str(), z.args.as_slice()),
            ("srv", ["--x".to_string()].as_slice())
        );
        assert_eq!(z.env, [("K".to_string(), "v".to_string())]);
        let cwd = std::env::current_dir().unwrap().display().to_string();
        let claude = serde_json::json!({
            "mcpServers": {"user": {"command": "u"}, "both": {"command": "from-user"}},
            "projects": {cwd: {"mcpServers": {"both": {"command": "from-project"}, "local": {"command": "l"}}},
                         "/elsewhere": {"mcpServers": {"other": {"command": "o"}}}},
        })
        .to_string();
        assert_eq!(parse(&claude, "user", p(), None).unwrap().command, "u");
        assert_eq!(parse(&claude, "local", p(), None).unwrap().command, "l");
        assert_eq!(parse(&claude, "both", p(), None).unwrap().command, "from-project");
        assert!(matches!(
            parse(&claude, "other", p(), None),
            Err(ConfigError::NoSuchServer { .. })
        ));
    }
}
