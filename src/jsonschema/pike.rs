//! Running a compiled [`Regex`] over a string: a Thompson-NFA simulation (Pike VM without
//! captures). Each input char advances every live thread once, and a thread state is live at
//! most once per position, so a match costs at most `chars × program length` steps: no
//! backtracking, no catastrophic patterns. The caller passes a step budget on top.

use super::regex::{Inst, Regex};

/// The step budget ran out before the answer was known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfSteps;

/// Whether `re` matches anywhere in `text` (ECMAScript `RegExp.prototype.test`, no flags).
/// Each thread step takes one from `*budget`.
pub fn is_match(re: &Regex, text: &str, budget: &mut u64) -> Result<bool, OutOfSteps> {
    let n = re.prog.len();
    let mut clist = Threads::new(n);
    let mut nlist = Threads::new(n);
    let mut stack: Vec<usize> = Vec::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    loop {
        let cur = chars.peek().copied();
        // Unanchored search: a new thread starts at every position.
        add(re, &mut clist, &mut stack, 0, prev, cur, budget)?;
        if clist.contains_match(re) {
            return Ok(true);
        }
        let Some(c) = cur else {
            return Ok(false);
        };
        chars.next();
        let after = chars.peek().copied();
        nlist.clear();
        for k in 0..clist.len {
            let pc = clist.dense[k];
            take(budget)?;
            let step = match re.prog.get(pc) {
                Some(Inst::Char(x)) => *x == c,
                Some(Inst::Class(i)) => re.classes.get(*i).is_some_and(|cl| cl.matches(c)),
                Some(Inst::Any) => !is_line_terminator(c),
                _ => false,
            };
            if step {
                add(re, &mut nlist, &mut stack, pc + 1, Some(c), after, budget)?;
            }
        }
        std::mem::swap(&mut clist, &mut nlist);
        prev = Some(c);
    }
}

fn take(budget: &mut u64) -> Result<(), OutOfSteps> {
    if *budget == 0 {
        return Err(OutOfSteps);
    }
    *budget -= 1;
    Ok(())
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Add `pc` and everything reachable from it without consuming input (epsilon closure) to
/// `list`; `prev`/`next` are the chars around the current position, for assertions.
fn add(
    re: &Regex,
    list: &mut Threads,
    stack: &mut Vec<usize>,
    pc: usize,
    prev: Option<char>,
    next: Option<char>,
    budget: &mut u64,
) -> Result<(), OutOfSteps> {
    stack.clear();
    stack.push(pc);
    while let Some(pc) = stack.pop() {
        if pc >= re.prog.len() || list.contains(pc) {
            continue;
        }
        take(budget)?;
        list.insert(pc);
        match re.prog[pc] {
            Inst::Jmp(to) => stack.push(to),
            Inst::Split(a, b) => {
                stack.push(b);
                stack.push(a);
            }
            Inst::Start if prev.is_none() => stack.push(pc + 1),
            Inst::End if next.is_none() => stack.push(pc + 1),
            Inst::WordBoundary if is_word(prev) != is_word(next) => stack.push(pc + 1),
            Inst::NotWordBoundary if is_word(prev) == is_word(next) => stack.push(pc + 1),
            _ => {}
        }
    }
    Ok(())
}

/// A sparse set of program counters (constant-time insert, test and clear).
struct Threads {
    dense: Vec<usize>,
    sparse: Vec<usize>,
    len: usize,
}

impl Threads {
    fn new(n: usize) -> Self {
        Threads {
            dense: vec![0; n],
            sparse: vec![0; n],
            len: 0,
        }
    }
    fn contains(&self, pc: usize) -> bool {
        self.sparse
            .get(pc)
            .is_some_and(|&i| i < self.len && self.dense.get(i) == Some(&pc))
    }
    fn insert(&mut self, pc: usize) {
        if let (Some(d), Some(s)) = (self.dense.get_mut(self.len), self.sparse.get_mut(pc)) {
            *d = pc;
            *s = self.len;
            self.len += 1;
        }
    }
    fn clear(&mut self) {
        self.len = 0;
    }
    fn contains_match(&self, re: &Regex) -> bool {
        self.dense[..self.len]
            .iter()
            .any(|&pc| re.prog.get(pc) == Some(&Inst::Match))
    }
}
