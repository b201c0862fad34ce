//! The scale ladder's library: the seeded synthetic corpus shared with the benches, and (to
//! come) the report printer. It must never read an unseeded RNG or the environment.
#![forbid(unsafe_code)]

pub mod corpus;

pub use corpus::{Corpus, CorpusConfig, CorpusRow};
