//! Fusion of the arms' ranked lists into one candidate list: `rrf` and `rsf` exactly as
//! CPersona 2.6 computes them, with a written total order. Pure over the lists it is given;
//! it never drops a candidate (the gate does that) and never reads a limit.
//!
//! **Order (total, deterministic):** fused score descending (`f64::total_cmp`), then the
//! first arm in fusion order that ranked the row and its rank there (CPersona sorts with a
//! stable sort over first insertion: near vector, far vector, episode FTS, memory keyword,
//! each in rank order), then [`Ref`] ascending (memories before episodes, then id). The last
//! key only matters for malformed input (one arm giving two rows the same rank).

use std::collections::HashMap;

use serde::Serialize;

use super::candidate::{Arm, ArmList, FusedCandidate, Vote};
use crate::refs::Ref;

/// Which fusion runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FusionMode {
    /// Reciprocal rank fusion (CPersona's default).
    #[default]
    Rrf,
    /// Relative score fusion: per-arm min-max of raw scores.
    Rsf,
}

/// A weight per arm. CPersona weighs every arm 1 except the far vector list
/// (`CPERSONA_PRIOR_FAR_WEIGHT`, default 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ArmWeights {
    /// Near vector list.
    pub vector_near: f64,
    /// Far vector list.
    pub vector_far: f64,
    /// Episode FTS.
    pub episode_fts: f64,
    /// Memory FTS / keyword.
    pub memory_keyword: f64,
}

impl Default for ArmWeights {
    fn default() -> ArmWeights {
        ArmWeights {
            vector_near: 1.0,
            vector_far: 1.0,
            episode_fts: 1.0,
            memory_keyword: 1.0,
        }
    }
}

impl ArmWeights {
    /// The weight of one arm.
    pub fn of(&self, arm: Arm) -> f64 {
        match arm {
            Arm::VectorNear => self.vector_near,
            Arm::VectorFar => self.vector_far,
            Arm::EpisodeFts => self.episode_fts,
            Arm::MemoryKeyword => self.memory_keyword,
        }
    }
}

/// Fuses with the chosen mode.
pub fn fuse(
    mode: FusionMode,
    lists: &[ArmList],
    weights: &ArmWeights,
    rrf_k: f64,
) -> Vec<FusedCandidate> {
    match mode {
        FusionMode::Rrf => rrf(lists, weights, rrf_k),
        FusionMode::Rsf => rsf(lists, weights),
    }
}

/// Reciprocal rank fusion: `score(d) = Σ_arm w_arm / (k + rank_arm(d) + 1)` with 0-based
/// ranks. The largest possible score with unit weights and four lists is `4/(k+1)`; CPersona
/// without a far list reaches `3/(k+1)`.
pub fn rrf(lists: &[ArmList], weights: &ArmWeights, k: f64) -> Vec<FusedCandidate> {
    accumulate(lists, |arm, hit| {
        let rank = hit.rank as f64;
        weights.of(arm) / (k + rank + 1.0)
    })
}

/// Relative score fusion: each arm's raw scores min-max normalised over that arm's list,
/// weighted, summed over arms and divided by the number of arms that returned a row.
///
/// Per arm, exactly as CPersona: when every raw score is none, every row gets 1.0; when the
/// largest is not above the smallest (one row, or all equal), every row gets 1.0; otherwise
/// `(s − lo)/(hi − lo)`, and a row without a raw score gets 0.0. The top of each arm is
/// always 1.0 and its bottom 0.0: the score is relative to the query, never absolute.
pub fn rsf(lists: &[ArmList], weights: &ArmWeights) -> Vec<FusedCandidate> {
    let mut bounds: HashMap<Arm, Option<(f64, f64)>> = HashMap::new();
    let mut n_active = 0usize;
    for list in lists {
        if list.hits.is_empty() {
            continue;
        }
        n_active += 1;
        let values = list
            .hits
            .iter()
            .filter_map(|h| h.raw)
            .filter(|v| v.is_finite());
        let lo_hi = values.fold(None, |acc: Option<(f64, f64)>, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
        });
        bounds.insert(list.arm, lo_hi);
    }
    let n_active = n_active.max(1) as f64;
    accumulate(lists, |arm, hit| {
        let norm = match bounds.get(&arm).copied().flatten() {
            None => 1.0,
            Some((lo, hi)) if hi <= lo => 1.0,
            Some((lo, hi)) => match hit.raw.filter(|v| v.is_finite()) {
                Some(v) => (v - lo) / (hi - lo),
                None => 0.0,
            },
        };
        weights.of(arm) * norm / n_active
    })
}

/// The total order of fused candidates (see the module doc).
pub fn fused_order(a: &FusedCandidate, b: &FusedCandidate) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.first_seen().cmp(&b.first_seen()))
        .then_with(|| a.r#ref.cmp(&b.r#ref))
}

/// Visits the lists (one per arm) in fusion order, whatever order they were passed in, each in rank
/// order, summing each arm's contribution per row in that order, and sorts by
/// [`fused_order`]. A row an arm lists twice keeps its best rank in that arm.
fn accumulate(
    lists: &[ArmList],
    contribution: impl Fn(Arm, &super::candidate::ArmHit) -> f64,
) -> Vec<FusedCandidate> {
    let mut ordered: Vec<&ArmList> = lists.iter().collect();
    ordered.sort_by_key(|list| list.arm.order());
    let mut index: HashMap<Ref, usize> = HashMap::new();
    let mut out: Vec<FusedCandidate> = Vec::new();
    for list in ordered {
        let mut hits: Vec<&super::candidate::ArmHit> = list.hits.iter().collect();
        hits.sort_by(|a, b| a.rank.cmp(&b.rank).then(a.r#ref.cmp(&b.r#ref)));
        for hit in hits {
            let slot = *index.entry(hit.r#ref).or_insert_with(|| {
                out.push(FusedCandidate {
                    r#ref: hit.r#ref,
                    score: 0.0,
                    votes: Vec::new(),
                    cosine: None,
                    cosine_backfilled: false,
                });
                out.len() - 1
            });
            let candidate = &mut out[slot];
            if candidate.votes.iter().any(|v| v.arm == list.arm) {
                continue;
            }
            let value = contribution(list.arm, hit);
            candidate.score += value;
            candidate.votes.push(Vote {
                arm: list.arm,
                rank: hit.rank,
                raw: hit.raw,
                contribution: value,
            });
            if list.arm.is_vector() && candidate.cosine.is_none() {
                candidate.cosine = hit.raw.filter(|v| v.is_finite());
            }
        }
    }
    out.sort_by(fused_order);
    out
}
