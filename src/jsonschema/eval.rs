//! Applying an indexed schema to one instance: every keyword of the core, applicator,
//! unevaluated and validation vocabularies, with the annotations `unevaluated*` needs
//! (which properties and items were evaluated), the dynamic scope `$dynamicRef` needs, and
//! the bounds: a step budget, a depth limit and `$ref` cycle detection. Tentative
//! evaluations (`anyOf`, `oneOf`, `not`, `if`, `contains`) collect no errors.

use serde_json::{Map, Value};

use super::Limits;
use super::dialect::{Dialect, Vocabularies};
use super::error::{ErrorKind, Limit, Outcome, ValidationError};
use super::index::{Index, Node, addr, group};
use super::pike;
use super::uri::{MAX_TOKEN, clip, push_token};
use super::value::{cmp_numbers, equal, has_type, is_multiple_of, type_name};

use std::cmp::Ordering;

/// Why evaluation stopped early.
enum Abort {
    Steps,
    Depth,
    /// At this instance location.
    RefCycle(String),
}

/// Which properties and items of the current instance were evaluated.
#[derive(Default)]
struct Ann {
    props: Vec<bool>,
    items_prefix: usize,
    items_all: bool,
    contains: Vec<bool>,
}

fn set(bits: &mut Vec<bool>, i: usize) {
    if bits.len() <= i {
        bits.resize(i + 1, false);
    }
    bits[i] = true;
}

fn get(bits: &[bool], i: usize) -> bool {
    bits.get(i).copied().unwrap_or(false)
}

impl Ann {
    fn merge(&mut self, o: Ann) {
        for (i, b) in o.props.into_iter().enumerate() {
            if b {
                set(&mut self.props, i);
            }
        }
        for (i, b) in o.contains.into_iter().enumerate() {
            if b {
                set(&mut self.contains, i);
            }
        }
        self.items_prefix = self.items_prefix.max(o.items_prefix);
        self.items_all |= o.items_all;
    }
}

enum KSeg<'s> {
    Key(&'s str),
    Index(usize),
}

enum IPath {
    Key(String),
    Index(usize),
}

enum ISeg<'a> {
    Key(&'a str),
    Index(usize),
}

type Res = Result<(bool, Ann), Abort>;

pub struct Eval<'v, 's> {
    ix: &'v Index<'s>,
    vocab: Vocabularies,
    d7: bool,
    limits: &'v Limits,
    steps: u64,
    depth: usize,
    collect: bool,
    errors: Vec<ValidationError>,
    truncated: bool,
    ipath: Vec<IPath>,
    kpath: Vec<KSeg<'s>>,
    ref_stack: Vec<(usize, usize)>,
    scope: Vec<usize>,
}

impl<'v, 's> Eval<'v, 's> {
    pub fn new(ix: &'v Index<'s>, vocab: Vocabularies, limits: &'v Limits, collect: bool) -> Self {
        Eval {
            ix,
            vocab,
            d7: ix.dialect == Dialect::Draft7,
            limits,
            steps: limits.max_steps,
            depth: 0,
            collect,
            errors: Vec::new(),
            truncated: false,
            ipath: Vec::new(),
            kpath: Vec::new(),
            ref_stack: Vec::new(),
            scope: Vec::new(),
        }
    }

    pub fn run(mut self, schema: &'s Value, inst: &Value) -> Outcome {
        match self.eval(schema, inst) {
            Ok((true, _)) => Outcome::Valid,
            Ok((false, _)) => {
                if self.errors.is_empty() {
                    // Only when errors are not collected (or a quiet path decided): say so.
                    self.errors.push(ValidationError {
                        instance_path: String::new(),
                        keyword_path: String::new(),
                        kind: ErrorKind::Internal("invalid, details not collected"),
                    });
                }
                Outcome::Invalid {
                    errors: self.errors,
                    truncated: self.truncated,
                }
            }
            Err(Abort::Steps) => Outcome::TooComplex(Limit::Steps(self.limits.max_steps)),
            Err(Abort::Depth) => Outcome::TooComplex(Limit::Depth(self.limits.max_depth)),
            Err(Abort::RefCycle(at)) => Outcome::TooComplex(Limit::RefCycle { at }),
        }
    }

