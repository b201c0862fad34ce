//! The store's index generations: where each table's file lives, rebuilding and publishing
//! one, loading it on first use (refusing a file of another embedder or older than a purge),
//! and reporting each table's state. The file formats and the builds themselves are
//! `generations/`; this is the store's cache of what is loaded.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use cpersona_index::Generation;

use crate::error::Result;
use crate::store::changelog::purged_through;
use crate::store::generations::{
    IndexStatus, IndexTable, Loaded, RebuildOutcome, TableIndexStatus, blocks, build_records,
};
use crate::store::{Store, lock};

impl Store {
    /// The generation file of `table`: `<db_path>.<table>.gen`.
    pub fn generation_path(&self, table: IndexTable) -> PathBuf {
        let mut path = self.settings.db_path.clone().into_os_string();
        path.push(format!(".{}.gen", table.name()));
        PathBuf::from(path)
    }

    /// Builds a generation of `table` from every row with a vector of the store's model,
    /// streaming rows from one read transaction, and publishes it. `progress(done, total)`
    /// is called every 1024 rows and at the end. A build that a purge overtook (the purge
    /// mark is above the head it read) deletes its file and publishes nothing.
    pub fn rebuild_index(
        &self,
        table: IndexTable,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RebuildOutcome> {
        let target = self.vector_target();
        let path = self.generation_path(table);
        // Numbers stay monotonic even past a file that is no longer usable (purge, model).
        let previous = self
            .loaded_generation(table)
            .map_or(0, |l| l.generation.generation())
            .max(Generation::open(&path).map_or(0, |g| g.generation()));
        let generation = previous + 1;
        let (head, summary) = self.read(|conn| match table {
            IndexTable::Blocks => blocks::build(conn, &target, &path, generation, progress),
            _ => build_records(conn, table, &target, &path, generation, progress),
        })?;
        let purged = self.read(purged_through)?;
        if purged > head {
            // A purge committed after the build's snapshot: its file may hold the agent.
            let _ = std::fs::remove_file(&path);
            lock(&self.generations).insert(
                table,
                (
                    None,
                    Some("generation discarded: a purge raced its build".into()),
                ),
            );
            return Ok(RebuildOutcome {
                table,
                generation: previous + 1,
                rows: summary.count,
                bytes: summary.bytes,
                changelog_head: head,
                discarded: true,
                path,
            });
        }
        let generation = Generation::open(&path)?.with_kernels(self.kernels);
        lock(&self.generations).insert(table, (Some(Arc::new(Loaded::new(generation))), None));
        Ok(RebuildOutcome {
            table,
            generation: previous + 1,
            rows: summary.count,
            bytes: summary.bytes,
            changelog_head: head,
            discarded: false,
            path,
        })
    }

    /// The published generation of `table`, loading it from disk on first use. `None` when
    /// there is no usable one (missing, unreadable, another embedder, or older than a purge).
    pub(crate) fn loaded_generation(&self, table: IndexTable) -> Option<Arc<Loaded>> {
        self.generation_with_note(table).0
    }

    fn generation_with_note(&self, table: IndexTable) -> (Option<Arc<Loaded>>, Option<String>) {
        let purged = self.read(purged_through).unwrap_or(u64::MAX);
        let mut cache = lock(&self.generations);
        let entry = cache
            .entry(table)
            .or_insert_with(|| self.load_from_disk(table));
        if let Some(loaded) = &entry.0
            && loaded.head() < purged
        {
            *entry = (
                None,
                Some("generation predates a purge; rebuild it".to_owned()),
            );
        }
        entry.clone()
    }

    fn load_from_disk(&self, table: IndexTable) -> (Option<Arc<Loaded>>, Option<String>) {
        let path = self.generation_path(table);
        if !path.exists() {
            return (None, Some("no generation file".to_owned()));
        }
        let generation = match Generation::open(&path) {
            Ok(g) => g.with_kernels(self.kernels),
            Err(err) => return (None, Some(format!("generation ignored: {err}"))),
        };
        let target = self.vector_target();
        let identity = generation.embedder();
        if identity.model_id != target.model_id || identity.dim != target.dim {
            return (
                None,
                Some(format!(
                    "generation ignored: built for {} ({} dims), store holds {} ({} dims)",
                    identity.model_id, identity.dim, target.model_id, target.dim
                )),
            );
        }
        (Some(Arc::new(Loaded::new(generation))), None)
    }

    /// Drops every cached generation (the purge hook calls it; the next use reloads and
    /// rejects files older than the purge mark).
    pub(crate) fn forget_generations(&self) {
        lock(&self.generations).clear();
    }

    /// The index state of each table (generation, rows, live tail, age, file size).
    pub fn index_status(&self) -> Result<IndexStatus> {
        let mut tables = Vec::new();
        for table in IndexTable::ALL {
            let (loaded, note) = self.generation_with_note(table);
            let path = self.generation_path(table);
            let file = std::fs::metadata(&path).ok();
            let live_tail: u64 = match &loaded {
                Some(l) => self.read(|conn| {
                    Ok(conn.query_row(
                        "SELECT COUNT(DISTINCT row_id) FROM change_log \
                         WHERE table_name = ? AND seq > ?",
                        rusqlite::params![table.name(), l.head() as i64],
                        |row| row.get::<_, i64>(0),
                    )? as u64)
                })?,
                None => self.read(|conn| {
                    Ok(conn.query_row(
                        &format!(
                            "SELECT COUNT(*) FROM {} WHERE embedding IS NOT NULL",
                            table.name()
                        ),
                        [],
                        |row| row.get::<_, i64>(0),
                    )? as u64)
                })?,
            };
            let rows = loaded.as_ref().map_or(0, |l| l.generation.len() as u64);
            tables.push(TableIndexStatus {
                table,
                generation: loaded.as_ref().map(|l| l.generation.generation()),
                rows,
                live_tail,
                age_ms: loaded.as_ref().and(file.as_ref()).and_then(|m| {
                    let modified = m.modified().ok()?;
                    SystemTime::now()
                        .duration_since(modified)
                        .ok()
                        .map(|d| d.as_millis() as u64)
                }),
                file_bytes: loaded.as_ref().and(file.as_ref()).map(|m| m.len()),
                stale_share: loaded
                    .as_ref()
                    .map(|_| live_tail as f64 / rows.max(1) as f64),
                note,
            });
        }
        Ok(IndexStatus { tables })
    }
}
