//! Indexing a schema before any instance is seen: every subschema's base URI, the resources
//! (`$id`), anchors (`$anchor`, `$dynamicAnchor`, draft-07 `$id: "#name"`) and every
//! `$ref`/`$dynamicRef` resolved to its target once, loading preloaded registry documents as
//! they are referenced. Keyword values are checked for shape and every regex compiled here,
//! so a schema that [`Validator::new`](super::Validator::new) accepts cannot fail later for
//! being malformed. Subschemas are identified by address: the schema is borrowed, not copied.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use super::dialect::{self, Dialect, Registry, Vocabularies};
use super::error::SchemaError;
use super::regex::{self, Regex};
use super::uri;

/// The base URI of a root schema without `$id`.
pub const DEFAULT_BASE: &str = "urn:mcp-witness:schema";

/// Identity of a subschema inside the borrowed documents.
pub fn addr(v: &Value) -> usize {
    v as *const Value as usize
}

/// Hashing for subschema addresses: one multiply, not SipHash (addresses are not chosen by
/// anyone, so there is nothing to flood; validation looks one up per subschema applied).
#[derive(Default)]
pub struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        let h = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

pub type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// Keyword groups present in a schema object (bits of [`Node::groups`]), so evaluation
/// looks up only the keywords that are there.
pub mod group {
    pub const REF: u16 = 1;
    pub const DYNAMIC_REF: u16 = 1 << 1;
    /// allOf, anyOf, oneOf, not, if.
    pub const COMBINATORS: u16 = 1 << 2;
    /// dependentSchemas, dependencies, properties, patternProperties, additionalProperties, propertyNames.
    pub const OBJECT_APPLICATORS: u16 = 1 << 3;
    /// prefixItems, items, additionalItems, contains.
    pub const ARRAY_APPLICATORS: u16 = 1 << 4;
    /// type, enum, const.
    pub const ANY_ASSERTIONS: u16 = 1 << 5;
    pub const NUMBER_ASSERTIONS: u16 = 1 << 6;
    pub const STRING_ASSERTIONS: u16 = 1 << 7;
    pub const ARRAY_ASSERTIONS: u16 = 1 << 8;
    pub const OBJECT_ASSERTIONS: u16 = 1 << 9;
    pub const UNEVALUATED: u16 = 1 << 10;

    pub fn of(o: &serde_json::Map<String, serde_json::Value>) -> u16 {
        let mut g = 0;
        for k in o.keys() {
            g |= match k.as_str() {
                "$ref" => REF,
                "$dynamicRef" => DYNAMIC_REF,
                "allOf" | "anyOf" | "oneOf" | "not" | "if" => COMBINATORS,
                "dependentSchemas"
                | "dependencies"
                | "properties"
                | "patternProperties"
                | "additionalProperties"
                | "propertyNames" => OBJECT_APPLICATORS,
                "prefixItems" | "items" | "additionalItems" | "contains" => ARRAY_APPLICATORS,
                "type" | "enum" | "const" => ANY_ASSERTIONS,
                "multipleOf" | "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => {
                    NUMBER_ASSERTIONS
                }
                "maxLength" | "minLength" | "pattern" => STRING_ASSERTIONS,
                "maxItems" | "minItems" | "uniqueItems" => ARRAY_ASSERTIONS,
                "maxProperties" | "minProperties" | "required" | "dependentRequired" => OBJECT_ASSERTIONS,
                "unevaluatedItems" | "unevaluatedProperties" => UNEVALUATED,
                _ => 0,
            };
        }
        g
    }
}

/// What evaluation needs of one indexed subschema.
#[derive(Debug, Clone, Copy)]
pub struct Node<'s> {
    /// Base URI id.
    pub base: usize,
    /// [`group`] bits.
    pub groups: u16,
    /// Target of its `$ref`.
    pub ref_target: Option<&'s Value>,
    pub dyn_ref: Option<DynRef<'s>>,
}

/// Where a `$dynamicRef` goes before the dynamic scope is consulted.
#[derive(Debug, Clone, Copy)]
pub struct DynRef<'s> {
    pub target: &'s Value,
    /// The anchor name when the initial target carries a matching `$dynamicAnchor`: then the
    /// outermost resource in the dynamic scope with that anchor wins.
    pub dynamic: Option<&'s str>,
}

