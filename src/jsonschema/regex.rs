//! The ECMAScript regular-expression subset that `pattern` and `patternProperties` use,
//! parsed into a program for the Pike VM in [`super::pike`].
//!
//! Supported: literals and escapes (`\n \r \t \f \v \0 \xHH \uHHHH \u{H..} \cX`, any escaped
//! punctuation), `.`, classes `[...]`/`[^...]` with ranges, `\d \D \w \W \s \S` (ASCII `\d`/`\w`
//! as ECMAScript defines them; `\s` with the Unicode white space set), anchors `^ $`, word
//! boundaries `\b \B`, groups `( )`, `(?: )`, `(?<name> )`, alternation, and quantifiers
//! `* + ? {n} {n,} {n,m}` (lazy forms too: for a yes/no match they are the same). Matching is
//! over Unicode code points. `{` that does not start a quantifier is a literal (Annex B).
//!
//! Not supported, reported as [`RegexError::Unsupported`] so a schema using them is refused,
//! never matched wrongly: backreferences (`\1`, `\k<name>`), lookahead and lookbehind
//! (`(?=` `(?!` `(?<=` `(?<!`), Unicode property escapes (`\p{..}`, `\P{..}`), flags and
//! modifiers (`(?i)`). Size is bounded: a program over [`MAX_PROGRAM`] instructions (counted
//! repetition expands) is [`RegexError::TooLarge`], and so is the pattern that takes a
//! schema's patterns together past [`MAX_TOTAL_PROGRAM`].

use std::fmt;

/// Largest program (instructions) a pattern may compile to.
pub const MAX_PROGRAM: usize = 20_000;
/// Largest total of all the programs of one schema's patterns (about 10 MB).
pub const MAX_TOTAL_PROGRAM: usize = 400_000;
/// Deepest group nesting a pattern may have (the parser recurses per group).
const MAX_NESTING: usize = 64;

/// Why a pattern cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexError {
    /// Not an ECMAScript regular expression (what was wrong, at which char offset).
    Syntax { offset: usize, what: &'static str },
    /// Valid ECMAScript, but a feature this engine does not implement.
    Unsupported { feature: &'static str },
    /// Compiles to more than 20,000 instructions (or the schema's patterns together to more
    /// than 400,000), or nests deeper than 64 groups.
    TooLarge,
}

impl fmt::Display for RegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegexError::Syntax { offset, what } => write!(f, "regex syntax error at char {offset}: {what}"),
            RegexError::Unsupported { feature } => {
                write!(f, "regex uses {feature}, which this validator does not support")
            }
            RegexError::TooLarge => write!(
                f,
                "regex too large (over {MAX_PROGRAM} instructions once repetitions are expanded, over {MAX_TOTAL_PROGRAM} with the schema's other patterns, or nested over {MAX_NESTING} groups deep)"
            ),
        }
    }
}

/// A set of code points: sorted, possibly negated ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub ranges: Vec<(char, char)>,
    pub negated: bool,
}

impl Class {
    pub fn matches(&self, c: char) -> bool {
        let inside = self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        inside != self.negated
    }
}

/// One instruction of the Pike VM program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inst {
    Char(char),
    Class(usize),
    /// `.`: anything but a line terminator.
    Any,
    Split(usize, usize),
    Jmp(usize),
    Start,
    End,
    WordBoundary,
    NotWordBoundary,
    Match,
}

/// A compiled pattern: run it with [`super::pike::is_match`].
#[derive(Debug, Clone)]
pub struct Regex {
    pub prog: Vec<Inst>,
    pub classes: Vec<Class>,
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Char(char),
    Class(Class),
    Any,
    Start,
    End,
    WordB,
    NotWordB,
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

/// Compile an ECMAScript pattern.
pub fn compile(pattern: &str) -> Result<Regex, RegexError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut p = Parser {
        s: &chars,
        i: 0,
        depth: 0,
    };
    let node = p.alternation()?;
    if p.i < chars.len() {
        return Err(RegexError::Syntax {
            offset: p.i,
            what: "unmatched ')'",
        });
    }
    let mut c = Compiler {
        prog: Vec::new(),
        classes: Vec::new(),
    };
    c.emit_node(&node)?;
    c.push(Inst::Match)?;
    Ok(Regex {
        prog: c.prog,
        classes: c.classes,
    })
}

