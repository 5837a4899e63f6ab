//! Lower-case hexadecimal text for hashes, keys and signatures.

/// Encodes bytes as lower-case hex.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0x0f) as usize] as char);
    }
    out
}

/// Decodes exactly `N` bytes of lower-case hex; anything else is `None`.
pub fn decode_exact<const N: usize>(text: &str) -> Option<[u8; N]> {
    let bytes = text.as_bytes();
    if bytes.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// Whether every character is a lower-case hex digit (an empty text is).
pub fn is_lower_hex(text: &str) -> bool {
    text.bytes().all(|c| nibble(c).is_some())
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_upper_case_and_wrong_length() {
        let text = encode(&[0x00, 0xab, 0xff]);
        assert_eq!(text, "00abff");
        assert_eq!(decode_exact::<3>(&text), Some([0x00, 0xab, 0xff]));
        assert_eq!(decode_exact::<3>("00ABFF"), None);
        assert_eq!(decode_exact::<2>(&text), None);
        assert_eq!(decode_exact::<1>("zz"), None);
    }
}
