//! The time cue's plan for one pass: what the Deliberative loop decided (the prior, the
//! envelope's rows, the held seats) and what cue propagation may follow beside event times.
//! Data only, shared by the loop, propagation, the pipeline and the trace.

use std::collections::HashMap;

use super::cue::{CueConfidence, Period};
use super::deliberate::{self, CueConfig, CueRow, LoopOutcome, Sufficiency};
use super::prior::{CuePrior, Prior, PriorRow};
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

/// One envelope fetch as the loop reads it: the rows in the fetch envelope (cut to the row
/// cap), whether the cap cut them, and what propagation may follow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fetched {
    /// The rows.
    pub rows: Vec<CueRow>,
    /// True when the row cap cut the fetch.
    pub cut: bool,
    /// Sources, episode spans and declared relations of the fetched rows.
    pub context: PoolContext,
}

/// Runs the Deliberative loop over one envelope fetch for `period` at `confidence` and
/// makes the plan the pipeline applies: the one place a plan is built, for a recall and for
/// the failure taxonomy's replays alike.
pub fn plan(
    config: &CueConfig,
    period: Period,
    confidence: CueConfidence,
    fetched: Fetched,
    sufficiency: &Sufficiency,
    elapsed_ms: impl Fn() -> f64,
) -> (CuePlan, LoopOutcome) {
    let outcome = deliberate::run(
        config,
        period,
        confidence,
        &fetched.rows,
        fetched.cut,
        sufficiency,
        elapsed_ms,
    );
    let plan = CuePlan {
        prior: Prior::cued(CuePrior {
            envelope: outcome.envelope,
            max_up: outcome.confidence.lift(),
            depth: config.depth,
            context_up: 0,
        }),
        rows: outcome.prior_rows(&fetched.rows),
        found: outcome.found.clone(),
        seats: outcome.confidence.seats(),
        context: fetched.context,
        fetched: fetched.rows,
        fetch_envelope: Some(deliberate::fetch_envelope(period, confidence)),
        fetch_cut: fetched.cut,
        propagate: true,
    };
    (plan, outcome)
}
