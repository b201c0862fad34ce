//! Free recall's recency prior: the one prior function (`prior`) configured by age alone
//! (CPersona's `CPERSONA_PRIOR_AGE_RATE` / `CPERSONA_PRIOR_AGE_FLOOR`), applied to the counted
//! answer as a bounded move. Rate 0 (the default) is the identity and nothing runs.
//!
//! It must never admit or remove a row, nor change which rows the count admits: it runs after
//! the count cut, on the answer only, and returns a permutation. It never reads a clock: ages
//! are taken at the newest dated row of the answer, so a pass (and its replay) is pure.

use serde::{Deserialize, Serialize};

use super::prior::{self, Prior, PriorRow};
use super::shape::ShapeInput;
use crate::refs::Ref;

const MS_PER_HOUR: f64 = 3_600_000.0;

/// The recency setting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecencyConfig {
    /// `p_age = max(floor, 1/(1 + age_h × rate))`; 0 = identity (CPersona's default).
    pub rate_per_h: f64,
    /// The floor of `p_age` (CPersona's `PRIOR_AGE_FLOOR = 0.3`).
    pub floor: f64,
    /// Most places the freshest row may move up (the cue's `sure` lift).
    pub max_up: usize,
}

impl RecencyConfig {
    /// Most places recency lifts a row: 3, the largest lift a time cue may give.
    pub const MAX_UP: usize = 3;

    /// True when the setting changes nothing.
    pub fn is_identity(&self) -> bool {
        self.rate_per_h == 0.0 || self.max_up == 0
    }

    /// The setting as the one prior.
    pub fn prior(&self) -> Prior {
        Prior::recency_bounded(self.rate_per_h, self.floor, self.max_up)
    }
}

impl Default for RecencyConfig {
    fn default() -> RecencyConfig {
        RecencyConfig {
            rate_per_h: 0.0,
            floor: 0.3,
            max_up: RecencyConfig::MAX_UP,
        }
    }
}

/// What recency did to one answer (in the response and the trace when the setting is on).
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RecencyApplied {
    /// The rate per hour.
    pub rate_per_h: f64,
    /// The floor.
    pub floor: f64,
    /// The bound: most places a row may move up.
    pub max_up: usize,
    /// The instant ages were taken at (the newest dated row of the answer), UTC ms; `None`
    /// when no row was dated (then nothing moved).
    pub anchor_ms: Option<i64>,
    /// Rows that moved up; 0 = the bound held every row in place.
    pub moved: usize,
    /// The answer's order before recency, best first.
    pub order_before: Vec<Ref>,
}

/// Re-orders `kept` (best first) by the recency prior; `None` when the setting is identity.
pub(crate) fn apply(config: &RecencyConfig, kept: &mut Vec<ShapeInput>) -> Option<RecencyApplied> {
    if config.is_identity() {
        return None;
    }
    let at: Vec<Option<i64>> = kept
        .iter()
        .map(|k| {
            let text = k.row.timestamp.as_deref()?;
            crate::time::parse_iso8601_ms(text).ok()
        })
        .collect();
    let anchor_ms = at.iter().flatten().copied().max();
    let rows: Vec<PriorRow> = at
        .iter()
        .map(|t| PriorRow {
            at_ms: *t,
            age_h: anchor_ms.zip(*t).map(|(a, t)| (a - t) as f64 / MS_PER_HOUR),
            ..PriorRow::default()
        })
        .collect();
    let order_before: Vec<Ref> = kept.iter().map(|k| k.candidate.r#ref).collect();
    let moved = prior::reorder(&config.prior(), &rows, kept, |k| k.candidate.score);
    Some(RecencyApplied {
        rate_per_h: config.rate_per_h,
        floor: config.floor,
        max_up: config.max_up,
        anchor_ms,
        moved,
        order_before,
    })
}
