//! Re-embedding's SQL: counting rows by the model their vector carries, the next batch of
//! rows of another model, writing their new vectors, and the records whose overflow nodes
//! or blocks still carry another model's vector.

use rusqlite::{Connection, Transaction, params};

use crate::error::Result;
use crate::refs::Ref;

/// The record tables re-embedded, with the column holding the embedded text.
pub(crate) const TABLES: [(&str, &str); 2] = [("memories", "content"), ("episodes", "summary")];

/// Rows carrying a vector, rows carrying the target's, and nodes plus blocks of another model.
pub(crate) struct Counts {
    pub(crate) rows: u64,
    pub(crate) done: u64,
    pub(crate) derived_other: u64,
}

pub(crate) fn counts(conn: &Connection, model_id: &str, dim: usize) -> Result<Counts> {
    let mut counts = Counts {
        rows: 0,
        done: 0,
        derived_other: 0,
    };
    for (table, _) in TABLES {
        let (rows, done): (i64, i64) = conn.query_row(
            &format!(
                "SELECT COUNT(*), COALESCE(SUM(embedding_model = ?1 AND embedding_dim = ?2), 0) \
                 FROM {table} WHERE embedding IS NOT NULL"
            ),
            params![model_id, dim as i64],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        counts.rows += rows.max(0) as u64;
        counts.done += done.max(0) as u64;
    }
    let derived: i64 = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM record_nodes WHERE embedding IS NOT NULL \
                 AND embedding_model <> ?1) + \
                (SELECT COUNT(*) FROM record_blocks WHERE embedding_i8 IS NOT NULL \
                 AND embedding_model <> ?1)",
        params![model_id],
        |row| row.get(0),
    )?;
    counts.derived_other = derived.max(0) as u64;
    Ok(counts)
}

/// Up to `limit` rows of `table` after `cursor` (id order) whose vector is another model's:
/// `(id, text)`.
pub(crate) fn next_batch(
    conn: &Connection,
    (table, column): (&str, &str),
    cursor: i64,
    model_id: &str,
    dim: usize,
    limit: usize,
) -> Result<Vec<(i64, String)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id, {column} FROM {table} WHERE id > ?1 AND embedding IS NOT NULL \
         AND (embedding_model <> ?2 OR embedding_dim <> ?3) ORDER BY id LIMIT ?4"
    ))?;
    let rows = stmt.query_map(params![cursor, model_id, dim as i64, limit as i64], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Writes one row's new vector, only if its text is still `text` (an edit meanwhile was
/// embedded by its own write). True when it landed.
pub(crate) fn write_vector(
    tx: &Transaction<'_>,
    (table, column): (&str, &str),
    id: i64,
    text: &str,
    blob: &[u8],
    (model_id, dim, format): (&str, usize, &str),
) -> Result<bool> {
    let n = tx
        .prepare_cached(&format!(
            "UPDATE {table} SET embedding = ?1, embedding_model = ?2, embedding_dim = ?3, \
             embedding_format = ?4 WHERE id = ?5 AND {column} = ?6"
        ))?
        .execute(params![blob, model_id, dim as i64, format, id, text])?;
    Ok(n == 1)
}

/// Up to `limit` records whose nodes or blocks carry another model's vector.
pub(crate) fn derived_of_other_model(
    conn: &Connection,
    model_id: &str,
    limit: usize,
) -> Result<Vec<Ref>> {
    let mut stmt = conn.prepare_cached(
        "SELECT parent_kind, parent_id FROM record_nodes WHERE embedding IS NOT NULL \
           AND embedding_model <> ?1 \
         UNION SELECT parent_kind, parent_id FROM record_blocks WHERE embedding_i8 IS NOT NULL \
           AND embedding_model <> ?1 \
         ORDER BY 1, 2 LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![model_id, limit as i64], |row| {
        let kind: String = row.get(0)?;
        let id: i64 = row.get(1)?;
        Ok(if kind == "ep" {
            Ref::ep(id)
        } else {
            Ref::mem(id)
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
