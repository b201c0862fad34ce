//! The time cue's plan for one pass: what the Deliberative loop decided (the prior, the
//! envelope's rows, the held seats) and what cue propagation may follow beside event times.
//! Data only, shared by the loop, propagation, the pipeline and the trace.

use std::collections::HashMap;

use super::cue::Period;
use super::deliberate::CueRow;
use super::prior::{Prior, PriorRow};
use crate::refs::Ref;

/// The cue's part of a pass, decided by the loop (`deliberate::run`).
#[derive(Clone, Debug, PartialEq)]
pub struct CuePlan {
    /// The prior the answer is re-ordered by (a permutation of the answer).
    pub prior: Prior,
    /// What the prior knows per row (rows absent: unknown, weight 1).
    pub rows: HashMap<Ref, PriorRow>,
    /// The envelope's rows in cue order: the seat candidates.
    pub found: Vec<CueRow>,
    /// Held places beyond the count.
    pub seats: usize,
    /// What cue propagation may follow beside event times (sources, episode spans).
    pub context: PoolContext,
    /// The envelope fetch as held (every row with its cosine), its envelope and whether the
    /// row cap cut it: what a replay re-ranks when it changes the cue's confidence.
    pub fetched: Vec<CueRow>,
    /// The envelope the fetch was aimed at; `None` when unknown.
    pub fetch_envelope: Option<Period>,
    /// True when the row cap cut the fetch.
    pub fetch_cut: bool,
    /// False when cue propagation is not to run (a replay's `cue.propagation=off`).
    pub propagate: bool,
}

/// What propagation knows of the pool besides event times: read by the loop's envelope
/// fetch and from the answer's hydrated rows, never by a fetch of its own.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolContext {
    /// Each known row's `source.id`.
    pub sources: HashMap<Ref, String>,
    /// Episodes whose span meets the fetch envelope: the episode and its `[start, end]`.
    pub episodes: Vec<(Ref, Period)>,
    /// Declared record relations (subject, object) with an end among the fetched rows.
    pub relations: Vec<(Ref, Ref)>,
    /// True when [`super::cue_spread::RELATION_CAP`] cut the relations read.
    pub relations_cut: bool,
}
