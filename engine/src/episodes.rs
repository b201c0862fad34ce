//! Episodes: `archive_episode` (a caller-computed session summary; no dedup, as in
//! CPersona), `delete_episode` and `list_episodes`. The server never summarises; it must
//! never write an episode whose summary failed validation.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::paging::{PREVIEW_CHARS, cut, fit_budget, read_page};
use crate::scope::Scope;
use crate::store::Store;
use crate::store::pauses::NoPersist;
use crate::text::{Refusal, check_agent, check_key, sanitise};
use crate::time::{format_ms, now_ms, parse_iso8601_ms};

/// `list_episodes`' row cap (CPersona: limit clamped to 0..=200).
pub(crate) const LIST_EPISODES_MAX_LIMIT: usize = 200;
/// `list_episodes`' character budget over summary + keywords (CPersona's 800,000).
pub(crate) const LIST_EPISODES_MAX_CHARS: usize = 800_000;

/// `archive_episode`'s arguments.
#[derive(Clone, Debug, Default)]
pub struct ArchiveEpisodeRequest {
    /// Owner (required).
    pub agent_id: String,
    /// The caller's summary (required).
    pub summary: String,
    /// The session's messages; only their `timestamp` fields are read (start = earliest,
    /// end = latest instant, each kept as the caller wrote it).
    pub history: Vec<Value>,
    /// Keywords text.
    pub keywords: String,
    /// Whether the session's matter is resolved.
    pub resolved: bool,
    /// `""` = global pool.
    pub project_id: String,
    /// `""` = channel-less.
    pub channel: String,
    /// Pause bucket.
    pub session_key: String,
}

/// `archive_episode`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ArchiveEpisodeOutcome {
    /// True.
    pub ok: bool,
    /// The new episode (`null` while paused).
    pub episode_id: Option<i64>,
    /// Whether the summary got its vector now (false: queued).
    pub embedded: bool,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
    /// The overflow nodes and blocks the summary was divided into (see `derived/`), as
    /// `store` reports them for a memory.
    #[serde(flatten)]
    pub derived: crate::derived::DerivedReport,
}

/// `delete_episode`'s arguments.
#[derive(Clone, Debug, Default)]
pub struct DeleteEpisodeRequest {
    /// The episode.
    pub episode_id: i64,
    /// The owner (required); another agent's episode reads as not found.
    pub agent_id: String,
    /// Pause bucket.
    pub session_key: String,
}

/// `delete_episode`'s response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeleteEpisodeOutcome {
    /// True.
    pub ok: bool,
    /// The episode (`null` while paused).
    pub deleted_id: Option<i64>,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

/// `list_episodes`' arguments.
#[derive(Clone, Debug)]
pub struct ListEpisodesRequest {
    /// `""` = all agents.
    pub agent_id: String,
    /// Rows per page (clamped to 0..=200; CPersona default 50).
    pub limit: usize,
    /// Rows to skip (paging, newest first).
    pub offset: usize,
    /// `None` = no filter, `""` = global pool, `X` = X plus the global pool.
    pub project_id: Option<String>,
}

impl Default for ListEpisodesRequest {
    fn default() -> Self {
        ListEpisodesRequest {
            agent_id: String::new(),
            limit: 50,
            offset: 0,
            project_id: None,
        }
    }
}

/// One listed episode.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct EpisodeItem {
    /// Row id.
    pub id: i64,
    /// Owner.
    pub agent_id: String,
    /// Project.
    pub project_id: String,
    /// Channel.
    pub channel: String,
    /// Summary (a prefix when past the budget).
    pub summary: String,
    /// Keywords (a prefix when past the budget).
    pub keywords: String,
    /// Earliest history timestamp, as the caller wrote it.
    pub start_time: Option<String>,
    /// Latest history timestamp, as the caller wrote it.
    pub end_time: Option<String>,
    /// Resolved flag.
    pub resolved: bool,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Present when the summary was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_truncated: Option<bool>,
    /// Full summary length in chars, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary_len: Option<usize>,
    /// Present when the keywords were cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keywords_truncated: Option<bool>,
    /// Full keywords length in chars, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keywords_len: Option<usize>,
    /// `ep:<id>`, when something was cut (expand with get_contents).
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// `list_episodes`' response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ListEpisodesOutcome {
    /// Newest first.
    pub episodes: Vec<EpisodeItem>,
    /// `episodes.len()`.
    pub count: usize,
    /// Present when a row was cut by the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_chars: Option<usize>,
    /// The offset of the next page, when more rows exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// `archive_episode`: stores the summary (required) and keywords, embeds the summary.
