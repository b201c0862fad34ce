//! `RecallConfig`: every knob of the pure recall stages, typed, with documented defaults.
//! The server builds it once from env and flags; nothing here reads the environment.

use serde::Serialize;

use super::confidence::ConfidenceParams;
use super::deliberate::CueConfig;
use super::fusion::{ArmWeights, FusionMode};
use super::fusion_weights::AdaptiveFusion;
use super::gate::GateConfig;
use super::recency::RecencyConfig;
use super::select::RecallDepth;
use super::shape::ShapeConfig;
use crate::error::RecallError;

/// Settings of the recall stages.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RecallConfig {
    /// Fusion mode (default rrf, CPersona's `CPERSONA_RECALL_MODE`).
    pub fusion: FusionMode,
    /// RRF's k (default [`RecallConfig::RRF_K`]).
    pub rrf_k: f64,
    /// Per-arm weights (default all 1).
    pub weights: ArmWeights,
    /// Adaptive fusion (`fusion_weights`): per query, a lexical arm less decisive than the
    /// vector arm is weighted down from `weights`. `None` = the weights as configured.
    pub adaptive: Option<AdaptiveFusion>,
    /// Recall Depth (per-arm candidate depth), independent of `limit`.
    pub depth: RecallDepth,
    /// The gate.
    pub gate: GateConfig,
    /// The preview tier.
    pub shape: ShapeConfig,
    /// Confidence constants (reported only).
    pub confidence: ConfidenceParams,
    /// Report a `confidence` object beside each row (CPersona's `CPERSONA_CONFIDENCE_ENABLED`);
    /// it never orders or gates.
    pub report_confidence: bool,
    /// The global β of the calibration objective `TPR + β·(1 − FPR)` (CPersona's
    /// `CPERSONA_RECALL_PRECISION` / `CPERSONA_FUSED_GATE_BETA`); an agent's own β, set with
    /// `set_recall_precision`, overrides it.
    pub precision_beta: f64,
    /// The time cue's loop bounds (used only when a recall carries a cue).
    pub cue: CueConfig,
    /// The lexical candidate cap: bm25 ranks at most this many matching rows per FTS table
    /// (the newest; `arms::lexical` says why and reports when it acts). `None` = every match
    /// (CPersona's behaviour). Default [`RecallConfig::LEXICAL_CAP`]; never below `depth.max`.
    pub lexical_cap: Option<usize>,
    /// The recency prior on the counted answer (CPersona's `CPERSONA_PRIOR_AGE_RATE`); rate 0
    /// (default) is the identity.
    pub recency: RecencyConfig,
}

impl RecallConfig {
    /// RRF's k: 60, CPersona's `CPERSONA_RRF_K` and the value of the original RRF paper;
    /// it damps the gap between rank 0 and rank 1 so no single arm dominates.
    pub const RRF_K: f64 = 60.0;
    /// Preview length: 500 characters, CPersona's `CPERSONA_RECALL_PREVIEW_CHARS`, which
    /// agents already expect (a preview is a pure prefix, so feeding it back through
    /// `exclude_contents` still matches by starts-with).
    pub const PREVIEW_CHARS: usize = 500;
    /// Excerpt length: 800 characters, CPersona 2.6's `CPERSONA_RECALL_EXCERPT_CHARS`:
    /// about one governing paragraph, the part of a cut row that matched.
    pub const EXCERPT_CHARS: usize = 800;
    /// `full_content=true` budget: 200,000 characters, CPersona's, about 50K tokens.
    pub const FULL_CONTENT_BUDGET_CHARS: usize = 200_000;
    /// Lexical candidate cap: 100 matching rows per table (the smallest the Recall Depth
    /// maximum allows). Under it the arm is exact; over it bm25 ranks the rows holding the
    /// rarest query terms. Chosen on quality, not only speed: on the whole of LoCoMo and TMD
    /// (Track B NDCG@10, one run each, `scale/RESULTS.md`) cap 100 vs off moved MiniLM
    /// 31.09 → 36.28 and 8.20 → 9.42, hash 28.19 → 34.19 and 8.05 → 9.84 (every LoCoMo
    /// subtask up; 500 sat between), because common words no longer outvote rare ones; it
    /// also halves the lexical arm at 10K rows (`benches/recall`). It costs where a corpus
    /// carries dates as words (TMD with the date in the text: 14.37 → 12.30 with MiniLM).
    pub const LEXICAL_CAP: usize = 100;

