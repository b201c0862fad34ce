//! SQLite connections: opening with the store's pragmas, and the migrations runner. Nothing
//! here knows what a memory is; it must never open a connection without [`configure`].

pub mod migrate;

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::error::Result;

/// Opens the writer connection: creates the file, sets WAL and the pragmas, migrates.
pub(crate) fn open_writer(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    let conn = Connection::open(path)?;
    configure(&conn, busy_timeout_ms)?;
    // WAL is a property of the file: set once by the writer, readers inherit it.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    migrate::migrate(&conn, path)?;
    Ok(conn)
}

/// Opens a reader connection; WAL lets it read a consistent snapshot while the writer writes.
pub(crate) fn open_reader(path: &Path, busy_timeout_ms: u32) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    configure(&conn, busy_timeout_ms)?;
    Ok(conn)
}

/// How much of the database file a connection maps (SQLite's `mmap_size`).
const MMAP_BYTES: i64 = 1 << 30;

/// The per-connection pragmas every connection gets.
pub(crate) fn configure(conn: &Connection, busy_timeout_ms: u32) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_millis(u64::from(busy_timeout_ms)))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // NORMAL is durable across application crashes in WAL mode and loses at most the last
    // transactions on power loss, the trade CPersona makes too.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Statement journals (every INSERT that fires triggers or writes FTS5 keeps one) stay in
    // memory instead of spilling to a temporary file: they are short-lived and were 14% of
    // an import's profile as pwrite64 calls.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Reads through a memory map instead of a pread per page: the vector arm's live tail reads
    // every changed row's 1.5 KB vector blob on every recall, and through the default 2 MB page
    // cache those reads were most of the tail's cost. The map is the OS page cache itself, so it
    // costs address space, not memory; SQLite falls back to reads past it.
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}
