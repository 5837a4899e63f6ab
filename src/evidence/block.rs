//! One evidence block: sealing (chain fields, hash, signature) and checking one line.
//!
//! `hash` is SHA-256 over the canonical bytes of the block without `hash` and `sig`;
//! `sig` is Ed25519 over the 32 raw bytes of that hash. Both are lower-case hex.

use std::fmt;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::canonical;
use super::canonical_scan;
use super::keys;
use crate::hex;

/// The `format` value of every block this version writes.
pub const FORMAT: &str = "mcp-witness/evidence-block/v1";
/// `prev` of a file's first block.
pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// Block kinds verify accepts.
pub const KINDS: &[&str] = &["probe", "check", "client"];
/// A block line longer than this is refused by every reader (blocks are bounded far below it).
pub const MAX_LINE: usize = 16 << 20;

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
    Field(&'static str, &'static str),
    UnknownFormat(String),
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
            BlockError::Field(..) => "bad_field",
            BlockError::UnknownFormat(_) => "unknown_format",
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
            BlockError::Field(name, problem) => write!(f, "field `{name}` {problem}"),
            BlockError::UnknownFormat(v) => write!(f, "unknown block format `{v}`"),
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
    pub kind: String,
    pub observed_at: String,
    pub target_id: String,
    /// What `--if-changed` compares (absent in blocks that do not carry it).
    pub observation_sha256: Option<String>,
}

/// The envelope fields every block has, read without building the whole value.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    format: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    seq: Option<Value>,
    #[serde(borrow)]
    prev: Option<Cow<'a, str>>,
    #[serde(borrow)]
    file_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    hash: Option<Cow<'a, str>>,
    #[serde(borrow)]
    sig: Option<Cow<'a, str>>,
    #[serde(borrow)]
    key: Option<Cow<'a, str>>,
    #[serde(borrow)]
    observed_at: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    tz: Option<Value>,
    host: Option<Value>,
    tool: Option<Value>,
    #[serde(borrow)]
    target: Option<TargetId<'a>>,
    #[serde(borrow)]
    observation_sha256: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TargetId<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
}

/// Distinguishes a field that is `null` from one that is missing.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Checks one line (without its newline): canonical form, fields, hash and signature
/// against the block's own key. Trust in that key is the caller's decision.
pub fn check_line(line: &[u8]) -> Result<Checked, BlockError> {
    if line.len() > MAX_LINE {
        return Err(BlockError::TooLong(line.len()));
    }
    let unsigned = match canonical_scan::scan(line) {
        Ok(u) => u,
        Err(e) => return Err(classify_noncanonical(line, e)),
    };
    let env: Envelope = serde_json::from_slice(line).map_err(|e| BlockError::NotJson(e.to_string()))?;

    let format = env
        .format
        .ok_or(BlockError::Field("format", "must be a string"))?;
    if format != FORMAT {
        return Err(BlockError::UnknownFormat(format.chars().take(64).collect()));
    }
    let kind = env.kind.ok_or(BlockError::Field("kind", "must be a string"))?;
    if !KINDS.contains(&kind.as_ref()) {
        return Err(BlockError::Field("kind", "is not one of probe, check, client"));
    }
    let seq = env
        .seq
        .as_ref()
        .and_then(Value::as_u64)
        .filter(|&s| s >= 1)
        .ok_or(BlockError::Field("seq", "must be an integer from 1"))?;
    let prev = hex_field::<32>(env.prev, "prev")?;
    let file_id = hex_field::<16>(env.file_id, "file_id")?;
    let hash = hex_field::<32>(env.hash, "hash")?;
    let sig = env
        .sig
        .as_deref()
        .and_then(hex::decode_exact::<64>)
        .ok_or(BlockError::Field("sig", "must be 128 lower-case hex digits"))?;
    let key = env
        .key
        .as_deref()
        .and_then(|k| keys::parse_public(k).ok())
        .ok_or(BlockError::Field("key", "must be `ed25519:<64 hex>`"))?;
    let observed_at = env
        .observed_at
        .ok_or(BlockError::Field("observed_at", "must be a string"))?;
    if crate::clock::parse(&observed_at).is_none() {
        return Err(BlockError::Field("observed_at", "must be an RFC 3339 time"));
    }
    if !matches!(env.tz, Some(Value::String(_)) | Some(Value::Null)) {
        return Err(BlockError::Field("tz", "must be a string or null"));
    }
    if !env.host.as_ref().is_some_and(Value::is_string) {
        return Err(BlockError::Field("host", "must be a string"));
    }
    let tool_ok = env.tool.as_ref().is_some_and(|t| {
        t.get("name").is_some_and(Value::is_string) && t.get("version").is_some_and(Value::is_string)
    });
    if !tool_ok {
        return Err(BlockError::Field("tool", "must hold string `name` and `version`"));
    }
    let target_id = env
        .target
        .and_then(|t| t.id)
        .filter(|id| hex::decode_exact::<32>(id).is_some())
        .ok_or(BlockError::Field(
            "target",
            "must be an object with a 64-hex `id`",
        ))?;

    let mut hasher = Sha256::new();
    for piece in unsigned.pieces(line) {
        hasher.update(piece);
    }
    let digest: [u8; 32] = hasher.finalize().into();
    if hex::encode(&digest) != hash {
        return Err(BlockError::HashMismatch);
    }
    if key.verify_strict(&digest, &Signature::from_bytes(&sig)).is_err() {
        return Err(BlockError::BadSignature);
    }
    Ok(Checked {
        seq,
        prev,
        hash,
        file_id,
        key,
        kind: kind.into_owned(),
        observed_at: observed_at.into_owned(),
        target_id: target_id.into_owned(),
        observation_sha256: env.observation_sha256.map(Cow::into_owned),
    })
}

