//! The one prior function of design §3: `p(row)`, a weight on a row's vote as a function of
//! its scan position, its age and the caller's declared time cue. The scan window, the reach,
//! the far-list length, the priced far vote, recency weighting and the time cue are each one
//! configuration of [`Prior`] (see the constructors), with the identity at both ends:
//! [`Prior::IDENTITY`] gives `p = 1` for every row, and applying it changes no order.
//!
//! What a prior may do: re-order rows that were admitted. What it must never do: admit or
//! remove a row (shipped provider contract `check_reorder`), or reach the gate: the gate
//! judges cosines only. [`apply`] therefore returns a permutation of its input.

use serde::{Deserialize, Serialize};

use super::cue::Period;

/// RRF's rank constant as the shipped cue arm uses it (`RANK_CONSTANT = 61`): the cue rank's
/// strength is `61 / (61 + rank)`, 1 for the cue's best row.
pub const CUE_RANK_CONSTANT: f64 = 61.0;

/// What the prior knows about one row. `None` means unknown, which never lowers a weight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PriorRow {
    /// Position in its table's scan order (newest first), 0-based.
    pub scan_pos: Option<usize>,
    /// Rank among the rows beyond the scan window (the far list), 0-based.
    pub far_rank: Option<usize>,
    /// Age in hours at the anchor (now or the newest row in scope).
    pub age_h: Option<f64>,
    /// The row's event time, UTC ms.
    pub at_ms: Option<i64>,
    /// Rank within the cue's period (by closeness to the query), 0-based.
    pub cue_rank: Option<usize>,
    /// True when cue propagation named the row a context cue (it shares a strong hit's
    /// source or episode, `recall::cue_spread`).
    #[serde(default)]
    pub context: bool,
}

/// What happens past the scan window.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Beyond {
    /// Rows with `scan_pos < reach` count; `None` = no reach bound.
    pub reach: Option<usize>,
    /// Only the first `far_len` far-list rows count; `None` = no length bound.
    pub far_len: Option<usize>,
    /// The weight of a counted row beyond the window (1 = full vote, the priced vote < 1).
    pub weight: f64,
}

/// The time-cue part: a row inside the envelope has strength `61/(61 + cue_rank)` and
/// `p_cue = 1 + strength`; in an order it moves up at most `max_up × strength` places.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CuePrior {
    /// The envelope of the loop's final stage.
    pub envelope: Period,
    /// Most places a lifted row may move up (shipped `LIFT[confidence]`).
    pub max_up: usize,
    /// The cue's depth: a row inside the envelope without a cue rank counts as ranked here.
    pub depth: usize,
    /// Places a context-cued row moves up beside its lift (0 until cue propagation sets it).
    #[serde(default)]
    pub context_up: usize,
}

/// `p(row)` as one value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Prior {
    /// The scan window; `None` = every position is inside.
    pub window: Option<usize>,
    /// Past the window; `None` = weight 0 there (the window alone).
    pub beyond: Option<Beyond>,
    /// Recency: `p_age = max(floor, 1/(1 + age_h × rate))`; rate 0 = identity.
    pub age_rate_per_h: f64,
    /// Recency floor (shipped `PRIOR_AGE_FLOOR = 0.3`).
    pub age_floor: f64,
    /// When set, age lifts a row at most this many places (key `i − max_up × age_strength`,
    /// the cue's bounded move) instead of weighing its score; `None` = the weighted sort.
    #[serde(default)]
    pub age_max_up: Option<usize>,
    /// The time cue.
    pub cue: Option<CuePrior>,
}

impl Prior {
    /// `p = 1` everywhere.
    pub const IDENTITY: Prior = Prior {
        window: None,
        beyond: None,
        age_rate_per_h: 0.0,
        age_floor: 0.3,
        age_max_up: None,
        cue: None,
    };

    /// 1 inside the scan window, 0 beyond (today's default).
    pub fn window(window: usize) -> Prior {
        Prior {
            window: Some(window),
            ..Prior::IDENTITY
        }
    }

