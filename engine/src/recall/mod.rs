//! Free recall's pure stages: FTS/keyword query building, fusion, the gate and its
//! calibration, Recall Depth vs count, confidence, the preview tier and `get_contents`.
//! Nothing here touches SQLite or the index: the store runs the arms and hydrates rows, and
//! hands the stages plain lists, so every stage is testable on fixed input.
//!
//! # Order of a pass
//! arms (store) → [`select::RecallDepth::per_arm`] → [`fusion::fuse`] → [`gate::apply`] →
//! count cut + hydration → [`shape::shape`]; [`pipeline::run`] chains them. Every sort has
//! a written total order; the same lists give the same bytes.

pub mod calibrate;
pub mod candidate;
pub mod confidence;
pub mod config;
pub mod contents;
pub mod error;
pub mod excerpt;
pub mod fts_query;
pub mod fusion;
pub mod gate;
pub mod keyword;
pub mod pipeline;
pub mod select;
pub mod shape;

pub use candidate::{Arm, ArmHit, ArmList, FusedCandidate, Ref, RefKind, Vote};
pub use config::RecallConfig;
pub use error::RecallError;
pub use pipeline::{RecallOutcome, RecallRequest, RecallResponse, run};

#[cfg(test)]
mod tests;