struct Parser<'s> {
    s: &'s [char],
    i: usize,
    depth: usize,
}

const DIGIT: &[(char, char)] = &[('0', '9')];
const WORD: &[(char, char)] = &[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
const SPACE: &[(char, char)] = &[
    ('\t', '\r'),
    (' ', ' '),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{feff}', '\u{feff}'),
];

/// Complement of sorted, non-overlapping ranges.
fn complement(ranges: &[(char, char)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut next: u32 = 0;
    for &(lo, hi) in ranges {
        if (lo as u32) > next {
            push_range(&mut out, next, lo as u32 - 1);
        }
        next = hi as u32 + 1;
    }
    push_range(&mut out, next, 0x10FFFF);
    out
}

/// Push `lo..=hi` as char ranges, skipping the surrogate gap.
fn push_range(out: &mut Vec<(char, char)>, lo: u32, hi: u32) {
    let parts = [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)];
    for (a, b) in parts {
        if a <= b
            && let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b))
        {
            out.push((a, b));
        }
    }
}

enum Atom {
    Node(Node),
    /// A class escape usable inside `[...]` too.
    Set(Vec<(char, char)>),
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn syntax(&self, what: &'static str) -> RegexError {
        RegexError::Syntax { offset: self.i, what }
    }

    fn alternation(&mut self) -> Result<Node, RegexError> {
        let mut alts = vec![self.concat()?];
        while self.eat('|') {
            alts.push(self.concat()?);
        }
        Ok(if alts.len() == 1 {
            alts.pop().unwrap_or(Node::Empty)
        } else {
            Node::Alt(alts)
        })
    }