    fn tick(&mut self, n: u64) -> Result<(), Abort> {
        self.steps = self.steps.checked_sub(n).ok_or(Abort::Steps)?;
        Ok(())
    }

    fn instance_path(&self) -> String {
        let mut s = String::new();
        for t in &self.ipath {
            match t {
                IPath::Key(k) => push_token(&mut s, k),
                IPath::Index(i) => push_token(&mut s, &i.to_string()),
            }
        }
        s
    }

    fn fail(&mut self, kw: &'s str, kind: ErrorKind) {
        if !self.collect {
            return;
        }
        if self.errors.len() >= self.limits.max_errors {
            self.truncated = true;
            return;
        }
        let mut keyword_path = String::new();
        let last = (!kw.is_empty()).then_some(KSeg::Key(kw));
        for seg in self.kpath.iter().chain(last.as_ref()) {
            match seg {
                KSeg::Key(k) => push_token(&mut keyword_path, k),
                KSeg::Index(i) => push_token(&mut keyword_path, &i.to_string()),
            }
        }
        let instance_path = self.instance_path();
        self.errors.push(ValidationError {
            instance_path,
            keyword_path,
            kind,
        });
    }

    /// Apply `schema` (reached through keyword `kw`, entry `k`) to `inst` (child `i` of the
    /// current instance, or the same instance).
    fn sub(
        &mut self,
        kw: &'s str,
        k: Option<KSeg<'s>>,
        schema: &'s Value,
        inst: &Value,
        i: Option<ISeg<'_>>,
    ) -> Res {
        // Both paths are kept even when errors are not collected: a bound reached inside a
        // tentative branch still names where it happened.
        let (km, im) = (self.kpath.len(), self.ipath.len());
        self.kpath.push(KSeg::Key(kw));
        if let Some(k) = k {
            self.kpath.push(k);
        }
        match i {
            Some(ISeg::Key(s)) => self.ipath.push(IPath::Key(s.to_string())),
            Some(ISeg::Index(n)) => self.ipath.push(IPath::Index(n)),
            None => {}
        }
        let r = self.eval(schema, inst);
        self.kpath.truncate(km);
        self.ipath.truncate(im);
        r
    }

    /// `sub` with error collection off.
    fn quiet(
        &mut self,
        kw: &'s str,
        k: Option<KSeg<'s>>,
        schema: &'s Value,
        inst: &Value,
        i: Option<ISeg<'_>>,
    ) -> Res {
        let c = self.collect;
        self.collect = false;
        let r = self.sub(kw, k, schema, inst, i);
        self.collect = c;
        r
    }

    fn follow(&mut self, kw: &'s str, target: &'s Value, inst: &Value) -> Res {
        let key = (addr(target), addr(inst));
        if self.ref_stack.contains(&key) {
            return Err(Abort::RefCycle(self.instance_path()));
        }
        self.ref_stack.push(key);
        let r = self.sub(kw, None, target, inst, None);
        self.ref_stack.pop();
        r
    }

    fn is_match(&mut self, pattern: &str, text: &str) -> Result<Option<bool>, Abort> {
        let Some(re) = self.ix.regexes.get(pattern) else {
            return Ok(None);
        };
        pike::is_match(re, text, &mut self.steps)
            .map(Some)
            .map_err(|_| Abort::Steps)
    }

    fn eval(&mut self, schema: &'s Value, inst: &Value) -> Res {
        self.tick(1)?;
        if self.depth >= self.limits.max_depth {
            return Err(Abort::Depth);
        }
        let o = match schema {
            Value::Object(o) => o,
            Value::Bool(false) => {
                self.fail("", ErrorKind::FalseSchema);
                return Ok((false, Ann::default()));
            }
            _ => return Ok((true, Ann::default())),
        };
        let Some(node) = self.ix.nodes.get(&addr(schema)).copied() else {
            self.fail("", ErrorKind::Internal("subschema not indexed"));
            return Ok((false, Ann::default()));
        };
        let pushed = match node.base {
            b if self.scope.last() != Some(&b) => {
                self.scope.push(b);
                true
            }
            _ => false,
        };
        self.depth += 1;
        let r = self.eval_object(node, o, inst);
        self.depth -= 1;
        if pushed {
            self.scope.pop();
        }
        r
    }