/// A subschema still to index: node, base URI id, location, depth.
type Job<'s> = (&'s Value, usize, Loc, usize);

/// A location in a schema document, as an id into [`Index::locs`]: rendered as a JSON Pointer
/// only when an error names it, so indexing keeps one small entry per keyword, not one
/// path string per subschema (which a wide schema under long keys would make gigabytes).
type Loc = usize;

/// One step of a location.
enum Tok<'s> {
    /// Where a document starts: `""` for the root schema, `uri#` or `uri#pointer` otherwise.
    Doc(String),
    Key(&'s str),
    Index(usize),
}

struct Pending<'s> {
    holder: usize,
    base: usize,
    reference: &'s str,
    dynamic: bool,
    at: Loc,
}

pub struct Index<'s> {
    root: usize,
    vocab: Vocabularies,
    pub dialect: Dialect,
    pub bases: Vec<String>,
    base_ids: HashMap<String, usize>,
    /// Every indexed subschema, by address.
    pub nodes: AddrMap<Node<'s>>,
    resources: HashMap<String, &'s Value>,
    anchors: HashMap<(usize, String), &'s Value>,
    /// `$dynamicAnchor`s by (resource base id, name).
    pub dyn_anchors: HashMap<(usize, &'s str), &'s Value>,
    pub regexes: HashMap<&'s str, Regex>,
    /// Locations: (parent + 1, or 0 for none; step).
    locs: Vec<(usize, Tok<'s>)>,
    /// Instructions of all compiled regexes together.
    regex_total: usize,
    /// Whether any `unevaluated*` keyword is present (annotations are then collected in full).
    pub uses_unevaluated: bool,
    pending: Vec<Pending<'s>>,
    registry: &'s Registry,
    max_depth: usize,
}

const TYPE_NAMES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

impl<'s> Index<'s> {
    /// Index `root`, whose `$schema` selected `dialect` and `vocab`.
    pub fn build(
        root: &'s Value,
        (dialect, vocab): (Dialect, Vocabularies),
        registry: &'s Registry,
        max_depth: usize,
    ) -> Result<Self, SchemaError> {
        let mut ix = Index {
            root: addr(root),
            vocab,
            dialect,
            bases: Vec::new(),
            base_ids: HashMap::new(),
            nodes: AddrMap::default(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            dyn_anchors: HashMap::new(),
            regexes: HashMap::new(),
            regex_total: 0,
            locs: Vec::new(),
            uses_unevaluated: false,
            pending: Vec::new(),
            registry,
            max_depth,
        };
        let base = ix.intern(DEFAULT_BASE);
        ix.resources.insert(DEFAULT_BASE.to_string(), root);
        let at = ix.doc_loc(String::new());
        ix.walk(root, base, at, 0)?;
        while let Some(p) = ix.pending.pop() {
            let resolved = uri::resolve(&ix.bases[p.base], p.reference);
            let Some(target) = ix.lookup(&resolved)? else {
                return Err(SchemaError::UnresolvableRef {
                    reference: clipped(p.reference),
                    resolved: clipped(&resolved),
                    at: ix.render(p.at),
                });
            };
            if p.dynamic {
                let frag = uri::split_fragment(p.reference).1;
                let named = !frag.is_empty() && !frag.starts_with('/');
                let dynamic = (named && target.get("$dynamicAnchor").and_then(Value::as_str) == Some(frag))
                    .then_some(frag);
                if let Some(n) = ix.nodes.get_mut(&p.holder) {
                    n.dyn_ref = Some(DynRef { target, dynamic });
                }
            } else if let Some(n) = ix.nodes.get_mut(&p.holder) {
                n.ref_target = Some(target);
            }
        }
        Ok(ix)
    }

    fn intern(&mut self, base: &str) -> usize {
        if let Some(&id) = self.base_ids.get(base) {
            return id;
        }
        self.bases.push(base.to_string());
        self.base_ids.insert(base.to_string(), self.bases.len() - 1);
        self.bases.len() - 1
    }

    /// The subschema at absolute URI `abs`, indexing what it reaches; None if we hold no such.
    fn lookup(&mut self, abs: &str) -> Result<Option<&'s Value>, SchemaError> {
        let (doc_uri, frag) = uri::split_fragment(abs);
        let root = match self.resources.get(doc_uri) {
            Some(&r) => r,
            None => {
                let registry = self.registry;
                let Some(doc) = registry.get(doc_uri) else {
                    return Ok(None);
                };
                let base = self.intern(doc_uri);
                self.resources.insert(doc_uri.to_string(), doc);
                let at = self.doc_loc(format!("{doc_uri}#"));
                self.walk(doc, base, at, 0)?;
                doc
            }
        };
        if frag.is_empty() {
            return Ok(Some(root));
        }
        let Some(decoded) = uri::percent_decode(frag) else {
            return Ok(None);
        };
        if !decoded.starts_with('/') {
            let base = self.intern(doc_uri);
            return Ok(self.anchors.get(&(base, decoded)).copied());
        }
        let Some(tokens) = uri::pointer_tokens(&decoded) else {
            return Ok(None);
        };
        let mut cur = root;
        let mut base = self.nodes.get(&addr(root)).map_or(0, |n| n.base);
        for t in &tokens {
            let next = match cur {
                Value::Object(o) => o.get(t.as_str()),
                Value::Array(a) => t
                    .parse::<usize>()
                    .ok()
                    .filter(|_| t == "0" || !t.starts_with('0'))
                    .and_then(|i| a.get(i)),
                _ => None,
            };
            let Some(next) = next else {
                return Ok(None);
            };
            cur = next;
            if let Some(n) = self.nodes.get(&addr(cur)) {
                base = n.base;
            }
        }
        if !self.nodes.contains_key(&addr(cur)) {
            let at = self.doc_loc(format!("{}#{}", clipped(doc_uri), clipped(&decoded)));
            self.walk(cur, base, at, 0)?;
        }
        Ok(Some(cur))
    }

    /// Index `node` and every subschema under it (with an explicit stack: no recursion, so a
    /// deep schema cannot exhaust the thread's stack before the depth limit refuses it).
    fn doc_loc(&mut self, start: String) -> Loc {
        self.locs.push((0, Tok::Doc(start)));
        self.locs.len() - 1
    }

    fn loc(&mut self, parent: Loc, tok: Tok<'s>) -> Loc {
        self.locs.push((parent + 1, tok));
        self.locs.len() - 1
    }

    /// `at` as a JSON Pointer (long keys and long paths cut, see [`uri::push_token`]).
    fn render(&self, at: Loc) -> String {
        let mut chain = Vec::new();
        let mut cur = Some(at);
        while let Some(i) = cur {
            let Some((parent, tok)) = self.locs.get(i) else {
                break;
            };
            chain.push(tok);
            cur = parent.checked_sub(1);
        }
        let mut out = String::new();
        for tok in chain.into_iter().rev() {
            match tok {
                Tok::Doc(start) => out.push_str(start),
                Tok::Key(k) => uri::push_token(&mut out, k),
                Tok::Index(i) => uri::push_token(&mut out, &i.to_string()),
            }
        }
        out
    }

    fn walk(&mut self, node: &'s Value, base: usize, at: Loc, depth: usize) -> Result<(), SchemaError> {
        let mut stack = vec![(node, base, at, depth)];
        while let Some((node, base, at, depth)) = stack.pop() {
            self.walk_one(node, base, at, depth, &mut stack)?;
        }
        Ok(())
    }

    fn walk_one(
        &mut self,
        node: &'s Value,
        base: usize,
        at: Loc,
        depth: usize,
        stack: &mut Vec<Job<'s>>,
    ) -> Result<(), SchemaError> {
        if depth > self.max_depth {
            return Err(SchemaError::TooDeep {
                at: self.render(at),
                limit: self.max_depth,
            });
        }
        let key = addr(node);
        if self.nodes.contains_key(&key) {
            return Ok(());
        }
        let o = match node {
            Value::Bool(_) => {
                self.nodes.insert(
                    key,
                    Node {
                        base,
                        groups: 0,
                        ref_target: None,
                        dyn_ref: None,
                    },
                );
                return Ok(());
            }
            Value::Object(o) => o,
            _ => {
                return Err(SchemaError::BadKeyword {
                    at: self.render(at),
                    expected: "a schema (an object or a boolean)",
                });
            }
        };
        let d7 = self.dialect == Dialect::Draft7;
        let has_ref = o.contains_key("$ref");
        let mut base = base;
        if let Some(id) = o.get("$id")
            && !(d7 && has_ref)
        {
            let Some(id) = id.as_str() else {
                return Err(bad(self.render(at), "$id", "a URI-reference string"));
            };
            if d7 && id.starts_with('#') {
                self.anchors.insert((base, id[1..].to_string()), node);
            } else {
                let abs = uri::resolve(&self.bases[base], id);
                let (doc_uri, frag) = uri::split_fragment(&abs);
                base = self.intern(doc_uri);
                self.resources.entry(doc_uri.to_string()).or_insert(node);
                if d7 && !frag.is_empty() {
                    self.anchors.insert((base, frag.to_string()), node);
                }
            }
        }
        self.nodes.insert(
            key,
            Node {
                base,
                groups: group::of(o),
                ref_target: None,
                dyn_ref: None,
            },
        );
        if !d7 {
            for kw in ["$anchor", "$dynamicAnchor"] {
                if let Some(a) = o.get(kw) {
                    let Some(a) = a.as_str() else {
                        return Err(bad(self.render(at), kw, "a string"));
                    };
                    self.anchors.insert((base, a.to_string()), node);
                    if kw == "$dynamicAnchor" {
                        self.dyn_anchors.insert((base, a), node);
                    }
                }
            }
        }
        for (kw, dynamic) in [("$ref", false), ("$dynamicRef", true)] {
            if dynamic && d7 {
                continue;
            }
            if let Some(r) = o.get(kw) {
                let Some(reference) = r.as_str() else {
                    return Err(bad(self.render(at), kw, "a URI-reference string"));
                };
                let at = self.loc(at, Tok::Key(kw));
                self.pending.push(Pending {
                    holder: key,
                    base,
                    reference,
                    dynamic,
                    at,
                });
            }
        }
        if d7 && has_ref {
            // Draft-07: `$ref` makes every sibling keyword ignored.
            return Ok(());
        }
        if key != self.root
            && let Some(declared) = o.get("$schema")
        {
            // An embedded resource or a registry document in another dialect: not silently
            // evaluated in ours.
            let theirs = dialect::select(node, self.dialect, self.registry)?;
            if theirs != (self.dialect, self.vocab) {
                return Err(SchemaError::MixedDialects {
                    at: format!("{}/$schema", self.render(at)),
                    uri: declared.as_str().unwrap_or_default().to_string(),
                });
            }
        }
        for (k, v) in o {
            let here = self.loc(at, Tok::Key(k));
            if let Some(expected) = shape_error(k, v) {
                return Err(SchemaError::BadKeyword {
                    at: self.render(here),
                    expected,
                });
            }
            match k.as_str() {
                "additionalProperties" | "propertyNames" | "contains" | "not" | "if" | "then" | "else" => {
                    stack.push((v, base, here, depth + 1));
                }
                "additionalItems" if d7 => stack.push((v, base, here, depth + 1)),
                "unevaluatedItems" | "unevaluatedProperties" if !d7 => {
                    self.uses_unevaluated = true;
                    stack.push((v, base, here, depth + 1));
                }
                "items" => match v {
                    Value::Array(a) if d7 => self.walk_all(a, base, here, depth, stack),
                    Value::Array(_) => {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "a schema (the array form of items is draft-07's; 2020-12 uses prefixItems)",
                        });
                    }
                    _ => stack.push((v, base, here, depth + 1)),
                },
                "allOf" | "anyOf" | "oneOf" => match v {
                    Value::Array(a) if !a.is_empty() => self.walk_all(a, base, here, depth, stack),
                    _ => {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "a non-empty array of schemas",
                        });
                    }
                },
                "prefixItems" if !d7 => match v {
                    Value::Array(a) if !a.is_empty() => self.walk_all(a, base, here, depth, stack),
                    _ => {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "a non-empty array of schemas",
                        });
                    }
                },
                "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                    let Some(m) = v.as_object() else {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "an object whose values are schemas",
                        });
                    };
                    for (name, sub) in m {
                        let s = self.loc(here, Tok::Key(name));
                        if k == "patternProperties" {
                            self.compile(name, s)?;
                        }
                        stack.push((sub, base, s, depth + 1));
                    }
                }
                "dependencies" => {
                    let Some(m) = v.as_object() else {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "an object",
                        });
                    };
                    for (name, sub) in m {
                        let s = self.loc(here, Tok::Key(name));
                        match sub {
                            Value::Array(a) => {
                                if !a.iter().all(Value::is_string) {
                                    return Err(SchemaError::BadKeyword {
                                        at: self.render(s),
                                        expected: "an array of strings or a schema",
                                    });
                                }
                            }
                            _ => stack.push((sub, base, s, depth + 1)),
                        }
                    }
                }
                "pattern" => match v {
                    Value::String(p) => self.compile(p, here)?,
                    _ => {
                        return Err(SchemaError::BadKeyword {
                            at: self.render(here),
                            expected: "a regular expression string",
                        });
                    }
                },
                _ => {}
            }
        }
        Ok(())
    }

    fn walk_all(&mut self, items: &'s [Value], base: usize, at: Loc, depth: usize, stack: &mut Vec<Job<'s>>) {
        for (i, sub) in items.iter().enumerate() {
            let at = self.loc(at, Tok::Index(i));
            stack.push((sub, base, at, depth + 1));
        }
    }

    fn compile(&mut self, pattern: &'s str, at: Loc) -> Result<(), SchemaError> {
        if self.regexes.contains_key(pattern) {
            return Ok(());
        }
        let at = self.render(at);
        let refuse = |error| SchemaError::Regex {
            pattern: clipped(pattern),
            at: at.clone(),
            error,
        };
        let re = regex::compile(pattern).map_err(refuse)?;
        // Many distinct large patterns must not add up to gigabytes of programs.
        self.regex_total += re.prog.len();
        if self.regex_total > regex::MAX_TOTAL_PROGRAM {
            return Err(refuse(regex::RegexError::TooLarge));
        }
        self.regexes.insert(pattern, re);
        Ok(())
    }
}

