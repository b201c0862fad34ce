//! Shapes the final rows for the wire: last-is-best order, `ref`, score, `match_reason`, the
//! preview tier (`content_truncated`, `content_len`, `excerpt`) and the optional
//! `full_content` budget. It never reorders relative to fusion and never drops a row.

use serde::Serialize;

use super::candidate::{Arm, FusedCandidate};
use super::confidence::Confidence;
use super::excerpt::{ExcerptBasis, excerpt};
use super::fusion::FusionMode;
use super::gate::GateDecision;
use crate::refs::Ref;

/// What the store returns for one row (hydration); the stages never read SQLite.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hydrated {
    /// Content as the agent sees it (episodes: `"[Episode] " + summary`).
    pub content: String,
    /// The row's `source` object, if any.
    pub source: Option<serde_json::Value>,
    /// The row's timestamp as stored, if any.
    pub timestamp: Option<String>,
    /// The caller's message id (`msg_id`), if any.
    pub msg_id: Option<String>,
}

/// Preview-tier settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ShapeConfig {
    /// Characters of content a row shows before it is cut; 0 disables the preview tier.
    pub preview_chars: usize,
    /// Characters of the excerpt beside a cut row; 0 disables excerpts.
    pub excerpt_chars: usize,
    /// Characters `full_content=true` may spend, best row first.
    pub full_content_budget_chars: usize,
}

/// The signal a row was admitted on (`match_reason.signal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// The gate judged the row's cosine.
    Cosine,
    /// No cosine; the row rests on its rrf rank votes (never compared to a threshold).
    Rrf,
    /// No cosine; the row rests on its rsf votes (never compared to a threshold).
    Rsf,
    /// A held place: the row mentions an entity the query names (`associations_cue`).
    Association,
    /// The held place of the propagation seat (`propagation`).
    Propagation,
    /// A held place of the time cue: one of the cue arm's best rows in the period that the
    /// answer did not hold (CPersona's `{signal: "cue", admission: "reservation", cue_rank}`).
    Cue,
}

/// One arm's rank of a row, for `match_reason.arms`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ArmRank {
    /// The arm.
    pub arm: Arm,
    /// 0-based rank there.
    pub rank: usize,
}

/// Why a row is in the answer.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MatchReason {
    /// What the gate keyed on.
    pub signal: Signal,
    /// The value of that signal (cosine, or the fused score), 6 decimals.
    pub score: f64,
    /// Cosine to the query, 4 decimals, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// The rrf score, 6 decimals, under rrf fusion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rrf: Option<f64>,
    /// The rsf score, 6 decimals, under rsf fusion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rsf: Option<f64>,
    /// Which arms ranked the row, in fusion order, and where.
    pub arms: Vec<ArmRank>,
    /// `"gate_fallback"` when the gate refused the row and it was returned because nothing
    /// passed; `"reservation"` for a held seat, or for the vector arm's decisive first row
    /// that adaptive fusion put first (`fusion_weights`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<&'static str>,
    /// Propagation seat: 1-based rank in the deeper ranking among rows not held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused_rank: Option<usize>,
    /// Propagation seat: 1-based rank by closeness to the best row of the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine_rank: Option<usize>,
    /// Propagation seat: the Recall Depth (per arm) the deeper ranking ran at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<usize>,
    /// Time-cue seat: the row's 0-based rank on the cue arm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cue_rank: Option<usize>,
    /// Association seat: the declared entity the row mentions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entity: Option<String>,
    /// Association seat: hops from an entity the query names (0 or 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<usize>,
}

/// One recall row on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecallMessage {
    /// Content, or its preview-tier prefix.
    pub content: String,
    /// `mem:<id>` or `ep:<id>`.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// The row's `source`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<serde_json::Value>,
    /// The row's timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The caller's message id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The fused score (rrf or rsf), 6 decimals: the order's key.
    pub score: f64,
    /// Reported only: neither orders nor gates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// Why the row is here.
    pub match_reason: MatchReason,
    /// True when `content` is a prefix of the stored content.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub content_truncated: bool,
    /// The stored content's length in characters, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_len: Option<usize>,
    /// The best-matching passage, when cut and the query is not blank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt: Option<String>,
    /// How the excerpt was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excerpt_basis: Option<ExcerptBasis>,
}