    fn concat(&mut self) -> Result<Node, RegexError> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.term()?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap_or(Node::Empty),
            _ => Node::Concat(items),
        })
    }

    fn term(&mut self) -> Result<Node, RegexError> {
        let start = self.i;
        let atom = self.atom()?;
        let quantifiable = !matches!(atom, Node::Start | Node::End | Node::WordB | Node::NotWordB);
        let (min, max) = match self.peek() {
            Some('*') => {
                self.i += 1;
                (0, None)
            }
            Some('+') => {
                self.i += 1;
                (1, None)
            }
            Some('?') => {
                self.i += 1;
                (0, Some(1))
            }
            Some('{') => match self.braces()? {
                Some(q) => q,
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        if !quantifiable {
            return Err(RegexError::Syntax {
                offset: start,
                what: "nothing to repeat",
            });
        }
        self.eat('?'); // lazy: same yes/no answer
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    /// `{n}`, `{n,}`, `{n,m}` at `self.i`; None (nothing consumed) if it is a literal `{`.
    fn braces(&mut self) -> Result<Option<(u32, Option<u32>)>, RegexError> {
        let save = self.i;
        self.i += 1;
        let Some(min) = self.number() else {
            self.i = save;
            return Ok(None);
        };
        let max = if self.eat(',') {
            if self.peek() == Some('}') {
                None
            } else {
                match self.number() {
                    Some(m) => Some(m),
                    None => {
                        self.i = save;
                        return Ok(None);
                    }
                }
            }
        } else {
            Some(min)
        };
        if !self.eat('}') {
            self.i = save;
            return Ok(None);
        }
        if let Some(m) = max
            && m < min
        {
            return Err(RegexError::Syntax {
                offset: save,
                what: "numbers out of order in {} quantifier",
            });
        }
        Ok(Some((min, max)))
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.i;
        let mut n: u32 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d);
            self.i += 1;
        }
        (self.i > start).then_some(n)
    }

    fn atom(&mut self) -> Result<Node, RegexError> {
        let Some(c) = self.peek() else {
            return Err(self.syntax("unexpected end"));
        };
        self.i += 1;
        Ok(match c {
            '^' => Node::Start,
            '$' => Node::End,
            '.' => Node::Any,
            '(' => self.group()?,
            '[' => Node::Class(self.class()?),
            '\\' => match self.escape(false)? {
                Atom::Node(n) => n,
                Atom::Set(r) => Node::Class(Class {
                    ranges: r,
                    negated: false,
                }),
            },
            '*' | '+' | '?' => {
                return Err(RegexError::Syntax {
                    offset: self.i - 1,
                    what: "nothing to repeat",
                });
            }
            '{' => {
                self.i -= 1;
                if self.braces()?.is_some() {
                    return Err(self.syntax("nothing to repeat"));
                }
                self.i += 1;
                Node::Char('{')
            }
            other => Node::Char(other),
        })
    }

    fn group(&mut self) -> Result<Node, RegexError> {
        if self.eat('?') {
            match self.peek() {
                Some(':') => self.i += 1,
                Some('=') | Some('!') => return Err(RegexError::Unsupported { feature: "lookahead" }),
                Some('<') => {
                    self.i += 1;
                    match self.peek() {
                        Some('=') | Some('!') => {
                            return Err(RegexError::Unsupported {
                                feature: "lookbehind",
                            });
                        }
                        _ => {
                            let start = self.i;
                            while let Some(c) = self.peek() {
                                self.i += 1;
                                if c == '>' {
                                    break;
                                }
                                if !(c.is_alphanumeric() || c == '_' || c == '$') {
                                    return Err(self.syntax("bad group name"));
                                }
                            }
                            if self.i == start + 1 || self.s.get(self.i - 1) != Some(&'>') {
                                return Err(self.syntax("bad group name"));
                            }
                        }
                    }
                }
                _ => {
                    return Err(RegexError::Unsupported {
                        feature: "group modifiers or flags",
                    });
                }
            }
        }
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(RegexError::TooLarge);
        }
        let inner = self.alternation()?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(self.syntax("missing ')'"));
        }
        // A group is quantifiable even around an assertion: `(^)*`, `(?:\b)+`.
        Ok(Node::Concat(vec![inner]))
    }

    fn class(&mut self) -> Result<Class, RegexError> {
        let negated = self.eat('^');
        let mut ranges: Vec<(char, char)> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.syntax("missing ']'"));
            };
            if c == ']' {
                self.i += 1;
                break;
            }
            let lo = self.class_atom()?;
            if self.peek() == Some('-') && self.s.get(self.i + 1).is_some_and(|&n| n != ']') {
                self.i += 1;
                let hi = self.class_atom()?;
                match (lo, hi) {
                    (Atom::Node(Node::Char(a)), Atom::Node(Node::Char(b))) => {
                        if a > b {
                            return Err(self.syntax("range out of order in character class"));
                        }
                        ranges.push((a, b));
                    }
                    (lo, hi) => {
                        // Annex B: a class escape next to '-' makes the '-' literal.
                        for a in [lo, hi] {
                            add_atom(&mut ranges, a);
                        }
                        ranges.push(('-', '-'));
                    }
                }
            } else {
                add_atom(&mut ranges, lo);
            }
        }
        Ok(Class {
            ranges: normalize(ranges),
            negated,
        })
    }

    fn class_atom(&mut self) -> Result<Atom, RegexError> {
        let Some(c) = self.peek() else {
            return Err(self.syntax("missing ']'"));
        };
        self.i += 1;
        if c == '\\' {
            return self.escape(true);
        }
        Ok(Atom::Node(Node::Char(c)))
    }

    /// After a backslash. `in_class`: `\b` is backspace and `\B` an error.
    fn escape(&mut self, in_class: bool) -> Result<Atom, RegexError> {
        let Some(c) = self.peek() else {
            return Err(self.syntax("\\ at end of pattern"));
        };
        self.i += 1;
        let ch = |c: char| Ok(Atom::Node(Node::Char(c)));
        match c {
            'd' => Ok(Atom::Set(DIGIT.to_vec())),
            'D' => Ok(Atom::Set(complement(DIGIT))),
            'w' => Ok(Atom::Set(WORD.to_vec())),
            'W' => Ok(Atom::Set(complement(WORD))),
            's' => Ok(Atom::Set(SPACE.to_vec())),
            'S' => Ok(Atom::Set(complement(SPACE))),
            'b' if in_class => ch('\u{8}'),
            'b' => Ok(Atom::Node(Node::WordB)),
            'B' if !in_class => Ok(Atom::Node(Node::NotWordB)),
            'n' => ch('\n'),
            'r' => ch('\r'),
            't' => ch('\t'),
            'f' => ch('\u{c}'),
            'v' => ch('\u{b}'),
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => ch('\0'),
            '1'..='9' => Err(RegexError::Unsupported {
                feature: "backreferences",
            }),
            'k' => Err(RegexError::Unsupported {
                feature: "backreferences",
            }),
            'p' | 'P' => Err(RegexError::Unsupported {
                feature: "Unicode property escapes (\\p{..})",
            }),
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.i += 1;
                    ch(char::from(l as u8 % 32))
                }
                _ => Err(self.syntax("bad \\c escape")),
            },
            'x' => {
                let v = self.hex(2).ok_or_else(|| self.syntax("bad \\x escape"))?;
                ch(char::from_u32(v).ok_or_else(|| self.syntax("bad \\x escape"))?)
            }
            'u' => {
                let v = if self.eat('{') {
                    let start = self.i;
                    while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                        self.i += 1;
                    }
                    let digits: String = self.s[start..self.i].iter().collect();
                    if !self.eat('}') || digits.is_empty() || digits.len() > 6 {
                        return Err(self.syntax("bad \\u{} escape"));
                    }
                    u32::from_str_radix(&digits, 16).map_err(|_| self.syntax("bad \\u{} escape"))?
                } else {
                    let hi = self.hex(4).ok_or_else(|| self.syntax("bad \\u escape"))?;
                    // A surrogate pair written as two \u escapes is one code point.
                    if (0xD800..0xDC00).contains(&hi)
                        && self.s.get(self.i) == Some(&'\\')
                        && self.s.get(self.i + 1) == Some(&'u')
                    {
                        let save = self.i;
                        self.i += 2;
                        match self.hex(4) {
                            Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            }
                            _ => {
                                self.i = save;
                                hi
                            }
                        }
                    } else {
                        hi
                    }
                };
                match char::from_u32(v) {
                    Some(c) => ch(c),
                    // A lone surrogate can never occur in a Rust string: match nothing.
                    None => Ok(Atom::Set(Vec::new())),
                }
            }
            c if c.is_ascii_alphanumeric() => Err(self.syntax("unknown escape")),
            c => ch(c),
        }
    }

    fn hex(&mut self, n: usize) -> Option<u32> {
        let digits = self.s.get(self.i..self.i + n)?;
        let mut v = 0;
        for d in digits {
            v = v * 16 + d.to_digit(16)?;
        }
        self.i += n;
        Some(v)
    }
}

