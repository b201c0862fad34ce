//! The propagation seat (CPersona 2.6's `propagation-v1`, off by default): the same recall
//! ranked again deeper; among the rows of that ranking not already in the answer, the one
//! with the best `0.65/(60 + fused_rank) + 0.35/(60 + cosine_rank)` takes one held place.
//! `fused_rank` is the 1-based position among those candidates, `cosine_rank` the 1-based
//! rank by closeness to the best row of the window (a candidate without a vector ranks
//! last, stably). Pure: the caller runs the deeper recall and reads the vectors. It never
//! displaces a row, and takes at most [`SEATS`] place.

use crate::refs::Ref;

/// The policy name reported with the seat.
pub const POLICY: &str = "propagation-v1";
/// Recall Depth of the deeper ranking (CPersona's `DEPTH`).
pub const DEPTH: usize = 100;
/// Weight of the closeness rank (CPersona's `COSINE_WEIGHT`); the fused rank takes the rest.
pub const COSINE_WEIGHT: f64 = 0.35;
/// The rank constant of both terms.
pub const RANK_CONSTANT: f64 = 60.0;
/// Held places the seat takes at most.
pub const SEATS: usize = 1;

/// The row that takes the seat.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seat {
    /// The row.
    pub r#ref: Ref,
    /// Its index in the deeper ranking as handed in.
    pub index: usize,
    /// 1-based rank among the candidates (deeper order, held rows skipped).
    pub fused_rank: usize,
    /// 1-based rank by closeness to the anchor.
    pub cosine_rank: usize,
    /// `0.65/(60 + fused_rank) + 0.35/(60 + cosine_rank)`.
    pub score: f64,
}

/// The seat's score for one pair of ranks.
pub fn score(fused_rank: usize, cosine_rank: usize) -> f64 {
    (1.0 - COSINE_WEIGHT) / (RANK_CONSTANT + fused_rank as f64)
        + COSINE_WEIGHT / (RANK_CONSTANT + cosine_rank as f64)
}

/// Picks the seat. `deeper` is the deeper ranking best first with each row's cosine to the
/// anchor (`None` = no usable vector, ranked below every vector); `held(r)` says a row is
/// already in the answer. Ties keep the earlier row (stable), so the same lists always give
/// the same seat.
pub fn seat(deeper: &[(Ref, Option<f64>)], held: impl Fn(Ref) -> bool) -> Option<Seat> {
    let candidates: Vec<(usize, Ref, Option<f64>)> = deeper
        .iter()
        .enumerate()
        .filter(|(_, (r, _))| !held(*r))
        .map(|(i, (r, c))| (i, *r, *c))
        .collect();
    // Closeness order: higher cosine first, no vector last, then candidate order.
    let mut by_cosine: Vec<usize> = (0..candidates.len()).collect();
    by_cosine.sort_by(|&a, &b| {
        let key = |i: usize| candidates[i].2.filter(|c| c.is_finite());
        match (key(a), key(b)) {
            (Some(x), Some(y)) => y.total_cmp(&x),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
        .then(a.cmp(&b))
    });
    let mut cosine_rank = vec![0; candidates.len()];
    for (rank, &i) in by_cosine.iter().enumerate() {
        cosine_rank[i] = rank + 1;
    }
    let mut best: Option<Seat> = None;
    for (position, (index, r, _)) in candidates.iter().enumerate() {
        let s = score(position + 1, cosine_rank[position]);
        if best.is_none_or(|b| s > b.score) {
            best = Some(Seat {
                r#ref: *r,
                index: *index,
                fused_rank: position + 1,
                cosine_rank: cosine_rank[position],
                score: s,
            });
        }
    }
    best
}

/// Cosine of two vectors (0 when either has no length).
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 || !dot.is_finite() {
        return None;
    }
    Some(dot / (na.sqrt() * nb.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(id: i64) -> Ref {
        Ref::mem(id)
    }

    #[test]
    fn formula_matches_the_shipped_constants() {
        assert!((score(1, 1) - (0.65 / 61.0 + 0.35 / 61.0)).abs() < 1e-15);
        assert!((score(3, 7) - (0.65 / 63.0 + 0.35 / 67.0)).abs() < 1e-15);
    }

    #[test]
    fn held_rows_are_skipped_and_ranks_are_among_candidates() {
        // mem:1 and mem:2 are held; candidates 3,4,5 in that order.
        let deeper = [
            (m(1), Some(0.99)),
            (m(2), Some(0.98)),
            (m(3), Some(0.10)),
            (m(4), Some(0.20)),
            (m(5), Some(0.90)),
        ];
        let s = seat(&deeper, |r| r.id <= 2).expect("a seat");
        // m3: fused 1, cosine 3 → 0.65/61 + 0.35/63 = 0.016211
        // m5: fused 3, cosine 1 → 0.65/63 + 0.35/61 = 0.016055
        assert_eq!(s.r#ref, m(3));
        assert_eq!((s.fused_rank, s.cosine_rank, s.index), (1, 3, 2));
    }

    #[test]
    fn closeness_can_win_over_fused_order() {
        // Far down the deeper list the fused term flattens and closeness decides.
        let mut deeper: Vec<(Ref, Option<f64>)> = (1..=40).map(|i| (m(i), Some(0.0))).collect();
        deeper[0].1 = None; // no vector: ranks last by closeness
        deeper[39].1 = Some(0.9);
        let s = seat(&deeper, |_| false).expect("a seat");
        // m1: fused 1, cosine 40 → 0.65/61 + 0.35/100 = 0.014156
        // m2: fused 2, cosine 2 → 0.65/62 + 0.35/62 = 0.016129
        // m40: fused 40, cosine 1 → 0.65/100 + 0.35/61 = 0.012238
        assert_eq!(s.r#ref, m(2));
        assert_eq!((s.fused_rank, s.cosine_rank), (2, 2));
    }

    #[test]
    fn ties_keep_the_earlier_row_and_empty_gives_none() {
        let deeper = [(m(7), None), (m(8), None)];
        let s = seat(&deeper, |_| false).expect("a seat");
        assert_eq!(s.r#ref, m(7));
        assert_eq!(seat(&deeper, |_| true), None);
        assert_eq!(seat(&[], |_| false), None);
    }

    #[test]
    fn cosine_refuses_mismatched_or_zero_vectors() {
        assert_eq!(cosine(&[1.0, 0.0], &[1.0]), None);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), None);
        let c = cosine(&[1.0, 1.0], &[1.0, 0.0]).expect("cosine");
        assert!((c - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
    }
}
