//! One evidence block: sealing (chain fields, hash, signature) and checking one line.
//!
//! `hash` is SHA-256 over the canonical bytes of the block without `hash` and `sig`;
//! `sig` is Ed25519 over the 32 raw bytes of that hash. Both are lower-case hex.

use std::fmt;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::borrow::Cow;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::canonical;
use super::canonical_scan;
use super::canonical_scan::Raw;
use super::keys;
use super::kind::{self, BlockKind, View};
use crate::hex;

/// The `format` value of every block this version writes.
/// The format this version writes. v2 added the surface (`surface`, `expected`), HTTP targets
/// (`target.url`, `transport`, `headers`, the `http` facts) and `target.program_sha256_source`.
pub const FORMAT: &str = "mcp-witness/evidence-block/v2";
/// The format before them, still verified: a v1 block holds none of the v2 fields.
pub const FORMAT_V1: &str = "mcp-witness/evidence-block/v1";
/// `prev` of a file's first block.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// A block line longer than this is refused by every reader (blocks are bounded far below it).
pub const MAX_LINE: usize = 16 << 20;

/// This host's name, as blocks record it.
pub fn host_name() -> String {
    hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A block body: the fields every kind starts with (its kind, when and where it was
/// observed, which tool wrote it), then the kind's own `fields` (a JSON object), and the
/// kind's `observation_sha256` over them.
pub fn body(kind: BlockKind, stamp: &crate::clock::Stamp, host: &str, fields: Value) -> Map<String, Value> {
    let observation = kind.observation_sha256(&fields);
    let mut map = match fields {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    map.insert("observation_sha256".into(), observation.into());
    map.insert("kind".into(), kind.name().into());
    map.insert("observed_at".into(), stamp.rfc3339.clone().into());
    map.insert("tz".into(), stamp.tz.clone().into());
    map.insert("host".into(), host.into());
    map.insert(
        "tool".into(),
        serde_json::json!({"name": "mcp-witness", "version": env!("CARGO_PKG_VERSION")}),
    );
    map
}

/// Where a block goes in its file.
#[derive(Debug, Clone)]
pub struct Link {
    pub seq: u64,
    pub prev: String,
    pub file_id: String,
}

/// A sealed block, ready to append.
#[derive(Debug, Clone)]
pub struct Sealed {
    pub seq: u64,
    pub hash: String,
    /// The canonical line, with its trailing newline.
    pub line: Vec<u8>,
}

/// Adds the chain fields to `body`, hashes and signs it.
pub fn seal(mut body: Map<String, Value>, link: &Link, key: &SigningKey) -> Sealed {
    body.insert("format".into(), FORMAT.into());
    body.insert("seq".into(), link.seq.into());
    body.insert("prev".into(), link.prev.clone().into());
    body.insert("file_id".into(), link.file_id.clone().into());
    body.insert("key".into(), keys::public_text(&key.verifying_key()).into());
    body.remove("hash");
    body.remove("sig");
    let mut value = Value::Object(body);
    let digest: [u8; 32] = Sha256::digest(canonical::to_bytes(&value)).into();
    let sig = key.sign(&digest);
    let hash = hex::encode(&digest);
    let map = value.as_object_mut().expect("built as an object");
    map.insert("hash".into(), hash.clone().into());
    map.insert("sig".into(), hex::encode(&sig.to_bytes()).into());
    let mut line = canonical::to_bytes(&value);
    line.push(b'\n');
    Sealed {
        seq: link.seq,
        hash,
        line,
    }
}

/// What is wrong with a line, as verify reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockError {
    TooLong(usize),
    NotJson(String),
    NotObject,
    /// Not byte-for-byte its canonical form: the offset and what was found there.
    NotCanonical(usize, &'static str),
    Unfit(String),
    /// A line of an `mcp-witness serve` log (`ts`, `dir`, `msg` or `raw`), not a block.
    ServeLog,
    /// A field (its path, e.g. `tools.count`) and what is wrong with it.
    Field(String, String),
    UnknownField(String),
    UnknownFormat(String),
    /// A digest the block can be checked against (`target.id`, `observation_sha256`) that
    /// does not match what it digests.
    Digest(&'static str),
    /// `key` is a small-order Ed25519 point.
    WeakKey,
    HashMismatch,
    BadSignature,
}

impl BlockError {
    /// A stable code for machine-readable reports.
    pub fn code(&self) -> &'static str {
        match self {
            BlockError::TooLong(_) => "line_too_long",
            BlockError::NotJson(_) => "not_json",
            BlockError::NotObject => "not_object",
            BlockError::NotCanonical(..) => "not_canonical",
            BlockError::Unfit(_) => "non_integer_number",
            BlockError::ServeLog => "serve_log_line",
            BlockError::Field(..) => "bad_field",
            BlockError::UnknownField(_) => "unknown_field",
            BlockError::UnknownFormat(_) => "unknown_format",
            BlockError::Digest(_) => "digest_mismatch",
            BlockError::WeakKey => "weak_key",
            BlockError::HashMismatch => "hash_mismatch",
            BlockError::BadSignature => "bad_signature",
        }
    }
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::TooLong(n) => write!(f, "line of {n} bytes is longer than any block ({MAX_LINE})"),
            BlockError::NotJson(e) => write!(f, "not JSON: {e}"),
            BlockError::NotObject => write!(f, "not a JSON object"),
            BlockError::NotCanonical(at, what) => write!(
                f,
                "not in canonical form ({what} at byte {at}): the line was edited or re-encoded"
            ),
            BlockError::Unfit(path) => write!(f, "number at {path} is not a safe integer"),
            BlockError::ServeLog => write!(
                f,
                "this is a line of an `mcp-witness serve` log (ts, dir, msg), not an evidence block: read serve logs with `mcp-witness analyze`, and keep them apart from evidence (serve writes *.log.jsonl)"
            ),
            BlockError::Field(name, problem) => write!(f, "field `{name}` {problem}"),
            BlockError::UnknownField(name) => write!(f, "field `{name}` is not part of this block kind"),
            BlockError::UnknownFormat(v) => write!(
                f,
                "unknown block format `{v}` (this version reads {}): verify it with the mcp-witness version that wrote it",
                kind::FORMATS.join(", ")
            ),
            BlockError::Digest(field) => write!(
                f,
                "field `{field}` does not match the fields it digests: the block was altered"
            ),
            BlockError::WeakKey => write!(
                f,
                "field `key` is a small-order (weak) Ed25519 public key: a signature under it proves nothing, since ordinary Ed25519 libraries accept forgeries for such keys"
            ),
            BlockError::HashMismatch => write!(
                f,
                "hash does not match the block's content: the block was altered"
            ),
            BlockError::BadSignature => write!(f, "signature does not verify against the block's key"),
        }
    }
}

/// The parts of a checked block that the chain and de-duplication rules need.
#[derive(Debug, Clone)]
pub struct Checked {
    pub seq: u64,
    pub prev: String,
    pub hash: String,
    pub file_id: String,
    pub key: VerifyingKey,
    pub kind: BlockKind,
    pub observed_at: String,
    pub target_id: String,
    /// What `--if-changed` compares (absent in blocks that do not carry it).
    pub observation_sha256: Option<String>,
}

/// Remembers the public keys decoded: decompressing a key costs about a tenth of a
/// signature check, and a file is usually signed by a few keys, often one. At most
/// `KEYS_KEPT` are kept (a file with a key per block only ever misses), so memory stays bounded.
#[derive(Default)]
pub struct KeyCache {
    last: Option<(String, VerifyingKey)>,
    seen: std::collections::HashMap<String, VerifyingKey>,
}

const KEYS_KEPT: usize = 1024;

impl KeyCache {
    fn get(&mut self, text: &str) -> Result<VerifyingKey, BlockError> {
        if let Some((t, k)) = &self.last
            && t == text
        {
            return Ok(*k);
        }
        let key = match self.seen.get(text) {
            Some(k) => *k,
            None => {
                let key = match keys::parse_public(text) {
                    Ok(k) => k,
                    Err(keys::KeyError::WeakPublicKey(_)) => return Err(BlockError::WeakKey),
                    Err(_) => {
                        return Err(BlockError::Field(
                            "key".into(),
                            "is not an Ed25519 public key (not a point of the curve)".into(),
                        ));
                    }
                };
                if self.seen.len() >= KEYS_KEPT {
                    self.seen.clear();
                }
                self.seen.insert(text.to_string(), key);
                key
            }
        };
        self.last = Some((text.to_string(), key));
        Ok(key)
    }
}

/// Checks one line (without its newline): canonical form, fields and their types, hash and
/// signature against the block's own key. Trust in that key is the caller's decision.
pub fn check_line(line: &[u8]) -> Result<Checked, BlockError> {
    check_line_with(line, &mut KeyCache::default())
}

/// `check_line`, reusing decoded keys across lines.
pub fn check_line_with(line: &[u8], cache: &mut KeyCache) -> Result<Checked, BlockError> {
    check(line, cache, true)
}

/// Everything `check_line` checks but the signature: for a block just sealed here, whose
/// signature is right by construction but whose content came from a server.
pub fn check_line_content(line: &[u8]) -> Result<Checked, BlockError> {
    check(line, &mut KeyCache::default(), false)
}

fn check(line: &[u8], cache: &mut KeyCache, signature: bool) -> Result<Checked, BlockError> {
    if line.len() > MAX_LINE {
        return Err(BlockError::TooLong(line.len()));
    }
    let scanned = match canonical_scan::scan(line) {
        Ok(s) => s,
        Err(e) => return Err(classify_noncanonical(line, e)),
    };
    let get = |name: &str| scanned.get(line, name);
    if is_serve_log_entry(scanned.members.iter().map(|m| m.key.as_ref())) {
        return Err(BlockError::ServeLog);
    }

    let format = text(get("format"), "format")?;
    if !kind::FORMATS.contains(&format.as_ref()) {
        return Err(BlockError::UnknownFormat(format.chars().take(64).collect()));
    }
    let kind_name = text(get("kind"), "kind")?;
    let Some(kind) = BlockKind::from_name(&kind_name) else {
        return Err(BlockError::Field(
            "kind".into(),
            format!("is not a kind this version knows ({})", BlockKind::names()),
        ));
    };
    // The shape walk and the digests read the line in place (it is canonical).
    let view = View {
        members: scanned
            .members
            .iter()
            .map(|m| (m.key.clone(), Raw(&line[m.value.clone()])))
            .collect(),
    };
    kind.check(&view)?;
    let str_of = |name: &str| view.at(name).str().map(Cow::into_owned).unwrap_or_default();
    let key = cache.get(&str_of("key"))?;
    let seq = view.at("seq").int().unwrap_or_default() as u64;
    let hash = str_of("hash");
    let sig = hex::decode_exact::<64>(&str_of("sig")).ok_or(BlockError::Field(
        "sig".into(),
        "must be 128 lower-case hex digits".into(),
    ))?;

    let mut hasher = Sha256::new();
    for piece in scanned.unsigned().pieces(line) {
        hasher.update(piece);
    }
    let digest: [u8; 32] = hasher.finalize().into();
    if hex::decode_exact::<32>(&hash) != Some(digest) {
        return Err(BlockError::HashMismatch);
    }
    if signature && key.verify_strict(&digest, &Signature::from_bytes(&sig)).is_err() {
        return Err(BlockError::BadSignature);
    }
    Ok(Checked {
        seq,
        prev: str_of("prev"),
        hash,
        file_id: str_of("file_id"),
        key,
        kind,
        observed_at: str_of("observed_at"),
        target_id: View::of(view.at("target"))
            .at("id")
            .str()
            .map(Cow::into_owned)
            .unwrap_or_default(),
        observation_sha256: view.at("observation_sha256").str().map(Cow::into_owned),
    })
}

/// Whether an object's keys are those of a serve log entry: `dir`, `ts`, and `msg` or `raw`
/// (a line), or `info` (the start of a process or session).
fn is_serve_log_entry<'k>(keys: impl Iterator<Item = &'k [u8]>) -> bool {
    let mut keys: Vec<&[u8]> = keys.collect();
    keys.sort_unstable();
    keys == [&b"dir"[..], b"msg", b"ts"]
        || keys == [&b"dir"[..], b"raw", b"ts"]
        || keys == [&b"dir"[..], b"info", b"ts"]
}