    /// 1 inside, 1 in `[window, reach)`, 0 beyond (the reach setting).
    pub fn reach(window: usize, reach: usize) -> Prior {
        Prior::priced_far(window, reach, 1.0)
    }

    /// 1 inside, 1 for the first `n` far rows, 0 for the rest (the far-list length).
    pub fn far_list(window: usize, n: usize) -> Prior {
        Prior {
            window: Some(window),
            beyond: Some(Beyond {
                reach: None,
                far_len: Some(n),
                weight: 1.0,
            }),
            ..Prior::IDENTITY
        }
    }

    /// 1 inside, `w` in `[window, reach)`, 0 beyond (the priced far vote).
    pub fn priced_far(window: usize, reach: usize, weight: f64) -> Prior {
        Prior {
            window: Some(window),
            beyond: Some(Beyond {
                reach: Some(reach),
                far_len: None,
                weight,
            }),
            ..Prior::IDENTITY
        }
    }

    /// A smooth function of age (recency-weighted search).
    pub fn recency(rate_per_h: f64, floor: f64) -> Prior {
        Prior {
            age_rate_per_h: rate_per_h,
            age_floor: floor,
            ..Prior::IDENTITY
        }
    }

    /// Recency as a bounded move (free recall's `CPERSONA_PRIOR_AGE_RATE`): a row moves up at
    /// most `max_up × age_strength` places, so a fresh row can pass at most `max_up` older
    /// ones and no score gap is ever multiplied away.
    pub fn recency_bounded(rate_per_h: f64, floor: f64, max_up: usize) -> Prior {
        Prior {
            age_max_up: Some(max_up),
            ..Prior::recency(rate_per_h, floor)
        }
    }

    /// A function of age and the declared time cue (Cued Recall).
    pub fn cued(cue: CuePrior) -> Prior {
        Prior {
            cue: Some(cue),
            ..Prior::IDENTITY
        }
    }

    /// True when `p = 1` for every row.
    pub fn is_identity(&self) -> bool {
        self.window.is_none() && self.age_rate_per_h == 0.0 && self.cue.is_none()
    }

    /// The position factor.
    pub fn p_position(&self, row: &PriorRow) -> f64 {
        let (Some(window), Some(pos)) = (self.window, row.scan_pos) else {
            return 1.0;
        };
        if pos < window {
            return 1.0;
        }
        match self.beyond {
            None => 0.0,
            Some(b) => {
                let reached = b.reach.is_none_or(|r| pos < r);
                let listed = b
                    .far_len
                    .is_none_or(|n| row.far_rank.is_some_and(|k| k < n));
                if reached && listed { b.weight } else { 0.0 }
            }
        }
    }

    /// The age factor.
    pub fn p_age(&self, row: &PriorRow) -> f64 {
        match row.age_h {
            Some(age) if self.age_rate_per_h > 0.0 => {
                (1.0 / (1.0 + age.max(0.0) * self.age_rate_per_h)).max(self.age_floor)
            }
            _ => 1.0,
        }
    }

    /// Recency's strength for a row in `[0, 1]`: `(p_age − floor) / (1 − floor)`, 1 for a
    /// row at the anchor (or undated: unknown never lowers), 0 once the floor holds.
    pub fn age_strength(&self, row: &PriorRow) -> f64 {
        if self.age_rate_per_h <= 0.0 || row.age_h.is_none() {
            return 1.0;
        }
        if self.age_floor >= 1.0 {
            return 0.0;
        }
        ((self.p_age(row) - self.age_floor) / (1.0 - self.age_floor)).clamp(0.0, 1.0)
    }

    /// The cue's strength for a row in `[0, 1]`: `61/(61 + cue_rank)` inside the envelope,
    /// 0 outside or undated.
    pub fn cue_strength(&self, row: &PriorRow) -> f64 {
        let (Some(cue), Some(at)) = (self.cue, row.at_ms) else {
            return 0.0;
        };
        if !cue.envelope.contains(at) {
            return 0.0;
        }
        let rank = row.cue_rank.unwrap_or(cue.depth) as f64;
        CUE_RANK_CONSTANT / (CUE_RANK_CONSTANT + rank)
    }

