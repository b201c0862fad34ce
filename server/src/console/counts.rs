//! Per-agent figures the overview and an agent's page show, kept until the change log moves:
//! the row counts (counted through the listing calls by probing offsets, [`count_rows`]) and
//! the weekly histogram (read newest first up to [`HISTOGRAM_ROWS`]).

use cpersona_engine::{ListEpisodesRequest, ListMemoriesRequest};

use super::layout::{Refusal, engine_refusal};
use super::svg;

/// Memories read (newest first) for an agent's histogram: a bound that keeps the page fast on
/// a large store; the page says when it cut.
pub(crate) const HISTOGRAM_ROWS: usize = 20_000;
/// Rows per engine page while reading for the histogram (the engine's own cap).
const SCAN_PAGE: usize = 500;

/// An agent's row counts, as the overview shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) memories: usize,
    pub(crate) episodes: usize,
    pub(crate) profile: bool,
}

/// An agent's weekly histogram: the weeks, the memories read, whether the bound cut.
type Histogram = (Vec<svg::Week>, usize, bool);

/// Row counts per agent, and its weekly histogram, kept until the change log moves. Counted through the listing
/// calls (`list_memories`, `list_episodes`) by probing offsets ([`count_rows`]): the facade
/// has no per-agent count but `store_stats`, which also runs SQLite's `quick_check` over the
/// whole file (seconds per agent on a 100K-row store).
#[derive(Default)]
pub(crate) struct CountCache {
    kept: std::sync::Mutex<std::collections::HashMap<String, (i64, Counts)>>,
    weeks: std::sync::Mutex<std::collections::HashMap<String, (i64, Histogram)>>,
}

impl CountCache {
    /// `agent`'s counts, from the cache while the change-log head is the same.
    pub(crate) fn of(
        &self,
        engine: &cpersona_engine::Engine,
        agent: &str,
    ) -> Result<Counts, Refusal> {
        let head = engine.change_log_head().map_err(engine_refusal)?;
        let lock = || {
            self.kept
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some((at, counts)) = lock().get(agent)
            && *at == head
        {
            return Ok(*counts);
        }
        let memories = count_rows(|offset| {
            let page = engine
                .list_memories(&ListMemoriesRequest {
                    agent_id: agent.to_owned(),
                    limit: 1,
                    offset,
                    project_id: None,
                })
                .map_err(engine_refusal)?;
            Ok(!page.memories.is_empty())
        })?;
        let episodes = count_rows(|offset| {
            let page = engine
                .list_episodes(&ListEpisodesRequest {
                    agent_id: agent.to_owned(),
                    limit: 1,
                    offset,
                    project_id: None,
                })
                .map_err(engine_refusal)?;
            Ok(!page.episodes.is_empty())
        })?;
        let profile = !engine
            .get_profile(agent)
            .map_err(engine_refusal)?
            .profile
            .is_empty();
        let counts = Counts {
            memories,
            episodes,
            profile,
        };
        lock().insert(agent.to_owned(), (head, counts));
        Ok(counts)
    }
}

impl CountCache {
    /// `agent`'s memories per week, read newest first through `list_memories` up to
    /// [`HISTOGRAM_ROWS`], from the cache while the change-log head is the same.
    pub(crate) fn weeks_of(
        &self,
        engine: &cpersona_engine::Engine,
        agent: &str,
    ) -> Result<Histogram, Refusal> {
        let head = engine.change_log_head().map_err(engine_refusal)?;
        let lock = || {
            self.weeks
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some((at, histogram)) = lock().get(agent)
            && *at == head
        {
            return Ok(histogram.clone());
        }
        let mut created = Vec::new();
        let mut offset = 0;
        let mut cut = false;
        loop {
            let listed = engine
                .list_memories(&ListMemoriesRequest {
                    agent_id: agent.to_owned(),
                    limit: SCAN_PAGE,
                    offset,
                    project_id: None,
                })
                .map_err(engine_refusal)?;
            created.extend(
                listed
                    .memories
                    .iter()
                    .filter_map(|m| cpersona_engine::time::parse_iso8601_ms(&m.created_at).ok()),
            );
            match listed.next_offset {
                Some(next) if created.len() < HISTOGRAM_ROWS => offset = next,
                Some(_) => {
                    cut = true;
                    break;
                }
                None => break,
            }
        }
        let histogram = (svg::weekly(&created), created.len(), cut);
        lock().insert(agent.to_owned(), (head, histogram.clone()));
        Ok(histogram)
    }
}

/// The rows of a listing, given whether a row exists at an offset: doubling, then halving,
/// so about 2·log2(n) probes.
pub(crate) fn count_rows(
    mut exists: impl FnMut(usize) -> Result<bool, Refusal>,
) -> Result<usize, Refusal> {
    if !exists(0)? {
        return Ok(0);
    }
    // `lo` holds a row, `hi` none.
    let (mut lo, mut hi) = (0usize, 1usize);
    while exists(hi)? {
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if exists(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo + 1)
}
