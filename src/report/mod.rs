//! `mcp-witness report`: an auditor's view of one evidence file. `model` verifies the file
//! (`evidence::verify`) and reads it once more, streaming, into a bounded summary per target
//! (verdict timeline, surface changes from each kind's diff, teardown and timing series);
//! `html` (with `svg`, the charts it draws itself), `markdown` and `text` render that summary.
//! Every string taken from the file is made inert (`crate::inert`) and escaped for its format.

pub mod html;
pub mod markdown;
pub mod model;
pub mod svg;
pub mod text;

pub use model::{Report, Status, collect};
