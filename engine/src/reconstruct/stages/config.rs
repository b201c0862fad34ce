//! `ReconstructConfig`: reconstruct's window, budget and bundling settings, typed, with the
//! shipped line's defaults; the pure stages read it and never anything else.

use crate::error::{Error, Result};

/// Reconstruct's settings (design §7, reference cpersona-2.6.14 §4 and §7 "Reconstruct").
/// The defaults are the shipped line's, not the design page's where they differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReconstructConfig {
    /// Items when the caller names no count. **[design≠code]** the design page says 1; the
    /// shipped 2.6 line (reference §4.1) ships 10, the value a reader measurement asked for,
    /// and this follows the shipped line.
    pub default_count: usize,
    /// The absolute ceiling on items (`CPERSONA_RECONSTRUCT_MAX_COUNT`, 10).
    pub max_count: usize,
    /// An operator-pinned count that wins over the caller's (unset by default).
    pub forced_count: Option<usize>,
    /// Candidate rows asked of recall (`CPERSONA_RECONSTRUCT_TOP_K`, 20): the pool's depth,
    /// never derived from the count.
    pub top_k: usize,
    /// Relation hops the walk may take (`CPERSONA_RECONSTRUCT_MAX_HOPS`, 2, at most 5).
    pub max_hops: usize,
    /// Claims retained per item (`CPERSONA_RECONSTRUCT_MAX_EVIDENCE`, 40, at most 100).
    pub max_evidence: usize,
    /// The whole adjacency burst must fit in this many milliseconds
    /// (`CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS` 60 s).
    pub adjacency_ms: i64,
    /// Head quote size of the first `full_quotes` items (800; 0 = one preview-tier excerpt).
    pub quote_chars: usize,
    /// How many items get the full head quote (5).
    pub full_quotes: usize,
    /// Head quote size after them (400).
    pub tail_quote_chars: usize,
    /// The preview tier's size: every other claim's excerpt is cut to it (500).
    pub excerpt_chars: usize,
    /// The payload budget when nobody names one (4,000 characters of quoted text; raised to
    /// the window's head quotes summed when that is more).
    pub default_budget: usize,
    /// The ceiling on the payload budget (20,000).
    pub max_budget: usize,
    /// An operator-pinned budget (unset by default).
    pub forced_budget: Option<usize>,
}

impl Default for ReconstructConfig {
    fn default() -> ReconstructConfig {
        ReconstructConfig {
            default_count: 10,
            max_count: 10,
            forced_count: None,
            top_k: 20,
            max_hops: 2,
            max_evidence: 40,
            adjacency_ms: 60_000,
            quote_chars: 800,
            full_quotes: 5,
            tail_quote_chars: 400,
            excerpt_chars: 500,
            default_budget: 4_000,
            max_budget: 20_000,
            forced_budget: None,
        }
    }
}

impl ReconstructConfig {
    /// The largest `top_k` a call may ask (the library ceiling).
    pub const TOP_K_CEILING: usize = 100;
    /// The most hops a walk may take.
    pub const MAX_HOPS_CEILING: usize = 5;
    /// The most claims an item may retain.
    pub const MAX_EVIDENCE_CEILING: usize = 100;

    /// A default or forced value above its maximum is a start-up error, never a clamp.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, reason: String| Err(Error::InvalidConfig { field, reason });
        if self.max_count == 0 {
            return bad("reconstruct.max_count", "must be at least 1".into());
        }
        for (field, count) in [
            ("reconstruct.default_count", Some(self.default_count)),
            ("reconstruct.forced_count", self.forced_count),
        ] {
            if let Some(count) = count
                && count > self.max_count
            {
                return bad(
                    field,
                    format!("{count} is above the maximum count {}", self.max_count),
                );
            }
        }
        if !(1..=Self::TOP_K_CEILING).contains(&self.top_k) {
            return bad("reconstruct.top_k", "must be in 1..=100".into());
        }
        if self.max_hops > Self::MAX_HOPS_CEILING {
            return bad("reconstruct.max_hops", "must be at most 5".into());
        }
        if !(1..=Self::MAX_EVIDENCE_CEILING).contains(&self.max_evidence) {
            return bad("reconstruct.max_evidence", "must be in 1..=100".into());
        }
        if self.adjacency_ms < 0 {
            return bad("reconstruct.adjacency_ms", "must be >= 0".into());
        }
        if self.excerpt_chars == 0 {
            return bad("reconstruct.excerpt_chars", "must be at least 1".into());
        }
        if self.quote_chars > 0
            && (self.tail_quote_chars == 0 || self.tail_quote_chars > self.quote_chars)
        {
            return bad(
                "reconstruct.tail_quote_chars",
                format!("must be in 1..={}", self.quote_chars),
            );
        }
        let floor = self.excerpt_chars;
        for (field, budget) in [
            ("reconstruct.max_budget", Some(self.max_budget)),
            ("reconstruct.default_budget", Some(self.default_budget)),
            ("reconstruct.forced_budget", self.forced_budget),
        ] {
            if let Some(budget) = budget {
                if budget < floor {
                    return bad(field, format!("{budget} is below one excerpt ({floor})"));
                }
                if budget > self.max_budget {
                    return bad(
                        field,
                        format!("{budget} is above the maximum budget {}", self.max_budget),
                    );
                }
            }
        }
        Ok(())
    }
}
