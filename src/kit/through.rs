//! `drive --through CMD`: a proxy or bridge between drive and serve. CMD is one command line,
//! split as a POSIX shell would split words (quotes and backslashes; no shell runs), with one
//! of two placeholders telling it where serve is:
//!
//! - `{serve}`: the serve command line (`/path/mcp-witness serve --log LOG`), for
//!   stdio-to-stdio proxies. Unquoted and standing alone it becomes several arguments;
//!   quoted, or inside a longer word, it becomes one argument holding the command line
//!   shell-quoted (for bridges that take the command as one string).
//! - `{url}`: the URL of a `serve --http` that drive starts on a free loopback port, for
//!   stdio-to-HTTP bridges.
//!
//! drive talks to CMD over its stdin and stdout; a [`Tap`] keeps every message that crossed,
//! for `kit::bridge` to compare with serve's log. CMD runs in its own process group and is
//! torn down with its whole process tree, as any spawned server is (`wire::stdio`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::json_budget::{self, Budget};
use crate::wire::framing::Frame;
use crate::wire::stdio::{Event, Server, SpawnSpec};
use crate::wire::{Closing, ExitInfo, Grace, Sent, StderrLog, Transport, Wire, WireEvent, WireStats};

/// The placeholder for the serve command line.
pub const SERVE: &str = "{serve}";
/// The placeholder for the URL of `serve --http`.
pub const URL: &str = "{url}";
/// How long `serve --http` may take to print its URL.
const URL_WAIT: Duration = Duration::from_secs(10);
/// Messages, and bytes of them, kept per run by the tap; past either they are counted, not
/// kept (a run of drive exchanges a few dozen messages).
const KEEP: usize = 1024;
const KEEP_BYTES: usize = 16 << 20;
/// What one message may build when the tap parses it.
const MESSAGE_BUDGET: Budget = Budget::small(1 << 20);

/// Why `--through CMD` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdError {
    Empty,
    /// A quote opened and never closed (which one).
    Unterminated(char),
    /// A backslash at the very end.
    TrailingBackslash,
    /// Neither `{serve}` nor `{url}`: CMD would not know where serve is.
    NoPlaceholder,
    /// Both: drive starts serve one way or the other, not both.
    BothPlaceholders,
    /// The program starts with a placeholder, which is no program.
    PlaceholderProgram,
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hint = "e.g. --through 'my-proxy {serve}' (stdio to stdio) or --through 'npx mcp-remote {url}' (stdio to HTTP)";
        match self {
            CmdError::Empty => write!(f, "--through needs a command line; {hint}"),
            CmdError::Unterminated(q) => write!(f, "--through: a {q} quote is never closed"),
            CmdError::TrailingBackslash => write!(f, "--through: the command line ends in a backslash"),
            CmdError::NoPlaceholder => write!(
                f,
                "--through: the command has no {SERVE} or {URL} placeholder, so it cannot know where serve is; {hint}"
            ),
            CmdError::BothPlaceholders => write!(
                f,
                "--through: use {SERVE} (serve on stdio) or {URL} (serve --http), not both"
            ),
            CmdError::PlaceholderProgram => write!(
                f,
                "--through: the command must start with the bridge's program, not a placeholder"
            ),
        }
    }
}

impl std::error::Error for CmdError {}

/// How CMD reaches serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// CMD runs serve itself (`{serve}`).
    Stdio,
    /// CMD connects to `serve --http` (`{url}`).
    Http,
}

/// One part of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Serve { quoted: bool },
    Url,
}

/// A parsed `--through` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    /// As the user wrote it, for the report.
    pub text: String,
    words: Vec<Vec<Piece>>,
    pub reach: Reach,
}

impl Cmd {
    /// Splits `text` into words and finds its placeholder.
    pub fn parse(text: &str) -> Result<Cmd, CmdError> {
        let words = split(text)?;
        let has = |p: &dyn Fn(&Piece) -> bool| words.iter().flatten().any(p);
        let serve = has(&|p| matches!(p, Piece::Serve { .. }));
        let url = has(&|p| *p == Piece::Url);
        let reach = match (serve, url) {
            (true, true) => return Err(CmdError::BothPlaceholders),
            (true, false) => Reach::Stdio,
            (false, true) => Reach::Http,
            (false, false) if words.is_empty() => return Err(CmdError::Empty),
            (false, false) => return Err(CmdError::NoPlaceholder),
        };
        if words[0].iter().any(|p| !matches!(p, Piece::Text(_))) {
            return Err(CmdError::PlaceholderProgram);
        }
        Ok(Cmd {
            text: text.to_string(),
            words,
            reach,
        })
    }

