//! The list tools' paging (`list_memories`, `list_episodes`): one page of `limit` rows read
//! newest first with one more row to tell whether a next page exists, and CPersona's
//! character budget, which cuts the rows past it to their preview (never drops them).

use rusqlite::Connection;
use rusqlite::types::Value;

use crate::error::Result;

/// Preview length a row past the budget degrades to (CPersona's recall preview, 500).
pub(crate) const PREVIEW_CHARS: usize = 500;

/// One page: its rows and the offset of the next page, when more rows exist.
pub(crate) struct Page<T> {
    pub(crate) rows: Vec<T>,
    pub(crate) next_offset: Option<usize>,
}

/// Reads the page at `offset` of `limit` rows: `select` is a query ending in
/// `LIMIT ? OFFSET ?` whose leading parameters are `values`; `row` maps one result row.
pub(crate) fn read_page<T>(
    conn: &Connection,
    select: &str,
    mut values: Vec<Value>,
    limit: usize,
    offset: usize,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Page<T>> {
    values.push(Value::Integer(limit as i64 + 1));
    values.push(Value::Integer(offset as i64));
    let mut stmt = conn.prepare(select)?;
    let mut rows = stmt
        .query_map(rusqlite::params_from_iter(values), row)?
        .collect::<rusqlite::Result<Vec<T>>>()?;
    let next_offset = (rows.len() > limit).then_some(offset + limit);
    rows.truncate(limit);
    Ok(Page { rows, next_offset })
}

/// CPersona's page budget: rows stay whole while the page's text fits `max_chars`; each row
/// after that is cut to its preview by `preview` (which says whether it cut anything).
/// `chars` counts a row's text. Returns true when a row was cut.
pub(crate) fn fit_budget<T>(
    rows: &mut [T],
    max_chars: usize,
    chars: impl Fn(&T) -> usize,
    mut preview: impl FnMut(&mut T) -> bool,
) -> bool {
    let mut used = 0usize;
    let mut cut_any = false;
    for row in rows {
        if used + chars(row) > max_chars && preview(row) {
            cut_any = true;
        }
        used += chars(row);
    }
    cut_any
}

/// The first `max_chars` characters of `text`, or `None` when it is not longer.
pub(crate) fn cut(text: &str, max_chars: usize) -> Option<String> {
    text.char_indices()
        .nth(max_chars)
        .map(|(at, _)| text[..at].to_owned())
}