    fn eval_object(&mut self, node: Node<'s>, o: &'s Map<String, Value>, inst: &Value) -> Res {
        let mut valid = true;
        let mut ann = Ann::default();
        macro_rules! apply {
            ($r:expr) => {{
                let (ok, a) = $r;
                if ok {
                    ann.merge(a);
                } else {
                    valid = false;
                }
            }};
        }
        macro_rules! done {
            () => {
                if !valid && !self.collect {
                    return Ok((false, ann));
                }
            };
        }
        let g = node.groups;
        if g & group::REF != 0 {
            let Some(target) = node.ref_target else {
                self.fail("$ref", ErrorKind::Internal("$ref not indexed"));
                return Ok((false, ann));
            };
            apply!(self.follow("$ref", target, inst)?);
            if self.d7 {
                return Ok((valid, ann));
            }
            done!();
        }
        if !self.d7 && g & group::DYNAMIC_REF != 0 {
            let Some(dr) = node.dyn_ref else {
                self.fail("$dynamicRef", ErrorKind::Internal("$dynamicRef not indexed"));
                return Ok((false, ann));
            };
            let mut target = dr.target;
            if let Some(name) = dr.dynamic
                && let Some(t) = self
                    .scope
                    .iter()
                    .find_map(|b| self.ix.dyn_anchors.get(&(*b, name)))
            {
                target = t;
            }
            apply!(self.follow("$dynamicRef", target, inst)?);
            done!();
        }
        if self.vocab.applicator {
            self.applicators(g, o, inst, &mut valid, &mut ann)?;
            done!();
        }
        if self.vocab.validation {
            self.assertions(g, o, inst, &mut valid)?;
            done!();
        }
        if !self.d7 && self.vocab.unevaluated && g & group::UNEVALUATED != 0 {
            self.unevaluated(o, inst, &mut valid, &mut ann)?;
        }
        Ok((valid, ann))
    }

    fn applicators(
        &mut self,
        g: u16,
        o: &'s Map<String, Value>,
        inst: &Value,
        valid: &mut bool,
        ann: &mut Ann,
    ) -> Result<(), Abort> {
        macro_rules! apply {
            ($r:expr) => {{
                let (ok, a) = $r;
                if ok {
                    ann.merge(a);
                } else {
                    *valid = false;
                }
            }};
        }
        macro_rules! done {
            () => {
                if !*valid && !self.collect {
                    return Ok(());
                }
            };
        }
        if g & group::COMBINATORS != 0 {
            let need_all = self.ix.uses_unevaluated;
            if let Some(Value::Array(subs)) = o.get("allOf") {
                for (i, s) in subs.iter().enumerate() {
                    apply!(self.sub("allOf", Some(KSeg::Index(i)), s, inst, None)?);
                    done!();
                }
            }
            if let Some(Value::Array(subs)) = o.get("anyOf") {
                let mut any = false;
                for (i, s) in subs.iter().enumerate() {
                    let (ok, a) = self.quiet("anyOf", Some(KSeg::Index(i)), s, inst, None)?;
                    if ok {
                        any = true;
                        ann.merge(a);
                        if !need_all {
                            break;
                        }
                    }
                }
                if !any {
                    *valid = false;
                    self.fail("anyOf", ErrorKind::AnyOf);
                    done!();
                }
            }
            if let Some(Value::Array(subs)) = o.get("oneOf") {
                let mut matched = 0;
                let mut one = Ann::default();
                for (i, s) in subs.iter().enumerate() {
                    let (ok, a) = self.quiet("oneOf", Some(KSeg::Index(i)), s, inst, None)?;
                    if ok {
                        matched += 1;
                        one.merge(a);
                    }
                }
                if matched == 1 {
                    ann.merge(one);
                } else {
                    *valid = false;
                    self.fail("oneOf", ErrorKind::OneOf { matched });
                    done!();
                }
            }
            if let Some(s) = o.get("not") {
                let (ok, _) = self.quiet("not", None, s, inst, None)?;
                if ok {
                    *valid = false;
                    self.fail("not", ErrorKind::Not);
                    done!();
                }
            }
            if let Some(s) = o.get("if") {
                let (ok, a) = self.quiet("if", None, s, inst, None)?;
                let branch = if ok {
                    ann.merge(a);
                    "then"
                } else {
                    "else"
                };
                if let Some((k, s)) = o.get_key_value(branch) {
                    apply!(self.sub(k, None, s, inst, None)?);
                    done!();
                }
            }
        }
        match inst {
            Value::Object(m) if g & group::OBJECT_APPLICATORS != 0 => {
                self.object_applicators(o, m, inst, valid, ann)?
            }
            Value::Array(a) if g & group::ARRAY_APPLICATORS != 0 => {
                self.array_applicators(o, a, valid, ann)?
            }
            _ => {}
        }
        Ok(())
    }

