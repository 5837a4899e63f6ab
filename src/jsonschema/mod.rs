//! A JSON Schema validator of our own (no crate: an audit tool keeps its trusted code small),
//! for what MCP servers declare: tool `inputSchema`/`outputSchema` and the values checked
//! against them.
//!
//! ```
//! use mcp_witness::jsonschema::{Dialect, Outcome, Registry, Validator};
//! use serde_json::json;
//!
//! let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
//! let registry = Registry::new();
//! let v = Validator::new(&schema, Dialect::default(), &registry).unwrap();
//! assert_eq!(v.validate(&json!({"n": 1})), Outcome::Valid);
//! let Outcome::Invalid { errors, .. } = v.validate(&json!({"n": "1"})) else { panic!() };
//! assert_eq!(errors[0].instance_path, "/n");
//! assert_eq!(errors[0].keyword_path, "/properties/n/type");
//! ```
//!
//! **Covers**: dialects 2020-12 (the MCP default when `$schema` is absent) and draft-07, chosen
//! by the root `$schema`; a `$schema` naming a metaschema preloaded in the [`Registry`] is
//! honoured through its `$vocabulary` (applicator, unevaluated and validation can be turned
//! off; an unknown *required* vocabulary is refused). Every keyword of the core, applicator,
//! unevaluated and validation vocabularies: `$ref`, `$dynamicRef`/`$dynamicAnchor`, `$anchor`,
//! `$id` (embedded resources, draft-07 `#name` ids, draft-07 `$ref` hiding its siblings),
//! `$defs`/`definitions`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `dependentSchemas`/`dependencies`, `prefixItems`, `items` (both forms), `additionalItems`,
//! `contains`/`minContains`/`maxContains`, `properties`, `patternProperties`,
//! `additionalProperties`, `propertyNames`, `unevaluatedItems`, `unevaluatedProperties`,
//! `type`, `enum`, `const`, numeric bounds, `multipleOf`, lengths (in code points), `pattern`,
//! item and property counts, `uniqueItems`, `required`, `dependentRequired`.
//!
//! **Measured**: against the official JSON-Schema-Test-Suite (the copy in the `jsonschema`
//! 4.26.0 sdist, `tests/json_schema_suite.rs`), every required test case passes:
//! draft 2020-12 1257/1257, draft-07 913/913 (with the suite's `remotes/` and the two
//! metaschemas preloaded in the registry, as the suite intends).
//!
//! **Does not**: fetch anything (`$ref` to a document not in the registry is
//! [`SchemaError::UnresolvableRef`] when the validator is built); assert `format` (an
//! annotation in both dialects, as their specifications default; a metaschema *requiring* the
//! format-assertion vocabulary is refused) or `content*`; implement draft 2019-09, draft-06 or
//! older (`$schema` naming them is [`SchemaError::UnknownDialect`]); mix dialects (an embedded
//! resource or referenced document whose `$schema` differs from the root's is
//! [`SchemaError::MixedDialects`]). Regexes are the ECMAScript subset `regex.rs` documents:
//! backreferences, lookaround, `\p{..}` and inline flags are refused as [`SchemaError::Regex`],
//! never approximated. Unknown keywords are ignored, as both specifications require.
//! Optional suite files (not asserted): ecmascript-regex 60/74 (the rest is `\p{..}`), and
//! format and content assertion and cross-draft references fail as said above; bignum,
//! float-overflow, id, anchor, dynamicRef, unknownKeyword, refOfUnknownKeyword, no-schema,
//! non-bmp-regex and dependencies-compatibility pass.
//!
//! **Bounded**: the schema is indexed once ([`Validator::new`]) and its keyword values checked
//! for shape, so a malformed schema is a typed [`SchemaError`] up front. Validation takes at
//! most [`Limits::max_steps`] steps (schema applications, regex VM steps, compared JSON
//! nodes), applies subschemas at most [`Limits::max_depth`] deep, stops at a `$ref` that
//! comes back to the same schema for the same instance, and returns at most
//! [`Limits::max_errors`] errors: a bound reached is [`Outcome::TooComplex`], never a hang or
//! a panic. Regex matching is a Pike VM: linear in the input, no backtracking.

mod dialect;
mod error;
mod eval;
mod index;
mod pike;
mod regex;
mod uri;
mod value;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use dialect::{Dialect, Registry, Vocabularies};
pub use error::{ErrorKind, Limit, Outcome, SchemaError, ValidationError};
pub use regex::RegexError;

/// The bounds of one validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of subschema applications (and of the schema itself).
    pub max_depth: usize,
    /// Evaluation steps one `validate` may take.
    pub max_steps: u64,
    /// Errors kept in an [`Outcome::Invalid`].
    pub max_errors: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 256,
            max_steps: 1_000_000,
            max_errors: 32,
        }
    }
}

/// A schema indexed and ready to validate instances. Borrows the schema and the registry.
pub struct Validator<'s> {
    root: &'s Value,
    index: index::Index<'s>,
    vocab: Vocabularies,
    limits: Limits,
}

impl<'s> Validator<'s> {
    /// Index `schema` in its dialect (from `$schema`, else `default`), resolving every `$ref`
    /// against the schema itself and the documents preloaded in `registry`.
    pub fn new(schema: &'s Value, default: Dialect, registry: &'s Registry) -> Result<Self, SchemaError> {
        Self::with_limits(schema, default, registry, Limits::default())
    }

    pub fn with_limits(
        schema: &'s Value,
        default: Dialect,
        registry: &'s Registry,
        limits: Limits,
    ) -> Result<Self, SchemaError> {
        let (dialect, vocab) = dialect::select(schema, default, registry)?;
        let index = index::Index::build(schema, (dialect, vocab), registry, limits.max_depth)?;
        Ok(Validator {
            root: schema,
            index,
            vocab,
            limits,
        })
    }

    /// The dialect the schema is evaluated in.
    pub fn dialect(&self) -> Dialect {
        self.index.dialect
    }

    /// Validate `instance`, collecting up to `max_errors` errors.
    pub fn validate(&self, instance: &Value) -> Outcome {
        eval::Eval::new(&self.index, self.vocab, &self.limits, true).run(self.root, instance)
    }

    /// Valid or not, without error details (stops at the first failure); None if a bound
    /// was reached first.
    pub fn is_valid(&self, instance: &Value) -> Option<bool> {
        match eval::Eval::new(&self.index, self.vocab, &self.limits, false).run(self.root, instance) {
            Outcome::Valid => Some(true),
            Outcome::Invalid { .. } => Some(false),
            Outcome::TooComplex(_) => None,
        }
    }
}
