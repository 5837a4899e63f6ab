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
    let (mut user, mut project) = (None, None);
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
                        let at = || position(text, i, end);
                        match under(&stack).as_slice() {
                            [servers] if ["mcpServers", "servers", "context_servers"].contains(servers) => {
                                user = user.or_else(at);
                            }
                            ["projects", folder, "mcpServers"] if *folder == cwd => {
                                project = project.or_else(at);
                            }
                            _ => {}
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
    project.or(user)
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
fn position(text: &str, start: usize, end: usize) -> Option<Position> {
    let before = &text[..start];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let column = before[line_start..].encode_utf16().count() + 1;
    Some(Position {
        line: before.bytes().filter(|&b| b == b'\n').count() + 1,
        column,
        end_column: column + text[start..end].encode_utf16().count(),
    })
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
    fn nesting_past_the_bound_is_not_followed() {
        let text = format!("{{\"servers\": {}{{\"s\": 1}}", "[".repeat(100));
        assert_eq!(at(&text, "s"), None);
    }
}
