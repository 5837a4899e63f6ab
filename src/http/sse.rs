//! A streaming Server-Sent Events parser (WHATWG HTML, "event stream interpretation"): bytes
//! in, whatever the chunking; events out. LF, CRLF and lone CR line ends in any mix (a CR
//! that ends one chunk is held until the next shows whether an LF follows); multi-line
//! `data:` joined with `\n`; comments counted and ignored; `event:`, `id:` (kept across
//! events, ignored if it holds NUL) and `retry:` (digits only); one leading BOM dropped; a
//! line without a colon is a field with an empty value; an event with no data line is not
//! dispatched but still sets the last event id, while `data:` with nothing after it is
//! dispatched with empty data (both are counted as priming events; the caller skips them).
//!
//! Limits: bytes are not decoded here: data stays bytes (the caller classifies it, so a
//! multi-byte character split across reads is never a problem); event names and ids are
//! decoded lossily. A line longer than `max_line` and an event whose data exceeds
//! `max_event` are dropped and reported as [`SseItem::Oversize`]. An event cut off by the end
//! of the stream is not dispatched (as the spec says). No reconnection here: `retry` is
//! recorded for the caller.

/// Something the stream said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    Event(SseEvent),
    /// An over-long line or event was dropped; bytes seen of it.
    Oversize(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` when the stream named none).
    pub event: String,
    pub data: Vec<u8>,
    /// The last event id at dispatch time (it persists across events).
    pub id: Option<String>,
}

/// What a stream showed besides its events: the facts a record keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SseStats {
    pub events: u64,
    pub comments: u64,
    /// Events with empty data (`id: x` + `data:`, or fields but no data line): priming events.
    pub priming: u64,
    /// Events that carried an `id:`.
    pub ids: u64,
    /// The last valid `retry:` value, in ms.
    pub retry_ms: Option<u64>,
    pub oversize: u64,
    /// Line ends seen, by kind.
    pub lf: u64,
    pub crlf: u64,
    pub cr: u64,
}

#[derive(Debug)]
pub struct SseParser {
    max_line: usize,
    max_event: usize,
    line: Vec<u8>,
    /// Inside an over-long line: its bytes so far (the line is skipped to its end).
    skipping: Option<usize>,
    /// The previous chunk ended with CR: an LF first in the next one belongs to it.
    pending_cr: bool,
    /// No line completed yet (a BOM is dropped from the first one only).
    first_line: bool,
    data: Vec<u8>,
    event: Vec<u8>,
    /// The event being built set an id, or any field at all.
    event_had_id: bool,
    event_had_field: bool,
    /// The data of the event being built went over the bound.
    event_oversize: Option<usize>,
    last_id: Option<String>,
    pub stats: SseStats,
}

impl SseParser {
    pub fn new(max_line: usize, max_event: usize) -> SseParser {
        SseParser {
            max_line,
            max_event,
            line: Vec::new(),
            skipping: None,
            pending_cr: false,
            first_line: true,
            data: Vec::new(),
            event: Vec::new(),
            event_had_id: false,
            event_had_field: false,
            event_oversize: None,
            last_id: None,
            stats: SseStats::default(),
        }
    }

    /// The last event id seen (for `Last-Event-ID`).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// Feeds a chunk; calls `out` for every event dispatched and every oversize drop.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut impl FnMut(SseItem)) {
        if self.pending_cr && !chunk.is_empty() {
            self.pending_cr = false;
            if chunk[0] == b'\n' {
                self.stats.cr -= 1;
                self.stats.crlf += 1;
                chunk = &chunk[1..];
            }
        }
        while !chunk.is_empty() {
            let Some(i) = chunk.iter().position(|b| *b == b'\r' || *b == b'\n') else {
                self.extend(chunk, out);
                return;
            };
            self.extend(&chunk[..i], out);
            let rest = &chunk[i + 1..];
            chunk = if chunk[i] == b'\n' {
                self.stats.lf += 1;
                rest
            } else if rest.first() == Some(&b'\n') {
                self.stats.crlf += 1;
                &rest[1..]
            } else {
                self.stats.cr += 1;
                self.pending_cr = rest.is_empty();
                rest
            };
            self.end_line(out);
        }
    }

    /// The stream ended: an incomplete event is discarded (not dispatched).
    pub fn finish(&mut self) {
        self.line.clear();
        self.skipping = None;
        self.reset_event();
    }

    fn extend(&mut self, bytes: &[u8], out: &mut impl FnMut(SseItem)) {
        if let Some(seen) = &mut self.skipping {
            *seen += bytes.len();
            return;
        }
        if self.line.len() + bytes.len() > self.max_line {
            self.skipping = Some(self.line.len() + bytes.len());
            self.line = Vec::new();
            self.stats.oversize += 1;
            out(SseItem::Oversize(self.skipping.unwrap_or(0)));
            return;
        }
        self.line.extend_from_slice(bytes);
    }

    fn end_line(&mut self, out: &mut impl FnMut(SseItem)) {
        let first = std::mem::replace(&mut self.first_line, false);
        if self.skipping.take().is_some() {
            return; // the over-long line is gone (already reported)
        }
        let mut line = std::mem::take(&mut self.line);
        if first && line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            self.stats.comments += 1;
            return;
        }
        let (name, value) = match line.iter().position(|b| *b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &b""[..]),
        };
        self.event_had_field = true;
        match name {
            b"data" => {
                if self.event_oversize.is_some() {
                    *self.event_oversize.as_mut().unwrap_or(&mut 0) += value.len() + 1;
                } else if self.data.len() + value.len() + 1 > self.max_event {
                    self.event_oversize = Some(self.data.len() + value.len() + 1);
                    self.data = Vec::new();
                } else {
                    self.data.extend_from_slice(value);
                    self.data.push(b'\n');
                }
            }
            b"event" => {
                self.event = value.iter().copied().take(256).collect();
            }
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
                self.event_had_id = true;
            }
            b"retry" => {
                if !value.is_empty()
                    && value.len() <= 18
                    && value.iter().all(u8::is_ascii_digit)
                    && let Ok(ms) = std::str::from_utf8(value).unwrap_or("").parse::<u64>()
                {
                    self.stats.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut impl FnMut(SseItem)) {
        if self.event_had_id {
            self.stats.ids += 1;
        }
        if let Some(seen) = self.event_oversize {
            self.stats.oversize += 1;
            out(SseItem::Oversize(seen));
        } else if self.data.is_empty() {
            // No data line at all: not dispatched (its id still counts).
            if self.event_had_field {
                self.stats.priming += 1;
            }
        } else {
            if self.data == b"\n" {
                // `data:` with nothing after it: dispatched with empty data (as a browser
                // does), and counted as a priming event.
                self.stats.priming += 1;
            }
            let mut data = std::mem::take(&mut self.data);
            data.pop(); // the last `\n`
            let event = if self.event.is_empty() {
                "message".to_string()
            } else {
                String::from_utf8_lossy(&self.event).into_owned()
            };
            self.stats.events += 1;
            out(SseItem::Event(SseEvent {
                event,
                data,
                id: self.last_id.clone(),
            }));
        }
        self.reset_event();
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.event.clear();
        self.event_had_id = false;
        self.event_had_field = false;
        self.event_oversize = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in(chunks: &[&[u8]]) -> (Vec<SseItem>, SseStats) {
        let mut p = SseParser::new(1024, 4096);
        let mut items = Vec::new();
        for c in chunks {
            p.push(c, &mut |i| items.push(i));
        }
        p.finish();
        (items, p.stats)
    }

    fn events(items: &[SseItem]) -> Vec<(String, String, Option<String>)> {
        items
            .iter()
            .map(|i| match i {
                SseItem::Event(e) => (
                    e.event.clone(),
                    String::from_utf8(e.data.clone()).unwrap(),
                    e.id.clone(),
                ),
                SseItem::Oversize(n) => ("<oversize>".into(), n.to_string(), None),
            })
            .collect()
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> (String, String, Option<String>) {
        (event.into(), data.into(), id.map(String::from))
    }

    #[test]
    fn lf_crlf_and_cr_line_ends_give_the_same_events() {
        let lf = b"event: message\nid: 1\ndata: {\"a\":1}\n\n";
        let crlf = b"event: message\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\n";
        let cr = b"event: message\rid: 1\rdata: {\"a\":1}\r\r";
        let want = vec![ev("message", "{\"a\":1}", Some("1"))];
        for stream in [&lf[..], &crlf[..], &cr[..]] {
            assert_eq!(events(&parse_in(&[stream]).0), want, "{stream:?}");
        }
        let (_, stats) = parse_in(&[crlf]);
        assert_eq!((stats.crlf, stats.lf, stats.cr), (4, 0, 0));
    }

    #[test]
    fn every_split_point_of_a_mixed_stream_gives_the_same_events() {
        let stream: &[u8] =
            b"\xEF\xBB\xBFdata: a\r\ndata:b\r\r: comment\nevent: x\rdata\n\nid: 7\ndata: c\r\n\r\n";
        let want = vec![
            ev("message", "a\nb", None),
            ev("x", "", None),
            ev("message", "c", Some("7")),
        ];
        // `data` with no colon is a field with an empty value: data "" + "\n" -> "", dispatched.
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let (items, stats) = parse_in(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert_eq!(events(&items), want, "split at {i},{j}");
                assert_eq!(stats.comments, 1, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn a_cr_at_a_chunk_boundary_followed_by_lf_is_one_line_end() {
        let (items, stats) = parse_in(&[b"data: x\r", b"\n\r", b"\n"]);
        assert_eq!(events(&items), vec![ev("message", "x", None)]);
        assert_eq!((stats.crlf, stats.cr), (2, 0));
        // A CR at the boundary followed by something else ends the line by itself.
        let (items, _) = parse_in(&[b"data: x\r", b"\r"]);
        assert_eq!(events(&items), vec![ev("message", "x", None)]);
    }

    #[test]
    fn multi_line_data_joins_with_newlines_and_one_space_is_stripped() {
        let (items, _) = parse_in(&[b"data:  two spaces\ndata:none\ndata\ndata: end\n\n"]);
        assert_eq!(
            events(&items),
            vec![ev("message", " two spaces\nnone\n\nend", None)]
        );
    }

    #[test]
    fn priming_events_set_the_id_and_dispatch_only_when_a_data_line_was_given() {
        // TS SDK and rmcp shapes.
        let (items, stats) =
            parse_in(&[b"id: abc\ndata: \n\ndata: \nid: 0\nretry: 3000\n\nevent: message\ndata: {}\n\n"]);
        assert_eq!(
            events(&items),
            vec![
                ev("message", "", Some("abc")),
                ev("message", "", Some("0")),
                ev("message", "{}", Some("0"))
            ]
        );
        let (items, more) = parse_in(&[b"id: 9

"]);
        assert!(items.is_empty(), "no data line: not dispatched");
        assert_eq!((stats.priming, more.priming, more.ids), (2, 1, 1));
        assert_eq!(stats.ids, 2);
        assert_eq!(stats.retry_ms, Some(3000));
    }

    #[test]
    fn comments_only_keep_alives_dispatch_nothing() {
        let (items, stats) = parse_in(&[b": keepalive\n\n: ping - 2026-12-02\r\n\r\n"]);
        assert!(items.is_empty());
        assert_eq!((stats.comments, stats.priming, stats.events), (2, 0, 0));
    }

    #[test]
    fn retry_takes_digits_only_and_ids_with_nul_are_ignored() {
        let (items, stats) = parse_in(&[b"retry: 12x\nretry: 50\nretry: -1\nid: a\0b\ndata: d\n\n"]);
        assert_eq!(stats.retry_ms, Some(50));
        assert_eq!(events(&items), vec![ev("message", "d", None)]);
    }

    #[test]
    fn an_event_cut_by_the_end_of_the_stream_is_not_dispatched() {
        let (items, _) = parse_in(&[b"data: one\n\ndata: two\n"]);
        assert_eq!(events(&items), vec![ev("message", "one", None)]);
    }

    #[test]
    fn oversize_lines_and_events_are_dropped_and_reported_and_parsing_goes_on() {
        let mut p = SseParser::new(16, 24);
        let mut items = Vec::new();
        let long_line = format!("data: {}\n\n", "x".repeat(40));
        p.push(long_line.as_bytes(), &mut |i| items.push(i));
        p.push(b"data: 0123456789\ndata: 0123456789\ndata: 01\n\n", &mut |i| {
            items.push(i)
        });
        p.push(b"data: ok\n\n", &mut |i| items.push(i));
        assert!(matches!(items[0], SseItem::Oversize(n) if n >= 17));
        assert!(matches!(items[1], SseItem::Oversize(_)));
        assert!(
            matches!(&items[2], SseItem::Event(e) if e.data == b"ok"),
            "{items:?}"
        );
        assert_eq!(items.len(), 3, "{items:?}");
        assert_eq!(p.stats.oversize, 2);
    }

    #[test]
    fn random_streams_give_the_same_events_and_stats_whatever_the_chunking() {
        // Streams drawn from the bytes that matter (field names, colons, all line ends, a BOM
        // byte, NUL), each parsed whole and in random pieces: the results must be identical.
        let alphabet = b"data:eventidretry: x\r\n\r\n\n\r:\0\xEF7";
        let mut next = crate::test_rng::xorshift(0x2545_f491_4f6c_dd1d);
        let mut rand = move |n: usize| (next() % n as u64) as usize;
        for _ in 0..2000 {
            let len = rand(120);
            let stream: Vec<u8> = (0..len).map(|_| alphabet[rand(alphabet.len())]).collect();
            let whole = parse_in(&[&stream]);
            let mut pieces = Vec::new();
            let mut at = 0;
            while at < stream.len() {
                let n = 1 + rand(5);
                let end = (at + n).min(stream.len());
                pieces.push(&stream[at..end]);
                at = end;
            }
            assert_eq!(parse_in(&pieces), whole, "{stream:?}");
        }
    }

    #[test]
    fn a_bom_is_dropped_only_at_the_very_start() {
        let (items, _) = parse_in(&[b"\xEF\xBB", b"\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
        // The second BOM makes an unknown field name: ignored, nothing dispatched for it.
        assert_eq!(events(&items), vec![ev("message", "a", None)]);
    }
}
