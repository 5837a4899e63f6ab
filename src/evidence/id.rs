//! Hashes and ids given on the command line (`diff --target`, `verify --head`): the whole
//! 64 hex digits or a unique prefix of at least `MIN_PREFIX` of them, as diff prints them.

use std::fmt;

/// The fewest hex digits a prefix may have.
pub const MIN_PREFIX: usize = 8;

/// Why a given hash or id does not name one thing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixError {
    /// Not 8 to 64 hex digits.
    Syntax { option: &'static str, given: String },
    /// No candidate starts with it.
    NoMatch {
        option: &'static str,
        given: String,
        what: &'static str,
    },
    /// Several candidates start with it.
    Ambiguous {
        option: &'static str,
        given: String,
        what: &'static str,
        count: usize,
    },
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::Syntax { option, given } => write!(
                f,
                "{option} `{given}` is not a hash or id: give its 64 hex digits or a prefix of at least {MIN_PREFIX}"
            ),
            PrefixError::NoMatch { option, given, what } => {
                write!(f, "{option} `{given}` matches no {what}")
            }
            PrefixError::Ambiguous {
                option,
                given,
                what,
                count,
            } => write!(
                f,
                "{option} `{given}` matches {count} {what}s: give more hex digits"
            ),
        }
    }
}

impl std::error::Error for PrefixError {}

/// Checks a given hash or id prefix: 8 to 64 hex digits (upper case is read as lower).
pub fn parse(option: &'static str, given: &str) -> Result<String, PrefixError> {
    let p = given.trim().to_ascii_lowercase();
    if (MIN_PREFIX..=64).contains(&p.len()) && crate::hex::is_lower_hex(&p) {
        Ok(p)
    } else {
        Err(PrefixError::Syntax {
            option,
            given: given.chars().take(80).collect(),
        })
    }
}

/// The one candidate `prefix` (already `parse`d) starts; `what` names a candidate.
pub fn resolve<'a>(
    option: &'static str,
    prefix: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    what: &'static str,
) -> Result<&'a str, PrefixError> {
    let mut found: Option<&'a str> = None;
    let mut count = 0usize;
    for c in candidates {
        if c.starts_with(prefix) && found != Some(c) {
            count += 1;
            found = Some(c);
        }
    }
    match (found, count) {
        (Some(c), 1) => Ok(c),
        (None, _) => Err(PrefixError::NoMatch {
            option,
            given: prefix.into(),
            what,
        }),
        (Some(_), count) => Err(PrefixError::Ambiguous {
            option,
            given: prefix.into(),
            what,
            count,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_of_eight_or_more_hex_digits_names_its_one_candidate() {
        let ids = ["aaaabbbbcccc", "aaaabbbbdddd", "11112222"];
        assert_eq!(parse("--target", "AAAABBBBC").unwrap(), "aaaabbbbc");
        assert_eq!(
            resolve("--target", "aaaabbbbc", ids, "target"),
            Ok("aaaabbbbcccc")
        );
        assert_eq!(resolve("--target", "11112222", ids, "target"), Ok("11112222"));
        let err = resolve("--target", "aaaabbbb", ids, "target").unwrap_err();
        assert!(matches!(err, PrefixError::Ambiguous { count: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("give more hex digits"));
        assert!(matches!(
            resolve("--target", "99999999", ids, "target"),
            Err(PrefixError::NoMatch { .. })
        ));
        for bad in ["aaaabbb", "aaaabbbg", "", &"a".repeat(65)] {
            assert!(parse("--target", bad).is_err(), "{bad}");
        }
    }
}
