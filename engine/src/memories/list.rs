//! `list_memories`: newest first, paged, scoped, with CPersona's character budget (rows past
//! it degrade to a preview prefix plus `ref`). It must never return a row outside the scope.

use serde::Serialize;
use serde_json::Value;

use crate::error::Result;
use crate::paging::{PREVIEW_CHARS, cut, fit_budget, read_page};
use crate::scope::Scope;
use crate::store::Store;
use crate::time::format_ms;

/// `list_memories`' row cap (CPersona: limit clamped to 0..=500).
pub(crate) const LIST_MEMORIES_MAX_LIMIT: usize = 500;
/// `list_memories`' character budget (CPersona's 1,000,000).
pub(crate) const LIST_MEMORIES_MAX_CHARS: usize = 1_000_000;

/// `list_memories`' arguments.
#[derive(Clone, Debug)]
pub struct ListMemoriesRequest {
    /// `""` = all agents.
    pub agent_id: String,
    /// Rows per page (clamped to 0..=500; CPersona default 100).
    pub limit: usize,
    /// Rows to skip (paging, newest first).
    pub offset: usize,
    /// `None` = no filter, `""` = global pool, `X` = X plus the global pool.
    pub project_id: Option<String>,
    /// Read as every scope reads a channel (`X` plus the global `""`); `None` = any. Not a
    /// CPersona argument: the console's filter.
    pub channel: Option<String>,
    /// Rows whose source's `type`, `id` or `name` contains this text, in any case.
    pub source_contains: Option<String>,
    /// Rows created at or after this instant (ms since the epoch).
    pub created_from_ms: Option<i64>,
    /// Rows created before this instant (ms since the epoch).
    pub created_before_ms: Option<i64>,
    /// Only this row (its listing facts: lock, project, channel, creation time).
    pub memory_id: Option<i64>,
}

impl Default for ListMemoriesRequest {
    fn default() -> Self {
        ListMemoriesRequest {
            agent_id: String::new(),
            limit: 100,
            offset: 0,
            project_id: None,
            channel: None,
            source_contains: None,
            created_from_ms: None,
            created_before_ms: None,
            memory_id: None,
        }
    }
}

/// One listed memory.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryItem {
    /// Row id.
    pub id: i64,
    /// Owner.
    pub agent_id: String,
    /// Project.
    pub project_id: String,
    /// Text (a prefix when past the budget).
    pub content: String,
    /// Parsed source JSON.
    pub source: Value,
    /// The caller's timestamp text, verbatim.
    pub timestamp: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// Lock flag.
    pub locked: bool,
    /// Channel.
    pub channel: String,
    /// Present when the content was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_truncated: Option<bool>,
    /// Full length in chars, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_len: Option<usize>,
    /// `mem:<id>`, when cut.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// `list_memories`' response.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ListMemoriesOutcome {
    /// Newest first (`created_at DESC, id DESC`).
    pub memories: Vec<MemoryItem>,
    /// `memories.len()`.
    pub count: usize,
    /// Present when a row was cut by the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_chars: Option<usize>,
    /// The offset of the next page, when more rows exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
}

/// The SQL of the request's source and time filters (each a bound parameter pushed onto
/// `values`), `""` when there are none.
fn filters(req: &ListMemoriesRequest, values: &mut Vec<rusqlite::types::Value>) -> String {
    let mut sql = String::new();
    if let Some(text) = req.source_contains.as_deref().filter(|t| !t.is_empty()) {
        sql.push_str(
            " AND json_valid(source) AND (\
             instr(lower(coalesce(json_extract(source, '$.type'), '')), lower(?)) > 0 \
             OR instr(lower(coalesce(json_extract(source, '$.id'), '')), lower(?)) > 0 \
             OR instr(lower(coalesce(json_extract(source, '$.name'), '')), lower(?)) > 0)",
        );
        for _ in 0..3 {
            values.push(text.to_owned().into());
        }
    }
    if let Some(from) = req.created_from_ms {
        sql.push_str(" AND created_at_ms >= ?");
        values.push(from.into());
    }
    if let Some(before) = req.created_before_ms {
        sql.push_str(" AND created_at_ms < ?");
        values.push(before.into());
    }
    if let Some(id) = req.memory_id {
        sql.push_str(" AND id = ?");
        values.push(id.into());
    }
    sql
}

/// `list_memories`.
pub(crate) fn list_memories(
    store: &Store,
    req: &ListMemoriesRequest,
) -> Result<ListMemoriesOutcome> {
    let limit = req.limit.min(LIST_MEMORIES_MAX_LIMIT);
    let agent = (!req.agent_id.is_empty()).then_some(req.agent_id.as_str());
    let scope = Scope::read(agent, req.project_id.as_deref(), req.channel.as_deref());
    let (pred, mut values) = scope.predicate("");
    let filters = filters(req, &mut values);
    let sql = format!(
        "SELECT id, agent_id, project_id, content, source, timestamp, created_at_ms, locked, \
         channel FROM memories WHERE {pred}{filters} \
         ORDER BY created_at_ms DESC, id DESC LIMIT ? OFFSET ?"
    );
    let page = store.read(|conn| {
        read_page(conn, &sql, values, limit, req.offset, |row| {
            let source: String = row.get(4)?;
            Ok(MemoryItem {
                id: row.get(0)?,
                agent_id: row.get(1)?,
                project_id: row.get(2)?,
                content: row.get(3)?,
                source: serde_json::from_str(&source).unwrap_or(Value::String(source)),
                timestamp: row.get(5)?,
                created_at: format_ms(row.get(6)?),
                locked: row.get(7)?,
                channel: row.get(8)?,
                content_truncated: None,
                content_len: None,
                reference: None,
            })
        })
    })?;
    let (mut rows, next_offset) = (page.rows, page.next_offset);
    let chars = |item: &MemoryItem| item.content.chars().count();
    let degraded = fit_budget(&mut rows, LIST_MEMORIES_MAX_CHARS, chars, |item| {
        let n_chars = item.content.chars().count();
        let Some(prefix) = cut(&item.content, PREVIEW_CHARS) else {
            return false;
        };
        item.content = prefix;
        item.content_truncated = Some(true);
        item.content_len = Some(n_chars);
        item.reference = Some(format!("mem:{}", item.id));
        true
    });
    Ok(ListMemoriesOutcome {
        count: rows.len(),
        memories: rows,
        budget_chars: degraded.then_some(LIST_MEMORIES_MAX_CHARS),
        next_offset,
    })
}
