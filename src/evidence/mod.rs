//! The evidence file: signed, hash-chained JSON-lines blocks, and everything that reads or
//! writes them (keys, canonical form, append, verify, repair).

pub mod append;
pub mod block;
pub mod canonical;
pub mod canonical_scan;
pub mod find;
pub mod id;
pub mod keys;
pub mod kind;
pub mod repair;
pub mod tail;
pub mod verify;
