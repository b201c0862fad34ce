//! The candidate types every recall stage passes along: a kind-prefixed reference, one
//! arm's ranked hit, and a fused candidate carrying each arm's vote. Pure data; nothing here
//! reads SQLite or decides relevance.

use serde::Serialize;

pub use crate::refs::{ParseRefError, Ref, RefKind};

/// One retrieval arm. The declaration order is the order fusion visits the arms, which is
/// CPersona 2.6's (near vector, far vector, episode FTS, memory keyword) and is part of the
/// tie-break.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// Vector arm over the scan window (generation + live tail); raw score = cosine.
    VectorNear,
    /// Vector arm beyond the scan window (the far list); raw score = cosine.
    VectorFar,
    /// FTS5 trigram over episodes; raw score = `-bm25` (higher is better).
    EpisodeFts,
    /// FTS5 trigram over memories, or the keyword (LIKE) pass when FTS finds nothing;
    /// raw score = `-bm25`, or none for keyword rows.
    MemoryKeyword,
}

impl Arm {
    /// Every arm in fusion order.
    pub const ALL: [Arm; 4] = [
        Arm::VectorNear,
        Arm::VectorFar,
        Arm::EpisodeFts,
        Arm::MemoryKeyword,
    ];

    /// True for the two vector lists.
    pub fn is_vector(self) -> bool {
        matches!(self, Arm::VectorNear | Arm::VectorFar)
    }

    /// True for the two lexical lists (FTS and keyword).
    pub fn is_lexical(self) -> bool {
        !self.is_vector()
    }

    /// Position in fusion order.
    pub fn order(self) -> usize {
        self as usize
    }
}

/// One row as one arm ranked it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ArmHit {
    /// The row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// 0-based position in the arm's list as the arm returned it. Rows the caller filtered
    /// out afterwards (e.g. `exclude_contents`) keep their positions counted, as CPersona's
    /// fusion does, so ranks may have gaps.
    pub rank: usize,
    /// The arm's own score, higher is better: cosine for vector arms, `-bm25` for FTS,
    /// none for keyword (LIKE) rows, which carry no score.
    pub raw: Option<f64>,
}

impl ArmHit {
    /// A hit whose raw score is a bm25 value from SQLite (lower is better there); it is
    /// negated so every raw score reads higher-is-better.
    pub fn from_bm25(r#ref: Ref, rank: usize, bm25: f64) -> ArmHit {
        ArmHit {
            r#ref,
            rank,
            raw: Some(-bm25),
        }
    }
}

/// One arm's ranked output, handed to fusion.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ArmList {
    /// Which arm.
    pub arm: Arm,
    /// Hits in the arm's order.
    pub hits: Vec<ArmHit>,
}

impl ArmList {
    /// Builds a list from refs in rank order with their raw scores; ranks are positions.
    pub fn ranked(arm: Arm, rows: impl IntoIterator<Item = (Ref, Option<f64>)>) -> ArmList {
        let hits = rows
            .into_iter()
            .enumerate()
            .map(|(rank, (r#ref, raw))| ArmHit { r#ref, rank, raw })
            .collect();
        ArmList { arm, hits }
    }
}

/// One arm's vote for a fused candidate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Vote {
    /// The arm.
    pub arm: Arm,
    /// The row's 0-based rank in that arm.
    pub rank: usize,
    /// The arm's raw score (see [`ArmHit::raw`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<f64>,
    /// What this arm added to the fused score.
    pub contribution: f64,
}

/// A row after fusion: its fused score and every arm's vote, in fusion order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FusedCandidate {
    /// The row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// The fused score (rrf or rsf); rank-relative, so never compared to an absolute
    /// threshold.
    pub score: f64,
    /// One vote per arm that ranked the row, in fusion order.
    pub votes: Vec<Vote>,
    /// The row's cosine to the query, when a vector arm ranked it (the near list's value
    /// first) or the caller backfilled it with [`FusedCandidate::set_cosine`]. This is the
    /// absolute score the gate judges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// True when the cosine came from a backfill rather than a vector arm.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cosine_backfilled: bool,
}

impl FusedCandidate {
    /// True when no vector arm ranked the row.
    pub fn lexical_only(&self) -> bool {
        !self.votes.iter().any(|v| v.arm.is_vector())
    }

    /// True when a lexical arm (FTS or keyword) ranked the row.
    pub fn has_lexical_vote(&self) -> bool {
        self.votes.iter().any(|v| v.arm.is_lexical())
    }

    /// The row's best (smallest) rank over all arms; `usize::MAX` when it has no vote.
    pub fn best_rank(&self) -> usize {
        self.votes
            .iter()
            .map(|v| v.rank)
            .min()
            .unwrap_or(usize::MAX)
    }

    /// The key CPersona's stable sort preserves among equal scores: the first arm (in
    /// fusion order) that ranked the row, and the rank there.
    pub fn first_seen(&self) -> (usize, usize) {
        self.votes
            .first()
            .map_or((usize::MAX, usize::MAX), |v| (v.arm.order(), v.rank))
    }

    /// Records a cosine computed from the stored vector for a row no vector arm returned
    /// (CPersona's cosine backfill). A cosine an arm already supplied is kept.
    pub fn set_cosine(&mut self, cosine: f64) {
        if self.cosine.is_none() {
            self.cosine = Some(cosine);
            self.cosine_backfilled = true;
        }
    }
}
