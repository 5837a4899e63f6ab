//! The envelope of one JSON-RPC message, read without building its payload: its `method` and
//! `id`, each bounded, every `id` key counted (a repeated key makes a reply unmatchable), and
//! whether it carries `result` or `error`. A message of any size costs a few hundred bytes here.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::text::cut;

/// The longest string id kept (and so matched or echoed). JSON-RPC ids are short tokens; a
/// longer one is never echoed back, so a server cannot make us queue its bytes.
pub const ID_MAX_BYTES: usize = 256;
/// A method name is kept cut to this many bytes.
const METHOD_KEEP: usize = 128;
/// `id` values kept from a message that repeats the key.
const IDS_KEEP: usize = 4;

/// One `id` value as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    /// `null`, a number, or a string of at most `ID_MAX_BYTES`.
    Value(Value),
    /// A string id longer than `ID_MAX_BYTES` (its length): never matched, never echoed.
    TooLong(usize),
    /// An id that is not a string, a number or null.
    Invalid,
}

/// A message's `method` member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// A string, cut to `METHOD_KEEP` bytes.
    Name(String),
    NotString,
}

/// What routing needs of a message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Envelope {
    pub method: Option<Method>,
    /// The first `IDS_KEEP` `id` values, in order.
    pub ids: Vec<Id>,
    /// How many `id` keys the object has (more than one is a protocol violation).
    pub id_keys: usize,
    pub has_error: bool,
}

impl Envelope {
    /// The message's id when it has exactly one (`None` without an id key).
    pub fn id(&self) -> Option<&Id> {
        self.ids.first()
    }
}

enum Key {
    Id,
    Method,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, k: &str) -> Result<Key, E> {
                Ok(match k {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "error" => Key::Error,
                    _ => Key::Other,
                })
            }
        }
        d.deserialize_identifier(V)
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Id;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an id")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id::Value(Value::Null))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Value(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Value(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                Ok(serde_json::Number::from_f64(v).map_or(Id::Invalid, |n| Id::Value(Value::Number(n))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(if v.len() <= ID_MAX_BYTES {
                    Id::Value(Value::String(v.to_string()))
                } else {
                    Id::TooLong(v.len())
                })
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Id, E> {
                Ok(Id::Invalid)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Id, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Id::Invalid)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Id, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Id::Invalid)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Method {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Method, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Method;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a method")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Method, E> {
                Ok(Method::Name(cut(v, METHOD_KEEP).to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Method, E> {
                Ok(Method::NotString)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Method, E> {
                Ok(Method::NotString)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Method, E> {
                Ok(Method::NotString)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Method, E> {
                Ok(Method::NotString)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Method, E> {
                Ok(Method::NotString)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Method, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Method::NotString)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Method, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Method::NotString)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Envelope, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Envelope;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Envelope, A::Error> {
                let mut env = Envelope::default();
                while let Some(key) = m.next_key::<Key>()? {
                    match key {
                        Key::Id => {
                            let id = m.next_value::<Id>()?;
                            env.id_keys += 1;
                            if env.ids.len() < IDS_KEEP {
                                env.ids.push(id);
                            }
                        }
                        // A repeated method: the first is kept (the message is broken anyway).
                        Key::Method if env.method.is_none() => env.method = Some(m.next_value()?),
                        Key::Error => {
                            env.has_error = true;
                            m.next_value::<IgnoredAny>()?;
                        }
                        Key::Method | Key::Other => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(env)
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(text: &str) -> Envelope {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn every_id_key_is_counted_and_the_first_values_kept() {
        let e = env(r#"{"jsonrpc":"2.0","id":1,"result":{},"\u0069d":2}"#);
        assert_eq!(e.id_keys, 2);
        assert_eq!(e.ids, [Id::Value(1.into()), Id::Value(2.into())]);
        assert_eq!(e.method, None);
    }

    #[test]
    fn a_long_string_id_is_not_kept_and_null_is_kept_apart_from_absent() {
        let long = "x".repeat(ID_MAX_BYTES + 1);
        let e = env(&format!(r#"{{"id":"{long}","method":"ping"}}"#));
        assert_eq!(e.id(), Some(&Id::TooLong(ID_MAX_BYTES + 1)));
        assert_eq!(e.method, Some(Method::Name("ping".into())));
        assert_eq!(
            env(r#"{"id":null,"error":{}}"#).id(),
            Some(&Id::Value(Value::Null))
        );
        assert!(env(r#"{"id":null,"error":{}}"#).has_error);
        assert_eq!(env(r#"{"method":"x"}"#).id(), None);
        assert_eq!(env(r#"{"id":[1],"method":7}"#).id(), Some(&Id::Invalid));
        assert_eq!(env(r#"{"id":[1],"method":7}"#).method, Some(Method::NotString));
    }
}
