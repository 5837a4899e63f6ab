//! Which dialect and vocabularies apply to a schema: `$schema` of the root names a known
//! dialect (2020-12 or draft-07), or a metaschema preloaded in the [`Registry`] whose
//! `$vocabulary` turns 2020-12 vocabularies on or off. An unknown `$schema` is an error,
//! never treated as the default.

use std::collections::HashMap;

use serde_json::Value;

use super::error::SchemaError;
use super::uri;

/// A JSON Schema dialect this validator implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// Draft 2020-12: the MCP default when a schema has no `$schema` (2025-11-25 on).
    #[default]
    Draft202012,
    /// Draft-07, which earlier MCP servers commonly declare.
    Draft7,
}

impl Dialect {
    /// The dialect a well-known `$schema` URI names (with or without the empty fragment).
    pub fn from_uri(uri: &str) -> Option<Dialect> {
        match uri.strip_suffix('#').unwrap_or(uri) {
            "https://json-schema.org/draft/2020-12/schema"
            | "http://json-schema.org/draft/2020-12/schema" => Some(Dialect::Draft202012),
            "http://json-schema.org/draft-07/schema" | "https://json-schema.org/draft-07/schema" => {
                Some(Dialect::Draft7)
            }
            _ => None,
        }
    }
}

/// The 2020-12 vocabularies that hold assertions or applicators (core is always on; format
/// and content are annotations either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vocabularies {
    pub applicator: bool,
    pub unevaluated: bool,
    pub validation: bool,
}

impl Vocabularies {
    pub const ALL: Vocabularies = Vocabularies {
        applicator: true,
        unevaluated: true,
        validation: true,
    };
}

const VOCAB_2020: &str = "https://json-schema.org/draft/2020-12/vocab/";

/// Preloaded documents by URI: what `$ref` to another document, and `$schema` naming a custom
/// metaschema, resolve against. The validator never fetches anything.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    docs: HashMap<String, Value>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Preload `doc` as the document at absolute URI `uri` (its fragment, if any, is dropped).
    pub fn insert(&mut self, uri: &str, doc: Value) {
        self.docs.insert(uri::split_fragment(uri).0.to_string(), doc);
    }

    pub fn get(&self, uri: &str) -> Option<&Value> {
        self.docs.get(uri::split_fragment(uri).0)
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// The dialect and vocabularies of `schema`: from its `$schema`, else `default`.
pub fn select(
    schema: &Value,
    default: Dialect,
    registry: &Registry,
) -> Result<(Dialect, Vocabularies), SchemaError> {
    let declared = match schema.get("$schema") {
        None => return Ok((default, Vocabularies::ALL)),
        Some(Value::String(s)) if schema.is_object() => s,
        Some(_) => {
            return Err(SchemaError::BadKeyword {
                at: "/$schema".into(),
                expected: "a URI string",
            });
        }
    };
    let mut uri = declared.clone();
    // A custom metaschema may itself declare a custom metaschema: follow a few hops.
    for _ in 0..8 {
        if let Some(d) = Dialect::from_uri(&uri) {
            return Ok((d, Vocabularies::ALL));
        }
        let Some(meta) = registry.get(&uri) else {
            return Err(SchemaError::UnknownDialect {
                uri: declared.clone(),
            });
        };
        if let Some(vocab) = meta.get("$vocabulary") {
            let Some(vocab) = vocab.as_object() else {
                return Err(SchemaError::BadKeyword {
                    at: format!("{uri}#/$vocabulary"),
                    expected: "an object",
                });
            };
            let mut v = Vocabularies {
                applicator: false,
                unevaluated: false,
                validation: false,
            };
            for (name, required) in vocab {
                match name.strip_prefix(VOCAB_2020) {
                    Some("applicator") => v.applicator = true,
                    Some("unevaluated") => v.unevaluated = true,
                    Some("validation") => v.validation = true,
                    Some("core" | "meta-data" | "format-annotation" | "content") => {}
                    _ if required == &Value::Bool(true) => {
                        return Err(SchemaError::UnknownVocabulary { uri: name.clone() });
                    }
                    _ => {}
                }
            }
            return Ok((Dialect::Draft202012, v));
        }
        match meta.get("$schema").and_then(Value::as_str) {
            Some(next) => uri = next.to_string(),
            None => {
                return Err(SchemaError::UnknownDialect {
                    uri: declared.clone(),
                });
            }
        }
    }
    Err(SchemaError::UnknownDialect {
        uri: declared.clone(),
    })
}
