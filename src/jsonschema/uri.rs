//! URI references as JSON Schema uses them for `$id`, `$ref` and `$dynamicRef`: resolution
//! against a base (RFC 3986 §5.2), fragment splitting, and JSON Pointer fragments
//! (percent-decoding, then `~1`/`~0`). Nothing here touches the network.

/// The parts of a URI reference (RFC 3986 §3), borrowed from the text.
struct Parts<'a> {
    scheme: Option<&'a str>,
    authority: Option<&'a str>,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

fn parse(s: &str) -> Parts<'_> {
    let (rest, fragment) = match s.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (s, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (scheme, rest) = match rest.find(':') {
        Some(i)
            if i > 0
                && rest[..i].starts_with(|c: char| c.is_ascii_alphabetic())
                && rest[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (Some(&rest[..i]), &rest[i + 1..])
        }
        _ => (None, rest),
    };
    let (authority, path) = match rest.strip_prefix("//") {
        Some(r) => match r.find('/') {
            Some(i) => (Some(&r[..i]), &r[i..]),
            None => (Some(r), ""),
        },
        None => (None, rest),
    };
    Parts {
        scheme,
        authority,
        path,
        query,
        fragment,
    }
}

fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let absolute = path.starts_with('/');
    let segs: Vec<&str> = path.split('/').collect();
    let last = segs.len().saturating_sub(1);
    let mut trailing = false;
    for (k, seg) in segs.iter().enumerate() {
        if k == 0 && absolute {
            continue;
        }
        match *seg {
            "." => trailing = k == last,
            ".." => {
                out.pop();
                trailing = k == last;
            }
            s => {
                out.push(s);
                trailing = false;
            }
        }
    }
    let mut s = String::with_capacity(path.len());
    if absolute {
        s.push('/');
    }
    s.push_str(&out.join("/"));
    if trailing && !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// `reference` resolved against the absolute URI `base` (RFC 3986 §5.2.2).
pub fn resolve(base: &str, reference: &str) -> String {
    let r = parse(reference);
    let b = parse(base);
    let (scheme, authority, path, query);
    if r.scheme.is_some() {
        scheme = r.scheme;
        authority = r.authority;
        path = remove_dot_segments(r.path);
        query = r.query;
    } else {
        scheme = b.scheme;
        if r.authority.is_some() {
            authority = r.authority;
            path = remove_dot_segments(r.path);
            query = r.query;
        } else {
            authority = b.authority;
            if r.path.is_empty() {
                path = b.path.to_string();
                query = r.query.or(b.query);
            } else {
                query = r.query;
                if r.path.starts_with('/') {
                    path = remove_dot_segments(r.path);
                } else {
                    let merged = if b.authority.is_some() && b.path.is_empty() {
                        format!("/{}", r.path)
                    } else {
                        match b.path.rfind('/') {
                            Some(i) => format!("{}{}", &b.path[..=i], r.path),
                            None => r.path.to_string(),
                        }
                    };
                    path = remove_dot_segments(&merged);
                }
            }
        }
    }
    let mut out = String::new();
    if let Some(s) = scheme {
        out.push_str(s);
        out.push(':');
    }
    if let Some(a) = authority {
        out.push_str("//");
        out.push_str(a);
    }
    out.push_str(&path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = r.fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// `uri` split into the part before `#` and the fragment (empty if none).
pub fn split_fragment(uri: &str) -> (&str, &str) {
    uri.split_once('#').unwrap_or((uri, ""))
}

/// Percent-decoding of a fragment; None if it is not valid UTF-8 once decoded.
pub fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = bytes.get(i + 1..i + 3)
            && let Ok(h) = std::str::from_utf8(h)
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The reference tokens of a JSON Pointer (`""` is the whole document); None if malformed.
pub fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/')
        .map(|t| {
            let mut out = String::with_capacity(t.len());
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => out.push('~'),
                        Some('1') => out.push('/'),
                        _ => return None,
                    }
                } else {
                    out.push(c);
                }
            }
            Some(out)
        })
        .collect()
}

/// Longest token [`push_token`] copies; longer ones are cut and end in `…`.
pub const MAX_TOKEN: usize = 256;
/// Past this many bytes, [`push_token`] adds one `/…` and nothing more.
pub const MAX_PATH: usize = 4096;

/// `s` cut to at most `max` bytes, at a char boundary.
pub fn clip(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Append `/token` (escaped) to a JSON Pointer meant for people: a token over [`MAX_TOKEN`]
/// bytes is cut and ends in `…`, and a pointer past [`MAX_PATH`] bytes ends in `/…`, so
/// paths stay small whatever keys a schema or instance holds.
pub fn push_token(out: &mut String, token: &str) {
    if out.len() >= MAX_PATH {
        if !out.ends_with("/…") {
            out.push_str("/…");
        }
        return;
    }
    out.push('/');
    let kept = clip(token, MAX_TOKEN);
    escape_token(kept, out);
    if kept.len() < token.len() {
        out.push('…');
    }
}

/// One JSON Pointer token, escaped (`~` → `~0`, `/` → `~1`).
pub fn escape_token(token: &str, out: &mut String) {
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_references_resolve_as_rfc_3986_section_5_4_says() {
        let base = "http://a/b/c/d;p?q";
        for (r, want) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q#s"),
            ("", "http://a/b/c/d;p?q"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../g", "http://a/g"),
            ("../../../g", "http://a/g"),
            ("urn:x:y", "urn:x:y"),
        ] {
            assert_eq!(resolve(base, r), want, "resolving {r:?}");
        }
        assert_eq!(resolve("urn:uuid:1234", "#/a"), "urn:uuid:1234#/a");
    }

    #[test]
    fn pointer_fragments_are_percent_decoded_then_unescaped() {
        let decoded = percent_decode("/$defs/percent%25field/tilde~0f/sl~1ash").unwrap();
        assert_eq!(
            pointer_tokens(&decoded).unwrap(),
            ["$defs", "percent%field", "tilde~f", "sl/ash"]
        );
        assert_eq!(pointer_tokens("a"), None);
        assert_eq!(pointer_tokens("/~2"), None);
    }

    #[test]
    fn paths_for_people_stay_small_whatever_the_keys() {
        let mut p = String::new();
        push_token(&mut p, "a/b~");
        assert_eq!(p, "/a~1b~0");
        push_token(&mut p, &"é".repeat(1000));
        assert_eq!(p.len(), "/a~1b~0/".len() + MAX_TOKEN + '…'.len_utf8());
        for _ in 0..100 {
            push_token(&mut p, &"x".repeat(200));
        }
        assert!(p.len() < MAX_PATH + 300 && p.ends_with("/…"), "{}", p.len());
    }
}
