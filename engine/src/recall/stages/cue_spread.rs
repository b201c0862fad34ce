//! Cue propagation (design §1, "spreading activation"): what one strong hit of the answer
//! teaches the loop's next re-weighting pass. Its timestamp narrows the cue's period around
//! it, and the rows sharing its source (`source.id`) or its episode (an episode whose span
//! holds the hit), or joined to it by a declared record relation (`declare_associations`,
//! mem/ep subject → object, either direction, read in the caller's scope by the envelope
//! fetch, at most [`RELATION_CAP`]) get a bounded context move.
//!
//! A **strong hit** is the top row of the gated answer (the first fused candidate the gate
//! passed on its own, never a fallback) whose event time lies in the loop's final envelope
//! and whose cosine leads every other passed row's cosine by at least
//! [`SEPARATION`](super::deliberate::SEPARATION). The **narrowed period** is centred on the
//! hit, half the envelope's length but never shorter than [`NARROW_FLOOR_MS`], shifted to lie
//! wholly inside the envelope (never outside the period the caller's cue widened to).
//!
//! Everything here works on the pool the recall already holds (the arms' rows and the
//! envelope fetch): it must never fetch, never widen isolation, and never admit or drop a
//! row. It only returns a revised [`CuePlan`] whose prior re-orders the same answer and whose
//! seat candidates are the same rows, the narrowed period's first.

use serde::{Deserialize, Serialize};

use super::cue::{DAY_MS, Period, PeriodText};
use super::cue_plan::{CuePlan, PoolContext};
use super::deliberate::SEPARATION;
use super::gate::GateReport;
use crate::refs::Ref;

/// The narrowed period is never shorter than one day.
pub const NARROW_FLOOR_MS: i64 = DAY_MS;
/// Places a context-cued row may move up, beside the cue's own lift.
pub const CONTEXT_UP: usize = 1;
/// Rows given a context move, at most.
pub const CONTEXT_CAP: usize = 10;
/// Declared record relations the envelope fetch reads for propagation, at most (a cut is
/// reported in the trace's `cue.relations_cut`).
pub const RELATION_CAP: usize = 1_000;

/// Why a row got a context move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContextBy {
    /// It shares the strong hit's `source.id`.
    Source,
    /// It is, or lies inside, an episode whose span holds the strong hit.
    Episode,
    /// A declared relation joins it to the strong hit (either direction).
    Relation,
}

/// One context cue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextCue {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "crate::refs::ref_serde")]
    pub r#ref: Ref,
    /// What it shares with the strong hit.
    pub by: ContextBy,
}

/// What propagation did, for the response's `time_cue` block and the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Propagated {
    /// The strong hit.
    #[schemars(with = "String")]
    #[serde(with = "crate::refs::ref_serde")]
    pub from: Ref,
    /// Its cosine lead over the next passed row (4 decimals).
    pub separation: f64,
    /// The period the next pass used (inside the loop's envelope).
    pub period: PeriodText,
    /// False when the envelope was already no longer than the floor (period unchanged).
    pub narrowed: bool,
    /// Rows given a context move (at most [`CONTEXT_CAP`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextCue>,
}