    fn object_applicators(
        &mut self,
        o: &'s Map<String, Value>,
        m: &Map<String, Value>,
        inst: &Value,
        valid: &mut bool,
        ann: &mut Ann,
    ) -> Result<(), Abort> {
        macro_rules! done {
            () => {
                if !*valid && !self.collect {
                    return Ok(());
                }
            };
        }
        // 2020-12 keeps draft-07's `dependencies` for compatibility (its metaschema declares it).
        let deps_kws: &[&str] = if self.d7 {
            &["dependencies"]
        } else {
            &["dependentSchemas", "dependencies"]
        };
        for (kw, deps) in deps_kws.iter().filter_map(|k| o.get_key_value(*k)) {
            let Value::Object(deps) = deps else { continue };
            for (name, s) in deps {
                if !m.contains_key(name) {
                    continue;
                }
                if let Value::Array(reqs) = s {
                    // `dependencies` with property names: like dependentRequired.
                    if !self.vocab.validation {
                        continue;
                    }
                    for r in reqs.iter().filter_map(Value::as_str) {
                        self.tick(1)?;
                        if !m.contains_key(r) {
                            *valid = false;
                            self.fail(
                                kw,
                                ErrorKind::DependentRequired {
                                    property: text(name),
                                    requires: text(r),
                                },
                            );
                        }
                    }
                } else {
                    let (ok, a) = self.sub(kw, Some(KSeg::Key(name)), s, inst, None)?;
                    if ok {
                        ann.merge(a);
                    } else {
                        *valid = false;
                    }
                }
                done!();
            }
        }
        let props = match o.get("properties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        let patterns = match o.get("patternProperties") {
            Some(Value::Object(p)) => Some(p),
            _ => None,
        };
        let additional = o.get("additionalProperties");
        if props.is_some() || patterns.is_some() || additional.is_some() {
            for (i, (k, v)) in m.iter().enumerate() {
                self.tick(1)?;
                let mut seen = false;
                if let Some((pk, s)) = props.and_then(|p| p.get_key_value(k)) {
                    seen = true;
                    set(&mut ann.props, i);
                    let (ok, _) = self.sub("properties", Some(KSeg::Key(pk)), s, v, Some(ISeg::Key(k)))?;
                    *valid &= ok;
                    done!();
                }
                for (pat, s) in patterns.into_iter().flatten() {
                    match self.is_match(pat, k)? {
                        Some(true) => {}
                        Some(false) => continue,
                        None => {
                            *valid = false;
                            self.fail("patternProperties", ErrorKind::Internal("pattern not compiled"));
                            continue;
                        }
                    }
                    seen = true;
                    set(&mut ann.props, i);
                    let (ok, _) = self.sub(
                        "patternProperties",
                        Some(KSeg::Key(pat)),
                        s,
                        v,
                        Some(ISeg::Key(k)),
                    )?;
                    *valid &= ok;
                    done!();
                }
                if !seen && let Some(s) = additional {
                    set(&mut ann.props, i);
                    let (ok, _) = self.sub("additionalProperties", None, s, v, Some(ISeg::Key(k)))?;
                    *valid &= ok;
                    done!();
                }
            }
        }
        if let Some(s) = o.get("propertyNames") {
            for k in m.keys() {
                let name = Value::String(k.clone());
                let (ok, _) = self.quiet("propertyNames", None, s, &name, None)?;
                if !ok {
                    *valid = false;
                    self.fail("propertyNames", ErrorKind::PropertyName { property: text(k) });
                    done!();
                }
            }
        }
        Ok(())
    }

