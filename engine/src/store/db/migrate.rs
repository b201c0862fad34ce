//! The forward-only migrations runner: the numbered files of `migrations/` embedded at build
//! time, each applied in its own transaction, the step recorded in `PRAGMA user_version`.
//! It must never edit, skip or reorder a landed file, and never open a newer database.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Error, Result};

/// One numbered schema step.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// The file name in `migrations/`, e.g. `0001_init.sql`.
    pub name: &'static str,
    /// The SQL, applied as one batch.
    pub sql: &'static str,
}

/// Every schema step, in order. Step N (1-based) is recorded as `user_version = N`.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "0001_init.sql",
        sql: include_str!("../../../../migrations/0001_init.sql"),
    },
    Migration {
        name: "0002_fts5_trigram.sql",
        sql: include_str!("../../../../migrations/0002_fts5_trigram.sql"),
    },
];

/// The schema version this build writes.
pub fn supported_version() -> u32 {
    // The list is a handful of entries; it cannot exceed u32.
    u32::try_from(MIGRATIONS.len()).unwrap_or(u32::MAX)
}

/// Brings the database at `conn` up to [`supported_version`], refusing a newer one.
pub fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let found = user_version(conn)?;
    let supported = supported_version();
    if found > supported {
        return Err(Error::SchemaTooNew { found, supported });
    }
    // CPersona keeps its own steps in `schema_version` and uses bit 0 of `user_version` as a
    // flag, so its file may read as step 1 here: recognise it by its table, at any version.
    refuse_cpersona(conn, path)?;
    if found == 0 {
        refuse_foreign(conn, path)?;
    }
    for (step_idx, migration) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let step = step_idx as u32 + 1;
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        // Re-read inside the write lock: another process may have migrated meanwhile.
        if user_version(&tx)? >= step {
            tx.commit()?;
            continue;
        }
        tx.execute_batch(migration.sql)?;
        tx.pragma_update(None, "user_version", step)?;
        tx.commit()?;
    }
    Ok(())
}

/// The schema step recorded in the file.
pub fn user_version(conn: &Connection) -> Result<u32> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// A CPersona store (its `schema_version` table, without this store's `change_log`).
fn refuse_cpersona(conn: &Connection, path: &Path) -> Result<()> {
    let (cpersona, ours): (bool, bool) = conn.query_row(
        "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'), \
                EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'change_log')",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if cpersona && !ours {
        return Err(Error::CPersonaDatabase {
            path: path.display().to_string(),
        });
    }
    Ok(())
}

/// A file at version 0 must be empty: a CPersona database also has a `memories` table, and
/// running step 1 over it would fail half-way or, worse, succeed on a partial match.
fn refuse_foreign(conn: &Connection, path: &Path) -> Result<()> {
    let table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name LIMIT 1",
            [],
            |row| row.get(0),
        )
        .map(Some)
        .or_else(|err| match err {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            other => Err(other),
        })?;
    match table {
        Some(table) => Err(Error::ForeignDatabase {
            path: path.display().to_string(),
            table,
        }),
        None => Ok(()),
    }
}