/// A canonical string value's text (borrowed when it has no escapes).
fn text<'a>(value: Option<&'a [u8]>, name: &'static str) -> Result<Cow<'a, str>, BlockError> {
    let bad = BlockError::Field(name.into(), "must be a string".into());
    let v = value.ok_or(bad.clone())?;
    if v.len() < 2 || v[0] != b'"' || v[v.len() - 1] != b'"' {
        return Err(bad);
    }
    let inner = &v[1..v.len() - 1];
    if !inner.contains(&b'\\') {
        // The scan already checked the line is UTF-8.
        return std::str::from_utf8(inner).map(Cow::Borrowed).map_err(|_| bad);
    }
    serde_json::from_slice::<String>(v)
        .map(Cow::Owned)
        .map_err(|_| bad)
}

/// What de-duplication needs of a block near the end of a file, read without checking its
/// signature (the last block is checked in full before anything is chained onto it).
#[derive(Debug, Clone)]
pub struct Moment {
    pub seq: u64,
    pub hash: String,
    pub target_id: String,
    pub observed_at: String,
    /// How long the run it records took, as its kind says (0 when unknown).
    pub total_ms: u64,
    pub observation_sha256: Option<String>,
}

/// Fields of the chain: what sealing adds to a body.
const CHAIN_FIELDS: &[&str] = &["seq", "prev", "file_id", "key", "hash", "sig"];

