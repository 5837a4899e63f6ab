//! Where a server entry is written in its config file: the line and column of its name, for a
//! report to point at (SARIF's region). A scan of the text as written (comments, trailing
//! commas and a byte-order mark allowed, like the reader), never a second parse: it follows
//! the nesting of objects and arrays and the key each object is under, within a bound.

use std::path::Path;

use super::string_end;

/// Deeper nesting than this is not followed (the reader refuses far less deep configs).
const MAX_DEPTH: usize = 64;

/// A place in a text, as SARIF counts by default: 1-based lines, and 1-based columns in
/// UTF-16 code units (`columnKind` `utf16CodeUnits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    /// The column of the name's opening quote.
    pub column: usize,
    /// The column just past its closing quote.
    pub end_column: usize,
}

/// Where the key `name` of the servers object is in the config at `path`: the one the reader
/// uses (a project's own servers in Claude Code's `~/.claude.json` win over the user's).
pub fn entry(path: &Path, name: &str) -> Option<Position> {
    let text = super::read(path).ok()?;
    let cwd = std::env::current_dir().ok()?.display().to_string();
    position_in(&text, name, &cwd)
}

/// An object or array being scanned: the key it is under in its parent object, if any, and
/// (for an object) the last key read in it and whether a key comes next.
struct Frame {
    under: Option<String>,
    object: bool,
    key: Option<String>,
    expect_key: bool,
}

