//! Where the re-embedding worker stands (the worker is the `reembed` feature): its cursor per
//! record table and the last progress it counted, kept here so recall can say what share of
//! the store its vector arm covered without counting rows on every call.

use serde::Serialize;

/// Progress of re-embedding the store toward its vector target.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReembedProgress {
    /// True while rows carrying another model's vector remain.
    pub active: bool,
    /// The model the store is leaving (`None` when no model change is recorded; rows of
    /// another model may still remain, e.g. from an adoption that was reverted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_model: Option<String>,
    /// The target: recall searches, and writes produce, vectors of this model.
    pub to_model: String,
    /// The target's dimension.
    pub to_dim: usize,
    /// Memories and episodes carrying a vector (of any model).
    pub rows: u64,
    /// Of those, rows carrying the target's vector: the rows the vector arm can search.
    pub done: u64,
    /// Rows still carrying another model's vector.
    pub remaining: u64,
    /// Overflow nodes and blocks still carrying another model's vector.
    pub derived_remaining: u64,
    /// `done / rows` (1 for a store without vectors).
    pub share_covered: f64,
    /// Why the worker cannot run, when it cannot (the embedder does not produce the target).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

/// The worker's state between steps.
#[derive(Debug, Default)]
pub(crate) struct WorkerState {
    /// Per record table (memories, episodes): the last row id the current pass handled.
    pub(crate) cursors: [i64; 2],
    /// The last count, kept up to date by each step; `None` until first counted.
    pub(crate) progress: Option<ReembedProgress>,
}