fn add_atom(ranges: &mut Vec<(char, char)>, atom: Atom) {
    match atom {
        Atom::Node(Node::Char(c)) => ranges.push((c, c)),
        Atom::Set(r) => ranges.extend(r),
        Atom::Node(_) => {}
    }
}

fn normalize(mut ranges: Vec<(char, char)>) -> Vec<(char, char)> {
    ranges.sort_unstable();
    let mut out: Vec<(char, char)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if (lo as u32) <= (last.1 as u32).saturating_add(1) => {
                if hi > last.1 {
                    last.1 = hi;
                }
            }
            _ => out.push((lo, hi)),
        }
    }
    out
}

struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<Class>,
}

impl Compiler {
    fn push(&mut self, inst: Inst) -> Result<usize, RegexError> {
        if self.prog.len() >= MAX_PROGRAM {
            return Err(RegexError::TooLarge);
        }
        self.prog.push(inst);
        Ok(self.prog.len() - 1)
    }

    fn patch(&mut self, at: usize, inst: Inst) {
        if let Some(slot) = self.prog.get_mut(at) {
            *slot = inst;
        }
    }

    fn emit_node(&mut self, node: &Node) -> Result<(), RegexError> {
        match node {
            Node::Empty => {}
            Node::Char(c) => {
                self.push(Inst::Char(*c))?;
            }
            Node::Class(class) => {
                self.classes.push(class.clone());
                self.push(Inst::Class(self.classes.len() - 1))?;
            }
            Node::Any => {
                self.push(Inst::Any)?;
            }
            Node::Start => {
                self.push(Inst::Start)?;
            }
            Node::End => {
                self.push(Inst::End)?;
            }
            Node::WordB => {
                self.push(Inst::WordBoundary)?;
            }
            Node::NotWordB => {
                self.push(Inst::NotWordBoundary)?;
            }
            Node::Concat(items) => {
                for item in items {
                    self.emit_node(item)?;
                }
            }
            Node::Alt(alts) => {
                let mut jumps = Vec::new();
                for (k, alt) in alts.iter().enumerate() {
                    if k + 1 < alts.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit_node(alt)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.prog.len();
                        self.patch(split, Inst::Split(split + 1, next));
                    } else {
                        self.emit_node(alt)?;
                    }
                }
                let end = self.prog.len();
                for j in jumps {
                    self.patch(j, Inst::Jmp(end));
                }
            }
            Node::Repeat { node, min, max } => {
                // A body that emits nothing (`(){4294967295}`) is emitted once, not counted out.
                for _ in 0..*min {
                    let before = self.prog.len();
                    self.emit_node(node)?;
                    if self.prog.len() == before {
                        break;
                    }
                }
                match max {
                    None => {
                        // L: split body, out; body; jmp L
                        let split = self.push(Inst::Split(0, 0))?;
                        self.emit_node(node)?;
                        self.push(Inst::Jmp(split))?;
                        let out = self.prog.len();
                        self.patch(split, Inst::Split(split + 1, out));
                    }
                    Some(max) => {
                        let optional = max.saturating_sub(*min);
                        let mut splits = Vec::new();
                        for _ in 0..optional {
                            let split = self.push(Inst::Split(0, 0))?;
                            splits.push(split);
                            self.emit_node(node)?;
                            if self.prog.len() == split + 1 {
                                break;
                            }
                        }
                        let out = self.prog.len();
                        for s in splits {
                            self.patch(s, Inst::Split(s + 1, out));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        let re = compile(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        super::super::pike::is_match(&re, text, &mut 1_000_000).expect("budget")
    }

    #[test]
    fn patterns_search_anywhere_unless_anchored_as_ecmascript_test_does() {
        for (pattern, text, want) in [
            ("abc", "xxabcxx", true),
            ("^abc", "xxabc", false),
            ("abc$", "abcxx", false),
            ("^abc$", "abc", true),
            ("", "anything", true),
            ("a|b", "b", true),
            ("^(?:ab|cd)+$", "abcdab", true),
            ("^(?<year>\\d{4})-(\\d{2})$", "2024-05", true),
            ("^a{2,3}$", "aaaa", false),
            ("^a{2,}$", "aaaa", true),
            ("^a{2}$", "aa", true),
            ("^x{,3}$", "x{,3}", true), // not a quantifier: literal braces (Annex B)
            ("^a*?b+?c??$", "aabbb", true),
            ("^[a-c]+$", "abcab", true),
            ("^[^a-c]+$", "xyz", true),
            ("^[^a-c]+$", "xaz", false),
            ("^[\\d\\-]+$", "12-3", true),
            ("^[\\w-]+$", "a_b-c", true),
            ("^[a\\-z]$", "-", true),
            ("^[-a]$", "-", true),
            ("^\\d+$", "٤٢", false), // \d is ASCII only
            ("^\\w$", "é", false),
            ("^\\s$", "\u{3000}", true),
            ("^\\S$", " ", false),
            ("^.$", "\n", false),
            ("^.$", "😀", true), // one code point
            ("^\\u00e9$", "é", true),
            ("^\\u{1F600}$", "😀", true),
            ("^\\ud83d\\ude00$", "😀", true),
            ("^\\x41$", "A", true),
            ("^\\cJ$", "\n", true),
            ("\\bfoo\\b", "a foo b", true),
            ("\\bfoo\\b", "afoob", false),
            ("\\Bfoo", "afoo", true),
            ("^[\\b]$", "\u{8}", true),
            ("^\\/\\.\\*$", "/.*", true),
            ("^$", "", true),
            ("^(a|)+$", "aaa", true),
            ("^(a*)*$", "aaab", false),
            ("^(?:){4294967295}a$", "a", true),
            ("^(?:a{0}){4294967295}$", "", true),
            ("(^)*b", "ab", true),
            ("^(?:\\b)+a", "a", true),
        ] {
            assert_eq!(matches(pattern, text), want, "{pattern:?} on {text:?}");
        }
    }

    #[test]
    fn features_outside_the_subset_are_refused_by_name_and_bad_syntax_is_an_error() {
        for (pattern, feature) in [
            ("(?=a)", "lookahead"),
            ("(?!a)", "lookahead"),
            ("(?<=a)b", "lookbehind"),
            ("(?<!a)b", "lookbehind"),
            ("(a)\\1", "backreferences"),
            ("(?<n>a)\\k<n>", "backreferences"),
            ("\\p{L}", "Unicode property escapes (\\p{..})"),
            ("(?i)a", "group modifiers or flags"),
        ] {
            assert_eq!(
                compile(pattern).err(),
                Some(RegexError::Unsupported { feature }),
                "{pattern}"
            );
        }
        for pattern in ["(", ")", "[a", "a**", "*a", "a{3,1}", "\\", "[z-a]", "\\q", "^*"] {
            assert!(
                matches!(compile(pattern), Err(RegexError::Syntax { .. })),
                "{pattern}"
            );
        }
        assert_eq!(compile(&"(".repeat(100)).err(), Some(RegexError::TooLarge));
        assert_eq!(
            compile("(((a{100}){100}){100})").err(),
            Some(RegexError::TooLarge)
        );
    }

    #[test]
    fn random_patterns_compile_or_fail_typed_and_every_match_ends() {
        // xorshift64*: deterministic, so a failure reproduces.
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        let atoms = [
            "a", "b", "|", "(", ")", "(?:", "(?=", "(?<n>", "*", "+", "?", "{", "}", "{2}", "{1,3}",
            "{9999}", "^", "$", ".", "[", "]", "[^", "-", "\\", "\\d", "\\w", "\\s", "\\b", "\\B", "\\u",
            "\\u{", "\\x4", "\\c", "\\1", "\\p{L}", "é", "😀", ",",
        ];
        let (mut compiled, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let len = 1 + next() % 10;
            let pattern: String = (0..len)
                .map(|_| atoms[(next() % atoms.len() as u64) as usize])
                .collect();
            match compile(&pattern) {
                Ok(re) => {
                    compiled += 1;
                    assert!(re.prog.len() <= MAX_PROGRAM);
                    for text in ["", "ab", "aaaaaaaaaaaaaaaaaaaaaaaab", "é😀 a-b"] {
                        // Finishes: a bool, or out of budget (never at these sizes).
                        super::super::pike::is_match(&re, text, &mut 1_000_000).expect("budget");
                    }
                }
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
            }
        }
        assert!(
            compiled > 1000 && refused > 1000,
            "{compiled} compiled, {refused} refused"
        );
    }
}