/// A row ready to shape: the candidate, its gate decision, its stored text and an optional
/// confidence.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeInput {
    /// The gated candidate.
    pub candidate: FusedCandidate,
    /// Its gate decision.
    pub decision: GateDecision,
    /// Its hydrated row.
    pub row: Hydrated,
    /// Its confidence, when the caller computes one.
    pub confidence: Option<Confidence>,
}

/// Shapes rows given best first and returns them **last-is-best**, with the
/// `full_content_budget_chars` to report when the full-content budget cut a row.
pub fn shape(
    config: &ShapeConfig,
    mode: FusionMode,
    query: &str,
    full_content: bool,
    best_first: Vec<ShapeInput>,
) -> (Vec<RecallMessage>, Option<usize>) {
    let mut budget_left = config.full_content_budget_chars;
    let mut budget_bit = false;
    let mut messages: Vec<RecallMessage> = Vec::with_capacity(best_first.len());
    for (position, input) in best_first.into_iter().enumerate() {
        let ShapeInput {
            candidate,
            decision,
            row,
            confidence,
        } = input;
        let len = row.content.chars().count();
        let whole = if full_content {
            // The best row is always admitted whole; later rows while the budget lasts.
            // Once a row does not fit, it and every worse row fall back to the preview.
            let fits = position == 0 || (!budget_bit && len <= budget_left);
            if fits {
                budget_left = budget_left.saturating_sub(len);
            } else {
                budget_bit = true;
            }
            fits
        } else {
            false
        };
        let cut = !whole && config.preview_chars > 0 && len > config.preview_chars;
        let (content, excerpt_found) = if cut {
            let prefix: String = row.content.chars().take(config.preview_chars).collect();
            (prefix, excerpt(&row.content, query, config.excerpt_chars))
        } else {
            (row.content, None)
        };
        messages.push(RecallMessage {
            content,
            r#ref: candidate.r#ref,
            source: row.source,
            timestamp: row.timestamp,
            id: row.msg_id,
            score: round6(candidate.score),
            confidence,
            match_reason: match_reason(mode, &candidate, &decision),
            content_truncated: cut,
            content_len: cut.then_some(len),
            excerpt_basis: excerpt_found.as_ref().map(|e| e.basis),
            excerpt: excerpt_found.map(|e| e.text),
        });
    }
    messages.reverse();
    (
        messages,
        budget_bit.then_some(config.full_content_budget_chars),
    )
}

/// The `match_reason` of one row.
pub fn match_reason(
    mode: FusionMode,
    candidate: &FusedCandidate,
    decision: &GateDecision,
) -> MatchReason {
    let fused = round6(candidate.score);
    let (signal, score) = match (candidate.cosine, mode) {
        (Some(cosine), _) => (Signal::Cosine, round6(cosine)),
        (None, FusionMode::Rrf) => (Signal::Rrf, fused),
        (None, FusionMode::Rsf) => (Signal::Rsf, fused),
    };
    MatchReason {
        signal,
        score,
        cosine: candidate.cosine.map(super::gate::round4),
        rrf: (mode == FusionMode::Rrf).then_some(fused),
        rsf: (mode == FusionMode::Rsf).then_some(fused),
        arms: candidate
            .votes
            .iter()
            .map(|v| ArmRank {
                arm: v.arm,
                rank: v.rank,
            })
            .collect(),
        admission: (decision.reason == super::gate::GateReason::Fallback)
            .then_some("gate_fallback"),
        fused_rank: None,
        cosine_rank: None,
        cue_rank: None,
        depth: None,
        entity: None,
        hops: None,
    }
}

/// Rounds to 6 decimals for display; ordering always uses the unrounded value.
pub(crate) fn round6(value: f64) -> f64 {
    (value * 1_000_000.0).round() / 1_000_000.0
}
