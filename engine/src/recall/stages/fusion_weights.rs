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
//! **The rule.** A lexical arm whose list filled the Recall Depth matched more rows than it
//! could rank: its evidence is diffuse (common words), and then how decisive it was decides
//! how much it counts. Its weight is its configured weight times
//! `clamp((standout_lexical / standout_vector)^power, floor, 1)`. A lexical arm that did not
//! fill the depth matched few rows and its votes are specific (a name, a rare term): it keeps
//! its weight, and so does one at least as decisive as the vector arm (a weight is never
//! raised). RRF's order depends only on the weights' ratios, so the vector weights are left
//! as configured. When either standout cannot be judged (fewer than `min_scores` finite
//! scores, or a flat list) the arm keeps its weight and the reason says so.
//!
//! **Why this form** (`scale/RESULTS.md`, issue 23, chosen on the validation set from
//! frozen-pool replays of the development set): weighing every lexical arm by the ratio
//! repaired the man pages (+1.2 to +2.7 points with MiniLM and e5) but cost LoCoMo 0.6 to
//! 1.6 points with the hash embedder and MiniLM, where the lexical arm's few, specific
//! matches are what rescues a weak embedder; limited to lists that filled the depth, LoCoMo
//! and TMD move by less than 0.1 point and the man pages keep most of the gain.
//!
//! **The reservation.** When the vector arm's standout reaches `reserve_standout` (its first
//! row sits that many standard deviations above its own list), that row leads the fused list
//! whatever the votes: RRF sums votes, so any row two arms list beats a row one arm is sure
//! of, and with a strong embedder that row is usually the answer. The row keeps its fused
//! score (the list is then not sorted by score at that one place) and its message says
//! `admission: "reservation"`. 4.5 was chosen on both sets: 3.5 and 4.0 cost LoCoMo with
//! the hash embedder more than half a point (the hash vectors' outliers are not answers),
//! 5.0 left most of the man pages' gain (`scale/RESULTS.md`).
//!
//! Pure; the chosen weights and their reasons go into the trace, and a replay can turn the
//! rule off (`adaptive=off`) or set the weights by hand.

use serde::{Deserialize, Serialize};

use super::candidate::{Arm, ArmList, FusedCandidate};
use super::fusion::ArmWeights;
use crate::refs::Ref;

/// The adaptive rule's constants (`None` in [`super::RecallConfig::adaptive`] = fixed weights).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdaptiveFusion {
    /// The least factor a lexical arm's weight is multiplied by.
    pub floor: f64,
    /// The power the standout ratio is raised to.
    pub power: f64,
    /// The fewest finite scores a list needs before its standout is judged.
    pub min_scores: usize,
    /// The vector standout at which the vector arm's first row leads the fused list
    /// (infinite: never).
    pub reserve_standout: f64,
}

impl AdaptiveFusion {
    /// The floor: none (`scale/RESULTS.md`, issue 23: with the power below, a floor of 0.25
    /// and of 0 differed on no task by more than 0.05 point).
    pub const FLOOR: f64 = 0.0;
    /// The power: 2, chosen on the validation set over 1 and 3 (`scale/RESULTS.md`).
    pub const POWER: f64 = 2.0;
    /// Five scores: below that a mean and a deviation say little.
    pub const MIN_SCORES: usize = 5;
    /// The reservation's standout (see the module doc).
    pub const RESERVE_STANDOUT: f64 = 4.5;
}

impl Default for AdaptiveFusion {
    fn default() -> AdaptiveFusion {
        AdaptiveFusion {
            floor: AdaptiveFusion::FLOOR,
            power: AdaptiveFusion::POWER,
            min_scores: AdaptiveFusion::MIN_SCORES,
            reserve_standout: AdaptiveFusion::RESERVE_STANDOUT,
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
    /// The vector arm's first row when the reservation put it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<Ref>,
}

impl ChosenWeights {
    /// The weights fusion runs with: `base` with each judged lexical arm's chosen weight.
    pub fn applied_to(&self, base: &ArmWeights) -> ArmWeights {
        let mut weights = *base;
        for choice in &self.lexical {
            match choice.arm {
                Arm::EpisodeFts => weights.episode_fts = choice.weight,
                Arm::MemoryKeyword => weights.memory_keyword = choice.weight,
                Arm::VectorNear | Arm::VectorFar => {}
            }
        }
        weights
    }
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

/// The weights for one query's lists, each cut to `depth` hits (see the module doc).
pub fn choose(
    lists: &[ArmList],
    base: &ArmWeights,
    rule: &AdaptiveFusion,
    depth: usize,
) -> ChosenWeights {
    let list_of = |arm: Arm| lists.iter().find(|l| l.arm == arm && !l.hits.is_empty());
    let vector_standout = list_of(Arm::VectorNear)
        .or_else(|| list_of(Arm::VectorFar))
        .and_then(|l| standout(l, rule.min_scores));
    let mut lexical = Vec::new();
    for arm in [Arm::EpisodeFts, Arm::MemoryKeyword] {
        let Some(list) = list_of(arm) else { continue };
        let own = standout(list, rule.min_scores);
        let (factor, reason) = match (own, vector_standout) {
            _ if list.hits.len() < depth => (
                1.0,
                format!(
                    "specific: {} matches, under the depth of {depth}: weight kept",
                    list.hits.len()
                ),
            ),
            (Some(l), Some(v)) if v > 0.0 && l < v => {
                let factor = (l / v).powf(rule.power).clamp(rule.floor, 1.0);
                (
                    factor,
                    format!(
                        "filled the depth of {depth} and less decisive than the vector arm \
                         (standout {l:.2} vs {v:.2}): weight x{factor:.2}"
                    ),
                )
            }
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
        lexical.push(ArmChoice {
            arm,
            standout: own,
            factor,
            weight: base.of(arm) * factor,
            reason,
        });
    }
    let reserved = vector_standout
        .filter(|z| *z >= rule.reserve_standout)
        .and_then(|_| list_of(Arm::VectorNear).or_else(|| list_of(Arm::VectorFar)))
        .and_then(|l| l.hits.iter().min_by_key(|h| (h.rank, h.r#ref)))
        .map(|h| h.r#ref);
    ChosenWeights {
        vector_standout,
        lexical,
        reserved,
    }
}

/// Puts the reserved row first (its score unchanged); a no-op without one.
pub fn reserve(fused: &mut [FusedCandidate], chosen: &ChosenWeights) {
    let Some(reserved) = chosen.reserved else {
        return;
    };
    if let Some(at) = fused.iter().position(|c| c.r#ref == reserved) {
        fused[..=at].rotate_right(1);
    }
}
