//! Reads for `fts_integrity`: each external-content FTS5 table's entries against its content
//! table's rows, and FTS5's own `integrity-check` with the content compared (rank 1). The
//! check is issued as an `INSERT` command, so it runs in a writer transaction that is always
//! rolled back; it writes nothing.

use crate::error::Result;
use crate::health::stages::facts::FtsFacts;
use crate::store::Store;

/// The FTS5 tables and their content tables.
pub(crate) const FTS_TABLES: [(&str, &str); 2] =
    [("memories_fts", "memories"), ("episodes_fts", "episodes")];

/// Both FTS tables against their rows (whole store: an FTS index is not per agent).
pub(crate) fn fts(store: &Store) -> Result<Vec<FtsFacts>> {
    let mut out = Vec::new();
    for (fts, content) in FTS_TABLES {
        let (rows, indexed): (i64, i64) = store.read(|conn| {
            Ok(conn.query_row(
                &format!(
                    "SELECT (SELECT COUNT(*) FROM {content}), (SELECT COUNT(*) FROM {fts}_docsize)"
                ),
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?)
        })?;
        let integrity_error = store.write_dry(|tx| {
            Ok(tx
                .execute(
                    &format!("INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)"),
                    [],
                )
                .err()
                .map(|err| err.to_string()))
        })?;
        out.push(FtsFacts {
            table: fts,
            rows: rows.max(0) as u64,
            indexed: indexed.max(0) as u64,
            integrity_error,
        });
    }
    Ok(out)
}
