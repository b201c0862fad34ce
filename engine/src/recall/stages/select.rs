//! Recall Depth and the response count kept apart: how many candidates each arm hands to
//! fusion comes from the server's configuration only, and `limit` only cuts the gated list.
//! Nothing here may take `limit` into account when sizing the arms (design §4: changing the
//! count alone must not change the set of candidate ids the fusion considered).

use serde::Serialize;

use super::candidate::FusedCandidate;
use crate::error::RecallError;
use crate::refs::Ref;

/// The server-side Recall Depth: the per-arm candidate depth the fusion sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RecallDepth {
    /// The least depth an operator may set.
    pub floor: usize,
    /// The depth used.
    pub default: usize,
    /// The most depth an operator may set.
    pub max: usize,
}

impl RecallDepth {
    /// The least depth accepted: 10, CPersona's default `limit`, which is the per-arm depth
    /// every CPersona recall fused at, so no configuration fuses less than 2.5 did.
    pub const FLOOR: usize = 10;
    /// The default depth: 50, the count-independent depth of CPersona 2.6's cue arm. At
    /// count 10 the pre-registered depth sweep found deeper fusion neither helps nor hurts
    /// the top 10; 50 fills any response up to `limit` 50 from one arm alone.
    pub const DEFAULT: usize = 50;
    /// The largest depth: 100, the MCP schema's largest `limit` and the depth of 2.6's
    /// propagation ranking; cost grows with it (fusion and hydration are per candidate).
    pub const MAX: usize = 100;

    /// Checks `floor ≥ 1` and `floor ≤ default ≤ max`.
    pub fn new(floor: usize, default: usize, max: usize) -> Result<RecallDepth, RecallError> {
        if floor == 0 || floor > default || default > max {
            return Err(RecallError::InvalidDepth {
                floor,
                default,
                max,
            });
        }
        Ok(RecallDepth {
            floor,
            default,
            max,
        })
    }

    /// The per-arm candidate depth. Takes no `limit`, by construction.
    pub fn per_arm(&self) -> usize {
        self.default.clamp(self.floor, self.max)
    }
}

impl Default for RecallDepth {
    fn default() -> RecallDepth {
        RecallDepth {
            floor: RecallDepth::FLOOR,
            default: RecallDepth::DEFAULT,
            max: RecallDepth::MAX,
        }
    }
}

/// The response count's cut of the gated list.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CountCut {
    /// The `limit` applied.
    pub limit: usize,
    /// Gated rows the count cut off, best first; empty when nothing was cut.
    pub cut_by_count: Vec<Ref>,
}

/// Keeps the first `limit` rows of the gated list (best first) and names the rest.
pub fn cut_to_limit(
    mut gated: Vec<FusedCandidate>,
    limit: usize,
) -> (Vec<FusedCandidate>, CountCut) {
    let rest = if gated.len() > limit {
        gated.split_off(limit)
    } else {
        Vec::new()
    };
    let cut = CountCut {
        limit,
        cut_by_count: rest.iter().map(|c| c.r#ref).collect(),
    };
    (gated, cut)
}
