//! The unit tests' pseudo-random numbers: one xorshift generator, seeded by each test, so a
//! failing case repeats exactly.

/// Xorshift64 from `seed` (not zero): each call the next number.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
