//! Byte searches over evidence lines, eight bytes at a time (in plain `u64` arithmetic, no
//! `unsafe`): most of a block is the text of strings, and verify reads every byte of it.
//!
//! Each search flags the bytes of a word that match with the classic "has a zero byte" trick.
//! A borrow can flag a byte wrongly, but only one above a byte that truly matched, so the
//! lowest flag (the first byte in memory) is always exact, which is all a search needs.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` equal to `byte` (exact for the lowest one).
fn equal(w: u64, byte: u8) -> u64 {
    let x = w ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The high bit of each byte of `w` below 0x20 (exact for the lowest one).
fn control(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x20) & !w & HIGHS
}

fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(w)
}

/// The first position of a byte `flags` flags (`flags` on whole words, `one` on single bytes).
fn first(b: &[u8], flags: impl Fn(u64) -> u64, one: impl Fn(u8) -> bool) -> Option<usize> {
    let mut i = 0;
    while i + 8 <= b.len() {
        let m = flags(word(b, i));
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i..].iter().position(|&c| one(c)).map(|p| i + p)
}

/// Where a string's plain run ends: the first `"`, `\` or control character.
pub fn string_stop(b: &[u8]) -> Option<usize> {
    first(
        b,
        |w| equal(w, b'"') | equal(w, b'\\') | control(w),
        |c| c == b'"' || c == b'\\' || c < 0x20,
    )
}

/// The first `"` or `\`.
pub fn quote_or_backslash(b: &[u8]) -> Option<usize> {
    first(
        b,
        |w| equal(w, b'"') | equal(w, b'\\'),
        |c| c == b'"' || c == b'\\',
    )
}

/// The first newline.
pub fn newline(b: &[u8]) -> Option<usize> {
    first(b, |w| equal(w, b'\n'), |c| c == b'\n')
}

/// How many bytes of `b` are `byte`.
pub fn count(b: &[u8], byte: u8) -> usize {
    let mut n = 0;
    let mut i = 0;
    let low7 = ONES * 0x7f;
    while i + 8 <= b.len() {
        let x = word(b, i) ^ (ONES * u64::from(byte));
        // High bit set exactly in the bytes that are not zero (no carry leaves a byte).
        let nonzero = (((x & low7) + low7) | x) & HIGHS;
        n += 8 - nonzero.count_ones() as usize;
        i += 8;
    }
    n + b[i..].iter().filter(|&&c| c == byte).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_search_finds_what_a_byte_by_byte_search_finds() {
        // Mostly plain bytes, now and then one that stops a search (or almost does).
        let stops = b"\"\\\x00\x01\x1f\x20\x21\x7f\x80\xa0\xff\n";
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        for round in 0..20_000 {
            let len = (next() % 40) as usize;
            let b: Vec<u8> = (0..len)
                .map(|_| match next() % 8 {
                    0 => stops[(next() as usize) % stops.len()],
                    n => b'a' + n as u8,
                })
                .collect();
            assert_eq!(
                string_stop(&b),
                b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20),
                "round {round}: {b:?}"
            );
            assert_eq!(newline(&b), b.iter().position(|&c| c == b'\n'), "{b:?}");
            assert_eq!(
                quote_or_backslash(&b),
                b.iter().position(|&c| c == b'"' || c == b'\\'),
                "round {round}: {b:?}"
            );
            for byte in [b'\n', b'"', 0, 0xff] {
                assert_eq!(count(&b, byte), b.iter().filter(|&&c| c == byte).count(), "{b:?}");
            }
        }
    }
}