    /// The bridge's program, found as the OS would find it.
    pub fn find_program(&self) -> Result<PathBuf, crate::program::ResolveError> {
        let program = match self.words[0].as_slice() {
            [Piece::Text(t)] => t.as_str(),
            _ => "",
        };
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        crate::program::resolve(program, &cwd, std::env::var_os("PATH").as_deref())
    }

    /// The argv with the placeholders filled: `serve` the serve argv, `url` serve's URL.
    pub fn expand(&self, serve: &[String], url: &str) -> Vec<String> {
        let line = serve.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
        let mut argv = Vec::new();
        for word in &self.words {
            if let [Piece::Serve { quoted: false }] = word.as_slice() {
                argv.extend(serve.iter().cloned());
                continue;
            }
            let mut w = String::new();
            for p in word {
                match p {
                    Piece::Text(t) => w.push_str(t),
                    Piece::Serve { .. } => w.push_str(&line),
                    Piece::Url => w.push_str(url),
                }
            }
            argv.push(w);
        }
        argv
    }
}

/// Splits a command line into words as a POSIX shell does (no expansions): blanks separate,
/// `'…'` is literal, `"…"` keeps `\"`, `\\`, `\$` and `` \` `` escapes, a backslash outside
/// quotes escapes the next character. `{serve}` and `{url}` are found in any context.
fn split(text: &str) -> Result<Vec<Vec<Piece>>, CmdError> {
    let mut words = Vec::new();
    let mut word: Vec<Piece> = Vec::new();
    let mut lit = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    let flush = |lit: &mut String, word: &mut Vec<Piece>| {
        if !lit.is_empty() {
            word.push(Piece::Text(std::mem::take(lit)));
        }
    };
    while let Some((at, c)) = chars.next() {
        let rest = &text[at..];
        let placeholder = if rest.starts_with(SERVE) {
            Some((
                Piece::Serve {
                    quoted: quote.is_some(),
                },
                SERVE.len(),
            ))
        } else if rest.starts_with(URL) {
            Some((Piece::Url, URL.len()))
        } else {
            None
        };
        if let Some((piece, len)) = placeholder {
            flush(&mut lit, &mut word);
            word.push(piece);
            started = true;
            // The placeholder's first character is `c`; skip the rest of it.
            for _ in 1..len {
                chars.next();
            }
            continue;
        }
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), _) => lit.push(c),
            (Some(_), '\\') => match chars.peek() {
                Some(&(_, n @ ('"' | '\\' | '$' | '`'))) => {
                    lit.push(n);
                    chars.next();
                }
                _ => lit.push('\\'),
            },
            (Some(_), _) => lit.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '\\') => match chars.next() {
                Some((_, n)) => {
                    lit.push(n);
                    started = true;
                }
                None => return Err(CmdError::TrailingBackslash),
            },
            (None, c) if c.is_whitespace() => {
                flush(&mut lit, &mut word);
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => {
                lit.push(c);
                started = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(CmdError::Unterminated(q));
    }
    flush(&mut lit, &mut word);
    if started {
        words.push(word);
    }
    Ok(words)
}

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
/// single quotes.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Who sent a message the tap saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// drive sent it toward serve.
    Drive,
    /// It came to drive, from the bridge's side.
    Bridge,
}

/// One message that crossed between drive and CMD.
#[derive(Debug, Clone)]
pub struct Seen {
    /// 1-based, in the order the tap saw them.
    pub n: usize,
    pub from: Side,
    /// Unix time in milliseconds (drive's clock; serve's log uses the same host clock).
    pub ms: i64,
    pub msg: Value,
}

/// What the tap kept.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    pub messages: Vec<Seen>,
    /// Lines from CMD that were no JSON value (or too big to parse), and messages past `KEEP`.
    pub unparsed: usize,
    pub past_keep: usize,
    kept_bytes: usize,
}

impl Transcript {
    /// A line from CMD longer than drive reads: not kept, counted with the unparsed.
    fn note_oversize(&mut self) {
        self.unparsed += 1;
    }

    fn note(&mut self, from: Side, bytes: &[u8]) {
        let n = self.messages.len() + self.unparsed + self.past_keep + 1;
        if self.messages.len() >= KEEP || self.kept_bytes + bytes.len() > KEEP_BYTES {
            self.past_keep += 1;
            return;
        }
        match json_budget::parse(bytes, MESSAGE_BUDGET) {
            Ok(msg) => {
                self.kept_bytes += bytes.len();
                self.messages.push(Seen {
                    n,
                    from,
                    ms: now_ms(),
                    msg,
                });
            }
            Err(_) => self.unparsed += 1,
        }
    }
}

