//! Which top-level fields each block kind holds, and of which JSON types. `verify` checks
//! these for every block; `schemas/evidence-block.schema.json` also describes the nested
//! fields (which `tests/reverify.py` validates).

/// A set of JSON types, as a bit mask.
pub type Types = u8;
pub const STRING: Types = 1;
pub const INTEGER: Types = 2;
pub const OBJECT: Types = 4;
pub const ARRAY: Types = 8;
pub const BOOL: Types = 16;
pub const NULL: Types = 32;
pub const ANY: Types = STRING | INTEGER | OBJECT | ARRAY | BOOL | NULL;
/// The field may be absent: blocks written before it existed lack it.
pub const OPTIONAL: Types = 64;

/// Fields every block has (sorted: looked up by binary search).
pub const ENVELOPE: &[(&str, Types)] = &[
    ("file_id", STRING),
    ("format", STRING),
    ("hash", STRING),
    ("host", STRING),
    ("key", STRING),
    ("kind", STRING),
    ("observed_at", STRING),
    ("prev", STRING),
    ("seq", INTEGER),
    ("sig", STRING),
    ("target", OBJECT),
    ("tool", OBJECT),
    ("tz", STRING | NULL),
];

/// The other fields of a `probe` block (sorted).
pub const PROBE: &[(&str, Types)] = &[
    // Which bound ended the run early: "timeout", "deadline", or null.
    ("bound", STRING | NULL | OPTIONAL),
    ("call", OBJECT | NULL),
    // Foreign JSON as the server replied (or its JSON text when it held non-integers).
    ("capabilities", ANY),
    ("era", STRING),
    ("era_detection", STRING | NULL),
    // HTTP targets only: status codes, content types, session id shape, the DELETE.
    ("http", OBJECT | OPTIONAL),
    ("messages", OBJECT),
    ("observation_sha256", STRING),
    ("protocol_requested", STRING),
    ("protocol_version", STRING | NULL),
    ("reasons", ARRAY),
    ("server", OBJECT | NULL),
    ("silence", OBJECT | NULL),
    ("stderr", OBJECT),
    ("stdout_noise", OBJECT),
    ("teardown", OBJECT | NULL),
    ("timings_ms", OBJECT),
    ("tools", OBJECT | NULL),
    ("verdict", STRING),
];

/// The other fields of a `check` block (sorted).
pub const CHECK: &[(&str, Types)] = &[
    ("bound", STRING | NULL | OPTIONAL),
    ("could_not_run", STRING | NULL),
    ("counts", OBJECT),
    ("duration_ms", INTEGER),
    ("era", STRING),
    ("observation_sha256", STRING),
    ("protocol_version", STRING | NULL),
    ("results", ARRAY),
    ("server", OBJECT | NULL),
    // What the main server process showed: stderr bytes and (when the suite could not run or
    // a server process died) its tail; stdout bytes; a silence like a probe's.
    ("session", OBJECT | OPTIONAL),
    ("strict", BOOL),
];

/// The other fields of a `client` block (sorted).
pub const CLIENT: &[(&str, Types)] = &[
    ("client", OBJECT | NULL),
    ("domains", ARRAY),
    ("log", OBJECT),
    ("observation_sha256", STRING),
    ("verdict", STRING),
];

/// The fields of a kind beyond the envelope; `None` for a kind this version does not know.
pub fn fields_of(kind: &str) -> Option<&'static [(&'static str, Types)]> {
    match kind {
        "probe" => Some(PROBE),
        "check" => Some(CHECK),
        "client" => Some(CLIENT),
        _ => None,
    }
}

/// The JSON type of a canonical value, from its first byte.
pub fn type_of(value: &[u8]) -> Types {
    match value.first() {
        Some(b'"') => STRING,
        Some(b'{') => OBJECT,
        Some(b'[') => ARRAY,
        Some(b't' | b'f') => BOOL,
        Some(b'n') => NULL,
        _ => INTEGER,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn field_lists_are_sorted_for_binary_search() {
        for list in [super::ENVELOPE, super::PROBE, super::CHECK, super::CLIENT] {
            assert!(list.windows(2).all(|w| w[0].0 < w[1].0), "{list:?}");
        }
    }
}
