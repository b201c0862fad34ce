//! Per-agent figures the overview and an agent's page show: row counts, the profile, and
//! memories per week, from `Engine::agent_summary` (counted in SQL over the agent's index;
//! `store_stats` would also run SQLite's `quick_check` over the whole file, seconds per agent
//! on a 100K-row store), kept until the change log moves.

use cpersona_engine::AgentSummary;

use super::layout::{Refusal, engine_refusal};
use super::svg;

/// An agent's row counts, as the overview shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) memories: usize,
    pub(crate) episodes: usize,
    pub(crate) profile: bool,
}

/// Summaries per agent, kept until the change log moves.
#[derive(Default)]
pub(crate) struct CountCache {
    kept: std::sync::Mutex<std::collections::HashMap<String, (i64, AgentSummary)>>,
}

impl CountCache {
    fn summary(
        &self,
        engine: &cpersona_engine::Engine,
        agent: &str,
    ) -> Result<AgentSummary, Refusal> {
        let head = engine.change_log_head().map_err(engine_refusal)?;
        let lock = || {
            self.kept
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some((at, summary)) = lock().get(agent)
            && *at == head
        {
            return Ok(summary.clone());
        }
        let summary = engine.agent_summary(agent).map_err(engine_refusal)?;
        lock().insert(agent.to_owned(), (head, summary.clone()));
        Ok(summary)
    }

    /// `agent`'s counts.
    pub(crate) fn of(
        &self,
        engine: &cpersona_engine::Engine,
        agent: &str,
    ) -> Result<Counts, Refusal> {
        let summary = self.summary(engine, agent)?;
        Ok(Counts {
            memories: summary.memories,
            episodes: summary.episodes,
            profile: summary.profile,
        })
    }

    /// `agent`'s memories per week, every week from the first to the last.
    pub(crate) fn weeks_of(
        &self,
        engine: &cpersona_engine::Engine,
        agent: &str,
    ) -> Result<Vec<svg::Week>, Refusal> {
        Ok(svg::weekly_counts(&self.summary(engine, agent)?.weekly))
    }
}