/// The strong hit of a gated answer: `(ref, event time, cosine lead)`.
pub fn strong_hit(
    gate: &GateReport,
    envelope: Period,
    at_ms: impl Fn(Ref) -> Option<i64>,
) -> Option<(Ref, i64, f64)> {
    if gate.gate_fallback {
        return None;
    }
    let mut passed = gate.decisions.iter().filter(|d| d.passed);
    let top = passed.next()?;
    let cosine = top.cosine?;
    let next = passed.filter_map(|d| d.cosine).reduce(f64::max)?;
    let lead = cosine - next;
    let at = at_ms(top.r#ref)?;
    (lead >= SEPARATION && envelope.contains(at)).then_some((top.r#ref, at, lead))
}

/// The period narrowed around `at` inside `envelope` (see the module doc).
pub fn narrow(envelope: Period, at: i64) -> Period {
    let len = envelope.end_ms - envelope.start_ms;
    let want = (len / 2).max(NARROW_FLOOR_MS);
    if want >= len {
        return envelope;
    }
    let start = (at - want / 2).clamp(envelope.start_ms, envelope.end_ms - want);
    Period {
        start_ms: start,
        end_ms: start + want,
    }
}

/// The context cues of a strong hit among `candidates` (answer then envelope rows, in order).
pub fn context(
    hit: Ref,
    at: i64,
    pool: &PoolContext,
    candidates: &[Ref],
    at_ms: impl Fn(Ref) -> Option<i64>,
) -> Vec<ContextCue> {
    let source = pool.sources.get(&hit);
    let episodes: Vec<&(Ref, Period)> = pool
        .episodes
        .iter()
        .filter(|(_, span)| span.start_ms <= at && at <= span.end_ms)
        .collect();
    let related: Vec<Ref> = pool
        .relations
        .iter()
        .filter_map(|&(subject, object)| {
            if subject == hit {
                Some(object)
            } else if object == hit {
                Some(subject)
            } else {
                None
            }
        })
        .collect();
    let mut out: Vec<ContextCue> = Vec::new();
    for &r in candidates {
        if out.len() >= CONTEXT_CAP {
            break;
        }
        if r == hit || out.iter().any(|c| c.r#ref == r) {
            continue;
        }
        let by_source = source.is_some() && pool.sources.get(&r) == source;
        let by_episode = episodes.iter().any(|(ep, span)| {
            *ep == r || at_ms(r).is_some_and(|t| span.start_ms <= t && t <= span.end_ms)
        });
        let by = if by_source {
            ContextBy::Source
        } else if by_episode {
            ContextBy::Episode
        } else if related.contains(&r) {
            ContextBy::Relation
        } else {
            continue;
        };
        out.push(ContextCue { r#ref: r, by });
    }
    out
}

/// The plan the next re-weighting pass uses, when the answer holds a strong hit: the cue's
/// envelope narrowed around it, cue ranks recounted inside the narrowed period (cue order
/// kept), context rows flagged, and the seat candidates re-ordered narrowed-period first
/// (the same rows). `answer` is the gated answer best first with each row's `source.id`.
pub fn propagate(
    plan: &CuePlan,
    gate: &GateReport,
    answer: &[(Ref, Option<String>)],
) -> Option<(CuePlan, Propagated)> {
    let cue = plan.prior.cue?;
    let at_ms = |r: Ref| plan.rows.get(&r).and_then(|p| p.at_ms);
    let (hit, at, lead) = strong_hit(gate, cue.envelope, at_ms)?;
    let period = narrow(cue.envelope, at);
    let mut pool = plan.context.clone();
    for (r, source) in answer {
        if let Some(source) = source {
            pool.sources.entry(*r).or_insert_with(|| source.clone());
        }
    }
    let candidates: Vec<Ref> = answer
        .iter()
        .map(|(r, _)| *r)
        .chain(plan.found.iter().map(|row| row.r#ref))
        .collect();
    let context = context(hit, at, &pool, &candidates, at_ms);

    let mut revised = plan.clone();
    let (inside, outside): (Vec<_>, Vec<_>) = plan
        .found
        .iter()
        .copied()
        .partition(|row| period.contains(row.at_ms));
    for row in revised.rows.values_mut() {
        row.cue_rank = None;
    }
    for (rank, row) in inside.iter().enumerate() {
        revised.rows.entry(row.r#ref).or_default().cue_rank = Some(rank);
    }
    for cue in &context {
        revised.rows.entry(cue.r#ref).or_default().context = true;
    }
    revised.found = inside.into_iter().chain(outside).collect();
    if let Some(prior_cue) = revised.prior.cue.as_mut() {
        prior_cue.envelope = period;
        prior_cue.context_up = CONTEXT_UP;
    }
    let report = Propagated {
        from: hit,
        separation: (lead * 10_000.0).round() / 10_000.0,
        period: period.text(),
        narrowed: period != cue.envelope,
        context,
    };
    Some((revised, report))
}