/// Now, as Unix milliseconds.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// A wire that keeps a copy of every message sent and received.
pub struct Tap {
    inner: Box<dyn Wire>,
    seen: Arc<Mutex<Transcript>>,
}

impl Tap {
    pub fn new(inner: Box<dyn Wire>) -> (Tap, Arc<Mutex<Transcript>>) {
        let seen = Arc::new(Mutex::new(Transcript::default()));
        (
            Tap {
                inner,
                seen: Arc::clone(&seen),
            },
            seen,
        )
    }

    fn note(&self, from: Side, bytes: &[u8]) {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .note(from, bytes);
    }
}

impl Wire for Tap {
    fn transport(&self) -> Transport {
        self.inner.transport()
    }
    fn send(&mut self, message: Vec<u8>, deadline: Instant) -> Sent {
        self.note(Side::Drive, &message);
        self.inner.send(message, deadline)
    }
    fn send_raw(&mut self, bytes: Vec<u8>, deadline: Instant) -> Sent {
        self.note(Side::Drive, &bytes);
        self.inner.send_raw(bytes, deadline)
    }
    fn next(&mut self, deadline: Instant) -> Option<WireEvent> {
        let ev = self.inner.next(deadline);
        match &ev {
            Some(WireEvent::Frame(Frame::Line(line))) => self.note(Side::Bridge, line),
            Some(WireEvent::Frame(Frame::Oversize(_))) => self
                .seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .note_oversize(),
            _ => {}
        }
        ev
    }
    fn exit(&self) -> Option<ExitInfo> {
        self.inner.exit()
    }
    fn output_closed(&self) -> bool {
        self.inner.output_closed()
    }
    fn stats(&self) -> WireStats {
        self.inner.stats()
    }
    fn stderr(&self) -> Option<Arc<Mutex<StderrLog>>> {
        self.inner.stderr()
    }
    fn close(self: Box<Self>, grace: Grace) -> Closing {
        self.inner.close(grace)
    }
    fn negotiated(&mut self, version: &str) {
        self.inner.negotiated(version);
    }
}

/// CMD started for one run, and the `serve --http` it reaches when it takes `{url}`.
pub struct Started {
    pub wire: Tap,
    pub seen: Arc<Mutex<Transcript>>,
    /// `serve --http`, torn down after CMD.
    pub helper: Option<Server>,
    /// The argv CMD was started with, for the report.
    pub argv: Vec<String>,
}

/// Starts CMD with its placeholder filled: `serve` is how to start `mcp-witness serve --log
/// LOG` on stdio; for `{url}` drive starts it with `--http 127.0.0.1:0` and reads its URL.
pub fn start(cmd: &Cmd, serve: &SpawnSpec) -> Result<Started, String> {
    let mut serve_argv = vec![serve.program.display().to_string()];
    serve_argv.extend(serve.args.iter().cloned());
    let (helper, url) = match cmd.reach {
        Reach::Stdio => (None, String::new()),
        Reach::Http => {
            let mut spec = serve.clone();
            spec.args
                .splice(1..1, ["--http".to_string(), "127.0.0.1:0".to_string()]);
            let mut helper = Server::spawn(&spec).map_err(|e| format!("cannot start serve --http: {e}"))?;
            match read_url(&mut helper) {
                Ok(url) => (Some(helper), url),
                Err(e) => {
                    let stderr = stderr_tail(&helper);
                    helper.teardown(Grace::default());
                    return Err(format!("serve --http: {e}{stderr}"));
                }
            }
        }
    };
    let argv = cmd.expand(&serve_argv, &url);
    let stop = |helper: Option<Server>| {
        if let Some(h) = helper {
            h.teardown(Grace::default());
        }
    };
    let program = match cmd.find_program() {
        Ok(p) => p,
        Err(e) => {
            stop(helper);
            return Err(format!("--through: {e}"));
        }
    };
    let spec = SpawnSpec {
        program,
        argv0: argv[0].clone(),
        args: argv[1..].to_vec(),
        env: Vec::new(),
        cwd: None,
        max_line: serve.max_line,
        background: false,
    };
    match Server::spawn(&spec) {
        Ok(s) => {
            let (wire, seen) = Tap::new(Box::new(s));
            Ok(Started {
                wire,
                seen,
                helper,
                argv,
            })
        }
        Err(e) => {
            stop(helper);
            Err(format!("cannot start {}: {e}", spec.program.display()))
        }
    }
}

