//! The pure recall pass end to end: arms (already run by the store) → depth → fusion → gate
//! → count cut with hydration → shape. The store and index stay behind two closures, so the
//! whole pass is testable on fixed lists.

use serde::{Deserialize, Serialize};

use super::candidate::{ArmList, FusedCandidate};
use super::confidence::Confidence;
use super::config::RecallConfig;
use super::cue::{CueConfidence, PeriodText};
use super::cue_plan::CuePlan;
use super::cue_spread::{self, Propagated};
use super::deliberate::{LoopLimit, LoopReport, StopRule};
use super::fusion::fuse;
use super::fusion_weights::{self, ChosenWeights};
use super::gate::{self, GateDecision, GateInput, GateReason, GateReport};
use super::prior::{self, PriorRow};
use super::recency::{self, RecencyApplied};
use super::select::CountCut;
use super::shape::{Hydrated, RecallMessage, ShapeInput, shape};
use crate::refs::Ref;

/// What the caller asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecallRequest<'a> {
    /// The query.
    pub query: &'a str,
    /// The response count.
    pub limit: usize,
    /// Halves the gate.
    pub deep: bool,
    /// Whole rows within the full-content budget.
    pub full_content: bool,
}

/// The recall response body (the server adds advisories and the operating context).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecallResponse {
    /// Rows in ascending relevance: the last is the best.
    pub messages: Vec<RecallMessage>,
    /// The per-arm depth, present only when it differs from `limit` (CPersona's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// True when the gate refused every row and the lexical rows were returned.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gate_fallback: bool,
    /// The full-content budget, present when it cut a row to its preview.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_content_budget_chars: Option<usize>,
    /// The time cue as resolved and applied; absent without a cue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_cue: Option<CueResponse>,
    /// What the recency prior did (its bound, how many rows moved); absent when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recency: Option<RecencyApplied>,
}

/// What each stage saw, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecallStages {
    /// The per-arm depth used.
    pub depth: usize,
    /// Each arm's list as fused (after the depth cut), in fusion order.
    pub arms: Vec<ArmList>,
    /// Hits the depth cut removed from lists handed in deeper than the depth.
    pub cut_by_depth: usize,
    /// Every fused candidate, in fused order.
    pub fusion: Vec<FusedCandidate>,
    /// The weights adaptive fusion chose and why; `None` with fixed weights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights: Option<ChosenWeights>,
    /// The gate's decisions.
    pub gate: GateReport,
    /// The count cut.
    pub order: CountCut,
    /// Gated rows the store could no longer read (deleted since the arms ran); skipped.
    pub vanished: Vec<Ref>,
    /// What the recency prior did to the answer; absent when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recency: Option<RecencyApplied>,
    /// What the time cue did to the answer; absent without a cue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cue: Option<CueApplied>,
    /// The Deliberative loop's stages, envelopes, fetches and limits; absent without a cue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliberation: Option<LoopReport>,
}

/// What the cue did to one pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CueApplied {
    /// Rows of the answer the prior moved up (membership unchanged).
    pub moved: usize,
    /// Rows held beyond the count, best first.
    pub seated: Vec<Ref>,
    /// Each held row's 0-based rank on the cue arm, in `seated`'s order (the wire's
    /// `cue_rank`; the trace keeps `seated` alone).
    #[serde(skip)]
    pub seat_ranks: Vec<usize>,
    /// The answer's order before the prior, best first.
    pub order_before: Vec<Ref>,
    /// Cue propagation from the answer's strong hit, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagated: Option<Propagated>,
}

/// The `time_cue` block of a recall response (read back from a trace by replay).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CueResponse {
    /// The policy version.
    pub policy: String,
    /// The final stage's envelope (the period widened by `confidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<PeriodText>,
    /// The final confidence (one step wider than asked when revised).
    pub confidence: CueConfidence,
    /// True when the envelope was widened once because the period held nothing.
    pub revised: bool,
    /// Rows of the answer the cue moved up.
    pub moved: usize,
    /// Rows held beyond the count for the cue (listed first, lowest relevance).
    pub seated: usize,
    /// Why the cue was not used: `recent_only` (the period starts within the last 24 h, which
    /// an uncued recall already favours) or `empty_scope` (no dated rows to aim at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    /// Hard limits that acted in the loop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<LoopLimit>,
    /// What ended the loop (a sufficiency rule, a hard limit, or no wider period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StopRule>,
    /// Cue propagation from a strong hit, when one was found (`recall::cue_spread`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagated: Option<Propagated>,
}

/// A whole pure recall pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecallOutcome {
    /// The response.
    pub response: RecallResponse,
    /// The stages.
    pub stages: RecallStages,
}

