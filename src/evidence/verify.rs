//! Verifying an evidence file: every line's form, hash and signature (in parallel across
//! cores), the chain of `seq`, `prev` and `file_id`, duplicates, trust in the signing keys,
//! and an optional anchored head. Streams the file: memory does not grow with block content.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use ed25519_dalek::VerifyingKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::block::{self, BlockError, GENESIS_PREV_BYTES, MAX_LINE};
use super::keys;

/// What verify is asked to check beyond the file itself.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// Keys the user trusts; empty means signatures are only checked for self-consistency.
    pub trusted: Vec<VerifyingKey>,
    /// A head hash, or a unique prefix of one (`id::parse`d), that must be in the file.
    pub head: Option<String>,
}

/// The first thing wrong with a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// 1-based line number.
    pub line: u64,
    /// The line's `seq`, when it could be read.
    pub seq: Option<u64>,
    pub code: &'static str,
    pub message: String,
}

/// The result of verifying one file.
#[derive(Debug, Clone)]
pub struct Report {
    pub path: PathBuf,
    pub blocks: u64,
    /// `seq` and `hash` of the last good block.
    pub head: Option<(u64, String)>,
    pub broken: Option<Broken>,
    pub warnings: Vec<String>,
    /// Signer keys seen, in order of first appearance.
    pub keys: Vec<String>,
    pub pinned: bool,
    /// How many blocks' hashes start with the given head prefix, when more than one: the
    /// head did not name one block (a usage error, not a broken file).
    pub ambiguous_head: Option<u64>,
}

impl Report {
    pub fn intact(&self) -> bool {
        self.broken.is_none()
    }

    /// The machine-readable form printed by `verify --json`.
    pub fn to_json(&self) -> Value {
        json!({
            "file": self.path.display().to_string(),
            "intact": self.intact(),
            "blocks": self.blocks,
            "head": self.head.as_ref().map(|(seq, hash)| json!({"seq": seq, "hash": hash})),
            "broken": self.broken.as_ref().map(|b| json!({
                "line": b.line, "seq": b.seq, "code": b.code, "message": b.message,
            })),
            "warnings": self.warnings,
            "keys": self.keys,
            "trust": if self.pinned { "pinned" } else { "self-consistent" },
        })
    }
}

/// A file that could not be read at all (as opposed to one that is broken).
#[derive(Debug)]
pub enum Unreadable {
    /// Not a regular file, or it could not be opened.
    Open(crate::files::FileError),
    /// Reading it failed midway.
    Read(PathBuf, io::Error),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::Open(e) => write!(f, "{e}"),
            Unreadable::Read(p, e) => write!(f, "cannot read {}: {e}", p.display()),
        }
    }
}

/// What a worker learns from one line: fixed-size fields, decoded there, so the in-order
/// pass reads them in place and frees nothing a worker allocated.
struct Summary {
    seq: u64,
    prev: [u8; 32],
    hash: [u8; 32],
    file_id: [u8; 16],
    key: VerifyingKey,
    /// `observed_at` as a time (it always parses in a checked block).
    time: Option<time::OffsetDateTime>,
    moment: [u8; 32],
}

type LineResult = Result<Summary, (Option<u64>, BlockError)>;