    fn array_applicators(
        &mut self,
        o: &'s Map<String, Value>,
        a: &[Value],
        valid: &mut bool,
        ann: &mut Ann,
    ) -> Result<(), Abort> {
        macro_rules! done {
            () => {
                if !*valid && !self.collect {
                    return Ok(());
                }
            };
        }
        let (prefix_kw, prefix, rest_kw, rest) = if self.d7 {
            match o.get("items") {
                Some(Value::Array(p)) => ("items", Some(p), "additionalItems", o.get("additionalItems")),
                // Draft-07 `items` as one schema applies to every item; additionalItems is moot.
                Some(s) => ("items", None, "items", Some(s)),
                None => ("items", None, "items", None),
            }
        } else {
            (
                "prefixItems",
                o.get("prefixItems").and_then(Value::as_array),
                "items",
                o.get("items"),
            )
        };
        let mut prefix_len = 0;
        if let Some(prefix) = prefix {
            for (i, (s, x)) in prefix.iter().zip(a).enumerate() {
                let (ok, _) = self.sub(prefix_kw, Some(KSeg::Index(i)), s, x, Some(ISeg::Index(i)))?;
                *valid &= ok;
                done!();
            }
            prefix_len = prefix.len();
            ann.items_prefix = ann.items_prefix.max(prefix_len.min(a.len()));
        }
        if let Some(s) = rest {
            for (i, x) in a.iter().enumerate().skip(prefix_len) {
                let (ok, _) = self.sub(rest_kw, None, s, x, Some(ISeg::Index(i)))?;
                *valid &= ok;
                done!();
            }
            ann.items_all = true;
        }
        if let Some(s) = o.get("contains") {
            let mut matched = 0;
            for (i, x) in a.iter().enumerate() {
                let (ok, _) = self.quiet("contains", None, s, x, Some(ISeg::Index(i)))?;
                if ok {
                    matched += 1;
                    set(&mut ann.contains, i);
                }
            }
            let count = |kw: &str| {
                (!self.d7 && self.vocab.validation)
                    .then(|| o.get(kw).and_then(Value::as_f64))
                    .flatten()
            };
            let min = count("minContains").unwrap_or(1.0);
            let max = count("maxContains");
            if (matched as f64) < min {
                *valid = false;
                let kw = if o.contains_key("minContains") && !self.d7 {
                    "minContains"
                } else {
                    "contains"
                };
                self.fail(kw, ErrorKind::Contains { matched });
            } else if max.is_some_and(|m| matched as f64 > m) {
                *valid = false;
                self.fail("maxContains", ErrorKind::Contains { matched });
            }
        }
        Ok(())
    }

    fn assertions(
        &mut self,
        g: u16,
        o: &'s Map<String, Value>,
        inst: &Value,
        valid: &mut bool,
    ) -> Result<(), Abort> {
        if g & group::ANY_ASSERTIONS != 0 {
            self.any_assertions(o, inst, valid)?;
        }
        match inst {
            Value::Number(n) if g & group::NUMBER_ASSERTIONS != 0 => self.number_assertions(o, n, valid),
            Value::String(s) if g & group::STRING_ASSERTIONS != 0 => self.string_assertions(o, s, valid)?,
            Value::Array(a) if g & group::ARRAY_ASSERTIONS != 0 => self.array_assertions(o, a, valid)?,
            Value::Object(m) if g & group::OBJECT_ASSERTIONS != 0 => self.object_assertions(o, m, valid)?,
            _ => {}
        }
        Ok(())
    }