pub(crate) fn archive_episode(
    store: &Store,
    config: &EngineConfig,
    req: &ArchiveEpisodeRequest,
) -> Result<ArchiveEpisodeOutcome> {
    if let Some(no_persist) = store.no_persist("archive_episode", &req.session_key) {
        return Ok(ArchiveEpisodeOutcome {
            ok: true,
            episode_id: None,
            embedded: false,
            no_persist: Some(no_persist),
            derived: Default::default(),
        });
    }
    check_agent(&req.agent_id)?;
    check_key("project_id", &req.project_id)?;
    check_key("channel", &req.channel)?;
    let summary = sanitise(&req.summary, config.max_content_chars).map_err(|refusal| {
        let reason = match refusal {
            Refusal::TooLong { .. } => refusal.reason(),
            _ => format!("summary is required ({})", refusal.reason()),
        };
        Error::invalid("summary", reason)
    })?;
    let keywords = match sanitise(&req.keywords, config.max_content_chars) {
        Ok(keywords) => keywords,
        Err(Refusal::Nul) => return Err(Error::invalid("keywords", "holds a NUL character")),
        Err(refusal @ Refusal::TooLong { .. }) => {
            return Err(Error::invalid("keywords", refusal.reason()));
        }
        Err(_) => String::new(),
    };
    let (start, end) = history_span(&req.history)?;
    let embedding = store.embed_for_store(&[summary.as_str()]);
    let target = store.vector_target();
    let format = store.settings.embedding_format;
    let mut outcome =
        store.write(|tx| {
            let (blob, model, dim, tag) = match &embedding {
                Ok(blobs) => (
                    blobs.first().cloned(),
                    target.model_id.as_str(),
                    target.dim,
                    format.tag(),
                ),
                Err(_) => (None, "", 0, ""),
            };
            tx.execute(
            "INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, start_time, \
             end_time, start_ms, end_ms, resolved, created_at_ms, embedding, embedding_model, \
             embedding_dim, embedding_format) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            params![
                req.agent_id, req.project_id, req.channel, summary, keywords,
                start.as_ref().map(|s| &s.0), end.as_ref().map(|s| &s.0),
                start.as_ref().map(|s| s.1), end.as_ref().map(|s| s.1),
                req.resolved, now_ms(), blob, model, dim as i64, tag,
            ],
        )?;
            let id = tx.last_insert_rowid();
            if let Err(reason) = &embedding {
                crate::store::queue::enqueue(tx, "episodes", id, &req.agent_id, reason)?;
            }
            Ok(ArchiveEpisodeOutcome {
                ok: true,
                episode_id: Some(id),
                embedded: embedding.is_ok(),
                no_persist: None,
                derived: Default::default(),
            })
        })?;
    // The summary's derived sets, after the commit, as store does for a memory.
    if let Some(id) = outcome.episode_id {
        outcome.derived = crate::derived::derived_after_write(store, crate::refs::Ref::ep(id));
    }
    Ok(outcome)
}

