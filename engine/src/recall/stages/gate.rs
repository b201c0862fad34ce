//! The quality gate: keeps a fused candidate when its cosine to the query clears an absolute
//! threshold (calibrated from the corpus, else CPersona's pool-size heuristic). It never
//! compares a rank-relative score (rrf, rsf) to an absolute threshold, so it never reorders
//! and never drops a row only lexical arms found.
//!
//! CPersona's defect this replaces (reference 2.5 §5.7, §13.1): its calibrated rrf gate is
//! floored at 0.05, above the largest possible RRF score 3/61, so after the first automatic
//! calibration every lexical-only row is silently dropped. Here:
//! - a row with a cosine (a vector arm ranked it, or the caller backfilled it) passes iff
//!   `cosine ≥ threshold`;
//! - a row without one passes: its admission is the lexical arm's own match predicate
//!   (FTS MATCH or LIKE), and nothing absolute is known about it;
//! - when no row passes but the lexical arms had rows, those rows come back, in fused
//!   order, and the result says `gate_fallback`.

use serde::Serialize;

use super::candidate::FusedCandidate;
use crate::refs::Ref;

/// Gate settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GateConfig {
    /// False turns the gate off: every candidate passes (`CPERSONA_FUSED_GATE_ENABLED`
    /// plays this part in CPersona).
    pub enabled: bool,
    /// The heuristic threshold's value for an empty pool (CPersona: 0.5).
    pub heuristic_max: f64,
    /// How far the heuristic falls as the pool grows (CPersona: 0.3, reaching 0.2).
    pub heuristic_drop: f64,
    /// The pool size at which the heuristic bottoms out (CPersona: 500, i.e. `ln 500`).
    pub heuristic_pool: f64,
    /// Factor applied to the threshold for a `deep` recall (CPersona halves it).
    pub deep_factor: f64,
}

impl Default for GateConfig {
    fn default() -> GateConfig {
        GateConfig {
            enabled: true,
            heuristic_max: 0.5,
            heuristic_drop: 0.3,
            heuristic_pool: 500.0,
            deep_factor: 0.5,
        }
    }
}

/// What the gate knows about this recall besides the candidates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GateInput {
    /// The calibrated cosine threshold for the agent (else the global one), if any.
    pub calibrated: Option<f64>,
    /// Rows in scope (memories + episodes), for the heuristic.
    pub pool: u64,
    /// The caller's `deep` flag.
    pub deep: bool,
}

/// Where the threshold came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdOrigin {
    /// A calibration of this corpus.
    Calibrated,
    /// CPersona's pool-size curve.
    Heuristic,
    /// The gate is disabled.
    Disabled,
}

/// Why a candidate passed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateReason {
    /// Its cosine cleared the threshold.
    CosineAbove,
    /// Its cosine fell below the threshold.
    BelowGate,
    /// No cosine: admitted on the lexical arm's match, never on a rank-relative score.
    LexicalNoCosine,
    /// The gate is off.
    GateDisabled,
    /// Dropped by the gate but returned because nothing passed (see `gate_fallback`).
    Fallback,
}

/// One candidate's verdict, for the trace.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GateDecision {
    /// The row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// The cosine judged, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// True when the row is in the gate's output.
    pub passed: bool,
    /// Why.
    pub reason: GateReason,
}

/// The gate's account of one recall.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateReport {
    /// The cosine threshold applied (after the deep factor).
    pub threshold: f64,
    /// Where it came from.
    pub origin: ThresholdOrigin,
    /// The heuristic value for this pool (reported even when a calibration governs).
    pub heuristic_min: f64,
    /// The pool size used.
    pub pool: u64,
    /// True when nothing passed and the lexical rows were returned instead.
    pub gate_fallback: bool,
    /// One decision per candidate, in fused order.
    pub decisions: Vec<GateDecision>,
}

/// CPersona's pool-size heuristic: `0.5` for an empty pool, else
/// `round(0.5 − 0.3·min(1, ln(pool+1)/ln 500), 4)` (0.2 from 499 rows on).
pub fn heuristic_min_score(config: &GateConfig, pool: u64) -> f64 {
    if pool == 0 {
        return config.heuristic_max;
    }
    let grown = ((pool as f64) + 1.0).ln() / config.heuristic_pool.ln();
    round4(config.heuristic_max - config.heuristic_drop * grown.min(1.0))
}

/// The pool size from which CPersona admits profile rows (`[Profile] …`, appended after
/// fusion by the store): below it an agent has too little history for a profile to help.
pub const PROFILE_MIN_POOL: u64 = 50;

/// Whether the store's profile rows pass the gate (CPersona: `pool ≥ 50`).
pub fn profile_passes(pool: u64) -> bool {
    pool >= PROFILE_MIN_POOL
}

/// The cosine threshold the gate applies for `input` (after the deep factor), and where it
/// came from. The Deliberative loop judges its gate-outcome sufficiency rule against it.
pub fn threshold(config: &GateConfig, input: &GateInput) -> (f64, ThresholdOrigin) {
    let (base, origin) = match (config.enabled, input.calibrated) {
        (false, _) => (0.0, ThresholdOrigin::Disabled),
        (true, Some(calibrated)) if calibrated.is_finite() => {
            (calibrated, ThresholdOrigin::Calibrated)
        }
        (true, _) => (
            heuristic_min_score(config, input.pool),
            ThresholdOrigin::Heuristic,
        ),
    };
    let threshold = if input.deep && config.enabled {
        base * config.deep_factor
    } else {
        base
    };
    (threshold, origin)
}

/// Applies the gate to fused candidates (in fused order) and returns the survivors in the
/// same order with the report. Never reorders.
pub fn apply(
    config: &GateConfig,
    input: &GateInput,
    candidates: Vec<FusedCandidate>,
) -> (Vec<FusedCandidate>, GateReport) {
    let heuristic_min = heuristic_min_score(config, input.pool);
    let (threshold, origin) = threshold(config, input);

    let mut decisions: Vec<GateDecision> = candidates
        .iter()
        .map(|candidate| {
            let (passed, reason) = match (config.enabled, candidate.cosine) {
                (false, _) => (true, GateReason::GateDisabled),
                (true, None) if candidate.has_lexical_vote() => (true, GateReason::LexicalNoCosine),
                // A vector vote without a finite cosine is no evidence at all.
                (true, None) => (false, GateReason::BelowGate),
                (true, Some(cosine)) if cosine >= threshold => (true, GateReason::CosineAbove),
                (true, Some(_)) => (false, GateReason::BelowGate),
            };
            GateDecision {
                r#ref: candidate.r#ref,
                cosine: candidate.cosine,
                passed,
                reason,
            }
        })
        .collect();

    let any_passed = decisions.iter().any(|d| d.passed);
    let gate_fallback = !any_passed && candidates.iter().any(FusedCandidate::has_lexical_vote);
    if gate_fallback {
        for (decision, candidate) in decisions.iter_mut().zip(&candidates) {
            if candidate.has_lexical_vote() {
                decision.passed = true;
                decision.reason = GateReason::Fallback;
            }
        }
    }
    let kept = candidates
        .into_iter()
        .zip(&decisions)
        .filter(|(_, d)| d.passed)
        .map(|(c, _)| c)
        .collect();
    let report = GateReport {
        threshold,
        origin,
        heuristic_min,
        pool: input.pool,
        gate_fallback,
        decisions,
    };
    (kept, report)
}

/// Rounds to 4 decimals, as CPersona reports thresholds.
pub(crate) fn round4(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}