/// [`entry`] on the config's text; `cwd` is the folder whose Claude Code project servers count.
fn position_in(text: &str, name: &str, cwd: &str) -> Option<Position> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    // Per servers object the reader may use (`SERVERS`, then the project's): `Some` once it
    // opened, holding where the name is in it. The last object of a name counts, as in the
    // reader (a later duplicate key replaces an earlier one).
    let mut user: [Option<Option<Position>>; 3] = [None; 3];
    let mut project: Option<Option<Position>> = None;
    let mut i = if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = bytes[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = bytes[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2);
                continue;
            }
            open @ (b'{' | b'[') => {
                if stack.len() >= MAX_DEPTH {
                    return None;
                }
                let under = stack.last().filter(|f| f.object).and_then(|f| f.key.clone());
                stack.push(Frame {
                    under,
                    object: open == b'{',
                    key: None,
                    expect_key: open == b'{',
                });
                if open == b'{' {
                    match servers_object(&stack, cwd) {
                        Some(Servers::User(k)) => user[k] = Some(None),
                        Some(Servers::Project) => project = Some(None),
                        None => {}
                    }
                }
            }
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(top) = stack.last_mut() {
                    top.expect_key = false;
                }
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.expect_key = top.object;
                }
            }
            b'"' => {
                let end = string_end(bytes, i);
                if let Some(top) = stack.last_mut().filter(|f| f.object && f.expect_key) {
                    let key: String = serde_json::from_str(&text[i..end]).ok()?;
                    top.key = Some(key.clone());
                    if key == name {
                        let at = Some(position(text, i, end));
                        match servers_object(&stack, cwd) {
                            Some(Servers::User(k)) => user[k] = Some(at),
                            Some(Servers::Project) => project = Some(at),
                            None => {}
                        }
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // The reader: the project's servers win; else the first of `SERVERS` the config has.
    project
        .flatten()
        .or_else(|| user.into_iter().flatten().next().flatten())
}

/// The servers objects the reader takes, in its order of preference.
const SERVERS: [&str; 3] = ["mcpServers", "servers", "context_servers"];

/// Which servers object the innermost frame is, if one.
enum Servers {
    /// The top-level object `SERVERS[i]`.
    User(usize),
    /// Claude Code's `projects.<cwd>.mcpServers`.
    Project,
}

fn servers_object(stack: &[Frame], cwd: &str) -> Option<Servers> {
    if !stack.last().is_some_and(|f| f.object) {
        return None;
    }
    match under(stack).as_slice() {
        [servers] => SERVERS.iter().position(|s| s == servers).map(Servers::User),
        ["projects", folder, "mcpServers"] if *folder == cwd => Some(Servers::Project),
        _ => None,
    }
}

/// The keys the innermost object is under, outermost first (the top-level object's none).
fn under(stack: &[Frame]) -> Vec<&str> {
    stack
        .iter()
        .skip(1)
        .map(|f| f.under.as_deref().unwrap_or(""))
        .collect()
}

/// The position of the token `text[start..end]` (on one line: a JSON string has no raw line
/// break).
fn position(text: &str, start: usize, end: usize) -> Position {
    let before = &text[..start];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let column = before[line_start..].encode_utf16().count() + 1;
    Position {
        line: before.bytes().filter(|&b| b == b'\n').count() + 1,
        column,
        end_column: column + text[start..end].encode_utf16().count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, name: &str) -> Option<(usize, usize, usize)> {
        position_in(text, name, "/work/proj").map(|p| (p.line, p.column, p.end_column))
    }

    #[test]
    fn the_name_of_a_servers_entry_is_found_by_line_and_column() {
        let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"fs\": {\"command\": \"y\"}\n  }\n}\n";
        assert_eq!(at(text, "fs"), Some((4, 5, 9)));
        assert_eq!(at(text, "a"), Some((3, 5, 8)));
        assert_eq!(at(text, "nope"), None);
    }

    #[test]
    fn the_same_word_elsewhere_is_not_the_entry() {
        // A value, a key of another object, a key inside an entry, and a comment.
        let text = r#"{ // "fs": no
  "fs": 1, "other": {"fs": 2},
  "servers": {"web": {"fs": "fs", "url": "http://x"}, /* "fs" */
  "fs": {"command": "y"},}
}"#;
        assert_eq!(at(text, "fs"), Some((4, 3, 7)));
    }

    #[test]
    fn columns_count_utf16_code_units_and_escaped_names_match() {
        let text = "{\"servers\": {\"é😀\": 1, \"\\u0061b\": 2}}";
        // `{"servers": {` is 13 units; "é😀" is 1 + 1 + 2 + 1 units; then `: 1, `.
        assert_eq!(at(text, "é😀"), Some((1, 14, 19)));
        assert_eq!(at(text, "ab"), Some((1, 24, 33)));
    }

    #[test]
    fn a_claude_code_project_entry_wins_over_the_users() {
        let text = r#"{"mcpServers": {"s": {}},
"projects": {"/elsewhere": {"mcpServers": {"s": {}}},
             "/work/proj": {"mcpServers": {"s": {}}}}}"#;
        assert_eq!(at(text, "s"), Some((3, 44, 47)));
    }

    #[test]
    fn the_entry_found_is_in_the_servers_object_the_reader_uses() {
        // The reader takes `mcpServers` over `servers`, wherever each is written.
        let text = "{\"servers\": {\"fs\": {}},\n\"mcpServers\": {\"fs\": {}}}";
        assert_eq!(at(text, "fs"), Some((2, 16, 20)));
        // A name only in the object the reader ignores is not its entry.
        let text = "{\"servers\": {\"fs\": {}}, \"mcpServers\": {\"other\": {}}}";
        assert_eq!(at(text, "fs"), None);
        // A key given twice: the reader keeps the later object.
        let text = "{\"mcpServers\": {\"fs\": {}},\n\"mcpServers\": {\"fs\": {}}}";
        assert_eq!(at(text, "fs"), Some((2, 16, 20)));
    }

    #[test]
    fn escapes_and_names_as_values_do_not_mislead_the_scan() {
        // A value holding the name, quotes, braces and a backslash before the key, and a key
        // whose escapes hide a quote and a brace.
        let text = r#"{"mcpServers": {"a": {"args": ["fs", "\\\"{", "}\\"], "x": "fs"},
 "q\"{": {}, "fs": {}}}"#;
        assert_eq!(at(text, "fs"), Some((2, 14, 18)));
        assert_eq!(at(text, "q\"{"), Some((2, 2, 8)));
    }

    #[test]
    fn nesting_past_the_bound_is_not_followed() {
        let text = format!("{{\"servers\": {}{{\"s\": 1}}", "[".repeat(100));
        assert_eq!(at(&text, "s"), None);
    }
}