/// `delete_episode`.
pub(crate) fn delete_episode(
    store: &Store,
    req: &DeleteEpisodeRequest,
) -> Result<DeleteEpisodeOutcome> {
    crate::text::require_owner(&req.agent_id)?;
    if let Some(no_persist) = store.no_persist("delete_episode", &req.session_key) {
        return Ok(DeleteEpisodeOutcome {
            ok: true,
            deleted_id: None,
            no_persist: Some(no_persist),
        });
    }
    store.write(|tx| {
        let owner: Option<String> = tx
            .query_row(
                "SELECT agent_id FROM episodes WHERE id = ?",
                [req.episode_id],
                |row| row.get(0),
            )
            .optional()?;
        match owner {
            // Another agent's episode reads exactly as a missing one.
            Some(owner) if owner == req.agent_id => {
                tx.execute("DELETE FROM episodes WHERE id = ?", [req.episode_id])?;
                Ok(DeleteEpisodeOutcome {
                    ok: true,
                    deleted_id: Some(req.episode_id),
                    no_persist: None,
                })
            }
            _ => Err(Error::EpisodeNotFound { id: req.episode_id }),
        }
    })
}

/// `list_episodes`: newest first (`created_at DESC, id DESC`), paged, with CPersona's
/// character budget.
pub(crate) fn list_episodes(
    store: &Store,
    req: &ListEpisodesRequest,
) -> Result<ListEpisodesOutcome> {
    let limit = req.limit.min(LIST_EPISODES_MAX_LIMIT);
    let agent = (!req.agent_id.is_empty()).then_some(req.agent_id.as_str());
    let scope = Scope::read(agent, req.project_id.as_deref(), None);
    let (pred, values) = scope.predicate("");
    let sql = format!(
        "SELECT id, agent_id, project_id, channel, summary, keywords, start_time, end_time, \
         resolved, created_at_ms FROM episodes WHERE {pred} \
         ORDER BY created_at_ms DESC, id DESC LIMIT ? OFFSET ?"
    );
    let page = store.read(|conn| {
        read_page(conn, &sql, values, limit, req.offset, |row| {
            Ok(EpisodeItem {
                id: row.get(0)?,
                agent_id: row.get(1)?,
                project_id: row.get(2)?,
                channel: row.get(3)?,
                summary: row.get(4)?,
                keywords: row.get(5)?,
                start_time: row.get(6)?,
                end_time: row.get(7)?,
                resolved: row.get(8)?,
                created_at: format_ms(row.get(9)?),
                summary_truncated: None,
                summary_len: None,
                keywords_truncated: None,
                keywords_len: None,
                reference: None,
            })
        })
    })?;
    let (mut rows, next_offset) = (page.rows, page.next_offset);
    let chars = |item: &EpisodeItem| item.summary.chars().count() + item.keywords.chars().count();
    let degraded = fit_budget(&mut rows, LIST_EPISODES_MAX_CHARS, chars, |item| {
        let (n_summary, n_keywords) = (item.summary.chars().count(), item.keywords.chars().count());
        if let Some(prefix) = cut(&item.summary, PREVIEW_CHARS) {
            item.summary = prefix;
            item.summary_truncated = Some(true);
            item.summary_len = Some(n_summary);
        }
        if let Some(prefix) = cut(&item.keywords, PREVIEW_CHARS) {
            item.keywords = prefix;
            item.keywords_truncated = Some(true);
            item.keywords_len = Some(n_keywords);
        }
        let cut_any = item.summary_truncated.is_some() || item.keywords_truncated.is_some();
        if cut_any {
            item.reference = Some(format!("ep:{}", item.id));
        }
        cut_any
    });
    Ok(ListEpisodesOutcome {
        count: rows.len(),
        episodes: rows,
        budget_chars: degraded.then_some(LIST_EPISODES_MAX_CHARS),
        next_offset,
    })
}

/// Earliest and latest history timestamps by instant, each as (caller text, UTC ms).
type Span = (Option<(String, i64)>, Option<(String, i64)>);

fn history_span(history: &[Value]) -> Result<Span> {
    let mut start: Option<(String, i64)> = None;
    let mut end: Option<(String, i64)> = None;
    for entry in history {
        let Some(Value::String(text)) = entry.get("timestamp") else {
            continue;
        };
        let ms = parse_iso8601_ms(text)?;
        if start.as_ref().is_none_or(|s| ms < s.1) {
            start = Some((text.clone(), ms));
        }
        if end.as_ref().is_none_or(|e| ms > e.1) {
            end = Some((text.clone(), ms));
        }
    }
    Ok((start, end))
}