/// Reads a line's moment; `None` when it is not a canonical block.
pub fn moment(line: &[u8]) -> Option<Moment> {
    let scanned = canonical_scan::scan(line).ok()?;
    let get = |name: &str| scanned.get(line, name);
    let target: Value = serde_json::from_slice(get("target")?).ok()?;
    let view = View {
        members: scanned
            .members
            .iter()
            .map(|m| (m.key.clone(), Raw(&line[m.value.clone()])))
            .collect(),
    };
    let total_ms = view
        .at("kind")
        .str()
        .and_then(|k| BlockKind::from_name(&k))
        .map_or(0, |k| (k.spec().run_ms)(&view));
    Some(Moment {
        seq: std::str::from_utf8(get("seq")?).ok()?.parse().ok()?,
        hash: text(get("hash"), "hash").ok()?.into_owned(),
        target_id: target.get("id")?.as_str()?.to_string(),
        observed_at: text(get("observed_at"), "observed_at").ok()?.into_owned(),
        total_ms,
        observation_sha256: text(get("observation_sha256"), "observation_sha256")
            .ok()
            .map(Cow::into_owned),
    })
}

/// SHA-256 of a canonical block line without its chain fields.
pub fn body_digest(line: &[u8]) -> Option<[u8; 32]> {
    let scanned = canonical_scan::scan(line).ok()?;
    Some(digest_without(&scanned, line, CHAIN_FIELDS))
}

