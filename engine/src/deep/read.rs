//! `deep_check`'s SQL: every read through the agent's [`Scope`], vector reads only of the
//! target model and dimension; the two repairs' writes.

use rusqlite::{Connection, Transaction, params, params_from_iter};

use crate::error::Result;
use crate::scope::Scope;
use crate::store::VectorTarget;
use crate::vector::{decode, format_from_tag};

/// A memory's id, text and lock.
pub(super) struct TextRow {
    pub(super) id: i64,
    pub(super) text: String,
    pub(super) locked: bool,
}

/// Rows whose source is a `User` with an empty id and an empty name.
pub(super) fn anonymous_user_rows(conn: &Connection, agent: &str) -> Result<Vec<TextRow>> {
    text_rows(
        conn,
        agent,
        "memories",
        "content",
        "AND json_valid(source) AND json_extract(source, '$.type') = 'User' \
         AND json_extract(source, '$.id') = '' AND json_extract(source, '$.name') = ''",
        None,
    )
}

/// Rows whose trimmed text is at most `chars` characters (the stage weighs them).
pub(super) fn short_rows(conn: &Connection, agent: &str, chars: usize) -> Result<Vec<TextRow>> {
    text_rows(
        conn,
        agent,
        "memories",
        "content",
        &format!("AND length(trim(content)) <= {chars}"),
        None,
    )
}

/// The newest `limit` texts of `table` (`content` of memories, `summary` of episodes).
pub(super) fn newest_texts(
    conn: &Connection,
    agent: &str,
    table: &str,
    limit: usize,
) -> Result<Vec<TextRow>> {
    let column = if table == "episodes" {
        "summary"
    } else {
        "content"
    };
    text_rows(conn, agent, table, column, "", Some(limit))
}

fn text_rows(
    conn: &Connection,
    agent: &str,
    table: &str,
    column: &str,
    extra: &str,
    limit: Option<usize>,
) -> Result<Vec<TextRow>> {
    let (pred, values) = Scope::read(Some(agent), None, None).predicate("");
    let locked = if table == "memories" { "locked" } else { "0" };
    let tail = limit.map_or(String::from("ORDER BY id"), |n| {
        format!("ORDER BY id DESC LIMIT {n}")
    });
    let mut stmt = conn.prepare(&format!(
        "SELECT id, {column}, {locked} FROM {table} WHERE {pred} {extra} {tail}"
    ))?;
    let rows = stmt.query_map(params_from_iter(values.iter()), |r| {
        Ok(TextRow {
            id: r.get(0)?,
            text: r.get(1)?,
            locked: r.get::<_, i64>(2)? != 0,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The agent's profile's last update (ms), when it is older than `before_ms`.
pub(super) fn stale_profile(conn: &Connection, agent: &str, before_ms: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare(
        "SELECT updated_at_ms FROM profiles WHERE agent_id = ? AND user_id = '' \
         AND updated_at_ms < ?",
    )?;
    let rows = stmt.query_map(params![agent, before_ms], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every memory time of the agent, ascending.
pub(super) fn memory_times(conn: &Connection, agent: &str) -> Result<Vec<i64>> {
    let (pred, values) = Scope::read(Some(agent), None, None).predicate("");
    let mut stmt = conn.prepare(&format!(
        "SELECT timestamp_ms FROM memories WHERE {pred} ORDER BY timestamp_ms"
    ))?;
    let rows = stmt.query_map(params_from_iter(values.iter()), |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An episode with a span: id, summary, start and end as given and in ms.
pub(super) struct SpanRow {
    pub(super) id: i64,
    pub(super) summary: String,
    pub(super) start: String,
    pub(super) end: String,
    pub(super) start_ms: Option<i64>,
    pub(super) end_ms: Option<i64>,
}

/// The agent's episodes that carry a start and an end.
pub(super) fn episode_spans(conn: &Connection, agent: &str) -> Result<Vec<SpanRow>> {
    let (pred, values) = Scope::read(Some(agent), None, None).predicate("");
    let mut stmt = conn.prepare(&format!(
        "SELECT id, summary, start_time, end_time, start_ms, end_ms FROM episodes \
         WHERE {pred} AND start_time IS NOT NULL AND end_time IS NOT NULL ORDER BY id"
    ))?;
    let rows = stmt.query_map(params_from_iter(values.iter()), |r| {
        Ok(SpanRow {
            id: r.get(0)?,
            summary: r.get(1)?,
            start: r.get(2)?,
            end: r.get(3)?,
            start_ms: r.get(4)?,
            end_ms: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A row's id, text and decoded vector.
pub(super) struct VectorRow {
    pub(super) id: i64,
    pub(super) text: String,
    pub(super) vector: Vec<f32>,
}

/// The newest `limit` rows of `table` carrying a vector of the target model and dimension,
/// and how many rows there were before the limit cut (up to `limit + 1`).
pub(super) fn newest_vectors(
    conn: &Connection,
    agent: &str,
    table: &str,
    target: &VectorTarget,
    limit: usize,
) -> Result<(Vec<VectorRow>, bool)> {
    let column = if table == "episodes" {
        "summary"
    } else {
        "content"
    };
    let (pred, mut values) = Scope::read(Some(agent), None, None).predicate("");
    values.push(target.model_id.clone().into());
    values.push((target.dim as i64).into());
    let mut stmt = conn.prepare(&format!(
        "SELECT id, {column}, embedding, embedding_format FROM {table} WHERE {pred} \
         AND embedding IS NOT NULL AND embedding_model = ? AND embedding_dim = ? \
         ORDER BY id DESC LIMIT {}",
        limit + 1
    ))?;
    let rows = stmt.query_map(params_from_iter(values.iter()), |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Vec<u8>>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let rows = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    let complete = rows.len() <= limit;
    let decoded = rows
        .into_iter()
        .take(limit)
        .filter_map(|(id, text, blob, tag)| {
            let vector = decode(&blob, format_from_tag(&tag)?)?;
            vector
                .iter()
                .all(|x| x.is_finite())
                .then_some(VectorRow { id, text, vector })
        })
        .collect();
    Ok((decoded, complete))
}

/// Names the speaker of an anonymous row, unless it is locked; whether it changed.
pub(super) fn set_speaker(tx: &Transaction<'_>, id: i64, name: &str) -> Result<bool> {
    let source = serde_json::json!({"type": "User", "id": "", "name": name}).to_string();
    let changed = tx.execute(
        "UPDATE memories SET source = ? WHERE id = ? AND locked = 0",
        params![source, id],
    )?;
    Ok(changed == 1)
}
