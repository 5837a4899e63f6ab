//! Making untrusted text inert before a person or a log reader sees it.
//!
//! Every string a server chose (names, titles, versions, descriptions, error messages, method
//! names, capability keys, stderr, stdout noise) and every string read from an evidence file
//! or a log passes through [`inert`] before it reaches a terminal, a CI log or a report. The
//! rule, one for every printer:
//!
//! - C0 controls (NUL, ESC, CR, LF, TAB, …), DEL and C1 controls (U+0080–U+009F, which
//!   include the 8-bit CSI, OSC and DCS introducers) are shown as `\u{1b}`-style escapes, so no
//!   escape sequence acts and no server text can start a line of its own (a forged `::error`
//!   workflow command, a forged `pass:` or `recorded:` line);
//! - bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
//!   U+061C), line and paragraph separators (U+2028, U+2029), zero-width characters
//!   (U+200B–U+200D, U+2060, U+FEFF) and Unicode tag characters (U+E0000–U+E007F) are escaped
//!   the same way, so text cannot be reordered or hidden from the reader;
//! - a backslash stays as it is: the escapes are for reading, not for parsing back.
//!
//! Evidence blocks keep the exact value; JSON escapes it there. Multi-line text a person
//! should read line by line (a stderr tail) is split by the printer and each line made inert.

use std::borrow::Cow;

/// Whether `c` is shown escaped rather than as itself.
pub fn is_hazard(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

/// `text` with every hazard (see the module docs) shown as a `\u{..}` escape.
pub fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hazard) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hazard(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Each line of `text` made inert, for text a person reads line by line (a stderr tail):
/// line ends are the only control characters kept, and a CR inside a line is escaped.
pub fn inert_lines(text: &str) -> impl Iterator<Item = Cow<'_, str>> {
    text.split('\n').map(inert)
}

/// `value` as one line of JSON whose every hazard is a `\uXXXX` escape: it parses back to
/// exactly `value`, yet a terminal or CI log that shows it sees no control, bidi or tag
/// character (serde_json escapes only C0 controls; DEL, C1, bidi and tags it leaves raw).
pub fn json(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if !text.chars().any(is_hazard) {
        return text;
    }
    // Outside strings serialized JSON is ASCII without controls, so every hazard left is
    // inside a string, where a `\uXXXX` escape (a surrogate pair above U+FFFF) is the same
    // character.
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hazard(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(inert("echo tool – ünïcode ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_control_and_format_hazard_is_escaped() {
        let nasty = "a\u{1b}[31m\u{1b}]0;t\u{7}\u{1b}P\u{9b}\u{9d}\n::error::x\r\0\t\u{7f}\u{202e}\u{2066}\u{200f}\u{2028}\u{e0041}\u{feff}\u{200b}";
        let out = inert(nasty);
        assert!(!out.chars().any(is_hazard), "{out}");
        assert!(!out.chars().any(|c| c.is_control()));
        assert!(out.contains("\\u{1b}[31m"));
        assert!(out.contains("\\u{a}::error::x"));
        assert!(out.contains("\\u{202e}"));
        assert!(out.contains("\\u{e0041}"));
    }

    #[test]
    fn no_line_of_the_output_can_begin_with_server_text() {
        let out = inert("name\n::stop-commands::tok\r\nrecorded: fake");
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn json_escapes_every_hazard_and_parses_back_to_the_same_value() {
        let v = serde_json::json!({"n": "a\u{7f}\u{9b}\u{202e}\u{e0041}\n\u{1b}"});
        let text = json(&v);
        assert!(!text.chars().any(is_hazard), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), v);
    }

    #[test]
    fn lines_are_split_then_made_inert() {
        let lines: Vec<_> = inert_lines("one\r\ntwo\u{1b}").collect();
        assert_eq!(lines, ["one\\u{d}", "two\\u{1b}"]);
    }
}