    /// type, enum, const.
    fn any_assertions(
        &mut self,
        o: &'s Map<String, Value>,
        inst: &Value,
        valid: &mut bool,
    ) -> Result<(), Abort> {
        let types: &[Value] = match o.get("type") {
            Some(Value::Array(ts)) => ts,
            Some(t) => std::slice::from_ref(t),
            None => &[],
        };
        if !types.is_empty()
            && !types
                .iter()
                .any(|t| t.as_str().and_then(|t| has_type(inst, t)) == Some(true))
        {
            let expected = types.iter().filter_map(Value::as_str).map(String::from).collect();
            self.reject(
                valid,
                "type",
                ErrorKind::Type {
                    expected,
                    found: type_name(inst),
                },
            );
        }
        if let Some(Value::Array(options)) = o.get("enum") {
            let mut found = false;
            for e in options {
                if equal(inst, e, &mut self.steps).ok_or(Abort::Steps)? {
                    found = true;
                    break;
                }
            }
            if !found {
                self.reject(valid, "enum", ErrorKind::Enum);
            }
        }
        if let Some(c) = o.get("const")
            && !equal(inst, c, &mut self.steps).ok_or(Abort::Steps)?
        {
            self.reject(valid, "const", ErrorKind::Const);
        }
        Ok(())
    }

    fn number_assertions(&mut self, o: &'s Map<String, Value>, n: &serde_json::Number, valid: &mut bool) {
        for (kw, fails) in [
            ("multipleOf", None),
            ("maximum", Some(&[Ordering::Greater][..])),
            (
                "exclusiveMaximum",
                Some(&[Ordering::Greater, Ordering::Equal][..]),
            ),
            ("minimum", Some(&[Ordering::Less][..])),
            ("exclusiveMinimum", Some(&[Ordering::Less, Ordering::Equal][..])),
        ] {
            let Some((kw, Value::Number(limit))) = o.get_key_value(kw) else {
                continue;
            };
            let failed = match fails {
                None => !is_multiple_of(n, limit),
                Some(f) => cmp_numbers(n, limit).is_none_or(|ord| f.contains(&ord)),
            };
            if failed {
                self.reject(
                    valid,
                    kw,
                    ErrorKind::Bound {
                        keyword: static_kw(kw),
                        limit: limit.clone(),
                    },
                );
            }
        }
    }

    fn string_assertions(
        &mut self,
        o: &'s Map<String, Value>,
        s: &str,
        valid: &mut bool,
    ) -> Result<(), Abort> {
        let has_len = o.contains_key("maxLength") || o.contains_key("minLength");
        let len = if has_len {
            self.tick(s.len() as u64 / 64)?;
            s.chars().count() as f64
        } else {
            0.0
        };
        self.counts(o, len, &["maxLength", "minLength"], valid);
        if let Some((kw, Value::String(p))) = o.get_key_value("pattern") {
            match self.is_match(p, s)? {
                Some(true) => {}
                Some(false) => self.reject(valid, kw, ErrorKind::Pattern { pattern: text(p) }),
                None => self.reject(valid, kw, ErrorKind::Internal("pattern not compiled")),
            }
        }
        Ok(())
    }

