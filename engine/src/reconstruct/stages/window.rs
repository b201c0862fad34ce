//! The Reconstruction Window: `effective = min(forced ?? requested ?? default, max)` and the
//! `count_policy` a response states when the server did something other than asked. Also the
//! candidate limit, which must never depend on the count.

use serde::Serialize;

use super::Mutation;
use crate::reconstruct::stages::config::ReconstructConfig;

/// Who set the base count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// `forced_count` is set: the operator's value wins.
    OperatorForced,
    /// The caller named a count.
    Caller,
    /// Nobody did: the server's default.
    ServerDefault,
}

/// What the server did with the count (`count_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CountPolicy {
    /// Who set the base.
    pub source: CountSource,
    /// True when the maximum lowered the base.
    pub clamped: bool,
    /// `forced_count_set`, `count_requested` or `count_omitted`.
    pub reason: &'static str,
}

/// A resolved window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The ceiling on items returned.
    pub effective: usize,
    /// The caller's count, as asked.
    pub requested: Option<usize>,
    /// How it was resolved.
    pub policy: CountPolicy,
}

impl Window {
    /// True when the response must restate the request: the count was clamped or forced.
    pub fn differs_from_request(&self) -> bool {
        self.policy.clamped || self.policy.source == CountSource::OperatorForced
    }
}

/// Resolves the window for a caller's `requested` count.
pub fn resolve(config: &ReconstructConfig, requested: Option<usize>) -> Window {
    resolve_with(config, requested, Mutation::None)
}

pub(crate) fn resolve_with(
    config: &ReconstructConfig,
    requested: Option<usize>,
    mutation: Mutation,
) -> Window {
    let default = match mutation {
        Mutation::DefaultPlusOne => config.default_count + 1,
        _ => config.default_count,
    };
    let (base, source, reason) = match (config.forced_count, requested, mutation) {
        (Some(_), Some(asked), Mutation::ForcedRequestedSwapped) => {
            (asked, CountSource::Caller, "count_requested")
        }
        (Some(forced), _, _) => (forced, CountSource::OperatorForced, "forced_count_set"),
        (None, Some(asked), _) => (asked, CountSource::Caller, "count_requested"),
        (None, None, _) => (default, CountSource::ServerDefault, "count_omitted"),
    };
    let effective = match mutation {
        Mutation::MaxRemoved => base,
        _ => base.min(config.max_count),
    };
    Window {
        effective,
        requested,
        policy: CountPolicy {
            source,
            clamped: effective < base,
            reason,
        },
    }
}

/// The candidate rows asked of recall: the caller's `top_k`, else the configured one, capped
/// by the library ceiling. It takes no count: the pool must not move when the count does
/// (invariant 7).
pub fn candidate_limit(config: &ReconstructConfig, requested_top_k: Option<usize>) -> usize {
    candidate_limit_with(config, requested_top_k, 0, Mutation::None)
}

/// `effective_count` is read only by the [`Mutation::CandidateLimitFromCount`] mutation,
/// which re-couples the two so a test can show the coupling is caught.
pub(crate) fn candidate_limit_with(
    config: &ReconstructConfig,
    requested_top_k: Option<usize>,
    effective_count: usize,
    mutation: Mutation,
) -> usize {
    if mutation == Mutation::CandidateLimitFromCount {
        return effective_count.max(1);
    }
    requested_top_k
        .unwrap_or(config.top_k)
        .clamp(1, ReconstructConfig::TOP_K_CEILING)
}
