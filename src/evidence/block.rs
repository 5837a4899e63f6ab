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
/// `GENESIS_PREV` decoded, as `Checked::prev` holds it.
pub const GENESIS_PREV_BYTES: [u8; 32] = [0; 32];
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

/// The parts of a checked block that the chain and de-duplication rules need; the hex
/// members decoded (the check proved their spelling), so the chain compares bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub seq: u64,
    pub prev: [u8; 32],
    pub hash: [u8; 32],
    pub file_id: [u8; 16],
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

/// `check_line_content`, reusing decoded keys across lines: all of `check_line_with` but
/// `verify_strict` (what the benchmark counts as the work beyond the signature check).
pub fn check_line_content_with(line: &[u8], cache: &mut KeyCache) -> Result<Checked, BlockError> {
    check(line, cache, false)
}

fn check(line: &[u8], cache: &mut KeyCache, signature: bool) -> Result<Checked, BlockError> {
    if line.len() > MAX_LINE {
        return Err(BlockError::TooLong(line.len()));
    }
    // A good block is read once, canonical form and shape together; anything else (or
    // anything that pass cannot tell) is decided, and named, by the reference path.
    let mut read = kind::one_pass::Read::new(line);
    if kind::one_pass::read_into(&mut read) {
        let view = read.view();
        read.kind.check_beyond_shape(&view)?;
        let digest = || unsigned_digest(line, read.members());
        let envelope = Envelope::of_members(line, read.members());
        return finish(envelope, read.kind, digest, cache, signature);
    }
    check_reference(line, cache, signature)
}

/// SHA-256 of the canonical form without `hash` and `sig`: the line's bytes around those two
/// members, in at most three runs (members are contiguous, one comma apart).
fn unsigned_digest(line: &[u8], members: &[kind::one_pass::Member]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"{");
    let mut run: Option<std::ops::Range<usize>> = None;
    for m in members.iter().filter(|m| m.name != "hash" && m.name != "sig") {
        run = match run {
            Some(r) if r.end + 1 == m.start => Some(r.start..m.end),
            Some(r) => {
                hasher.update(&line[r]);
                hasher.update(b",");
                Some(m.start..m.end)
            }
            None => Some(m.start..m.end),
        };
    }
    if let Some(r) = run {
        hasher.update(&line[r]);
    }
    hasher.update(b"}");
    hasher.finalize().into()
}

/// The check of a line as it was before the one pass: canonical scan, then the shape walk.
/// Errors are named here.
pub(crate) fn check_reference(
    line: &[u8],
    cache: &mut KeyCache,
    signature: bool,
) -> Result<Checked, BlockError> {
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
    let digest = || {
        let mut hasher = Sha256::new();
        for piece in scanned.unsigned().pieces(line) {
            hasher.update(piece);
        }
        hasher.finalize().into()
    };
    finish(Envelope::of(&view), kind, digest, cache, signature)
}

/// The checks after the shape and digests: the key, the hash, the signature; and what the
/// chain needs of the block.
/// The envelope members `finish` reads.
#[derive(Clone, Copy)]
struct Envelope<'a> {
    key: Raw<'a>,
    seq: Raw<'a>,
    hash: Raw<'a>,
    sig: Raw<'a>,
    prev: Raw<'a>,
    file_id: Raw<'a>,
    observed_at: Raw<'a>,
    target: Raw<'a>,
    observation_sha256: Raw<'a>,
}