/// Runs depth → fusion → gate → count cut → shape over the arms' lists. `hydrate` reads a
/// row within the caller's scope (`None` if it vanished); `confidence` may report one.
pub fn run(
    config: &RecallConfig,
    request: &RecallRequest<'_>,
    arms: Vec<ArmList>,
    gate_input: &GateInput,
    hydrate: impl FnMut(Ref) -> Option<Hydrated>,
    confidence: impl FnMut(&FusedCandidate) -> Option<Confidence>,
) -> RecallOutcome {
    run_cued(config, request, arms, gate_input, None, hydrate, confidence)
}

/// [`run`] with the time cue's plan: after the count cut the answer is re-ordered by the
/// plan's prior (never a membership change), then up to `seats` envelope rows not in the
/// answer and not refused by the gate are held beyond the count (listed first: lowest
/// relevance). `cue = None` is exactly [`run`].
pub fn run_cued(
    config: &RecallConfig,
    request: &RecallRequest<'_>,
    arms: Vec<ArmList>,
    gate_input: &GateInput,
    cue: Option<&CuePlan>,
    mut hydrate: impl FnMut(Ref) -> Option<Hydrated>,
    mut confidence: impl FnMut(&FusedCandidate) -> Option<Confidence>,
) -> RecallOutcome {
    let outcome = try_run_cued(
        config,
        request,
        arms,
        gate_input,
        cue,
        |r| Ok::<_, std::convert::Infallible>(hydrate(r)),
        |c| Ok(confidence(c)),
    );
    match outcome {
        Ok(outcome) => outcome,
        Err(never) => match never {},
    }
}