/// Names what is wrong with a line that is not canonical, in the terms a user expects.
fn classify_noncanonical(line: &[u8], e: canonical_scan::NonCanonical) -> BlockError {
    match serde_json::from_slice::<Value>(line) {
        Err(err) => BlockError::NotJson(err.to_string()),
        Ok(v) if !v.is_object() => BlockError::NotObject,
        Ok(v) => match canonical::check_fit(&v) {
            Err(canonical::Unfit::Number(path)) => BlockError::Unfit(path),
            Ok(()) => BlockError::NotCanonical(e.offset, e.what),
        },
    }
}

fn hex_field<const N: usize>(text: Option<Cow<'_, str>>, name: &'static str) -> Result<String, BlockError> {
    match text {
        Some(t) if hex::decode_exact::<N>(&t).is_some() => Ok(t.into_owned()),
        _ if N == 32 => Err(BlockError::Field(name, "must be 64 lower-case hex digits")),
        _ => Err(BlockError::Field(name, "must be 32 lower-case hex digits")),
    }
}
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn body(target: &str, at: &str) -> Map<String, Value> {
        let target_id = hex::encode(&Sha256::digest(target.as_bytes()));
        json!({
            "kind": "probe",
            "observed_at": at,
            "tz": "Etc/UTC",
            "host": "test",
            "tool": {"name": "mcp-witness", "version": "0"},
            "target": {"id": target_id, "command": [target]},
            "verdict": "pass",
        })
        .as_object()
        .unwrap()
        .clone()
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
        assert_eq!(checked.seq, 1);
        assert_eq!(checked.hash, sealed.hash);
        assert_eq!(checked.key, key.verifying_key());

        let edited = String::from_utf8(line.to_vec())
            .unwrap()
            .replace("\"pass\"", "\"fail\"");
        assert_eq!(
            check_line(edited.as_bytes()).unwrap_err(),
            BlockError::HashMismatch
        );

        let spaced = String::from_utf8(line.to_vec()).unwrap().replacen(':', ": ", 1);
        assert_eq!(check_line(spaced.as_bytes()).unwrap_err().code(), "not_canonical");
    }

    #[test]
    fn a_block_re_hashed_without_the_key_fails_its_signature() {
        let key = SigningKey::from_bytes(&[1u8; 32]);
        let sealed = seal(body("srv", "2026-12-02T10:00:00.000+00:00"), &link(1), &key);
        let mut v: Value = serde_json::from_slice(&sealed.line).unwrap();
        let map = v.as_object_mut().unwrap();
        map.insert("verdict".into(), "fail".into());
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