    fn array_assertions(
        &mut self,
        o: &'s Map<String, Value>,
        a: &[Value],
        valid: &mut bool,
    ) -> Result<(), Abort> {
        self.counts(o, a.len() as f64, &["maxItems", "minItems"], valid);
        if o.get("uniqueItems") == Some(&Value::Bool(true)) {
            'outer: for i in 0..a.len() {
                for j in i + 1..a.len() {
                    if equal(&a[i], &a[j], &mut self.steps).ok_or(Abort::Steps)? {
                        self.reject(
                            valid,
                            "uniqueItems",
                            ErrorKind::UniqueItems { first: i, second: j },
                        );
                        break 'outer;
                    }
                }
            }
        }
        Ok(())
    }

    fn object_assertions(
        &mut self,
        o: &'s Map<String, Value>,
        m: &Map<String, Value>,
        valid: &mut bool,
    ) -> Result<(), Abort> {
        self.counts(o, m.len() as f64, &["maxProperties", "minProperties"], valid);
        if let Some(Value::Array(req)) = o.get("required") {
            for r in req.iter().filter_map(Value::as_str) {
                self.tick(1)?;
                if !m.contains_key(r) {
                    self.reject(valid, "required", ErrorKind::Required { property: text(r) });
                }
            }
        }
        if !self.d7
            && let Some(Value::Object(deps)) = o.get("dependentRequired")
        {
            for (p, reqs) in deps {
                if !m.contains_key(p) {
                    continue;
                }
                for r in reqs.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    self.tick(1)?;
                    if !m.contains_key(r) {
                        self.reject(
                            valid,
                            "dependentRequired",
                            ErrorKind::DependentRequired {
                                property: text(p),
                                requires: text(r),
                            },
                        );
                    }
                }
            }
        }
        Ok(())
    }

    fn reject(&mut self, valid: &mut bool, kw: &'s str, kind: ErrorKind) {
        *valid = false;
        self.fail(kw, kind);
    }

    /// `max*`/`min*` of a length or count: `kws` is `[max, min]`.
    fn counts(&mut self, o: &'s Map<String, Value>, n: f64, kws: &[&'static str; 2], valid: &mut bool) {
        for (k, kw) in kws.iter().enumerate() {
            let Some(Value::Number(limit)) = o.get(*kw) else {
                continue;
            };
            let Some(l) = limit.as_f64() else { continue };
            if (k == 0 && n > l) || (k == 1 && n < l) {
                *valid = false;
                self.fail(
                    kw,
                    ErrorKind::Bound {
                        keyword: kw,
                        limit: limit.clone(),
                    },
                );
            }
        }
    }

    fn unevaluated(
        &mut self,
        o: &'s Map<String, Value>,
        inst: &Value,
        valid: &mut bool,
        ann: &mut Ann,
    ) -> Result<(), Abort> {
        match inst {
            Value::Object(m) => {
                if let Some(s) = o.get("unevaluatedProperties") {
                    for (i, (k, v)) in m.iter().enumerate() {
                        if get(&ann.props, i) {
                            continue;
                        }
                        let (ok, _) = self.sub("unevaluatedProperties", None, s, v, Some(ISeg::Key(k)))?;
                        *valid &= ok;
                        if !*valid && !self.collect {
                            return Ok(());
                        }
                    }
                    ann.props = vec![true; m.len()];
                }
            }
            Value::Array(a) => {
                if let Some(s) = o.get("unevaluatedItems")
                    && !ann.items_all
                {
                    for (i, x) in a.iter().enumerate().skip(ann.items_prefix) {
                        if get(&ann.contains, i) {
                            continue;
                        }
                        let (ok, _) = self.sub("unevaluatedItems", None, s, x, Some(ISeg::Index(i)))?;
                        *valid &= ok;
                        if !*valid && !self.collect {
                            return Ok(());
                        }
                    }
                    ann.items_all = true;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Schema or instance text for an error message, cut at [`MAX_TOKEN`] bytes.
fn text(s: &str) -> String {
    let kept = clip(s, MAX_TOKEN);
    if kept.len() < s.len() {
        format!("{kept}…")
    } else {
        kept.to_string()
    }
}

fn static_kw(kw: &str) -> &'static str {
    match kw {
        "multipleOf" => "multipleOf",
        "maximum" => "maximum",
        "exclusiveMaximum" => "exclusiveMaximum",
        "minimum" => "minimum",
        _ => "exclusiveMinimum",
    }
}