/// Verifies one file.
pub fn verify_file(path: &Path, expect: &Expectations) -> Result<Report, Unreadable> {
    let unreadable = |e| Unreadable::Read(path.to_path_buf(), e);
    let file = crate::files::open_read(path, "evidence file").map_err(Unreadable::Open)?;
    // Workers hand each chunk's buffer back to be filled again: no fresh (zeroed, faulted
    // in, later unmapped) buffer per chunk.
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<u8>>();
    let mut chunks = Chunker {
        file,
        carry: Vec::new(),
        scanned: 0,
        eof: false,
        spare: spare_rx,
    };
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 16);

    let mut chain = Chain::new(path, expect);
    let read_result: io::Result<()> = std::thread::scope(|scope| {
        let (job_tx, job_rx) = mpsc::sync_channel::<(usize, Vec<u8>)>(workers * 2);
        let job_rx = Arc::new(Mutex::new(job_rx));
        let (res_tx, res_rx) = mpsc::channel::<(usize, Vec<LineResult>)>();
        for _ in 0..workers {
            let job_rx = Arc::clone(&job_rx);
            let res_tx = res_tx.clone();
            let spare_tx = spare_tx.clone();
            scope.spawn(move || {
                let mut cache = block::KeyCache::default();
                loop {
                    let job = job_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok((idx, chunk))) = job else { break };
                    let results = lines(&chunk[..chunk.len() - 1])
                        .map(|l| summarize(l, &mut cache))
                        .collect();
                    let _ = spare_tx.send(chunk);
                    if res_tx.send((idx, results)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(res_tx);
        drop(spare_tx);

        let mut pending: BTreeMap<usize, Vec<LineResult>> = BTreeMap::new();
        let mut next_done = 0usize;
        let mut sent = 0usize;
        let outcome = loop {
            if chain.broken.is_some() {
                break Ok(());
            }
            match chunks.next() {
                Err(e) => break Err(e),
                Ok(None) => break Ok(()),
                Ok(Some(Piece::Torn(n))) => {
                    chain.torn = Some(n);
                    break Ok(());
                }
                Ok(Some(Piece::TooLong(n))) => {
                    // Reported in order, after the lines before it.
                    chain.deferred_error = Some(BlockError::TooLong(n));
                    break Ok(());
                }
                Ok(Some(Piece::Lines(chunk))) => {
                    if job_tx.send((sent, chunk)).is_err() {
                        break Ok(());
                    }
                    sent += 1;
                }
            }
            while let Ok((idx, results)) = res_rx.try_recv() {
                pending.insert(idx, results);
            }
            chain.drain(&mut pending, &mut next_done);
        };
        drop(job_tx);
        while next_done < sent && chain.broken.is_none() {
            match res_rx.recv() {
                Ok((idx, results)) => {
                    pending.insert(idx, results);
                    chain.drain(&mut pending, &mut next_done);
                }
                Err(_) => break,
            }
        }
        outcome
    });
    read_result.map_err(unreadable)?;
    Ok(chain.finish())
}

/// Bytes read per step: whole lines of about this much go to a worker at a time.
const CHUNK: usize = 256 * 1024;

enum Piece {
    /// Complete lines, each ending in a newline.
    Lines(Vec<u8>),
    /// Bytes after the last newline at the end of the file.
    Torn(u64),
    /// A line longer than any block.
    TooLong(usize),
}

/// Reads a file as chunks of whole lines, never holding much more than one block line.
struct Chunker {
    file: File,
    carry: Vec<u8>,
    /// How much of `carry` is known to hold no newline.
    scanned: usize,
    eof: bool,
    /// Buffers of chunks the workers are done with.
    spare: mpsc::Receiver<Vec<u8>>,
}

impl Chunker {
    fn next(&mut self) -> io::Result<Option<Piece>> {
        loop {
            if let Some(i) = self.carry[self.scanned..].iter().rposition(|&b| b == b'\n') {
                let end = self.scanned + i + 1;
                let mut rest = self.spare.try_recv().unwrap_or_default();
                rest.clear();
                rest.extend_from_slice(&self.carry[end..]);
                self.carry.truncate(end);
                let chunk = std::mem::replace(&mut self.carry, rest);
                self.scanned = 0;
                return Ok(Some(Piece::Lines(chunk)));
            }
            self.scanned = self.carry.len();
            if self.carry.len() > MAX_LINE {
                return Ok(Some(Piece::TooLong(self.carry.len())));
            }
            if self.eof {
                let n = std::mem::take(&mut self.carry).len();
                return Ok((n > 0).then_some(Piece::Torn(n as u64)));
            }
            // Up to CHUNK more bytes, into the vector's spare room (not zeroed first); a
            // read of nothing is the end of the file.
            self.carry.reserve(CHUNK);
            let n = (&mut self.file).take(CHUNK as u64).read_to_end(&mut self.carry)?;
            self.eof = n == 0;
        }
    }
}

/// The lines of a chunk (its last newline cut off), split by a search eight bytes at a time.
fn lines(chunk: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(chunk);
    std::iter::from_fn(move || {
        let r = rest?;
        match super::find::newline(r) {
            Some(at) => {
                rest = Some(&r[at + 1..]);
                Some(&r[..at])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

fn summarize(line: &[u8], cache: &mut block::KeyCache) -> LineResult {
    match block::check_line_with(line, cache) {
        Ok(c) => {
            let mut h = Sha256::new();
            h.update(c.target_id.as_bytes());
            h.update(b"\n");
            h.update(c.observed_at.as_bytes());
            Ok(Summary {
                seq: c.seq,
                prev: c.prev,
                hash: c.hash,
                file_id: c.file_id,
                key: c.key,
                time: crate::clock::parse(&c.observed_at),
                moment: h.finalize().into(),
            })
        }
        Err(e) => Err((seq_hint(line), e)),
    }
}

/// The `seq` of a line that failed its check, when the line is JSON at all.
fn seq_hint(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: Option<u64>,
    }
    serde_json::from_slice::<Seq>(line).ok()?.seq
}

/// The in-order checks across lines.
struct Chain<'e> {
    path: PathBuf,
    expect: &'e Expectations,
    checked: u64,
    prev_hash: [u8; 32],
    file_id: Option<[u8; 16]>,
    last_time: Option<time::OffsetDateTime>,
    backwards: u64,
    moments: HashSet<[u8; 32]>,
    /// Signer keys in order of first appearance, and the same keys as a set: a file may carry
    /// one key per block, so membership must not be a linear search.
    keys: Vec<VerifyingKey>,
    key_set: HashSet<[u8; 32]>,
    head_found: bool,
    /// Blocks whose hash starts with the head prefix.
    head_matches: u64,
    broken: Option<Broken>,
    /// A line too long to be read, after every line before it (all of them good when it is
    /// reported, so it is line `checked + 1`).
    deferred_error: Option<BlockError>,
    torn: Option<u64>,
    warnings: Vec<String>,
}

impl<'e> Chain<'e> {
    fn new(path: &Path, expect: &'e Expectations) -> Self {
        Chain {
            path: path.to_path_buf(),
            expect,
            checked: 0,
            prev_hash: GENESIS_PREV_BYTES,
            file_id: None,
            last_time: None,
            backwards: 0,
            moments: HashSet::new(),
            keys: Vec::new(),
            key_set: HashSet::new(),
            head_found: false,
            head_matches: 0,
            broken: None,
            deferred_error: None,
            torn: None,
            warnings: Vec::new(),
        }
    }

    fn drain(&mut self, pending: &mut BTreeMap<usize, Vec<LineResult>>, next: &mut usize) {
        while let Some(results) = pending.remove(next) {
            *next += 1;
            for r in results {
                if self.broken.is_some() {
                    return;
                }
                self.line(r);
            }
        }
    }

    fn fail(&mut self, seq: Option<u64>, code: &'static str, message: String) {
        self.broken = Some(Broken {
            line: self.checked + 1,
            seq,
            code,
            message,
        });
    }

    fn line(&mut self, r: LineResult) {
        let s = match r {
            Ok(s) => s,
            Err((seq, e)) => return self.fail(seq, e.code(), e.to_string()),
        };
        let expected_seq = self.checked + 1;
        if s.seq != expected_seq {
            let msg = format!(
                "seq is {} where {expected_seq} was expected: a block was deleted, inserted or moved",
                s.seq
            );
            return self.fail(Some(s.seq), "seq_gap", msg);
        }
        if s.prev != self.prev_hash {
            let msg = "prev does not match the previous block's hash: the chain is broken here".to_string();
            return self.fail(Some(s.seq), "broken_link", msg);
        }
        match &self.file_id {
            None => self.file_id = Some(s.file_id),
            Some(id) if *id != s.file_id => {
                let msg = format!(
                    "file_id {} differs from the file's ({}): this block comes from another file",
                    crate::hex::encode(&s.file_id),
                    crate::hex::encode(id)
                );
                return self.fail(Some(s.seq), "foreign_block", msg);
            }
            Some(_) => {}
        }
        if !self.expect.trusted.is_empty() && !self.expect.trusted.contains(&s.key) {
            let msg = format!(
                "signed by {}, which is not a trusted key",
                keys::public_text(&s.key)
            );
            return self.fail(Some(s.seq), "untrusted_key", msg);
        }
        if !self.moments.insert(s.moment) {
            let msg = "a block with the same target and observed_at is already in the file".to_string();
            return self.fail(Some(s.seq), "duplicate", msg);
        }
        if let Some(t) = s.time {
            if self.last_time.is_some_and(|last| t < last) {
                self.backwards += 1;
                if self.backwards == 1 {
                    self.warnings
                        .push(format!("line {expected_seq}: observed_at goes back in time"));
                }
            }
            self.last_time = Some(t);
        }
        if self.key_set.insert(s.key.to_bytes()) {
            self.keys.push(s.key);
        }
        if let Some(head) = &self.expect.head
            && crate::hex::encode(&s.hash).starts_with(head.as_str())
        {
            self.head_found = true;
            self.head_matches += 1;
        }
        self.prev_hash = s.hash;
        self.checked += 1;
    }

    fn finish(mut self) -> Report {
        if self.broken.is_none() {
            if let Some(e) = self.deferred_error.take() {
                self.broken = Some(Broken {
                    line: self.checked + 1,
                    seq: None,
                    code: e.code(),
                    message: e.to_string(),
                });
            } else if let Some(n) = self.torn {
                self.broken = Some(Broken {
                    line: self.checked + 1,
                    seq: None,
                    code: "torn_tail",
                    message: format!(
                        "the last {n} bytes are a torn line (no newline), probably a crash mid-write; \
                         `mcp-witness repair {}` moves them aside",
                        self.path.display()
                    ),
                });
            } else if let Some(head) = &self.expect.head
                && !self.head_found
            {
                self.broken = Some(Broken {
                    line: self.checked + 1,
                    seq: None,
                    code: "head_missing",
                    message: format!(
                        "no block has hash {head}{}: the file was truncated or rolled back past the anchored head",
                        if head.len() < 64 { "…" } else { "" }
                    ),
                });
            }
        }
        if self.backwards > 1 {
            self.warnings.push(format!(
                "observed_at goes back in time {} times in all",
                self.backwards
            ));
        }
        if self.expect.trusted.is_empty() && self.checked > 0 {
            self.warnings.push(
                "no --trust given: signatures are only self-consistent (anyone can re-sign a whole file with a new key); \
                 pin the signer with --trust <KEY|FILE>, the key text printed by `mcp-witness key`"
                    .to_string(),
            );
            if self.keys.len() > 1 {
                self.warnings
                    .push(format!("blocks are signed by {} different keys", self.keys.len()));
            }
        }
        if self.checked == 0 && self.broken.is_none() {
            self.warnings.push("the file holds no blocks".to_string());
        }
        Report {
            head: (self.checked > 0).then(|| (self.checked, crate::hex::encode(&self.prev_hash))),
            path: self.path,
            blocks: self.checked,
            broken: self.broken,
            warnings: self.warnings,
            keys: self.keys.iter().map(keys::public_text).collect(),
            pinned: !self.expect.trusted.is_empty(),
            ambiguous_head: (self.head_matches > 1).then_some(self.head_matches),
        }
    }
}
