//! The recall loop's failure codes (design §8), for a missed ref of a recall that had a time
//! cue. Each is assigned by replaying the saved trace with one thing about the cue changed
//! ([`crate::trace::replay`] with a changed or replaced cue plan) and asking whether the expected ref
//! comes back; the rules, tried in this order (the first that holds wins):
//!
//! 1. `PRIOR_IGNORED`: the cue was present but not applied (the response's `time_cue.ignored`
//!    is `recent_only`: its period starts within the last 24 h, which free recall already
//!    favours), and the replay that applies it (its period at its confidence, the envelope
//!    rows re-fetched) returns the ref.
//! 2. `WINDOW_TOO_NARROW` / `WIDENING_INSUFFICIENT` / `WINDOW_TOO_WIDE` /
//!    `WIDENING_PREMATURE`: a replay with another confidence (`cue.confidence=`) returns it:
//!    a wider one gives `WIDENING_INSUFFICIENT` when the loop had already revised (widened
//!    once), else `WINDOW_TOO_NARROW`; a narrower one `WIDENING_PREMATURE` when the loop
//!    revised, else `WINDOW_TOO_WIDE`.
//! 3. `PRIOR_DOMINANCE`: the cue acted and a replay with it off or weakened returns the ref:
//!    `cue=off`, then `cue.propagation=off` (no strong hit narrowing the period). Under the
//!    shipped policy `cue=off` can never return a missed ref: the cue re-orders the counted
//!    answer and appends held seats, so the answer without it is a subset of the answer with
//!    it (`tests/it/loop_codes.rs` checks this on every row of a corpus). Propagation can:
//!    it puts the narrowed period's rows first among the seat candidates, so a row of the
//!    envelope outside the narrowed period can lose its seat. The recency prior is not tried:
//!    it is a bounded move after the count cut, a permutation of the answer, so it cannot
//!    remove a row (`tests/it/recency.rs`).
//! 4. `INTENT_NORMALIZATION_ERROR`: the expected row's time ([`RowFacts::at_ms`]) lies
//!    outside the loop's final envelope, and the same cue normalised another defensible way
//!    holds it (widened by its confidence) and its replay returns the ref. The other ways:
//!    a relative (`ago`) cue resolved against the scope's newest dated row (the
//!    conversation's date) instead of the clock; `long_ago` as the oldest third of the span
//!    up to the clock instead of up to the newest row. An absolute cue has none: its bounds
//!    carry their offset, and a bare date is a UTC day by contract.
//! 5. `INTENT_MISLEADING`: as 4, with the cue the caller meant ([`LoopInputs::intended`],
//!    e.g. a harness that knows the question's true date) instead of a re-normalisation, when
//!    no re-normalisation returned the ref.
//!
//! Rules 1, 4 and 5 aim the envelope where the trace may hold no rows: a replay takes the
//! saved envelope fetch when it covers the new envelope, else re-runs that one fetch through
//! [`LoopInputs::refetch`] (the store, the trace's query and scope). Without it such a
//! replay is not exact, and a code rests only on exact replays: none is assigned from it.
//! Rules 4 and 5 need the expected row's time; without [`RowFacts`] they are not tried.
//!
//! A held seat may go to an envelope row that was never a fused candidate, so the trace's
//! pool does not hold its text. Every row of an envelope fetch (saved or re-run) was read in
//! the recall's scope, so these replays hydrate such a row as a placeholder (empty text):
//! whether the expected ref comes back is exact; the replayed rows' text is not the point.

use super::{Attribution, Counterfactual, FailureCode, RowFacts, try_change};
use crate::config::EngineConfig;
use crate::error::Result;
use crate::recall::arms::envelope::{self, QueryVector};
use crate::recall::stages::cue::{CueConfidence, CueWhen, Period, Resolution, TimeCue};
use crate::recall::stages::cue_plan::{self, CuePlan, Fetched};
use crate::recall::stages::deliberate::{self, CueConfig, CueRow, Sufficiency};
use crate::refs::Ref;
use crate::scope::Scope;
use crate::store::Store;
use crate::time::format_ms;
use crate::trace::replay::{ReplayChanges, replay};
use crate::trace::{PoolContent, PoolRow, RecallTrace, TraceCueRequest};