    /// Checks the values a server could get wrong.
    pub fn validate(&self) -> Result<(), RecallError> {
        RecallDepth::new(self.depth.floor, self.depth.default, self.depth.max)?;
        if !(self.rrf_k.is_finite() && self.rrf_k >= 0.0) {
            return Err(RecallError::InvalidSetting {
                name: "rrf_k",
                reason: "must be finite and >= 0",
            });
        }
        let w = self.weights;
        if [w.vector_near, w.vector_far, w.episode_fts, w.memory_keyword]
            .iter()
            .any(|x| !(x.is_finite() && *x >= 0.0))
        {
            return Err(RecallError::InvalidSetting {
                name: "weights",
                reason: "must be finite and >= 0",
            });
        }
        if let Some(a) = self.adaptive {
            if !(a.floor.is_finite() && (0.0..=1.0).contains(&a.floor)) {
                return Err(RecallError::InvalidSetting {
                    name: "adaptive.floor",
                    reason: "must be in 0..=1",
                });
            }
            if !(a.power.is_finite() && a.power >= 0.0) {
                return Err(RecallError::InvalidSetting {
                    name: "adaptive.power",
                    reason: "must be finite and >= 0",
                });
            }
        }
        if self.lexical_cap.is_some_and(|cap| cap < self.depth.max) {
            return Err(RecallError::InvalidSetting {
                name: "lexical_cap",
                reason: "must be off or >= the recall depth maximum",
            });
        }
        let r = self.recency;
        if !(r.rate_per_h.is_finite() && r.rate_per_h >= 0.0) {
            return Err(RecallError::InvalidSetting {
                name: "recency.rate_per_h",
                reason: "must be finite and >= 0",
            });
        }
        if !(r.floor.is_finite() && (0.0..=1.0).contains(&r.floor)) {
            return Err(RecallError::InvalidSetting {
                name: "recency.floor",
                reason: "must be in 0..=1",
            });
        }
        let c = self.cue;
        if c.depth == 0 || c.row_cap == 0 || c.max_stages == 0 {
            return Err(RecallError::InvalidSetting {
                name: "cue",
                reason: "depth, row_cap and max_stages must be >= 1",
            });
        }
        if !(c.max_ms.is_finite() && c.max_ms >= 0.0) {
            return Err(RecallError::InvalidSetting {
                name: "cue.max_ms",
                reason: "must be finite and >= 0",
            });
        }
        Ok(())
    }
}

impl Default for RecallConfig {
    fn default() -> RecallConfig {
        RecallConfig {
            fusion: FusionMode::Rrf,
            rrf_k: RecallConfig::RRF_K,
            weights: ArmWeights::default(),
            adaptive: None,
            depth: RecallDepth::default(),
            // Gate on (CPersona's `CPERSONA_FUSED_GATE_ENABLED=true`), heuristic curve
            // 0.5 → 0.2 over a 500-row pool, halved for `deep`: CPersona's constants.
            gate: GateConfig::default(),
            shape: ShapeConfig {
                preview_chars: RecallConfig::PREVIEW_CHARS,
                excerpt_chars: RecallConfig::EXCERPT_CHARS,
                full_content_budget_chars: RecallConfig::FULL_CONTENT_BUDGET_CHARS,
            },
            confidence: ConfidenceParams::default(),
            report_confidence: true,
            precision_beta: 1.0,
            cue: CueConfig::default(),
            lexical_cap: Some(RecallConfig::LEXICAL_CAP),
            recency: RecencyConfig::default(),
        }
    }
}