/// What the value of assertion keyword `k` must be, if `v` is not that.
fn shape_error(k: &str, v: &Value) -> Option<&'static str> {
    let strings = |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_string));
    let (ok, expected) = match k {
        "type" => {
            let known = |t: &Value| t.as_str().is_some_and(|t| TYPE_NAMES.contains(&t));
            let ok = match v {
                Value::Array(a) => !a.is_empty() && a.iter().all(known),
                t => known(t),
            };
            (
                ok,
                "a type name (null, boolean, object, array, number, string, integer) or an array of them",
            )
        }
        "required" => (strings(v), "an array of strings"),
        "dependentRequired" => (
            v.as_object().is_some_and(|m| m.values().all(strings)),
            "an object whose values are arrays of strings",
        ),
        "enum" => (v.is_array(), "an array"),
        "multipleOf" => (v.as_f64().is_some_and(|f| f > 0.0), "a number greater than 0"),
        "maximum" | "minimum" | "exclusiveMaximum" | "exclusiveMinimum" => (v.is_number(), "a number"),
        "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties"
        | "maxContains" | "minContains" => (
            matches!(v, Value::Number(n) if super::value::is_integer(n) && n.as_f64().is_some_and(|f| f >= 0.0)),
            "a non-negative integer",
        ),
        "uniqueItems" => (v.is_boolean(), "a boolean"),
        _ => (true, ""),
    };
    (!ok).then_some(expected)
}

/// Schema text for an error message, cut at 256 bytes.
fn clipped(s: &str) -> String {
    let kept = uri::clip(s, uri::MAX_TOKEN);
    if kept.len() < s.len() {
        format!("{kept}…")
    } else {
        kept.to_string()
    }
}

fn bad(at: String, kw: &str, expected: &'static str) -> SchemaError {
    SchemaError::BadKeyword {
        at: format!("{at}/{kw}"),
        expected,
    }
}