/// One envelope fetch re-run against the store (the loop's own fetch type).
pub type EnvelopeFetch = Fetched;

/// What the loop's codes may use beside the trace and the row facts.
#[derive(Clone, Copy, Default)]
pub struct LoopInputs<'a> {
    /// The cue the caller meant (rule 5).
    pub intended: Option<TimeCue>,
    /// Re-runs the envelope fetch for a period (the store, the trace's query and scope).
    pub refetch: Option<&'a dyn Fn(Period) -> Result<EnvelopeFetch>>,
}

impl std::fmt::Debug for LoopInputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopInputs")
            .field("intended", &self.intended)
            .field("refetch", &self.refetch.is_some())
            .finish()
    }
}

const CONFIDENCES: [&str; 3] = ["sure", "likely", "vague"];

/// The loop's code for a missed ref (module doc), recording every replay tried in `att`;
/// `None` when the trace has no cue or no rule holds.
pub(super) fn loop_code(
    trace: &RecallTrace,
    expected: Ref,
    facts: Option<RowFacts>,
    inputs: &LoopInputs<'_>,
    att: &mut Attribution,
) -> Result<Option<FailureCode>> {
    let block = &trace.response["time_cue"];
    if block.is_null() {
        return Ok(None);
    }
    let held = with_rows(
        trace,
        trace
            .cue
            .iter()
            .flat_map(|c| c.fetched.iter().map(|r| r.r#ref)),
    );
    let trace = &held;
    let request = trace.cue_request;
    if let Some(req) = request
        && block["ignored"].as_str() == Some("recent_only")
        && let Resolution::RecentOnly(period) = req.given.resolve(req.now_ms, req.span)
    {
        let label = format!(
            "the ignored (recent_only) cue applied: {}",
            period_words(period)
        );
        let cf = cue_replay(trace, expected, period, req.given.confidence, inputs, label)?;
        let code = exact_return(&cf).then_some(FailureCode::PriorIgnored);
        if code.is_some() {
            att.evidence
                .push("the cue was ignored as recent-only; applied, it returns the row".to_owned());
        }
        att.counterfactuals.push(cf);
        if code.is_some() {
            return Ok(code);
        }
    }
    if trace.cue.is_none() {
        return Ok(None);
    }
    if let Some(code) = confidence_code(trace, expected, block, att)? {
        return Ok(Some(code));
    }
    for pair in ["cue=off", "cue.propagation=off"] {
        let cf = try_change(trace, expected, pair)?;
        let returned = cf.returned;
        att.counterfactuals.push(cf);
        if returned {
            att.evidence.push(format!(
                "the cue acted and {pair} returns it: the prior outweighed the evidence"
            ));
            return Ok(Some(FailureCode::PriorDominance));
        }
    }
    let (Some(req), Some(at)) = (request, facts.and_then(|f| f.at_ms)) else {
        return Ok(None);
    };
    let Some(envelope) = trace
        .cue
        .as_ref()
        .and_then(|c| c.prior.cue)
        .map(|c| c.envelope)
    else {
        return Ok(None);
    };
    if envelope.contains(at) {
        return Ok(None);
    }
    for (label, period) in renormalisations(&req) {
        if !period.widen(req.given.confidence).contains(at) {
            continue;
        }
        let cf = cue_replay(trace, expected, period, req.given.confidence, inputs, label)?;
        let fixed = exact_return(&cf);
        if fixed {
            att.evidence.push(format!(
                "the row ({}) is outside the envelope {}; the cue normalised another way \
                 holds it and returns it",
                format_ms(at),
                period_words(envelope)
            ));
        }
        att.counterfactuals.push(cf);
        if fixed {
            return Ok(Some(FailureCode::IntentNormalizationError));
        }
    }
    if let Some(intended) = inputs.intended {
        let period = match intended.resolve(req.now_ms, req.span) {
            Resolution::Period(p) | Resolution::RecentOnly(p) => p,
            Resolution::EmptyScope => return Ok(None),
        };
        if period.widen(intended.confidence).contains(at) {
            let label = format!("the intended cue: {}", period_words(period));
            let cf = cue_replay(trace, expected, period, intended.confidence, inputs, label)?;
            let fixed = exact_return(&cf);
            if fixed {
                att.evidence.push(format!(
                    "the row ({}) is outside the envelope {}; the cue the caller meant holds \
                     it and returns it, and no re-normalisation of the given cue does",
                    format_ms(at),
                    period_words(envelope)
                ));
            }
            att.counterfactuals.push(cf);
            if fixed {
                return Ok(Some(FailureCode::IntentMisleading));
            }
        }
    }
    Ok(None)
}

/// The trace with a placeholder pool row for each of `refs` it does not hold (module doc).
fn with_rows(trace: &RecallTrace, refs: impl Iterator<Item = Ref>) -> RecallTrace {
    let mut out = trace.clone();
    let mut known: std::collections::HashSet<Ref> = out.pool.iter().map(|p| p.r#ref).collect();
    for r in refs {
        if known.insert(r) {
            out.pool.push(PoolRow {
                r#ref: r,
                row: Some(PoolContent {
                    chars: 0,
                    source: None,
                    timestamp: None,
                    msg_id: None,
                }),
                confidence_input: None,
            });
        }
    }
    out
}

fn exact_return(cf: &Counterfactual) -> bool {
    cf.returned && cf.exact
}

fn period_words(p: Period) -> String {
    format!("[{}, {})", format_ms(p.start_ms), format_ms(p.end_ms))
}

/// Rule 2: one-change replays of the cue's confidence.
fn confidence_code(
    trace: &RecallTrace,
    expected: Ref,
    block: &serde_json::Value,
    att: &mut Attribution,
) -> Result<Option<FailureCode>> {
    let revised = block["revised"].as_bool().unwrap_or(false);
    let rank = |c: &str| CONFIDENCES.iter().position(|x| *x == c);
    let Some(current) = block["confidence"].as_str().and_then(rank) else {
        return Ok(None);
    };
    let mut code = None;
    for (i, name) in CONFIDENCES.into_iter().enumerate() {
        if i == current {
            continue;
        }
        let cf = try_change(trace, expected, &format!("cue.confidence={name}"))?;
        if cf.returned && code.is_none() {
            let wider = i > current;
            code = Some(match (wider, revised) {
                (true, true) => FailureCode::WideningInsufficient,
                (true, false) => FailureCode::WindowTooNarrow,
                (false, true) => FailureCode::WideningPremature,
                (false, false) => FailureCode::WindowTooWide,
            });
            att.evidence.push(format!(
                "the cue's envelope at {name} instead of {} returns it{}",
                CONFIDENCES[current],
                if revised {
                    " (the loop had revised once)"
                } else {
                    ""
                }
            ));
        }
        att.counterfactuals.push(cf);
    }
    Ok(code)
}

/// The given cue's other defensible normalisations (rule 4), each as (words, period).
pub fn renormalisations(req: &TraceCueRequest) -> Vec<(String, Period)> {
    let mut out = Vec::new();
    let Some((oldest, newest)) = req.span else {
        return out;
    };
    match req.given.when {
        CueWhen::Ago { .. } if newest < req.now_ms => {
            if let Resolution::Period(p) | Resolution::RecentOnly(p) =
                req.given.resolve(newest, req.span)
            {
                out.push((
                    format!(
                        "ago anchored at the scope's newest row ({}) instead of the clock: {}",
                        format_ms(newest),
                        period_words(p)
                    ),
                    p,
                ));
            }
        }
        CueWhen::LongAgo if newest < req.now_ms => {
            let p = Period {
                start_ms: oldest,
                end_ms: oldest + ((req.now_ms - oldest) / 3).max(1),
            };
            out.push((
                format!(
                    "long_ago as the oldest third up to the clock: {}",
                    period_words(p)
                ),
                p,
            ));
        }
        _ => {}
    }
    out
}

/// The plan the loop would have made for `period` at `confidence` (as `Engine::cue_plan`
/// makes it), its rows from the saved fetch when that covers the fetch envelope, else from
/// `refetch`; the flag says whether the rows are exact.
fn plan_for(
    trace: &RecallTrace,
    period: Period,
    confidence: CueConfidence,
    inputs: &LoopInputs<'_>,
) -> Result<(CuePlan, bool)> {
    let fetch_envelope = deliberate::fetch_envelope(period, confidence);
    let saved = trace.cue.as_ref();
    let covered = saved.is_some_and(|c| {
        !c.fetch_cut
            && c.fetch_envelope.is_some_and(|f| {
                f.start_ms <= fetch_envelope.start_ms && fetch_envelope.end_ms <= f.end_ms
            })
    });
    let from_saved = || {
        let plan = saved.map(crate::trace::TraceCue::to_plan);
        let rows: Vec<CueRow> = plan
            .as_ref()
            .map(|p| {
                p.fetched
                    .iter()
                    .filter(|r| fetch_envelope.contains(r.at_ms))
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        EnvelopeFetch {
            rows,
            cut: false,
            context: plan.map(|p| p.context).unwrap_or_default(),
        }
    };
    let (fetch, exact) = match (covered, inputs.refetch) {
        (true, _) => (from_saved(), true),
        (false, Some(refetch)) => (refetch(fetch_envelope)?, true),
        (false, None) => (from_saved(), false),
    };
    let config = CueConfig {
        depth: saved
            .and_then(|c| c.prior.cue)
            .map_or(CueConfig::default().depth, |c| c.depth),
        ..CueConfig::default()
    };
    let sufficiency = Sufficiency {
        gate_threshold: trace.config.gate.enabled.then_some(trace.gate.threshold),
    };
    let (plan, _) = cue_plan::plan(&config, period, confidence, fetch, &sufficiency, || 0.0);
    Ok((plan, exact))
}

/// Replays the trace with the cue replaced by `period` at `confidence`.
fn cue_replay(
    trace: &RecallTrace,
    expected: Ref,
    period: Period,
    confidence: CueConfidence,
    inputs: &LoopInputs<'_>,
    label: String,
) -> Result<Counterfactual> {
    let (plan, rows_exact) = plan_for(trace, period, confidence, inputs)?;
    let trace = &with_rows(trace, plan.fetched.iter().map(|r| r.r#ref));
    let changes = ReplayChanges {
        cue_plan: Some(plan),
        given: vec![label.clone()],
        ..ReplayChanges::default()
    };
    let out = replay(trace, &changes)?;
    let position = out.refs_best_first().iter().position(|r| *r == expected);
    Ok(Counterfactual {
        change: if rows_exact {
            label
        } else {
            format!("{label} (the envelope fetch must be re-run against the store: not exact)")
        },
        returned: position.is_some(),
        position,
        exact: out.exact && rows_exact,
    })
}

/// Re-runs the loop's envelope fetch for `period` in the trace's scope, scored against
/// the trace's query embedded again (no cosines when the embedder cannot): the store's
/// half of the loop codes' replays ([`LoopInputs::refetch`]).
pub(crate) fn refetch_envelope(
    store: &Store,
    config: &EngineConfig,
    trace: &RecallTrace,
    period: Period,
) -> Result<EnvelopeFetch> {
    let s = &trace.scope;
    let scope = Scope::read(
        Some(s.agent_id.as_str()),
        s.project_id.as_deref(),
        s.channel.as_deref(),
    );
    let target = store.vector_target();
    let vector = if target.embedder_matches && !trace.query.blank {
        store
            .embedder
            .embed(&[trace.query.text.as_str()])
            .ok()
            .and_then(|mut v| v.pop())
            .filter(|v| v.len() == target.dim)
    } else {
        None
    };
    let query = vector.as_deref().map(|vector| QueryVector {
        vector,
        model_id: &target.model_id,
        dim: target.dim,
    });
    let row_cap = config.recall.cue.row_cap;
    let relations = config.associations_enabled;
    store.read(|conn| envelope::fetch(conn, &scope, period, query.as_ref(), row_cap, relations))
}