/// [`run_cued`] over a store that can fail: the first error of `hydrate` or `confidence`
/// ends the pass and is returned.
pub fn try_run_cued<E>(
    config: &RecallConfig,
    request: &RecallRequest<'_>,
    mut arms: Vec<ArmList>,
    gate_input: &GateInput,
    cue: Option<&CuePlan>,
    mut hydrate: impl FnMut(Ref) -> Result<Option<Hydrated>, E>,
    mut confidence: impl FnMut(&FusedCandidate) -> Result<Option<Confidence>, E>,
) -> Result<RecallOutcome, E> {
    let depth = config.depth.per_arm();
    let mut cut_by_depth = 0;
    arms.sort_by_key(|list| list.arm.order());
    for list in &mut arms {
        list.hits
            .sort_by(|a, b| a.rank.cmp(&b.rank).then(a.r#ref.cmp(&b.r#ref)));
        cut_by_depth += list.hits.len().saturating_sub(depth);
        list.hits.truncate(depth);
    }
    let chosen = config
        .adaptive
        .map(|rule| fusion_weights::choose(&arms, &config.weights, &rule, depth));
    let weights = chosen
        .as_ref()
        .map_or(config.weights, |c| c.applied_to(&config.weights));
    let mut fused = fuse(config.fusion, &arms, &weights, config.rrf_k);
    if let Some(chosen) = &chosen {
        fusion_weights::reserve(&mut fused, chosen);
    }
    let (gated, gate_report) = gate::apply(&config.gate, gate_input, fused.clone());

    let decisions: Vec<&GateDecision> = gate_report.decisions.iter().filter(|d| d.passed).collect();
    let mut kept: Vec<ShapeInput> = Vec::new();
    let mut vanished = Vec::new();
    let mut cut_by_count = Vec::new();
    for (candidate, decision) in gated.into_iter().zip(decisions) {
        if kept.len() >= request.limit {
            cut_by_count.push(candidate.r#ref);
            continue;
        }
        match hydrate(candidate.r#ref)? {
            Some(row) => {
                let confidence = confidence(&candidate)?;
                kept.push(ShapeInput {
                    candidate,
                    decision: *decision,
                    row,
                    confidence,
                });
            }
            None => vanished.push(candidate.r#ref),
        }
    }
    // Recency re-orders the counted answer (a bounded move, never a membership change); the
    // cue then lifts from that order.
    let recency = recency::apply(&config.recency, &mut kept);
    let applied = cue
        .map(|plan| apply_cue(plan, &gate_report, &mut kept, &mut hydrate, &mut vanished))
        .transpose()?;
    let (mut messages, budget) = shape(
        &config.shape,
        config.fusion,
        request.query,
        request.full_content,
        kept,
    );
    if let Some(reserved) = chosen.as_ref().and_then(|c| c.reserved) {
        for message in messages.iter_mut().filter(|m| m.r#ref == reserved) {
            message.match_reason.admission = Some("reservation");
        }
    }
    if let Some(applied) = &applied {
        for message in &mut messages {
            if let Some(seat) = applied.seated.iter().position(|r| *r == message.r#ref) {
                let reason = &mut message.match_reason;
                reason.signal = super::shape::Signal::Cue;
                reason.admission = Some("reservation");
                reason.cue_rank = applied.seat_ranks.get(seat).copied();
            }
        }
    }
    let response = RecallResponse {
        messages,
        depth: (depth != request.limit).then_some(depth),
        gate_fallback: gate_report.gate_fallback,
        full_content_budget_chars: budget,
        time_cue: None,
        recency: recency.clone(),
    };
    let stages = RecallStages {
        depth,
        arms,
        cut_by_depth,
        fusion: fused,
        weights: chosen,
        gate: gate_report,
        order: CountCut {
            limit: request.limit,
            cut_by_count,
        },
        vanished,
        recency,
        cue: applied,
        deliberation: None,
    };
    Ok(RecallOutcome { response, stages })
}

/// Re-orders `kept` (best first) by the plan's prior and appends the held places.
fn apply_cue<E>(
    plan: &CuePlan,
    gate_report: &GateReport,
    kept: &mut Vec<ShapeInput>,
    hydrate: &mut impl FnMut(Ref) -> Result<Option<Hydrated>, E>,
    vanished: &mut Vec<Ref>,
) -> Result<CueApplied, E> {
    let order_before: Vec<Ref> = kept.iter().map(|k| k.candidate.r#ref).collect();
    // Cue propagation: a strong hit of the answer narrows the period and names context rows
    // for this re-weighting pass (`cue_spread`); same rows, same seats' pool.
    let answer: Vec<(Ref, Option<String>)> = kept
        .iter()
        .map(|k| (k.candidate.r#ref, source_id(k.row.source.as_ref())))
        .collect();
    let spread = plan
        .propagate
        .then(|| cue_spread::propagate(plan, gate_report, &answer))
        .flatten();
    let (plan, propagated) = match &spread {
        Some((revised, report)) => (revised, Some(report.clone())),
        None => (plan, None),
    };
    let rows: Vec<PriorRow> = order_before
        .iter()
        .map(|r| plan.rows.get(r).copied().unwrap_or_default())
        .collect();
    let moved = prior::reorder(&plan.prior, &rows, kept, |k| k.candidate.score);

    let refused: Vec<Ref> = gate_report
        .decisions
        .iter()
        .filter(|d| !d.passed)
        .map(|d| d.r#ref)
        .collect();
    let mut seated = Vec::new();
    let mut seat_ranks = Vec::new();
    for (cue_rank, row) in plan.found.iter().enumerate() {
        if seated.len() >= plan.seats {
            break;
        }
        if order_before.contains(&row.r#ref) || refused.contains(&row.r#ref) {
            continue;
        }
        match hydrate(row.r#ref)? {
            Some(hydrated) => {
                seated.push(row.r#ref);
                seat_ranks.push(cue_rank);
                kept.push(ShapeInput {
                    candidate: FusedCandidate {
                        r#ref: row.r#ref,
                        score: 0.0,
                        votes: Vec::new(),
                        cosine: row.cosine,
                        cosine_backfilled: false,
                    },
                    decision: GateDecision {
                        r#ref: row.r#ref,
                        cosine: row.cosine,
                        passed: true,
                        reason: GateReason::GateDisabled,
                    },
                    row: hydrated,
                    confidence: None,
                });
            }
            None => vanished.push(row.r#ref),
        }
    }
    Ok(CueApplied {
        moved,
        seated,
        seat_ranks,
        order_before,
        propagated,
    })
}

/// A row's `source.id` as text (numbers too), as the caller's `source_id` filter reads it.
/// The `source.id` propagation may treat as a shared source; `None` for the default source the
/// store writes when the caller gives none (`{type: "Agent", id: <agent>, name: ""}`): every
/// such row of one agent shares it, so it would name the whole answer as context.
fn source_id(source: Option<&serde_json::Value>) -> Option<String> {
    let source = source?;
    let is_default = source.get("type").and_then(|t| t.as_str()) == Some("Agent")
        && source
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .is_empty();
    if is_default {
        return None;
    }
    match source.get("id")? {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod source_tests {
    use serde_json::json;

    use super::source_id;

    #[test]
    fn the_default_agent_source_is_no_shared_source() {
        let default = json!({"type": "Agent", "id": "a", "name": ""});
        assert_eq!(source_id(Some(&default)), None);
        assert_eq!(source_id(Some(&json!({"type": "Agent", "id": "a"}))), None);
        let named = json!({"type": "Agent", "id": "a", "name": "planner"});
        assert_eq!(source_id(Some(&named)).as_deref(), Some("a"));
        let user = json!({"type": "user", "id": "u7"});
        assert_eq!(source_id(Some(&user)).as_deref(), Some("u7"));
        assert_eq!(
            source_id(Some(&json!({"type": "user", "id": 7}))).as_deref(),
            Some("7")
        );
        assert_eq!(source_id(None), None);
    }
}
