//! Reads for the store-wide checks: the index generations (through `Store::index_status`,
//! kept in one function so a change of that status touches one place) and the schema step
//! with SQLite's own check (through `Store::store_stats`).

use crate::error::Result;
use crate::health::stages::facts::{IndexFacts, SchemaFacts};
use crate::store::Store;
use crate::store::generations::IndexStatus;
use crate::store::stats::StoreStats;

/// Each table's index freshness, and the status it came from (reported whole).
pub(crate) fn index(store: &Store) -> Result<(Vec<IndexFacts>, IndexStatus)> {
    let status = store.index_status()?;
    let facts = status
        .tables
        .iter()
        .map(|t| IndexFacts {
            table: t.table.name(),
            rows: t.rows,
            live_tail: t.live_tail,
            stale_share: t.stale_share,
            note: t.note.clone(),
        })
        .collect();
    Ok((facts, status))
}

/// The schema step and integrity of `stats`.
pub(crate) fn schema(stats: &StoreStats) -> SchemaFacts {
    SchemaFacts {
        version: stats.schema_version,
        supported: stats.supported_schema_version,
        integrity: stats.integrity.clone(),
    }
}
