//! Cutting text to a bound on a character boundary: the one pair of helpers every module
//! uses to keep a server's strings bounded.

/// At most `max` bytes of `text`, on a character boundary, with `…` when something was cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", cut(text, max))
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut("héllo", 2), "h");
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(cut("", 5), "");
    }
}
