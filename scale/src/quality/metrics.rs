//! The ranking metrics, as cpersona-2.5 §11.1 defines them: NDCG@k with binary gains
//! (ideal DCG over `min(|relevant|, k)` positions) and Recall@k, each in [0, 1] per query.
//! Pure functions of a ranked id list and a relevant set; they must never reorder the list.

use std::collections::HashSet;

/// NDCG@k with binary gains: `Σ_{i<k, doc_i relevant} 1/log2(i+2)` over the ideal
/// `Σ_{i<min(|rel|,k)} 1/log2(i+2)`. A repeated id counts once (its first rank). Zero when
/// `relevant` is empty.
pub fn ndcg_at_k(ranked: &[&str], relevant: &HashSet<&str>, k: usize) -> f64 {
    let ideal_n = relevant.len().min(k);
    if ideal_n == 0 {
        return 0.0;
    }
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let mut seen = HashSet::new();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, id)| relevant.contains(*id) && seen.insert(**id))
        .map(|(i, _)| gain(i))
        // A fold from +0.0: `sum` of nothing is -0.0, which prints as "-0.00".
        .fold(0.0, |acc, g| acc + g);
    let idcg: f64 = (0..ideal_n).map(gain).sum();
    dcg / idcg
}

/// Recall@k: the share of relevant ids found in the first `k` ranked ids. Zero when
/// `relevant` is empty.
pub fn recall_at_k(ranked: &[&str], relevant: &HashSet<&str>, k: usize) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let found: HashSet<&str> = ranked
        .iter()
        .take(k)
        .copied()
        .filter(|id| relevant.contains(id))
        .collect();
    found.len() as f64 / relevant.len() as f64
}

/// One query's scores.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryScore {
    /// NDCG@10.
    pub ndcg10: f64,
    /// Recall@5.
    pub recall5: f64,
    /// Recall@10.
    pub recall10: f64,
}

impl QueryScore {
    /// Scores one ranked list.
    pub fn of(ranked: &[&str], relevant: &[String]) -> QueryScore {
        let rel: HashSet<&str> = relevant.iter().map(String::as_str).collect();
        QueryScore {
            ndcg10: ndcg_at_k(ranked, &rel, 10),
            recall5: recall_at_k(ranked, &rel, 5),
            recall10: recall_at_k(ranked, &rel, 10),
        }
    }

    /// The mean of `scores` (zeros when empty).
    pub fn mean(scores: &[QueryScore]) -> QueryScore {
        if scores.is_empty() {
            return QueryScore::default();
        }
        let n = scores.len() as f64;
        QueryScore {
            ndcg10: scores.iter().map(|s| s.ndcg10).sum::<f64>() / n,
            recall5: scores.iter().map(|s| s.recall5).sum::<f64>() / n,
            recall10: scores.iter().map(|s| s.recall10).sum::<f64>() / n,
        }
    }
}
