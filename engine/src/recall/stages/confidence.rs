//! The confidence score CPersona reports beside a row (reference 2.5 §5.6 step 4): cosine and
//! age folded into one number in [0, 1]. It is computed after the answer is final and is
//! only reported: it neither orders nor gates (the 2.6 decision on the final re-sort, design
//! §3, shipped as `CPERSONA_CONFIDENCE_ORDERING=fusion`), so fusion order survives.

use serde::{Deserialize, Serialize};

/// CPersona's constants, each its environment default.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfidenceParams {
    /// Cosine mapped to 0 (`COSINE_FLOOR`).
    pub cosine_floor: f64,
    /// Cosine mapped to 1 (`COSINE_CEIL`).
    pub cosine_ceil: f64,
    /// Decay per hour of age (`DECAY_RATE`).
    pub decay_rate: f64,
    /// Least time decay (`DECAY_FLOOR`).
    pub decay_floor: f64,
    /// Most the recall boost may raise the floor to (`DECAY_CEIL`).
    pub decay_ceil: f64,
    /// Boost per `ln(1 + recall_count)` (`RECALL_BOOST`).
    pub recall_boost: f64,
    /// Decay of that boost per hour since the last recall (`BOOST_DECAY_RATE`).
    pub boost_decay_rate: f64,
    /// Shortest time range considered, hours (`MIN_TIME_RANGE_HOURS`).
    pub min_time_range_hours: f64,
    /// Range at which the decay rate starts to stretch, hours (`REFERENCE_HOURS`).
    pub reference_hours: f64,
    /// Factor for a resolved episode (`RESOLVED_DECAY_FACTOR`).
    pub resolved_factor: f64,
    /// Factor for a row recalled a moment ago (`RECENT_RECALL_PENALTY`).
    pub recent_recall_penalty: f64,
}

impl Default for ConfidenceParams {
    fn default() -> ConfidenceParams {
        ConfidenceParams {
            cosine_floor: 0.20,
            cosine_ceil: 0.75,
            decay_rate: 0.005,
            decay_floor: 0.3,
            decay_ceil: 0.5,
            recall_boost: 0.02,
            boost_decay_rate: 0.002,
            min_time_range_hours: 24.0,
            reference_hours: 168.0,
            resolved_factor: 0.3,
            recent_recall_penalty: 0.7,
        }
    }
}

/// What the store knows about one row and its scope (a trace saves it without the cosine,
/// which a replay takes from its own fused candidate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfidenceInput {
    /// Cosine to the query, if known.
    pub cosine: Option<f64>,
    /// Hours since the row's timestamp, when it parses.
    pub age_hours: Option<f64>,
    /// Hours between the scope's oldest and newest timestamps.
    pub time_range_hours: f64,
    /// Hours since the scope's newest timestamp, if any.
    pub newest_age_hours: Option<f64>,
    /// How often the row was recalled.
    pub recall_count: u64,
    /// Hours since it was last recalled, if ever.
    pub hours_since_last_recall: Option<f64>,
    /// Episodes only: whether the episode is resolved.
    pub resolved: Option<bool>,
    /// Recalled within the recent-recall window (5 minutes in CPersona).
    pub recently_recalled: bool,
    /// The caller's `deep` flag: no decay, no completion or recency factor.
    pub deep: bool,
}

/// The `confidence` object of a recall row (read back from a saved trace, too).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Confidence {
    /// Age used, hours, 1 decimal.
    pub age_hours: f64,
    /// True when the row's own timestamp did not parse.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub age_unknown: bool,
    /// Episodes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    /// Cosine, 4 decimals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// The score, 4 decimals.
    pub score: f64,
}

/// CPersona's `_compute_confidence`.
pub fn confidence(params: &ConfidenceParams, input: &ConfidenceInput) -> Confidence {
    let range = input.time_range_hours.max(0.0);
    let effective_range = range.max(params.min_time_range_hours);
    let (age, age_unknown) = match (input.age_hours, input.newest_age_hours) {
        (Some(age), _) => (age.max(0.0), false),
        (None, Some(newest)) => (newest + range / 2.0, true),
        (None, None) => (effective_range / 2.0, true),
    };
    let since_recall_factor = input
        .hours_since_last_recall
        .map_or(1.0, |h| 1.0 / (1.0 + h.max(0.0) * params.boost_decay_rate));
    let boost = (input.recall_count as f64).ln_1p() * params.recall_boost * since_recall_factor;
    let floor = params.decay_ceil.min(params.decay_floor + boost);
    let time_decay = if input.deep {
        1.0
    } else if range > 0.0 {
        let rate = params.decay_rate / (effective_range / params.reference_hours).max(1.0);
        floor.max(1.0 / (1.0 + age * rate))
    } else {
        floor.max(1.0 / (1.0 + age * params.decay_rate))
    };
    let completion = if !input.deep && input.resolved == Some(true) {
        params.resolved_factor
    } else {
        1.0
    };
    let recency = if !input.deep && input.recently_recalled {
        params.recent_recall_penalty
    } else {
        1.0
    };
    let base = match input.cosine {
        Some(cos) => {
            let norm = ((cos - params.cosine_floor) / (params.cosine_ceil - params.cosine_floor))
                .clamp(0.0, 1.0);
            (norm * time_decay).sqrt()
        }
        None => time_decay.sqrt(),
    };
    Confidence {
        age_hours: (age * 10.0).round() / 10.0,
        age_unknown,
        resolved: input.resolved,
        cosine: input.cosine.map(super::gate::round4),
        score: super::gate::round4(base * completion * recency),
    }
}