/// The end of a process's stderr, as a clause to append to an error (empty when silent).
pub fn stderr_tail(server: &dyn Wire) -> String {
    let Some(log) = server.stderr() else {
        return String::new();
    };
    // A bridge may print a token it was given or fetched: secrets are masked first.
    let text = log
        .lock()
        .map(|l| crate::redact::Redactor::default().text(&l.text_tail()))
        .unwrap_or_default();
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends: {}", crate::text::truncate(text, 400))
    }
}

/// The first line `serve --http` prints: its URL.
fn read_url(helper: &mut Server) -> Result<String, String> {
    match helper.next_event(Instant::now() + URL_WAIT) {
        Some(Event::Stdout(Frame::Line(line))) => {
            let url = String::from_utf8_lossy(&line).trim().to_string();
            if url.starts_with("http://") {
                Ok(url)
            } else {
                Err(format!(
                    "printed {:?} where its URL was due",
                    crate::text::truncate(&url, 120)
                ))
            }
        }
        Some(Event::Stdout(Frame::Oversize(_))) => Err("printed an oversize line".into()),
        Some(Event::Exited(s)) => Err(format!("exited ({s}) before printing its URL")),
        Some(Event::StdoutClosed) => Err("closed stdout before printing its URL".into()),
        None => Err(format!("printed no URL within {} s", URL_WAIT.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve() -> Vec<String> {
        ["/bin/mcp-witness", "serve", "--log", "/tmp/a log.jsonl"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn an_unquoted_serve_placeholder_becomes_the_serve_arguments() {
        let c = Cmd::parse("python3 proxy.py --drop 'a b' -- {serve}").unwrap();
        assert_eq!(c.reach, Reach::Stdio);
        let argv = c.expand(&serve(), "");
        assert_eq!(
            argv,
            [
                "python3",
                "proxy.py",
                "--drop",
                "a b",
                "--",
                "/bin/mcp-witness",
                "serve",
                "--log",
                "/tmp/a log.jsonl"
            ]
        );
    }

    #[test]
    fn a_quoted_or_embedded_serve_placeholder_becomes_one_shell_quoted_argument() {
        let line = "/bin/mcp-witness serve --log '/tmp/a log.jsonl'";
        let c = Cmd::parse(r#"supergateway --stdio "{serve}""#).unwrap();
        assert_eq!(c.expand(&serve(), ""), ["supergateway", "--stdio", line]);
        let c = Cmd::parse("bridge --command={serve}").unwrap();
        assert_eq!(
            c.expand(&serve(), ""),
            ["bridge".to_string(), format!("--command={line}")]
        );
    }

    #[test]
    fn the_url_placeholder_is_filled_in_any_word() {
        let c = Cmd::parse("npx mcp-remote {url} --header 'X: {url}'").unwrap();
        assert_eq!(c.reach, Reach::Http);
        let url = "http://127.0.0.1:5/mcp";
        assert_eq!(
            c.expand(&serve(), url),
            ["npx", "mcp-remote", url, "--header", "X: http://127.0.0.1:5/mcp"]
        );
    }

    #[test]
    fn a_command_that_cannot_know_where_serve_is_is_refused() {
        assert_eq!(Cmd::parse("  "), Err(CmdError::Empty));
        assert_eq!(Cmd::parse("mcp-proxy --port 8080"), Err(CmdError::NoPlaceholder));
        assert_eq!(Cmd::parse("p {serve} {url}"), Err(CmdError::BothPlaceholders));
        assert_eq!(Cmd::parse("{serve}"), Err(CmdError::PlaceholderProgram));
        assert_eq!(Cmd::parse("p '{serve}"), Err(CmdError::Unterminated('\'')));
        assert_eq!(Cmd::parse(r#"p "{url}"#), Err(CmdError::Unterminated('"')));
        assert_eq!(Cmd::parse(r"p {url} \"), Err(CmdError::TrailingBackslash));
        // Braces that are no placeholder are the bridge's own (JSON, templates).
        assert_eq!(Cmd::parse(r#"p --json '{"a":1}'"#), Err(CmdError::NoPlaceholder));
    }

    #[test]
    fn words_split_as_a_posix_shell_splits_them() {
        let c = Cmd::parse(r#"a\ b "c \"d\" \x" '' e'f'g {url}"#).unwrap();
        assert_eq!(c.expand(&[], "U"), ["a b", r#"c "d" \x"#, "", "efg", "U"]);
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("/a/b-c.d"), "/a/b-c.d");
    }
}