    /// The cue factor, `1 + strength`.
    pub fn p_cue(&self, row: &PriorRow) -> f64 {
        1.0 + self.cue_strength(row)
    }

    /// `p(row) = p_position × p_age × p_cue`.
    pub fn p(&self, row: &PriorRow) -> f64 {
        self.p_position(row) * self.p_age(row) * self.p_cue(row)
    }
}

/// Re-orders a best-first list (`scores[i]` the fused score of the row at position `i`) by
/// the prior and returns the permutation (new order as old indices). Position and age weigh
/// the score multiplicatively (stable), except that a bounded recency (`age_max_up`) instead
/// lifts each row by at most `age_max_up × age_strength` places (ties: the fresher row, then
/// the older position, so the freshest row moves exactly `age_max_up` places when it can);
/// the cue then lifts each row at most `max_up` places,
/// its key `i − max_up × strength − context_up × [context]` (ties: lifted first, then the
/// older position), so the cue's best row moves exactly `max_up` places when possible and no
/// row moves more than `max_up + context_up`. A permutation: never admits, never removes.
pub fn apply(prior: &Prior, rows: &[PriorRow], scores: &[f64]) -> Vec<usize> {
    debug_assert_eq!(rows.len(), scores.len());
    let mut order: Vec<usize> = (0..rows.len()).collect();
    if prior.is_identity() {
        return order;
    }
    let weigh_age = prior.age_rate_per_h > 0.0 && prior.age_max_up.is_none();
    if prior.window.is_some() || weigh_age {
        let weighted: Vec<f64> = rows
            .iter()
            .zip(scores)
            .map(|(row, s)| {
                let age = if weigh_age { prior.p_age(row) } else { 1.0 };
                s * prior.p_position(row) * age
            })
            .collect();
        order.sort_by(|&a, &b| weighted[b].total_cmp(&weighted[a]).then(a.cmp(&b)));
    }
    if let (Some(max_up), true) = (prior.age_max_up, prior.age_rate_per_h > 0.0) {
        let strength: Vec<f64> = order
            .iter()
            .map(|&old| prior.age_strength(&rows[old]))
            .collect();
        let key = |pos: usize| pos as f64 - max_up as f64 * strength[pos];
        let mut by: Vec<usize> = (0..order.len()).collect();
        by.sort_by(|&a, &b| {
            key(a)
                .total_cmp(&key(b))
                .then(strength[b].total_cmp(&strength[a]))
                .then(a.cmp(&b))
        });
        order = by.into_iter().map(|pos| order[pos]).collect();
    }
    if let Some(cue) = prior.cue {
        let keyed: Vec<(f64, bool, usize)> = order
            .iter()
            .enumerate()
            .map(|(pos, &old)| {
                let s = prior.cue_strength(&rows[old]);
                let c = if rows[old].context {
                    cue.context_up as f64
                } else {
                    0.0
                };
                (
                    pos as f64 - cue.max_up as f64 * s - c,
                    s == 0.0 && c == 0.0,
                    pos,
                )
            })
            .collect();
        let mut by: Vec<usize> = (0..order.len()).collect();
        by.sort_by(|&a, &b| {
            let (ka, la, pa) = keyed[a];
            let (kb, lb, pb) = keyed[b];
            ka.total_cmp(&kb).then(la.cmp(&lb)).then(pa.cmp(&pb))
        });
        order = by.into_iter().map(|pos| order[pos]).collect();
    }
    order
}

/// Re-orders `items` (best first) by `prior` over their `rows` and `score`s, a permutation
/// (never a membership change); returns how many items moved up. The one place both priors
/// (recency on free recall, the time cue) apply their order.
pub fn reorder<T>(
    prior: &Prior,
    rows: &[PriorRow],
    items: &mut Vec<T>,
    score: impl Fn(&T) -> f64,
) -> usize {
    let scores: Vec<f64> = items.iter().map(&score).collect();
    let order = apply(prior, rows, &scores);
    let moved = order
        .iter()
        .enumerate()
        .filter(|(new, old)| new < old)
        .count();
    let mut slots: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(order.into_iter().filter_map(|old| slots[old].take()));
    moved
}