impl<'a> Envelope<'a> {
    /// Looked up in a view (`null` when absent).
    fn of(view: &View<'a>) -> Envelope<'a> {
        Envelope {
            key: view.at("key"),
            seq: view.at("seq"),
            hash: view.at("hash"),
            sig: view.at("sig"),
            prev: view.at("prev"),
            file_id: view.at("file_id"),
            observed_at: view.at("observed_at"),
            target: view.at("target"),
            observation_sha256: view.at("observation_sha256"),
        }
    }

    /// The same, read off a one-pass member list in one go.
    fn of_members(line: &'a [u8], members: &[kind::one_pass::Member]) -> Envelope<'a> {
        let null = Raw(b"null");
        let mut e = Envelope {
            key: null,
            seq: null,
            hash: null,
            sig: null,
            prev: null,
            file_id: null,
            observed_at: null,
            target: null,
            observation_sha256: null,
        };
        for m in members {
            let v = Raw(&line[m.value..m.end]);
            match m.name {
                "key" => e.key = v,
                "seq" => e.seq = v,
                "hash" => e.hash = v,
                "sig" => e.sig = v,
                "prev" => e.prev = v,
                "file_id" => e.file_id = v,
                "observed_at" => e.observed_at = v,
                "target" => e.target = v,
                "observation_sha256" => e.observation_sha256 = v,
                _ => {}
            }
        }
        e
    }
}

fn finish(
    e: Envelope<'_>,
    kind: BlockKind,
    digest: impl FnOnce() -> [u8; 32],
    cache: &mut KeyCache,
    signature: bool,
) -> Result<Checked, BlockError> {
    let string = |v: Raw<'_>| v.str().map(Cow::into_owned).unwrap_or_default();
    let key = cache.get(&e.key.str().unwrap_or_default())?;
    let seq = e.seq.int().unwrap_or_default() as u64;
    // The shape held these to their hex spelling: the errors cannot happen, but are named.
    fn decoded<const N: usize>(v: Raw<'_>, name: &str) -> Result<[u8; N], BlockError> {
        v.hex::<N>()
            .ok_or_else(|| BlockError::Field(name.into(), format!("must be {} lower-case hex digits", 2 * N)))
    }
    let sig = decoded::<64>(e.sig, "sig")?;
    let prev = decoded::<32>(e.prev, "prev")?;
    let file_id = decoded::<16>(e.file_id, "file_id")?;

    let digest = digest();
    let hash = match e.hash.hex::<32>() {
        Some(hash) if hash == digest => hash,
        _ => return Err(BlockError::HashMismatch),
    };
    if signature && key.verify_strict(&digest, &Signature::from_bytes(&sig)).is_err() {
        return Err(BlockError::BadSignature);
    }
    Ok(Checked {
        seq,
        prev,
        hash,
        file_id,
        key,
        kind,
        observed_at: string(e.observed_at),
        target_id: string(e.target.find("id")),
        observation_sha256: e.observation_sha256.str().map(Cow::into_owned),
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
        assert_eq!(hex::encode(&checked.hash), sealed.hash);
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
        let mut next = crate::test_rng::xorshift(0x1234_5678_9abc_def1);
        for _ in 0..3000 {
            let mut line = base.clone();
            for _ in 0..(1 + next() % 3) {
                let pos = (next() as usize) % line.len();
                let byte = alphabet[(next() as usize) % alphabet.len()];
                if next().is_multiple_of(2) {
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

    /// Signs a whole block as it stands (any `format`, chain fields as given): hash and sig
    /// over the canonical form without them, as `seal` does.
    fn sign(mut map: Map<String, Value>, key: &SigningKey) -> Vec<u8> {
        map.remove("hash");
        map.remove("sig");
        let digest: [u8; 32] = Sha256::digest(canonical::to_bytes(&Value::Object(map.clone()))).into();
        map.insert("hash".into(), hex::encode(&digest).into());
        map.insert("sig".into(), hex::encode(&key.sign(&digest).to_bytes()).into());
        canonical::to_bytes(&Value::Object(map))
    }

    fn envelope(kind: BlockKind, fields: Value, format: &str, key: &SigningKey) -> Map<String, Value> {
        let stamp = crate::clock::Stamp {
            rfc3339: "2026-12-02T10:00:00.000+00:00".into(),
            tz: Some("Etc/UTC".into()),
        };
        let mut b = super::body(kind, &stamp, "test", fields);
        kind.refresh_digests(&mut b);
        b.insert("format".into(), format.into());
        b.insert("seq".into(), 1.into());
        b.insert("prev".into(), GENESIS_PREV.into());
        b.insert("file_id".into(), "00112233445566778899aabbccddeeff".into());
        b.insert("key".into(), keys::public_text(&key.verifying_key()).into());
        b
    }

    /// One good block of each kind and form: probe (minimal, rich with a surface, HTTP),
    /// check (stdio with a session and a full surface), client; v2, and v1 where the kind
    /// existed then.
    fn corpus_bases(key: &SigningKey) -> Vec<(BlockKind, Map<String, Value>)> {
        let hex = "ab".repeat(32);
        let mut out = Vec::new();
        let mut minimal = body("srv", "2026-12-02T10:00:00.000+00:00");
        minimal.remove("format");
        let probe_fields = Value::Object(minimal);
        let rich = Value::Object(rich_block());
        let http_target = json!({"url": "https://example.test/mcp", "transport": "streamable_http",
            "headers": ["authorization"], "era": "modern", "protocol_version": "2025-11-25"});
        let mut http = probe_fields.clone();
        http["target"] = http_target.clone();
        http["http"] = json!({"transport": "streamable_http", "auth": null,
            "certificate_sha256": hex,
            "connections": [{"exchanges": [{"method": "POST", "rpc_method": "initialize", "status": 200,
                "content_type": "text/event-stream", "framing": {"length": 12},
                "session_id": {"length": 36, "visible_ascii": true}, "location": null, "body_bytes": 12,
                "sse": {"events": 1, "comments": 0, "priming": 0, "ids": 0, "retry_ms": null,
                        "oversize": 0, "lf": 2, "crlf": 0, "cr": 0},
                "ended": "reply", "error": null}],
              "exchanges_dropped": 0, "session_id": null, "session_id_changed": false,
              "redirects": [{"status": 307, "location": "/x"}], "delete": "accepted",
              "delete_status": 200, "delete_error": null, "readers_left": 0}]});
        let item = |name: &str| {
            json!({"name": name, "sha256": hex, "title": null, "description": null,
            "arguments": hex, "description_text": "say \"hi\"\n"})
        };
        let resource = |name: &str| {
            json!({"name": name, "sha256": hex, "display_name": null, "title": null,
            "description": hex, "mime_type": null, "annotations": null, "description_text": null})
        };
        let check = json!({
            "target": rich["target"].clone(), "era": "modern", "protocol_version": "2025-11-25",
            "server": {"name": "s", "version": null},
            "results": [{"id": "a.b", "status": "pass", "message": "ok"},
                        {"id": "c", "status": "warn", "message": "tab\there"}],
            "counts": {"pass": 1, "warn": 1, "fail": 0, "skip": 0},
            "could_not_run": null, "strict": false, "duration_ms": 12, "bound": null,
            "session": {"stdout_bytes": 5, "stderr": {"bytes": 0, "tail": null}, "silence": null,
                        "restarts": ["r"]},
            "surface": {"sha256": hex, "instructions": null,
                        "tools": rich["surface"]["tools"].clone(),
                        "resources": {"items": [resource("file:///a")], "count": 1, "complete": true},
                        "resource_templates": {"items": [], "count": 0, "complete": true},
                        "prompts": {"items": [item("p")], "count": 1, "complete": false}},
        });
        let client = json!({
            "target": {"client": {"name": "c", "version": "1"}}, "client": {"name": "c", "version": "1"},
            "log": {"path": "/tmp/x.log.jsonl", "sha256": hex, "bytes": 10, "entries": 2,
                    "session": {"index": 0, "of": 1, "first_line": 1, "last_line": 2, "era": "legacy"}},
            "domains": [{"domain": "tools", "verdict": "reacts to list_changed", "question": 1,
                         "why": null, "meaning": "m",
                         "answers": [{"question": "q", "answer": "a", "evidence_line": 3,
                                      "evidence_ts": "2026-12-02T10:00:00.000+00:00"}]}],
            "verdict": "compliant",
        });
        for (kind, fields) in [
            (BlockKind::Probe, probe_fields.clone()),
            (BlockKind::Probe, rich),
            (BlockKind::Probe, http),
            (BlockKind::Check, check),
            (BlockKind::Client, client.clone()),
        ] {
            out.push((kind, envelope(kind, fields, FORMAT, key)));
        }
        out.push((
            BlockKind::Probe,
            envelope(BlockKind::Probe, probe_fields, FORMAT_V1, key),
        ));
        out.push((
            BlockKind::Client,
            envelope(BlockKind::Client, client, FORMAT_V1, key),
        ));
        out
    }

    /// Values a mutation puts in place: of every JSON type, the words and forms the shapes
    /// name, and the spellings near their edges.
    /// A probe block with every optional part present: a surface, a call with an error, a
    /// teardown with an exit and escapees.
    pub(crate) fn rich_block() -> Map<String, Value> {
        let mut b = body("srv", "2026-12-02T10:00:00.000+00:00");
        let hex = "ab".repeat(32);
        b.insert("format".into(), FORMAT.into());
        b.insert("seq".into(), 1.into());
        b.insert("prev".into(), hex.clone().into());
        b.insert("file_id".into(), "cd".repeat(16).into());
        b.insert("key".into(), format!("ed25519:{hex}").into());
        b.insert("hash".into(), hex.clone().into());
        b.insert("sig".into(), "ef".repeat(64).into());
        b.insert(
            "call".into(),
            json!({"tool": "t", "outcome": "rpc_error", "argument_names": ["a"], "content_types": [],
                   "preview": null, "result_sha256": null, "elapsed_ms": 3,
                   "error": {"code": -32601, "message": "no"}}),
        );
        b.insert(
            "teardown".into(),
            json!({"ended_by": "sigterm", "after_ms": 5, "exit": {"signal": 15},
                   "group_signals": ["sigterm"], "survivors": [7],
                   "escapees": [{"pid": 7, "argv": ["x"], "left": "group", "ended": "survived"}]}),
        );
        let tool = json!({"name": "echo", "sha256": hex, "title": null, "description": hex,
                          "input_schema": hex, "output_schema": null, "annotations": null,
                          "description_text": "Echo \"it\""});
        b.insert(
            "surface".into(),
            json!({"sha256": hex, "instructions": {"sha256": hex, "text": "hi"},
                   "tools": {"items": [tool.clone(), tool], "count": 2, "complete": true}}),
        );
        b.insert("reasons".into(), json!([{"code": "slow_start", "message": "m"}]));
        b
    }

    pub(crate) fn palette(n: u64) -> Value {
        let hex = "ab".repeat(32);
        let all = [
            Value::Null,
            json!(true),
            json!(false),
            json!(0),
            json!(1),
            json!(-5),
            json!(-2_147_483_648i64),
            json!(4_294_967_296u64),
            json!(9_007_199_254_740_991u64),
            json!(9_007_199_254_740_992u64),
            json!(1.5),
            json!(""),
            json!("x"),
            json!("pass"),
            json!("probe"),
            json!("check"),
            json!("client"),
            json!(FORMAT),
            json!(FORMAT_V1),
            json!("legacy"),
            json!("sigterm"),
            json!("survived"),
            json!("compliant"),
            json!("-32601"),
            json!(hex.clone()),
            json!(hex.to_uppercase()),
            json!("cd".repeat(16)),
            json!(format!("ed25519:{hex}")),
            json!("2026-12-02T10:00:00.000+00:00"),
            json!("2026-02-30T10:00:00.000+00:00"),
            json!("a\"b\\c\u{1}\u{7f}é😀"),
            json!({}),
            json!([]),
            json!(["a"]),
            json!([1, 2, 3, 4, 5, 6]),
            json!({"code": 1}),
            json!({"signal": 9}),
            json!({"code": 1, "signal": 9}),
            json!({"length": 3}),
            json!({"name": "n", "version": null}),
            json!({"count": 0, "names": []}),
            json!({"a\"": 1, "\u{e000}": [null], "😀": {}}),
        ];
        all[(n as usize) % all.len()].clone()
    }

    /// Member names a mutation adds: nested ones, every kind's top-level ones, and keys that
    /// are no field's.
    pub(crate) const NAMES: &[&str] = &[
        "count",
        "name",
        "code",
        "signal",
        "pid",
        "error",
        "exit",
        "sha256",
        "id",
        "url",
        "client",
        "session",
        "surface",
        "http",
        "expected",
        "era",
        "verdict",
        "bound",
        "kind",
        "format",
        "results",
        "counts",
        "log",
        "domains",
        "tools",
        "command",
        "program_sha256_source",
        "zz",
        "a\"b",
        "😀",
        "",
    ];

    fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    pointers(x, format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    pointers(x, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }

    /// Changes one value of `v`, chosen by `next`: removes or adds a member, appends an item,
    /// or puts a value of the palette in its place.
    pub(crate) fn mutate(v: &mut Value, next: &mut dyn FnMut() -> u64) {
        let mut all = Vec::new();
        pointers(v, String::new(), &mut all);
        let at = all[(next() as usize) % all.len()].clone();
        let Some(target) = v.pointer_mut(&at) else { return };
        match (next() % 4, target) {
            (0, Value::Object(m)) if !m.is_empty() => {
                let k = m.keys().nth((next() as usize) % m.len()).unwrap().clone();
                m.remove(&k);
            }
            (1, Value::Object(m)) => {
                let k = NAMES[(next() as usize) % NAMES.len()];
                m.insert(k.into(), palette(next()));
            }
            (1, Value::Array(a)) => a.push(palette(next())),
            (_, t) if !at.is_empty() => *t = palette(next()),
            _ => {}
        }
    }

    /// Byte edits of a line: mostly the spellings canonical form forbids.
    fn garble(line: &mut Vec<u8>, next: &mut dyn FnMut() -> u64) {
        garble_with(line, b"{}[]\",:\\ 0123456789-.eEtrufalsn\x01\x7fabu/", next);
    }

    /// One to three bytes of `line` replaced, inserted or removed, new ones from `alphabet`.
    pub(crate) fn garble_with(line: &mut Vec<u8>, alphabet: &[u8], next: &mut dyn FnMut() -> u64) {
        for _ in 0..(1 + next() % 3) {
            let pos = (next() as usize) % (line.len() + 1);
            let byte = alphabet[(next() as usize) % alphabet.len()];
            match next() % 3 {
                0 if pos < line.len() => line[pos] = byte,
                1 => line.insert(pos, byte),
                _ if pos < line.len() => {
                    line.remove(pos);
                }
                _ => {}
            }
        }
    }

    /// Another spelling of the same value at one place in a line, each one canonical form
    /// forbids (or, for the last few, a value at the edge of a bound).
    fn respell(line: &mut Vec<u8>, next: &mut dyn FnMut() -> u64) {
        const SPELLINGS: &[(&str, &str)] = &[
            (":0", ":-0"),
            (":0", ":00"),
            (":0", ":0.0"),
            (":0", ":0e0"),
            (":1", ":01"),
            (":1", ":1E0"),
            (":1", ":9007199254740992"),
            (":1", ":-9007199254740992"),
            (":1", ":9007199254740991"),
            (":3", ":-3"),
            (":true", ":tru"),
            (":null", ":nul"),
            (":null", ":null "),
            (":\"", ": \""),
            (",\"", ", \""),
            ("\\\"", "\\u0022"),
            ("\\r", "\\u000d"),
            ("\\r", "\\u000D"),
            ("\\n", "\\u000a"),
            ("/", "\\/"),
            ("e", "\\u0065"),
            ("a", "\\u00e1"),
            ("\"a", "\"\\u0001"),
            ("\"", "\"\u{1}"),
            ("\"x", "\"\u{e9}"),
        ];
        let (from, to) = SPELLINGS[(next() as usize) % SPELLINGS.len()];
        let text = String::from_utf8_lossy(line).into_owned();
        let places: Vec<usize> = text.match_indices(from).map(|(i, _)| i).collect();
        if places.is_empty() {
            return;
        }
        let at = places[(next() as usize) % places.len()];
        let mut out = text[..at].to_string();
        out.push_str(to);
        out.push_str(&text[at + from.len()..]);
        *line = out.into_bytes();
    }

    /// The one pass is only ever a shortcut: on every line, good or broken in any way, `check`
    /// answers exactly what the reference path (scan, shape walk, digests) answers, the same
    /// error with the same text; and it takes the shortcut on every line whose form and shape
    /// the reference accepts.
    #[test]
    fn the_one_pass_answers_as_the_reference_on_many_mutated_and_re_signed_blocks() {
        use std::collections::BTreeMap;
        let keys = [
            SigningKey::from_bytes(&[1u8; 32]),
            SigningKey::from_bytes(&[2u8; 32]),
        ];
        let bases: Vec<(BlockKind, Map<String, Value>)> = corpus_bases(&keys[0]);
        for (kind, b) in &bases {
            let line = sign(b.clone(), &keys[0]);
            assert_eq!(
                check_line(&line).map(|c| c.kind),
                Ok(*kind),
                "{}",
                String::from_utf8_lossy(&line)
            );
        }
        let serve_log = br#"{"dir":"in","msg":{"id":0,"jsonrpc":"2.0","method":"initialize"},"ts":"2026-12-02T18:07:21.326+00:00"}"#;
        let mut next = crate::test_rng::xorshift(0x5851_f42d_4c95_7f2d);
        let (mut fast_cache, mut reference_cache) = (KeyCache::default(), KeyCache::default());
        let mut outcomes: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut shortcuts = 0usize;
        for round in 0..18_000u64 {
            let line = if round % 20 == 19 {
                let mut line = serve_log.to_vec();
                garble(&mut line, &mut next);
                line
            } else {
                let (kind, base) = &bases[(next() as usize) % bases.len()];
                let mut v = Value::Object(base.clone());
                for _ in 0..(next() % 3) {
                    mutate(&mut v, &mut next);
                }
                let Value::Object(mut map) = v else { unreachable!() };
                // Mostly the digests are made right again, as a forger would.
                if !next().is_multiple_of(4) {
                    let k = map
                        .get("kind")
                        .and_then(Value::as_str)
                        .and_then(BlockKind::from_name)
                        .unwrap_or(*kind);
                    if map.get("target").is_some_and(Value::is_object) || next().is_multiple_of(2) {
                        k.refresh_digests(&mut map);
                    }
                }
                let mut line = sign(map, &keys[(next() % 2) as usize]);
                match next() % 7 {
                    0 => garble(&mut line, &mut next),
                    2 => respell(&mut line, &mut next),
                    // A signature or hash from elsewhere.
                    1 => {
                        let at = (next() as usize) % line.len();
                        if line[at].is_ascii_hexdigit() && line[at] != b'0' {
                            line[at] = b'0';
                        }
                    }
                    _ => {}
                }
                line
            };
            let fast = check_line_with(&line, &mut fast_cache);
            let reference = check_reference(&line, &mut reference_cache, true);
            assert_eq!(
                fast.as_ref().map_err(|e| (e.code(), e.to_string())),
                reference.as_ref().map_err(|e| (e.code(), e.to_string())),
                "round {round}: {}",
                String::from_utf8_lossy(&line)
            );
            assert_eq!(fast, reference);
            assert_eq!(
                check_line_content(&line).map_err(|e| e.to_string()),
                check_reference(&line, &mut KeyCache::default(), false).map_err(|e| e.to_string()),
                "round {round}: content only"
            );
            // The shortcut is taken exactly when the reference finds form and shape right, and
            // reads the members the scan reads.
            let read = kind::one_pass::read(&line);
            let shape_ok = shape_is_right(&line);
            assert_eq!(
                read.as_ref().map(|r| r.kind),
                shape_ok.as_ref().map(|(k, _)| *k),
                "round {round}: {}",
                String::from_utf8_lossy(&line)
            );
            if let (Some(read), Some((_, scanned))) = (read, shape_ok) {
                shortcuts += 1;
                assert_same_members(&read, &scanned, round);
            }
            *outcomes
                .entry(match &fast {
                    Ok(_) => "ok",
                    Err(e) => e.code(),
                })
                .or_default() += 1;
        }
        // Every way of going wrong was met, and good blocks often.
        for code in [
            "ok",
            "not_json",
            "not_canonical",
            "non_integer_number",
            "serve_log_line",
            "bad_field",
            "unknown_field",
            "unknown_format",
            "digest_mismatch",
            "hash_mismatch",
            "bad_signature",
        ] {
            assert!(
                outcomes.get(code).is_some_and(|n| *n >= 20),
                "{code}: {outcomes:?}"
            );
        }
        assert!(
            outcomes["ok"] > 2000 && shortcuts > 4000,
            "{shortcuts} shortcuts, {outcomes:?}"
        );
    }

    /// The reference's answer to "canonical, of a known format and kind, and of its kind's
    /// shape": scan, then the walk.
    /// The one pass found the members the scanner finds: each name, span and value span.
    fn assert_same_members(
        read: &kind::one_pass::Read<'_>,
        scanned: &canonical_scan::Scanned<'_>,
        round: u64,
    ) {
        type Spans<'a> = Vec<(&'a [u8], std::ops::Range<usize>, std::ops::Range<usize>)>;
        let ours: Spans<'_> = read
            .members()
            .iter()
            .map(|m| (m.name.as_bytes(), m.start..m.end, m.value..m.end))
            .collect();
        let theirs: Spans<'_> = scanned
            .members
            .iter()
            .map(|m| (m.key.as_ref(), m.span.clone(), m.value.clone()))
            .collect();
        assert_eq!(ours, theirs, "round {round}");
    }

    fn shape_is_right(line: &[u8]) -> Option<(BlockKind, canonical_scan::Scanned<'_>)> {
        let scanned = canonical_scan::scan(line).ok()?;
        let get = |name: &str| scanned.get(line, name);
        let format = text(get("format"), "format").ok()?;
        if !kind::FORMATS.contains(&format.as_ref()) {
            return None;
        }
        let kind = BlockKind::from_name(&text(get("kind"), "kind").ok()?)?;
        let members: Vec<(Cow<'_, [u8]>, Raw<'_>)> = scanned
            .members
            .iter()
            .map(|m| (m.key.clone(), Raw(&line[m.value.clone()])))
            .collect();
        let tables = [kind::ENVELOPE, kind.spec().fields];
        kind::shape::check_members(&tables, &members, kind::shape::At::Top).ok()?;
        Some((kind, scanned))
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

    /// A differential fuzz: whenever the one pass says "fits", the reference (scan, format,
    /// kind, shape walk) also accepts, with the same member spans. Ignored by default (it is
    /// long); `MCP_WITNESS_FUZZ_N=1500000 cargo test --release --lib fuzzed_lines -- --ignored`
    /// runs that many cases (`MCP_WITNESS_FUZZ_SEED` picks another seed).
    #[test]
    #[ignore]
    fn fuzzed_lines_the_one_pass_takes_are_lines_the_reference_accepts() {
        let n: u64 = std::env::var("MCP_WITNESS_FUZZ_N")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(100_000);
        let seed0: u64 = std::env::var("MCP_WITNESS_FUZZ_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x9e37_79b9_7f4a_7c15);
        let keys = [
            SigningKey::from_bytes(&[1u8; 32]),
            SigningKey::from_bytes(&[2u8; 32]),
        ];
        let bases: Vec<(BlockKind, Map<String, Value>)> = corpus_bases(&keys[0]);
        let base_lines: Vec<Vec<u8>> = bases.iter().map(|(_, b)| sign(b.clone(), &keys[0])).collect();
        let mut next = crate::test_rng::xorshift(seed0);
        // Keys near field names: same first 8 bytes, prefixes, extensions, non-ASCII.
        const NEAR: &[&str] = &[
            "descript",
            "description_tex",
            "description_textt",
            "observation_sha25",
            "observation_sha2566",
            "observation_sha256\u{0}",
            "protocol_versio",
            "protocol_version_",
            "protocol_requeste",
            "era_detectio",
            "era_detection_",
            "file_i",
            "file_idd",
            "kin",
            "kindd",
            "forma",
            "formatt",
            "stdout_nois",
            "stdout_noise0",
            "timings_m",
            "server_request",
            "capabilities\u{e9}",
            "capabilitie\u{e9}",
            "h\u{e9}",
            "\u{10000}",
            "\u{ffff}",
            "s\u{e000}",
            "seq\u{7f}",
            "sig ",
            " sig",
            "hash\t",
            "tool",
            "tools_",
            "toolt",
            "tooks",
            "exchanges_droppe",
            "session_id_change",
            "program_sha256_sourc",
            "program_sha256_source_",
        ];
        const SPELL: &[(&str, &str)] = &[
            (":0", ":-0"),
            (":0", ":00"),
            (":0", ":0.0"),
            (":0", ":0e0"),
            (":0", ":-"),
            (":1", ":01"),
            (":1", ":1.0"),
            (":1", ":1e2"),
            (":1", ":1E0"),
            (":1", ":+1"),
            (":1", ":9007199254740992"),
            (":1", ":-9007199254740992"),
            (":1", ":18446744073709551616"),
            (":1", ":99999999999999999999999"),
            (":1", ":9007199254740991"),
            (":1", ":-9007199254740991"),
            (":1", ":4294967296"),
            (":1", ":2147483648"),
            (":1", ":-2147483649"),
            (":1", ":0"),
            (":true", ":tru"),
            (":true", ":True"),
            (":true", ":truee"),
            (":false", ":fals"),
            (":null", ":nul"),
            (":null", ":null "),
            (":null", ":nulll"),
            (":null", ":NULL"),
            (":null", ":\"\""),
            (":null", ":[]"),
            (":null", ":{}"),
            (":null", ":0"),
            (":\"", ": \""),
            (",\"", ", \""),
            (",\"", ",\t\""),
            (",\"", ",\n\""),
            (",\"", ",\r\""),
            ("{\"", "{ \""),
            ("}", " }"),
            ("]", " ]"),
            ("[", "[ "),
            ("\\\"", "\\u0022"),
            ("\\\\", "\\u005c"),
            ("\\r", "\\u000d"),
            ("\\r", "\\u000D"),
            ("\\n", "\\u000a"),
            ("\\n", "\\u000A"),
            ("\\t", "\\u0009"),
            ("/", "\\/"),
            ("e", "\\u0065"),
            ("a", "\\u00e1"),
            ("a", "\\ud83d\\ude00"),
            ("a", "\\ud83d"),
            ("a", "\\ude00"),
            ("a", "\\uD83D\\uDE00"),
            ("\"a", "\"\\u0001"),
            ("\"a", "\"\\u001F"),
            ("\"a", "\"\\u0000"),
            ("\"", "\"\u{1}"),
            ("\"x", "\"\u{e9}"),
            ("a", "\u{7f}"),
            ("\\u0001", "\\u0001x"),
            ("\\u0001", "\\u01"),
            ("\\u0001", "\\x01"),
            ("\\u0001", "\\U0001"),
            ("\\\"", "\\'"),
            ("\\n", "\\a"),
            ("\\n", "\n"),
            ("\\t", "\t"),
            ("\"pass\"", "\"pas\\u0073\""),
            ("\"probe\"", "\"prob\\u0065\""),
            ("\"kind\"", "\"kin\\u0064\""),
            ("\"seq\"", "\"se\\u0071\""),
            ("[]", "[null]"),
            ("[]", "[,]"),
            ("[\"", "[,\""),
            ("{}", "{,}"),
            ("null", "[]"),
            ("\"legacy\"", "\"modern\""),
            ("\"streamable_http\"", "\"http_sse\""),
            ("[\"a\"]", "[\"a\",\"a\"]"),
        ];
        let splice_line = |next: &mut dyn FnMut() -> u64| -> Vec<u8> {
            base_lines[(next() as usize) % base_lines.len()].clone()
        };
        let (mut fits, mut refuses, mut agree_fit) = (0u64, 0u64, 0u64);
        let mut reverse = 0u64;
        let mut reverse_example: Option<String> = None;
        for round in 0..n {
            let bi = (next() as usize) % bases.len();
            let (kind, base) = &bases[bi];
            let mut line = if next().is_multiple_of(3) {
                base_lines[bi].clone()
            } else {
                let mut v = Value::Object(base.clone());
                for _ in 0..(next() % 4) {
                    if next().is_multiple_of(3) {
                        // Insert a near-name key somewhere.
                        let mut all = Vec::new();
                        pointers(&v, String::new(), &mut all);
                        let at = all[(next() as usize) % all.len()].clone();
                        if let Some(Value::Object(m)) = v.pointer_mut(&at) {
                            let k = NEAR[(next() as usize) % NEAR.len()];
                            m.insert(k.into(), palette(next()));
                        }
                    } else {
                        mutate(&mut v, &mut next);
                    }
                }
                let Value::Object(mut map) = v else { unreachable!() };
                if !next().is_multiple_of(4) {
                    let k = map
                        .get("kind")
                        .and_then(Value::as_str)
                        .and_then(BlockKind::from_name)
                        .unwrap_or(*kind);
                    if map.get("target").is_some_and(Value::is_object) {
                        k.refresh_digests(&mut map);
                    }
                }
                sign(map, &keys[(next() % 2) as usize])
            };
            let edits = next() % 4;
            for _ in 0..edits {
                match next() % 9 {
                    0 => garble(&mut line, &mut next),
                    1 | 2 => respell(&mut line, &mut next),
                    3 => {
                        // Any byte, anywhere (invalid UTF-8 included).
                        let pos = (next() as usize) % (line.len() + 1);
                        let byte = next() as u8;
                        match next() % 3 {
                            0 if pos < line.len() => line[pos] = byte,
                            1 => line.insert(pos, byte),
                            _ if pos < line.len() => drop(line.remove(pos)),
                            _ => {}
                        }
                    }
                    4 => {
                        // Splice a span of another block over a span of this one.
                        let other = splice_line(&mut next);
                        let a = (next() as usize) % other.len();
                        let b = (a + (next() as usize) % 80).min(other.len());
                        let p = (next() as usize) % (line.len() + 1);
                        let q = (p + (next() as usize) % 80).min(line.len());
                        line.splice(p..q, other[a..b].iter().copied());
                    }
                    5 => {
                        let text = String::from_utf8_lossy(&line).into_owned();
                        let (from, to) = SPELL[(next() as usize) % SPELL.len()];
                        let places: Vec<usize> = text.match_indices(from).map(|(i, _)| i).collect();
                        if !places.is_empty() {
                            let at = places[(next() as usize) % places.len()];
                            line = format!("{}{}{}", &text[..at], to, &text[at + from.len()..]).into_bytes();
                        }
                    }
                    6 => {
                        // Duplicate or move a member: copy `,"k":v` after itself or elsewhere.
                        let text = String::from_utf8_lossy(&line).into_owned();
                        if let Some(sc) = canonical_scan::scan(text.as_bytes())
                            .ok()
                            .filter(|s| !s.members.is_empty())
                        {
                            let m = &sc.members[(next() as usize) % sc.members.len()];
                            let piece = text[m.span.clone()].to_string();
                            let other = &sc.members[(next() as usize) % sc.members.len()];
                            let at = if next().is_multiple_of(2) {
                                m.span.end
                            } else {
                                other.span.end
                            };
                            let mut out = text[..at].to_string();
                            out.push(',');
                            out.push_str(&piece);
                            out.push_str(&text[at..]);
                            if next().is_multiple_of(2) {
                                // and drop the original
                                let s = m.span.clone();
                                if at >= s.end {
                                    let mut t = text[..s.start].to_string();
                                    let rest_start = if text.as_bytes().get(s.end) == Some(&b',') {
                                        s.end + 1
                                    } else {
                                        s.end
                                    };
                                    t.push_str(&out[rest_start..]);
                                    out = t;
                                }
                            }
                            line = out.into_bytes();
                        }
                    }
                    7 => {
                        // Trailing or leading bytes, or truncation.
                        match next() % 6 {
                            0 => line.push(b' '),
                            1 => line.push(b'\n'),
                            2 => line.push(b'}'),
                            3 => line.insert(0, b' '),
                            4 => line.truncate((next() as usize) % (line.len() + 1)),
                            _ => line.extend_from_slice(b"{}"),
                        }
                    }
                    _ => {
                        // Overlong / invalid UTF-8 or surrogate bytes inside a string.
                        let seqs: &[&[u8]] = &[
                            b"\xc0\xaf",
                            b"\xc1\x81",
                            b"\xe0\x80\xaf",
                            b"\xed\xa0\x80",
                            b"\xf4\x90\x80\x80",
                            b"\xff",
                            b"\x80",
                            b"\xf0\x9f\x98",
                        ];
                        let s = seqs[(next() as usize) % seqs.len()];
                        let quotes: Vec<usize> = line
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| **c == b'"')
                            .map(|(i, _)| i + 1)
                            .collect();
                        if !quotes.is_empty() {
                            let at = quotes[(next() as usize) % quotes.len()];
                            line.splice(at..at, s.iter().copied());
                        }
                    }
                }
            }
            let read = kind::one_pass::read(&line);
            let reference = shape_is_right(&line);
            match (&read, &reference) {
                (Some(r), Some((k, scanned))) => {
                    agree_fit += 1;
                    assert_eq!(r.kind, *k, "round {round}: {}", String::from_utf8_lossy(&line));
                    assert_same_members(r, scanned, round);
                    // The full checks agree too.
                    let fast = check_line(&line);
                    let refr = check_reference(&line, &mut KeyCache::default(), true);
                    assert_eq!(fast, refr, "round {round}: {}", String::from_utf8_lossy(&line));
                }
                (Some(_), None) => panic!(
                    "FALSE ACCEPT round {round} seed {seed0}: {:?}",
                    String::from_utf8_lossy(&line)
                ),
                (None, Some(_)) => {
                    reverse += 1;
                    if reverse_example.is_none() {
                        reverse_example = Some(String::from_utf8_lossy(&line).into_owned());
                    }
                }
                (None, None) => {}
            }
            if read.is_some() {
                fits += 1
            } else {
                refuses += 1
            }
            // Whole-check agreement on a sample (signatures cost).
            if round % 16 == 0 {
                let fast = check_line(&line);
                let refr = check_reference(&line, &mut KeyCache::default(), true);
                assert_eq!(fast, refr, "round {round}: {}", String::from_utf8_lossy(&line));
            }
        }
        eprintln!(
            "review fuzz: {n} cases, one pass fits {fits} (reference agrees {agree_fit}), refuses {refuses}; reference-only accepts {reverse} e.g. {reverse_example:?}"
        );
    }

    /// Review: on the fast path (one pass says fits), a forged signature, hash,
    /// observation_sha256 or target.id is still refused, for every base block.
    #[test]
    fn forged_blocks_that_take_the_fast_path_are_still_refused() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let flip = |s: &str| -> String {
            let mut c: Vec<char> = s.chars().collect();
            c[5] = if c[5] == '0' { '1' } else { '0' };
            c.into_iter().collect()
        };
        for (kind, base) in corpus_bases(&key) {
            // The forged line takes the fast path and is refused there as `error`.
            let refused = |line: &[u8], error: BlockError| {
                assert!(kind::one_pass::read(line).is_some(), "{kind:?}");
                assert_eq!(check_line(line).unwrap_err(), error, "{kind:?}");
            };
            let good = sign(base.clone(), &key);
            assert!(kind::one_pass::read(&good).is_some());
            assert_eq!(check_line(&good).map(|c| c.kind), Ok(kind));
            let v: Value = serde_json::from_slice(&good).unwrap();
            let Value::Object(signed) = v else { unreachable!() };
            // Bad signature (hash right).
            let mut m = signed.clone();
            m.insert("sig".into(), flip(m["sig"].as_str().unwrap()).into());
            let line = canonical::to_bytes(&Value::Object(m));
            refused(&line, BlockError::BadSignature);
            // Bad hash.
            let mut m = signed.clone();
            m.insert("hash".into(), flip(m["hash"].as_str().unwrap()).into());
            let line = canonical::to_bytes(&Value::Object(m));
            refused(&line, BlockError::HashMismatch);
            // Bad observation_sha256, re-hashed and re-signed by the key.
            let mut m = base.clone();
            m.insert(
                "observation_sha256".into(),
                flip(m["observation_sha256"].as_str().unwrap()).into(),
            );
            let line = sign(m, &key);
            refused(&line, BlockError::Digest("observation_sha256"));
            // Wrong target.id, re-signed.
            let mut m = base.clone();
            let id = flip(m["target"]["id"].as_str().unwrap());
            m.get_mut("target").unwrap()["id"] = id.into();
            let line = sign(m, &key);
            refused(&line, BlockError::Digest("target.id"));
            // Signed by another key than `key` names.
            let other = SigningKey::from_bytes(&[3u8; 32]);
            let line = sign(base.clone(), &other);
            refused(&line, BlockError::BadSignature);
        }
    }

    /// Review: nesting at and past the depth limit inside foreign JSON, and other edge
    /// spellings, get the same answer from the one pass and the reference.
    #[test]
    fn edge_spellings_get_the_same_answer_from_both_paths() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let bases = corpus_bases(&key);
        let (_, base) = &bases[0];
        let good = String::from_utf8(sign(base.clone(), &key)).unwrap();
        let mut lines: Vec<String> = Vec::new();
        for d in [120usize, 125, 126, 127, 128, 129, 130, 200] {
            let deep = format!("{}{}", "[".repeat(d), "]".repeat(d));
            lines.push(good.replacen("\"capabilities\":{}", &format!("\"capabilities\":{deep}"), 1));
            let deep_obj = format!("{}1{}", "{\"a\":".repeat(d), "}".repeat(d));
            lines.push(good.replacen("\"capabilities\":{}", &format!("\"capabilities\":{deep_obj}"), 1));
        }
        for v in [
            "-0",
            "01",
            "1.0",
            "1e2",
            "9007199254740992",
            "9007199254740991",
            "-9007199254740991",
            "18446744073709551616",
            "1E2",
            "+1",
            "0x1",
            "[]",
            "{}",
            "null",
            "\"1\"",
            "true",
        ] {
            lines.push(good.replacen("\"seq\":1", &format!("\"seq\":{v}"), 1));
            lines.push(good.replacen(
                "\"capabilities\":{}",
                &format!("\"capabilities\":{{\"x\":{v}}}"),
                1,
            ));
            lines.push(good.replacen("\"total\":0", &format!("\"total\":{v}"), 1));
        }
        for k in [
            "\\ud83d\\ude00",
            "\\ud83d",
            "\\ude00",
            "\u{1f600}",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "a",
            "b",
        ] {
            lines.push(good.replacen(
                "\"capabilities\":{}",
                &format!("\"capabilities\":{{\"{k}\":1,\"\u{e000}\":2}}"),
                1,
            ));
            lines.push(good.replacen(
                "\"capabilities\":{}",
                &format!("\"capabilities\":{{\"\u{e000}\":1,\"{k}\":2}}"),
                1,
            ));
            lines.push(good.replacen(
                "\"capabilities\":{}",
                &format!("\"capabilities\":{{\"\u{1f600}\":1,\"{k}\":2}}"),
                1,
            ));
            lines.push(good.replacen(
                "\"capabilities\":{}",
                &format!("\"capabilities\":{{\"{k}\":1,\"\u{1f600}\":2}}"),
                1,
            ));
            lines.push(good.replacen("\"host\":\"test\"", &format!("\"host\":\"{k}\""), 1));
        }
        for (from, to) in [
            ("\"call\":null,", "\"call\":null,\"call\":null,"),
            ("\"call\":null,", ""),
            ("{\"call\"", "{\"calm\":1,\"call\""),
            ("\"tz\":\"Etc/UTC\"", "\"tz\":null"),
            ("\"tz\":\"Etc/UTC\"", "\"tz\":null,\"tz\":null"),
            ("\"tz\":\"Etc/UTC\"", ""),
            ("\"host\":\"test\"", "\"host\":\"te\\/st\""),
            ("\"host\":\"test\"", "\"host\":\"te\\u0000st\""),
            ("\"host\":\"test\"", "\"host\":\"te\\u007fst\""),
            ("\"host\":\"test\"", "\"host\":\"te\u{7f}st\""),
        ] {
            lines.push(good.replacen(from, to, 1));
        }
        let mut accepted = 0;
        for l in &lines {
            let read = kind::one_pass::read(l.as_bytes());
            let reference = shape_is_right(l.as_bytes());
            assert_eq!(
                read.as_ref().map(|r| r.kind),
                reference.as_ref().map(|r| r.0),
                "{l}"
            );
            if read.is_some() {
                accepted += 1
            }
            // raw invalid bytes too
            let mut b = l.clone().into_bytes();
            b.insert(b.len() / 2, 0xc0);
            assert!(kind::one_pass::read(&b).is_none());
        }
        eprintln!("review edges: {} lines, {accepted} fit", lines.len());
    }

    /// Review: `verify_file` breaks a file at a forged block (fast-path shaped) with the
    /// right code: bad signature, bad hash, bad observation_sha256, wrong target.id.
    #[test]
    fn verify_breaks_at_a_forged_block_that_takes_the_fast_path() {
        use crate::evidence::verify::{Expectations, verify_file};
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let first = seal(body("srv", "2026-12-02T10:00:00.000+00:00"), &link(1), &key);
        let l2 = Link {
            seq: 2,
            prev: first.hash.clone(),
            file_id: link(1).file_id,
        };
        let mut b2 = body("srv", "2026-12-02T10:00:01.000+00:00");
        b2.insert("format".into(), FORMAT.into());
        b2.insert("seq".into(), 2.into());
        b2.insert("prev".into(), first.hash.clone().into());
        b2.insert("file_id".into(), l2.file_id.clone().into());
        b2.insert("key".into(), keys::public_text(&key.verifying_key()).into());
        let flip = |s: &str| -> String {
            let mut c: Vec<char> = s.chars().collect();
            c[7] = if c[7] == '0' { '1' } else { '0' };
            c.into_iter().collect()
        };
        let good = sign(b2.clone(), &key);
        let signed: Map<String, Value> = serde_json::from_slice(&good).unwrap();
        let mut cases: Vec<(Vec<u8>, &str)> = vec![(good.clone(), "")];
        let mut m = signed.clone();
        m.insert("sig".into(), flip(m["sig"].as_str().unwrap()).into());
        cases.push((canonical::to_bytes(&Value::Object(m)), "bad_signature"));
        let mut m = signed.clone();
        m.insert("hash".into(), flip(m["hash"].as_str().unwrap()).into());
        cases.push((canonical::to_bytes(&Value::Object(m)), "hash_mismatch"));
        let mut m = b2.clone();
        m.insert(
            "observation_sha256".into(),
            flip(m["observation_sha256"].as_str().unwrap()).into(),
        );
        cases.push((sign(m, &key), "digest_mismatch"));
        let mut m = b2.clone();
        let id = flip(m["target"]["id"].as_str().unwrap());
        m.get_mut("target").unwrap()["id"] = id.into();
        cases.push((sign(m, &key), "digest_mismatch"));
        let dir = std::env::temp_dir().join(format!("review2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (n, (line, code)) in cases.into_iter().enumerate() {
            assert!(kind::one_pass::read(&line).is_some());
            let path = dir.join(format!("f{n}.jsonl"));
            let mut all = first.line.clone();
            all.extend_from_slice(&line);
            all.push(b'\n');
            std::fs::write(&path, &all).unwrap();
            let report = verify_file(&path, &Expectations::default()).unwrap();
            match report.broken {
                None => assert_eq!(code, "", "case {n} verified"),
                Some(b) => {
                    assert_eq!((b.line, b.code), (2, code), "case {n}: {}", b.message);
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
