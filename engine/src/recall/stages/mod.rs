//! Free recall's pure stages: FTS/keyword query building, fusion, the gate and its
//! calibration, Recall Depth vs count, confidence, the preview tier and `get_contents`.
//! Nothing here touches SQLite or the index: the store runs the arms and hydrates rows.
//!
//! # Order of a pass
//! arms (store) → [`select::RecallDepth::per_arm`] → [`fusion::fuse`] → [`gate::apply`] →
//! count cut + hydration → [`shape::shape`]; [`pipeline::run`] chains them.
//! With a time cue, [`deliberate`] runs the loop over the envelope fetch and
//! [`pipeline::run_cued`] re-orders the answer by the one [`prior`] and holds the cue's seats;
//! [`cue_spread`] lets a strong hit of the answer narrow the period and name context rows.
//!
//! # Decisions that differ from CPersona
//! - Recall Depth is the server's, never `limit` (design §4); `limit` only cuts.
//! - The gate judges cosines only; rank-fusion scores are never compared to an absolute
//!   threshold, so lexical-only rows are never dropped by a cosine floor (2.5 §13.1).
//! - Confidence is reported beside a row and neither orders nor gates (2.6's
//!   `CONFIDENCE_ORDERING=fusion`, design §3), so fusion order is the answer's order.
//! - Every sort has a written total order; the same lists give the same bytes.
//!
//! Output types derive `serde::Serialize` because the server serialises them as they are.

pub mod associations_cue;
pub mod calibrate;
pub mod candidate;
pub mod confidence;
pub mod config;
pub mod contents;
pub mod cue;
pub mod cue_plan;
pub mod cue_spread;
pub mod deliberate;

pub mod excerpt;
pub mod filters;
pub mod fts_query;
pub mod fusion;
pub mod fusion_weights;
pub mod gate;
pub mod keyword;
pub mod pipeline;
pub mod prior;
pub mod propagation;
pub mod recency;
pub mod select;
pub mod shape;

pub use crate::error::RecallError;
pub use candidate::{Arm, ArmHit, ArmList, FusedCandidate, Ref, RefKind, Vote};
pub use config::RecallConfig;
pub use cue::{CueConfidence, Period, TimeCue};
pub use pipeline::{RecallOutcome, RecallRequest, RecallResponse, run, run_cued};

#[cfg(test)]
mod tests;
