//! Wall-clock stamps for evidence: local time with its UTC offset, and the IANA zone name.

use time::format_description::well_known::Rfc3339;
use time::{OffsetDateTime, UtcOffset};

/// The moment a run was observed, as written into a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// RFC 3339 with milliseconds and the local offset, e.g. `2026-12-02T16:24:10.123+01:00`.
    pub rfc3339: String,
    /// IANA zone name when it can be found, else `None`.
    pub tz: Option<String>,
}

/// Reads the clock now. Falls back to UTC when the local offset cannot be determined.
pub fn now() -> Stamp {
    let utc = OffsetDateTime::now_utc();
    let offset = UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC);
    Stamp {
        rfc3339: format_millis(utc.to_offset(offset)),
        tz: zone_name(),
    }
}

/// Formats with exactly three fractional digits and a numeric offset (`+00:00`, never `Z`),
/// so stamps from one host sort and compare uniformly.
pub fn format_millis(t: OffsetDateTime) -> String {
    let (h, m, _) = t.offset().as_hms();
    let sign = if t.offset().is_negative() { '-' } else { '+' };
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}{}{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond(),
        sign,
        h.unsigned_abs(),
        m.unsigned_abs()
    )
}

/// Parses an RFC 3339 stamp, as verify does to notice time going backwards.
pub fn parse(text: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

/// Whether `text` is a stamp exactly as blocks hold them: `YYYY-MM-DDTHH:MM:SS.mmm±HH:MM`,
/// and a real time.
pub fn is_block_stamp(text: &str) -> bool {
    let b = text.as_bytes();
    let shape = b.len() == 29
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 | 26 => c == b':',
            19 => c == b'.',
            23 => c == b'+' || c == b'-',
            _ => c.is_ascii_digit(),
        });
    shape && parse(text).is_some()
}

/// A block stamp one millisecond later, in the same offset.
pub fn next_millisecond(text: &str) -> Option<String> {
    let t = parse(text)?;
    Some(format_millis(t + time::Duration::milliseconds(1)))
}

/// The IANA zone name: `TZ`, then the `/etc/localtime` link, then `/etc/timezone`. Only a
/// plausible zone name is returned (letters, digits, `_ + - /`, at most 64 characters).
pub fn zone_name() -> Option<String> {
    raw_zone_name().filter(|n| {
        n.len() <= 64
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_+-/".contains(&b))
    })
}

fn raw_zone_name() -> Option<String> {
    if let Ok(tz) = std::env::var("TZ") {
        let tz = tz.trim_start_matches(':');
        if let Some(name) = after_zoneinfo(tz) {
            return Some(name);
        }
        if !tz.is_empty() && !tz.starts_with('/') {
            return Some(tz.to_string());
        }
    }
    if let Ok(target) = std::fs::read_link("/etc/localtime")
        && let Some(name) = after_zoneinfo(&target.to_string_lossy())
    {
        return Some(name);
    }
    if let Ok(text) = std::fs::read_to_string("/etc/timezone") {
        let name = text.trim();
        if !name.is_empty() && name.len() < 128 {
            return Some(name.to_string());
        }
    }
    None
}

fn after_zoneinfo(path: &str) -> Option<String> {
    let idx = path.find("zoneinfo/")?;
    let name = &path[idx + "zoneinfo/".len()..];
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn formats_milliseconds_and_numeric_offset() {
        assert_eq!(
            format_millis(datetime!(2026-12-02 16:24:10.123456 +01:00)),
            "2026-12-02T16:24:10.123+01:00"
        );
        assert_eq!(
            format_millis(datetime!(2026-01-02 03:04:05 -05:30)),
            "2026-01-02T03:04:05.000-05:30"
        );
        assert_eq!(
            format_millis(datetime!(2026-01-02 03:04:05 UTC)),
            "2026-01-02T03:04:05.000+00:00"
        );
    }

    #[test]
    fn stamps_parse_back() {
        let stamp = now();
        assert!(parse(&stamp.rfc3339).is_some(), "{}", stamp.rfc3339);
    }

    #[test]
    fn block_stamps_have_one_exact_shape() {
        assert!(is_block_stamp("2026-12-02T16:24:10.123+01:00"));
        assert!(is_block_stamp(&now().rfc3339));
        assert!(!is_block_stamp("2026-12-02T16:24:10.123Z"));
        assert!(!is_block_stamp("2026-12-02T16:24:10+01:00"));
        assert!(!is_block_stamp("2026-13-02T16:24:10.123+01:00"));
    }

    #[test]
    fn zone_names_come_from_zoneinfo_paths() {
        assert_eq!(
            after_zoneinfo("../usr/share/zoneinfo/Europe/Berlin").as_deref(),
            Some("Europe/Berlin")
        );
        assert_eq!(after_zoneinfo("/etc/localtime"), None);
    }
}
