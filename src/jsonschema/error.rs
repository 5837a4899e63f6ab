//! What validation reports: the outcome of one instance ([`Outcome`]), each failed assertion
//! ([`ValidationError`], with instance and keyword paths as JSON Pointers), and why a schema
//! cannot be used at all ([`SchemaError`]).

use std::fmt;

use serde_json::Number;

use super::regex::RegexError;
use crate::inert::inert;

/// The result of validating one instance.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Valid,
    /// At least one assertion failed. `errors` holds at most `Limits::max_errors` of them;
    /// `truncated` says more were found. Never empty.
    Invalid {
        errors: Vec<ValidationError>,
        truncated: bool,
    },
    /// Evaluation stopped at a bound before it had an answer: neither valid nor invalid.
    TooComplex(Limit),
}

impl Outcome {
    pub fn is_valid(&self) -> bool {
        matches!(self, Outcome::Valid)
    }
}

/// Which bound stopped an evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// More than this many evaluation steps (schema applications, regex steps, compared nodes).
    Steps(u64),
    /// Subschemas applied more than this deep (a `$ref` recursion following a deep instance).
    Depth(usize),
    /// A `$ref` chain came back to the same schema for the same instance: it would never end.
    /// `at` is the instance location.
    RefCycle { at: String },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Steps(n) => write!(
                f,
                "schema too complex for this instance: over {n} evaluation steps"
            ),
            Limit::Depth(n) => write!(f, "schema applied over {n} levels deep"),
            Limit::RefCycle { at } => write!(f, "$ref cycle at instance location '{}' never ends", inert(at)),
        }
    }
}

/// One failed assertion.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationError {
    /// JSON Pointer to the failing part of the instance (`""` is the whole instance).
    pub instance_path: String,
    /// JSON Pointer of the keyword along the evaluation path, through `$ref`s
    /// (e.g. `/properties/a/$ref/type`).
    pub keyword_path: String,
    pub kind: ErrorKind,
}

/// What failed. Strings in it may come from the instance or the schema: print them with
/// the [`ValidationError`] `Display`, which makes them inert.
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// The schema `false` accepts nothing.
    FalseSchema,
    Type {
        expected: Vec<String>,
        found: &'static str,
    },
    Enum,
    Const,
    /// `minimum`, `maximum`, `exclusive*`, `multipleOf`, `min*`/`max*` counts and lengths.
    Bound {
        keyword: &'static str,
        limit: Number,
    },
    Pattern {
        pattern: String,
    },
    Required {
        property: String,
    },
    DependentRequired {
        property: String,
        requires: String,
    },
    UniqueItems {
        first: usize,
        second: usize,
    },
    /// No item matches `contains` (or fewer than `minContains`, more than `maxContains`).
    Contains {
        matched: usize,
    },
    AnyOf,
    OneOf {
        matched: usize,
    },
    Not,
    PropertyName {
        property: String,
    },
    /// An evaluation detail the schema index lacks (cannot happen for a schema `new` accepted).
    Internal(&'static str),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::FalseSchema => write!(f, "no value is allowed here (schema false)"),
            ErrorKind::Type { expected, found } => {
                write!(f, "expected {}, found {found}", expected.join(" or "))
            }
            ErrorKind::Enum => write!(f, "not one of the enum values"),
            ErrorKind::Const => write!(f, "not the const value"),
            ErrorKind::Bound { keyword, limit } => write!(f, "fails {keyword} {limit}"),
            ErrorKind::Pattern { pattern } => write!(f, "does not match pattern {pattern:?}"),
            ErrorKind::Required { property } => write!(f, "required property {property:?} is missing"),
            ErrorKind::DependentRequired { property, requires } => {
                write!(f, "property {property:?} requires property {requires:?}")
            }
            ErrorKind::UniqueItems { first, second } => {
                write!(f, "items {first} and {second} are equal (uniqueItems)")
            }
            ErrorKind::Contains { matched } => {
                write!(f, "{matched} items match contains, out of the allowed range")
            }
            ErrorKind::AnyOf => write!(f, "matches none of the anyOf schemas"),
            ErrorKind::OneOf { matched } => {
                write!(f, "matches {matched} of the oneOf schemas, not exactly one")
            }
            ErrorKind::Not => write!(f, "matches the schema under not"),
            ErrorKind::PropertyName { property } => {
                write!(f, "property name {property:?} fails propertyNames")
            }
            ErrorKind::Internal(what) => write!(f, "validator internal error: {what}"),
        }
    }
}

impl fmt::Display for ValidationError {
    /// `<instance path>: <message> (at <keyword path>)`, made inert (see [`crate::inert`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{}: {} (at {})", self.instance_path, self.kind, self.keyword_path);
        f.write_str(&inert(&text))
    }
}

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaError {
    /// `$schema` names a dialect this validator does not know and the registry lacks.
    UnknownDialect { uri: String },
    /// An embedded resource or a referenced document declares a `$schema` other than the
    /// root's: one validator evaluates one dialect.
    MixedDialects { at: String, uri: String },
    /// A metaschema requires (`$vocabulary: {uri: true}`) a vocabulary we do not implement.
    UnknownVocabulary { uri: String },
    /// A `$ref`/`$dynamicRef` that resolves to nothing we hold (never fetched).
    UnresolvableRef {
        reference: String,
        resolved: String,
        at: String,
    },
    /// A `pattern` or `patternProperties` key that does not compile.
    Regex {
        pattern: String,
        at: String,
        error: RegexError,
    },
    /// A keyword whose value has the wrong shape (e.g. `required` that is not an array of strings).
    BadKeyword { at: String, expected: &'static str },
    /// The schema nests deeper than `Limits::max_depth`.
    TooDeep { at: String, limit: usize },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            SchemaError::UnknownDialect { uri } => format!(
                "unknown $schema {uri:?}: use https://json-schema.org/draft/2020-12/schema or http://json-schema.org/draft-07/schema#, or omit $schema for 2020-12"
            ),
            SchemaError::MixedDialects { at, uri } => format!(
                "$schema {uri:?} at {at} differs from the root's dialect; one schema must use one dialect (2020-12 or draft-07)"
            ),
            SchemaError::UnknownVocabulary { uri } => {
                format!("the metaschema requires vocabulary {uri:?}, which this validator does not implement")
            }
            SchemaError::UnresolvableRef {
                reference,
                resolved,
                at,
            } => format!(
                "$ref {reference:?} at {at} resolves to {resolved:?}, which is not in the schema (remote documents are never fetched: bundle them under $defs)"
            ),
            SchemaError::Regex { pattern, at, error } => format!("pattern {pattern:?} at {at}: {error}"),
            SchemaError::BadKeyword { at, expected } => format!("keyword at {at} must be {expected}"),
            SchemaError::TooDeep { at, limit } => format!("schema nests over {limit} levels deep at {at}"),
        };
        f.write_str(&inert(&text))
    }
}

impl std::error::Error for SchemaError {}
