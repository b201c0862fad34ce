//! Recall: the arms over the store and the index, the pure stages, the time cue's loop, the
//! held places, the trace and the credit, joined in one conductor. `recall` runs the window
//! pass (`pass.rs`), the propagation seat's deeper pass when the seat is on (reusing the
//! window's cue plan, so the envelope is fetched once), the held places (`seats.rs`), the
//! block excerpts (`excerpts.rs`), the trace capture when asked (`capture.rs`, last, so it
//! shows every row returned) and the credit (`credit.rs`). Every row read goes through the
//! caller's `Scope`; a row of another agent is never hydrated, served or counted.

use crate::config::EngineConfig;
use crate::error::Result;
use crate::recall::capture::Seen;
use crate::recall::pass::Mutation;
use crate::recall::read::{read_scoped, with_ranges};
use crate::recall::stages::contents::{BUDGET_CHARS, ContentsResponse, parse_requests};
use crate::scope::Scope;
use crate::store::Store;

pub mod arms;
pub(crate) mod calibration;
mod capture;
pub(crate) mod credit;
mod cue;
mod excerpts;
pub(crate) mod facts;
pub(crate) mod pass;
mod profile;
pub(crate) mod read;
pub(crate) mod seats;
pub mod stages;
#[cfg(test)]
mod tests;
pub mod types;

pub use crate::recall::arms::vector::{MAX_MEMORIES, PREFILTER_MIN_ROWS, VectorReport};
pub use calibration::CALIBRATION_SAMPLE_ROWS;
pub use profile::{ProfileReason, ProfileRow};
pub use read::{POOL_COUNT_CAP, SCORING_VERSION};
pub use stages::{
    Arm, ArmHit, ArmList, CueConfidence, FusedCandidate, Period, RecallConfig, RecallError,
    RecallOutcome, RecallRequest, RecallResponse, TimeCue, Vote, run, run_cued,
};
pub use types::{CalibrationOutcome, RecallQuery, RecallResult, RecallTimings};

/// `recall`: embeds the query, runs the vector and lexical arms in the caller's scope,
/// then depth → fusion → gate → count cut → hydration → shape, the held places, the profile
/// row where the answer leaves a place (`profile.rs`) and, when asked, the trace. An embedder failure degrades to the lexical arms with an advisory; a
/// blank query is the recency listing. The memories returned are then credited
/// (`recall_count + 1`, `credit.rs`).
pub(crate) fn recall(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
) -> Result<RecallResult> {
    let mut result = answer(store, config, q)?;
    credit::credit_recall(store, &config.recall, q, &mut result);
    Ok(result)
}

/// One recall without the credit, for callers whose rows are not what the agent is handed
/// (reconstruct's candidate pool).
pub(crate) fn answer(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
) -> Result<RecallResult> {
    answer_with(store, config, q, Mutation::None)
}

/// [`answer`] with one invariant deliberately broken (tests only pass anything but `None`).
pub(crate) fn answer_with(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
    mutation: Mutation,
) -> Result<RecallResult> {
    let mut window = pass::run(store, config, q, None, mutation)?;
    let deeper = match seats::deeper_query(config, q, &window) {
        Some(deeper_query) => {
            let reuse = window.cue.as_ref();
            Some(pass::run(store, config, &deeper_query, reuse, mutation)?)
        }
        None => None,
    };
    let held = seats::hold(store, config, q, &mut window, deeper.as_ref())?;
    if let Some(vector) = &window.query_vector {
        let cap = window.config.shape.excerpt_chars;
        excerpts::block_excerpts(
            store,
            &window.scope,
            &mut window.outcome.response.messages,
            vector,
            cap,
        )?;
    }
    let profile = store.read(|conn| {
        profile::held_profile(
            conn,
            &q.agent_id,
            window.gate_input.pool,
            window.outcome.response.messages.len(),
            q.limit,
        )
    })?;
    let fetches = window.fetches + deeper.as_ref().map_or(0, |d| d.fetches);
    if let Some(report) = window.outcome.stages.deliberation.as_mut() {
        report.fetches = fetches;
    }
    let capture = if q.trace {
        Some(Box::new(capture_trace(store, q, &window, &held)?))
    } else {
        None
    };
    Ok(RecallResult {
        response: window.outcome.response,
        advisories: window.advisories,
        vector: window.arms.vector,
        keyword_fallback: window.arms.keyword_fallback,
        lexical_capped: window.arms.lexical_capped,
        stages: q.trace.then_some(window.outcome.stages),
        timings: window.timings,
        filtered: window.filtered,
        capture,
        query_vector: window.query_vector,
        fetches,
        profile,
    })
}

/// The trace's capture of a finished recall: the window pass's inputs and its held rows.
fn capture_trace(
    store: &Store,
    q: &RecallQuery,
    window: &pass::Pass,
    held: &[stages::shape::RecallMessage],
) -> Result<types::Capture> {
    let target = store.vector_target();
    store.read(|conn| {
        let seen = Seen {
            query: q,
            config: &window.config,
            gate_input: window.gate_input,
            stages: &window.outcome.stages,
            hydrated: &window.hydrated,
            confidence: window.confidence.as_ref(),
            cue: window.cue.as_ref().and_then(|c| c.plan.clone()),
            cue_request: window.cue.as_ref().map(|c| c.request),
        };
        capture::capture(conn, &window.scope, &target, seen, held)
    })
}

/// `get_contents`: full text (or a span) of each ref, read within the caller's scope; a
/// ref outside it or absent comes back under `unresolved` (`not_found`).
pub(crate) fn get_contents(
    store: &Store,
    agent_id: &str,
    project_id: Option<&str>,
    channel: Option<&str>,
    refs: &[serde_json::Value],
) -> Result<ContentsResponse> {
    let scope = Scope::read(Some(agent_id), project_id, channel);
    let requests = parse_requests(refs)?;
    store.read(|conn| {
        crate::recall::stages::contents::get_contents(requests, BUDGET_CHARS, |r| {
            with_ranges(conn, r, read_scoped(conn, &scope, r)?)
        })
    })
}
