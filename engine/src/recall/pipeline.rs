//! The pure recall pass end to end: arms (already run by the store) → depth → fusion → gate
//! → count cut with hydration → shape. The store and index stay behind two closures, so the
//! whole pass is testable on fixed lists.

use serde::Serialize;

use super::candidate::{ArmList, FusedCandidate, Ref};
use super::confidence::Confidence;
use super::config::RecallConfig;
use super::fusion::fuse;
use super::gate::{self, GateDecision, GateInput, GateReport};
use super::select::CountCut;
use super::shape::{Hydrated, RecallMessage, ShapeInput, shape};

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
#[derive(Clone, Debug, PartialEq, Serialize)]
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
    /// The gate's decisions.
    pub gate: GateReport,
    /// The count cut.
    pub order: CountCut,
    /// Gated rows the store could no longer read (deleted since the arms ran); skipped.
    pub vanished: Vec<Ref>,
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
    mut arms: Vec<ArmList>,
    gate_input: &GateInput,
    mut hydrate: impl FnMut(Ref) -> Option<Hydrated>,
    mut confidence: impl FnMut(&FusedCandidate) -> Option<Confidence>,
) -> RecallOutcome {
    let depth = config.depth.per_arm();
    let mut cut_by_depth = 0;
    arms.sort_by_key(|list| list.arm.order());
    for list in &mut arms {
        list.hits
            .sort_by(|a, b| a.rank.cmp(&b.rank).then(a.r#ref.cmp(&b.r#ref)));
        cut_by_depth += list.hits.len().saturating_sub(depth);
        list.hits.truncate(depth);
    }
    let fused = fuse(config.fusion, &arms, &config.weights, config.rrf_k);
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
        match hydrate(candidate.r#ref) {
            Some(row) => {
                let confidence = confidence(&candidate);
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
    let (messages, budget) = shape(
        &config.shape,
        config.fusion,
        request.query,
        request.full_content,
        kept,
    );
    let response = RecallResponse {
        messages,
        depth: (depth != request.limit).then_some(depth),
        gate_fallback: gate_report.gate_fallback,
        full_content_budget_chars: budget,
    };
    let stages = RecallStages {
        depth,
        arms,
        cut_by_depth,
        fusion: fused,
        gate: gate_report,
        order: CountCut {
            limit: request.limit,
            cut_by_count,
        },
        vanished,
    };
    RecallOutcome { response, stages }
}
