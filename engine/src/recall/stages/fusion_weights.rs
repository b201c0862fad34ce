//! Adaptive fusion weights (issue 23, design §5): per query, how much each lexical arm is
//! trusted against the vector arm, estimated from the arms' own scores and nothing else.
//!
//! **Why.** Fixed RRF weights treat every arm as equally reliable for every query. With a weak
//! embedder the lexical arms rescue whole task families; with a strong one their votes push
//! rows the embedder ranked right below rows that merely share words (`scale/RESULTS.md`,
//! issue 23's baseline: e5 on man pages loses 2 points to its own raw ranking). The fusion
//! cannot see which embedder it has, but each query shows how decisive each arm was.
//!
//! **The estimate.** An arm's *standout* is how far its best row sits above the rest of its
//! own list, in that list's standard deviations: `(s₁ − mean) / sd` over the finite raw
//! scores of the list as fused (cosines for the vector arm, `-bm25` for FTS). It is
//! dimensionless, so a cosine list and a bm25 list can be compared; it needs no labels, no
//! calibration sample and no store read (a query-performance predictor in the family of
//! Zhou & Croft's WIG and Shtok et al.'s NQC, taken per arm).
//!
//! **The rule.** A lexical arm's weight is its configured weight times
//! `clamp(standout_lexical / standout_vector, floor, 1)`: an arm less decisive than the
//! embedder for this query speaks more quietly, never below `floor`; a lexical arm at least
//! as decisive keeps today's weight (it is never raised, so a store where the lexical arms
//! win keeps what it has). RRF's order depends only on the weights' ratios, so the vector
//! weights are left as configured. When either standout cannot be judged (fewer than
//! `min_scores` finite scores, or a flat list) the arm keeps its weight and the reason says
//! so. Pure; the chosen weights and their reasons go into the trace, and a replay can turn
//! the rule off (`adaptive=off`) or set the weights by hand.

use serde::{Deserialize, Serialize};

use super::candidate::{Arm, ArmList};
use super::fusion::ArmWeights;

/// The adaptive rule's constants (`None` in [`super::RecallConfig::adaptive`] = fixed weights).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdaptiveFusion {
    /// The least factor a lexical arm's weight is multiplied by.
    pub floor: f64,
    /// The fewest finite scores a list needs before its standout is judged.
    pub min_scores: usize,
}

impl AdaptiveFusion {
    /// The floor: see `scale/RESULTS.md` (issue 23) for the values tried.
    pub const FLOOR: f64 = 0.25;
    /// Five scores: below that a mean and a deviation say little.
    pub const MIN_SCORES: usize = 5;
}

impl Default for AdaptiveFusion {
    fn default() -> AdaptiveFusion {
        AdaptiveFusion {
            floor: AdaptiveFusion::FLOOR,
            min_scores: AdaptiveFusion::MIN_SCORES,
        }
    }
}

/// What the rule chose for one lexical arm, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArmChoice {
    /// The lexical arm.
    pub arm: Arm,
    /// Its standout, when it could be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub standout: Option<f64>,
    /// The factor applied to its configured weight.
    pub factor: f64,
    /// The weight fusion used.
    pub weight: f64,
    /// Why, in words.
    pub reason: String,
}

/// The weights fusion used for one query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChosenWeights {
    /// The vector arm's standout (the near list's; the far list's when the near one is
    /// empty), when it could be judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_standout: Option<f64>,
    /// One entry per lexical arm that returned rows, in fusion order.
    pub lexical: Vec<ArmChoice>,
    /// The weights handed to fusion (`lexical` says them in full, so they are not written
    /// twice).
    #[serde(skip)]
    pub weights: ArmWeights,
}

/// How far the list's best finite score sits above the list's mean, in its standard
/// deviations; `None` with fewer than `min_scores` finite scores or a flat list.
pub fn standout(list: &ArmList, min_scores: usize) -> Option<f64> {
    let scores: Vec<f64> = list
        .hits
        .iter()
        .filter_map(|h| h.raw)
        .filter(|v| v.is_finite())
        .collect();
    if scores.len() < min_scores.max(2) {
        return None;
    }
    let n = scores.len() as f64;
    let mean = scores.iter().sum::<f64>() / n;
    let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
    let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sd = var.sqrt();
    (sd > 1e-12).then(|| (best - mean) / sd)
}

/// The weights for one query's lists (see the module doc).
pub fn choose(lists: &[ArmList], base: &ArmWeights, rule: &AdaptiveFusion) -> ChosenWeights {
    let list_of = |arm: Arm| lists.iter().find(|l| l.arm == arm && !l.hits.is_empty());
    let vector_standout = list_of(Arm::VectorNear)
        .or_else(|| list_of(Arm::VectorFar))
        .and_then(|l| standout(l, rule.min_scores));
    let mut weights = *base;
    let mut lexical = Vec::new();
    for arm in [Arm::EpisodeFts, Arm::MemoryKeyword] {
        let Some(list) = list_of(arm) else { continue };
        let own = standout(list, rule.min_scores);
        let (factor, reason) = match (own, vector_standout) {
            (Some(l), Some(v)) if v > 0.0 && l < v => (
                (l / v).max(rule.floor),
                format!(
                    "less decisive than the vector arm (standout {l:.2} vs {v:.2}): \
                     weight x{:.2}",
                    (l / v).max(rule.floor)
                ),
            ),
            (Some(l), Some(v)) => (
                1.0,
                format!("as decisive as the vector arm (standout {l:.2} vs {v:.2}): weight kept"),
            ),
            (None, _) => (
                1.0,
                format!(
                    "too few scores to judge ({} rows with a score, {} needed): weight kept",
                    list.hits.iter().filter(|h| h.raw.is_some()).count(),
                    rule.min_scores
                ),
            ),
            (Some(_), None) => (
                1.0,
                "the vector arm could not be judged: weight kept".to_owned(),
            ),
        };
        let weight = base.of(arm) * factor;
        match arm {
            Arm::EpisodeFts => weights.episode_fts = weight,
            _ => weights.memory_keyword = weight,
        }
        lexical.push(ArmChoice {
            arm,
            standout: own,
            factor,
            weight,
            reason,
        });
    }
    ChosenWeights {
        vector_standout,
        lexical,
        weights,
    }
}
