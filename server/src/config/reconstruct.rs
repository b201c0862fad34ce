//! Reconstruct's settings (`CPERSONA_RECONSTRUCT_*`): parsed once, checked against each
//! other (a default or forced count above the maximum is a start-up error), and turned into
//! the engine's `ReconstructConfig`.

use super::env::Env;
use super::error::{ConfigError, Result};

/// Reconstruct settings (cpersona-2.6.14 §4.1, §4.2 and §7 "Reconstruct").
#[derive(Clone, Debug)]
pub struct ReconstructSettings {
    pub max_count: u64,
    pub default_count: u64,
    pub forced_count: Option<u64>,
    pub top_k: u64,
    pub max_hops: u64,
    pub max_evidence: u64,
    pub adjacency_seconds: u64,
    pub quote_chars: u64,
    pub full_quotes: u64,
    pub tail_quote_chars: u64,
    pub default_budget: u64,
    pub max_budget: u64,
    pub forced_budget: Option<u64>,
}

impl ReconstructSettings {
    /// The engine's settings; excerpts take the preview size (500 when the tier is off).
    pub fn engine(&self, preview_chars: u64) -> cpersona_engine::ReconstructConfig {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let excerpt = [preview_chars, 500][usize::from(preview_chars == 0)];
        cpersona_engine::ReconstructConfig {
            default_count: size(self.default_count),
            max_count: size(self.max_count),
            forced_count: self.forced_count.map(size),
            top_k: size(self.top_k),
            max_hops: size(self.max_hops),
            max_evidence: size(self.max_evidence),
            adjacency_ms: i64::try_from(self.adjacency_seconds * 1_000).unwrap_or(i64::MAX),
            quote_chars: size(self.quote_chars),
            full_quotes: size(self.full_quotes),
            tail_quote_chars: size(self.tail_quote_chars),
            excerpt_chars: size(excerpt),
            default_budget: size(self.default_budget),
            max_budget: size(self.max_budget),
            forced_budget: self.forced_budget.map(size),
        }
    }
}

pub(super) fn parse_reconstruct(env: &Env, preview_chars: u64) -> Result<ReconstructSettings> {
    let max_count = env.int("CPERSONA_RECONSTRUCT_MAX_COUNT", 10, 1, 1_000)?;
    let default_count = env.int(
        "CPERSONA_RECONSTRUCT_DEFAULT_COUNT",
        max_count.min(10),
        0,
        1_000,
    )?;
    let forced_count = env.int_opt("CPERSONA_RECONSTRUCT_FORCED_COUNT", 0, 1_000)?;
    for (var, count) in [
        ("CPERSONA_RECONSTRUCT_DEFAULT_COUNT", Some(default_count)),
        ("CPERSONA_RECONSTRUCT_FORCED_COUNT", forced_count),
    ] {
        if let Some(count) = count
            && count > max_count
        {
            return Err(ConfigError::Conflict {
                var,
                other: "CPERSONA_RECONSTRUCT_MAX_COUNT",
                reason: format!("{count} is above the maximum count {max_count}"),
            });
        }
    }
    let quote_chars = env.int("CPERSONA_RECONSTRUCT_QUOTE_CHARS", 800, 0, 1_000_000)?;
    let tail_quote_chars = env.int(
        "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS",
        quote_chars.min(400),
        0,
        1_000_000,
    )?;
    if quote_chars > 0 && (tail_quote_chars == 0 || tail_quote_chars > quote_chars) {
        return Err(ConfigError::Conflict {
            var: "CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS",
            other: "CPERSONA_RECONSTRUCT_QUOTE_CHARS",
            reason: format!("must be in 1..={quote_chars}"),
        });
    }
    let max_budget = env.int(
        "CPERSONA_RECONSTRUCT_MAX_BUDGET",
        preview_chars.max(20_000),
        1,
        100_000_000,
    )?;
    let default_budget = env.int(
        "CPERSONA_RECONSTRUCT_DEFAULT_BUDGET",
        preview_chars.max(4_000).min(max_budget),
        1,
        100_000_000,
    )?;
    let forced_budget = env.int_opt("CPERSONA_RECONSTRUCT_FORCED_BUDGET", 1, 100_000_000)?;
    for (var, budget) in [
        ("CPERSONA_RECONSTRUCT_MAX_BUDGET", Some(max_budget)),
        ("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", Some(default_budget)),
        ("CPERSONA_RECONSTRUCT_FORCED_BUDGET", forced_budget),
    ] {
        if let Some(budget) = budget
            && budget < preview_chars
        {
            return Err(ConfigError::Conflict {
                var,
                other: "CPERSONA_RECALL_PREVIEW_CHARS",
                reason: format!("{budget} is below the preview size {preview_chars}"),
            });
        }
    }
    for (var, budget) in [
        ("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET", Some(default_budget)),
        ("CPERSONA_RECONSTRUCT_FORCED_BUDGET", forced_budget),
    ] {
        if let Some(budget) = budget
            && budget > max_budget
        {
            return Err(ConfigError::Conflict {
                var,
                other: "CPERSONA_RECONSTRUCT_MAX_BUDGET",
                reason: format!("{budget} is above the maximum budget {max_budget}"),
            });
        }
    }
    Ok(ReconstructSettings {
        max_count,
        default_count,
        forced_count,
        top_k: env.int("CPERSONA_RECONSTRUCT_TOP_K", 20, 1, 100)?,
        max_hops: env.int("CPERSONA_RECONSTRUCT_MAX_HOPS", 2, 0, 5)?,
        max_evidence: env.int("CPERSONA_RECONSTRUCT_MAX_EVIDENCE", 40, 1, 100)?,
        adjacency_seconds: env.int("CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS", 60, 0, 86_400)?,
        quote_chars,
        full_quotes: env.int("CPERSONA_RECONSTRUCT_FULL_QUOTES", 5, 0, 1_000)?,
        tail_quote_chars,
        default_budget,
        max_budget,
        forced_budget,
    })
}
