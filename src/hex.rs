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
    decode_exact_bytes(text.as_bytes())
}

/// `decode_exact` of bytes (any byte that is not a lower-case hex digit is refused).
pub fn decode_exact_bytes<const N: usize>(bytes: &[u8]) -> Option<[u8; N]> {
    if bytes.len() != N * 2 {
        return None;
    }
    // A table, and one test at the end: verify decodes four digests and a signature a block.
    const NIBBLES: [u8; 256] = {
        let mut t = [0xffu8; 256];
        let mut c = 0;
        while c < 16 {
            t[b"0123456789abcdef"[c] as usize] = c as u8;
            c += 1;
        }
        t
    };
    let mut out = [0u8; N];
    let mut bad = 0u8;
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let (high, low) = (NIBBLES[pair[0] as usize], NIBBLES[pair[1] as usize]);
        bad |= high | low;
        *o = (high << 4) | (low & 0x0f);
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// Whether every character is a lower-case hex digit (an empty text is).
pub fn is_lower_hex(text: &str) -> bool {
    is_lower_hex_bytes(text.as_bytes())
}

/// `is_lower_hex` on bytes, eight at a time: verify checks some twenty digests a block.
pub fn is_lower_hex_bytes(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(w);
        let x = u64::from_le_bytes(bytes);
        if x & HIGHS != 0 {
            return false;
        }
        // Each byte is below 0x80, so adding at most 0x50 carries into no other byte: the
        // high bit of `x + (0x80 - lo)` says `x >= lo`.
        let at_least = |lo: u64| x + ONES * (0x80 - lo);
        let digit = at_least(0x30) & !at_least(0x3a);
        let letter = at_least(0x61) & !at_least(0x67);
        if (digit | letter) & HIGHS != HIGHS {
            return false;
        }
    }
    words.remainder().iter().all(|&c| nibble(c).is_some())
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
    fn the_word_at_a_time_hex_check_agrees_with_the_byte_check_on_every_byte() {
        for c in 0..=255u8 {
            for at in 0..20 {
                let mut b = [b'7'; 20];
                b[at] = c;
                for len in [at + 1, 8, 16, 20] {
                    let slice = &b[..len.max(at + 1)];
                    assert_eq!(
                        is_lower_hex_bytes(slice),
                        slice.iter().all(|&c| nibble(c).is_some()),
                        "byte {c:#x} at {at} of {}",
                        slice.len()
                    );
                }
            }
        }
    }

    #[test]
    fn decoding_refuses_every_byte_but_lower_case_hex_digits() {
        for c in 0..=255u8 {
            for at in 0..4 {
                let mut text = *b"0a1b";
                text[at] = c;
                let Ok(s) = std::str::from_utf8(&text) else {
                    continue;
                };
                let by_bytes = text
                    .chunks(2)
                    .map(|p| Some((nibble(p[0])? << 4) | nibble(p[1])?))
                    .collect::<Option<Vec<u8>>>();
                assert_eq!(decode_exact::<2>(s).map(|d| d.to_vec()), by_bytes, "{s:?}");
            }
        }
    }

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