fn digest_without(scanned: &canonical_scan::Scanned<'_>, line: &[u8], skip: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"{");
    let kept = scanned
        .members
        .iter()
        .filter(|m| !skip.iter().any(|s| s.as_bytes() == m.key.as_ref()));
    for (i, m) in kept.enumerate() {
        if i > 0 {
            h.update(b",");
        }
        h.update(&line[m.span.clone()]);
    }
    h.update(b"}");
    h.finalize().into()
}

/// Names what is wrong with a line that is not canonical, in the terms a user expects.
fn classify_noncanonical(line: &[u8], e: canonical_scan::NonCanonical) -> BlockError {
    // Telling the kinds apart needs the value; a large broken line is not worth the memory.
    if line.len() > 64 * 1024 {
        return match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            Err(err) => BlockError::NotJson(err.to_string()),
            Ok(_) => BlockError::NotCanonical(e.offset, e.what),
        };
    }
    match serde_json::from_slice::<Value>(line) {
        Err(err) => BlockError::NotJson(err.to_string()),
        Ok(v) if !v.is_object() => BlockError::NotObject,
        Ok(Value::Object(m)) if is_serve_log_entry(m.keys().map(|k| k.as_bytes())) => BlockError::ServeLog,
        Ok(v) => match canonical::check_fit(&v) {
            Err(canonical::Unfit::Number(path)) => BlockError::Unfit(path),
            Ok(()) => BlockError::NotCanonical(e.offset, e.what),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A valid probe block body for a target named `target`, observed `at`.
    pub(crate) fn body(target: &str, at: &str) -> Map<String, Value> {
        let fields = json!({
            "target": {"command": [target], "program": null, "program_sha256": null, "cwd": "/",
                       "env": [], "era": "legacy", "protocol_version": null},
            "verdict": "pass",
            "call": null, "capabilities": {}, "era": "legacy", "era_detection": null,
            "messages": {"count": 0, "notifications": {"count": 0, "methods": []},
                         "server_requests": {"count": 0, "unanswered": 0, "requests": []},
                         "unmatched_replies": 0, "max_line_bytes": 0},
            "protocol_requested": "2025-11-25", "protocol_version": "2025-11-25",
            "reasons": [], "server": null, "silence": null, "stderr": {"bytes": 0, "tail": null},
            "stdout_noise": {"count": 0, "lines": [], "crlf_lines": 0},
            "teardown": null,
            "timings_ms": {"first_stdout": null, "discover": null, "initialize": null,
                           "tools_list": null, "call": null, "total": 0},
            "tools": null,
        });
        let stamp = crate::clock::Stamp {
            rfc3339: at.into(),
            tz: Some("Etc/UTC".into()),
        };
        reseal_digests(super::body(BlockKind::Probe, &stamp, "test", fields))
    }

    /// Recomputes `target.id` and `observation_sha256` after a test edited a body.
    pub(crate) fn reseal_digests(mut b: Map<String, Value>) -> Map<String, Value> {
        let mut v = Value::Object(b.clone());
        let id = BlockKind::Probe.target_id(&v["target"]);
        v["target"]["id"] = id.into();
        b.insert("target".into(), v["target"].clone());
        b.insert(
            "observation_sha256".into(),
            BlockKind::Probe.observation_sha256(&v).into(),
        );
        b
    }

    fn link(seq: u64) -> Link {
        Link {
            seq,
            prev: GENESIS_PREV.into(),
            file_id: "00112233445566778899aabbccddeeff".into(),
        }
    }

    #[test]
    fn a_sealed_block_checks_and_any_edit_is_caught() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let sealed = seal(body("srv", "2026-12-02T10:00:00.000+00:00"), &link(1), &key);
        let line = &sealed.line[..sealed.line.len() - 1];
        let checked = check_line(line).unwrap();
        assert_eq!(checked.kind, BlockKind::Probe);
        assert_eq!(checked.seq, 1);
        assert_eq!(checked.hash, sealed.hash);
        assert_eq!(checked.key, key.verifying_key());

        let edited = String::from_utf8(line.to_vec())
            .unwrap()
            .replace("\"host\":\"test\"", "\"host\":\"evil\"");
        assert_eq!(
            check_line(edited.as_bytes()).unwrap_err(),
            BlockError::HashMismatch
        );
        // An edit to what a digest covers is caught by that digest first.
        let verdict = String::from_utf8(line.to_vec())
            .unwrap()
            .replace("\"pass\"", "\"fail\"");
        assert_eq!(
            check_line(verdict.as_bytes()).unwrap_err(),
            BlockError::Digest("observation_sha256")
        );

        let spaced = String::from_utf8(line.to_vec()).unwrap().replacen(':', ": ", 1);
        assert_eq!(check_line(spaced.as_bytes()).unwrap_err().code(), "not_canonical");
    }

    #[test]
    fn fields_are_checked_for_presence_type_and_membership() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let reseal = |edit: &dyn Fn(&mut Map<String, Value>)| {
            let mut b = body("srv", "2026-12-02T10:00:00.000+00:00");
            edit(&mut b);
            let sealed = seal(reseal_digests(b), &link(1), &key);
            check_line(&sealed.line[..sealed.line.len() - 1])
                .map(|_| ())
                .unwrap_err()
        };
        let field = |p: &str, m: &str| BlockError::Field(p.into(), m.into());
        assert_eq!(
            reseal(&|b| drop(b.remove("verdict"))),
            field("verdict", "is missing")
        );
        assert_eq!(
            reseal(&|b| drop(b.insert("tools".into(), 3.into()))),
            field("tools", "must be an object")
        );
        assert_eq!(
            reseal(&|b| drop(b.insert(
                "tools".into(),
                json!({"count": "3", "names": [], "pages": 1, "names_complete": true})
            ))),
            field(
                "tools.count",
                &format!("must be an integer from 0 to {}", canonical::MAX_SAFE_INTEGER)
            )
        );
        assert_eq!(
            reseal(&|b| {
                drop(b.insert("teardown".into(), json!({"ended_by": "bogus", "after_ms": 1, "exit": null, "group_signals": [], "survivors": []})))
            }),
            field(
                "teardown.ended_by",
                "must be one of: exited_before, stdin_eof, sigterm, sigkill, unkillable"
            )
        );
        assert_eq!(
            reseal(&|b| drop(b["stderr"].as_object_mut().unwrap().insert("x".into(), 1.into()))),
            BlockError::UnknownField("stderr.x".into())
        );
        assert_eq!(
            reseal(&|b| drop(b.insert("extra".into(), 1.into()))),
            BlockError::UnknownField("extra".into())
        );
        assert_eq!(
            reseal(&|b| drop(b.insert("verdict".into(), "maybe".into()))).code(),
            "bad_field"
        );
        assert_eq!(
            reseal(&|b| drop(b.insert("kind".into(), "other".into()))).code(),
            "bad_field"
        );
        assert_eq!(
            reseal(&|b| drop(b.insert("observed_at".into(), "2026-12-02T10:00:00Z".into()))).code(),
            "bad_field"
        );
    }

    #[test]
    fn no_mutation_of_a_block_makes_the_check_panic() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let mut b = body("srv", "2026-12-02T10:00:00.000+00:00");
        b.insert(
            "capabilities".into(),
            json!({"a": [1, {"b": "x\\\"y"}], "\u{e000}": null, "😀": true}),
        );
        let sealed = seal(reseal_digests(b), &link(1), &key);
        let base = sealed.line[..sealed.line.len() - 1].to_vec();
        assert!(check_line(&base).is_ok());
        let alphabet = b"{}[]\",:\\ 0123456789-.etrufalsn\x01ab";
        let mut seed: u64 = 0x1234_5678_9abc_def1;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut line = base.clone();
            for _ in 0..(1 + next() % 3) {
                let pos = (next() as usize) % line.len();
                let byte = alphabet[(next() as usize) % alphabet.len()];
                if next() % 2 == 0 {
                    line[pos] = byte;
                } else {
                    line.insert(pos, byte);
                }
            }
            // Only the signature itself may change without the content check noticing.
            if check_line_content(&line).is_ok() && line != base {
                assert_eq!(check_line(&line).unwrap_err(), BlockError::BadSignature);
            }
            let _ = moment(&line);
        }
    }

    #[test]
    fn one_key_cache_serves_blocks_signed_by_keys_in_turn() {
        let keys: Vec<SigningKey> = (1..=3u8).map(|n| SigningKey::from_bytes(&[n; 32])).collect();
        let mut cache = KeyCache::default();
        for round in 0..(KEYS_KEPT + 5) {
            let key = &keys[round % keys.len()];
            let at = format!("2026-12-02T10:00:00.{:03}+00:00", round % 1000);
            let sealed = seal(body("srv", &at), &link(1), key);
            let checked = check_line_with(&sealed.line[..sealed.line.len() - 1], &mut cache).unwrap();
            assert_eq!(checked.key, key.verifying_key());
        }
        assert!(cache.seen.len() <= KEYS_KEPT);
        // A cached key does not make a block signed by another one pass.
        let sealed = seal(body("srv", "2026-12-02T10:00:00.000+00:00"), &link(1), &keys[0]);
        let forged = String::from_utf8(sealed.line.clone()).unwrap().replace(
            &keys::public_text(&keys[0].verifying_key()),
            &keys::public_text(&keys[1].verifying_key()),
        );
        let forged = forged.trim_end().as_bytes();
        assert_eq!(
            check_line_with(forged, &mut cache).unwrap_err(),
            BlockError::HashMismatch
        );
    }

    #[test]
    fn a_serve_log_line_is_named_as_one() {
        let entry = br#"{"dir":"in","msg":{"id":0,"jsonrpc":"2.0","method":"initialize"},"ts":"2026-12-02T18:07:21.326+00:00"}"#;
        let err = check_line(entry).unwrap_err();
        assert_eq!(err, BlockError::ServeLog);
        assert!(err.to_string().contains("`mcp-witness serve` log"), "{err}");
        // Not canonical (a float, spacing) and still recognised.
        let spaced = br#"{"ts": "t", "dir": "out", "raw": "x", "n": 1}"#;
        assert_ne!(check_line(spaced).unwrap_err(), BlockError::ServeLog);
        let float = br#"{"ts":"t","dir":"out","msg":{"x":1.5}}"#;
        assert_eq!(check_line(float).unwrap_err(), BlockError::ServeLog);
    }

    #[test]
    fn a_block_re_hashed_without_the_key_fails_its_signature() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let sealed = seal(body("srv", "2026-12-02T10:00:00.000+00:00"), &link(1), &key);
        let mut v: Value = serde_json::from_slice(&sealed.line).unwrap();
        let map = v.as_object_mut().unwrap();
        map.insert("host".into(), "evil".into());
        map.remove("hash");
        let sig = map.remove("sig").unwrap();
        let digest = Sha256::digest(canonical::to_bytes(&Value::Object(map.clone())));
        map.insert("hash".into(), hex::encode(&digest).into());
        map.insert("sig".into(), sig);
        assert_eq!(
            check_line(&canonical::to_bytes(&v)).unwrap_err(),
            BlockError::BadSignature
        );
    }
}
