//! The scale ladder's library: the seeded synthetic corpus shared with the benches, and the
//! ladder's report (table, JSON, CSV, SVG). It must never read an unseeded RNG or the
//! environment.
#![forbid(unsafe_code)]

pub mod corpus;
pub mod lookup;
pub mod quality;
pub mod report;

pub use corpus::{Corpus, CorpusConfig, CorpusRow};
pub use lookup::LookupEmbedder;
pub use report::{Header, Pct, Rung};
