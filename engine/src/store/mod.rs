//! The store: the state every feature reads and no feature owns — one writer connection
//! behind a mutex and a small pool of readers (WAL lets readers run during a write), the
//! embedder and the vector target it must match, the pause state, the loaded index
//! generations, the embedding queue and the kernels. It knows no feature: features take
//! `&Store` and their own config. It must never hold the writer lock while calling the
//! embedder: embedding happens before the write transaction, as in CPersona.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::config::{EmbeddingFormat, EngineConfig};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::store::index::cache::SegmentCache;
use cpersona_index::Kernels;

pub(crate) mod changelog;
pub(crate) mod credits;
pub mod db;
pub(crate) mod generations;
pub(crate) mod index;
pub(crate) mod pauses;
pub(crate) mod query_vectors;
pub(crate) mod queue;
pub(crate) mod reembed;
pub(crate) mod stats;
pub(crate) mod target;

pub(crate) use target::VectorTarget;

/// Reader connections kept open for reuse; more are opened on demand and dropped after.
const READER_POOL: usize = 4;

/// The store. `Send + Sync`; every method is blocking.
pub struct Store {
    /// The settings the store itself uses (its file, its timeouts, the queue's pace).
    pub(crate) settings: StoreSettings,
    pub(crate) embedder: Arc<dyn Embedder>,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    pub(crate) vectors: Mutex<VectorTarget>,
    /// Session key (`""` = the process bucket) → pause expiry in UTC ms.
    pub(crate) pauses: Mutex<HashMap<String, i64>>,
    /// Opened segment stores per record table (see `index/`).
    pub(crate) segments: Mutex<SegmentCache>,
    /// The kernels vector scans use (detected; tests may force scalar).
    pub(crate) kernels: Kernels,
    /// Where the re-embedding worker stands (`crate::reembed`): its cursors and last count.
    pub(crate) reembed: Mutex<reembed::WorkerState>,
    /// The change-log marks (head, purge mark) at which FTS5 last had nothing to merge: until
    /// a write moves them, the index upkeep leaves the full-text tables (and the writer) alone.
    pub(crate) fts_rested_at: Mutex<Option<(u64, u64)>>,
    /// Recall credit not yet written (`credits.rs`).
    pub(crate) credits: Mutex<Arc<credits::PendingCredits>>,
    /// Recent query vectors (`query_vectors.rs`).
    pub(crate) query_vectors: query_vectors::QueryVectors,
}

/// The part of [`EngineConfig`] the store itself reads.
#[derive(Clone, Debug)]
pub(crate) struct StoreSettings {
    /// The SQLite file.
    pub(crate) db_path: PathBuf,
    /// See [`crate::config::DEFAULT_BUSY_TIMEOUT_MS`].
    pub(crate) busy_timeout_ms: u32,
    /// See [`crate::config::DEFAULT_EMBED_BATCH`].
    pub(crate) embed_batch: usize,
    /// Encoding of embeddings written from now on.
    pub(crate) embedding_format: EmbeddingFormat,
    /// See [`crate::config::DEFAULT_QUEUE_MAX_ATTEMPTS`].
    pub(crate) queue_max_attempts: u32,
    /// See [`crate::config::DEFAULT_QUEUE_RETRY_DELAY_SECS`].
    pub(crate) queue_retry_delay_secs: u64,
}

impl StoreSettings {
    fn of(config: &EngineConfig) -> StoreSettings {
        StoreSettings {
            db_path: config.db_path.clone(),
            busy_timeout_ms: config.busy_timeout_ms,
            embed_batch: config.embed_batch,
            embedding_format: config.embedding_format,
            queue_max_attempts: config.queue_max_attempts,
            queue_retry_delay_secs: config.queue_retry_delay_secs,
        }
    }
}

impl Store {
    /// Opens (creating and migrating when needed) the store at `config.db_path`.
    ///
    /// The store records the embedder's identity (model id, dimension) the first time it is
    /// opened, and again while it holds no vector at all. An embedder whose identity differs
    /// from a store that already holds vectors is adopted and the old rows re-embedded
    /// (`target.rs` says when it is not: then writes land unembedded and are queued until a
    /// matching embedder is back). Vectors of two models are never compared.
    pub(crate) fn open(config: &EngineConfig, embedder: Arc<dyn Embedder>) -> Result<Store> {
        config.validate()?;
        if config.db_path.as_os_str() == ":memory:" {
            return Err(Error::InvalidConfig {
                field: "db_path",
                reason: "in-memory stores cannot share data with reader connections; use a file"
                    .into(),
            });
        }
        let writer = db::open_writer(&config.db_path, config.busy_timeout_ms)?;
        let adoption = if config.reembed_on_model_change {
            target::Adoption::Auto
        } else {
            target::Adoption::Off
        };
        let vectors = target::settle_identity(&writer, embedder.as_ref(), adoption)?;
        Ok(Store {
            settings: StoreSettings::of(config),
            embedder,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            vectors: Mutex::new(vectors),
            pauses: Mutex::new(HashMap::new()),
            segments: Mutex::new(HashMap::new()),
            kernels: Kernels::detect(),
            reembed: Mutex::new(Default::default()),
            fts_rested_at: Mutex::new(None),
            credits: Mutex::new(Arc::default()),
            query_vectors: query_vectors::QueryVectors::new(config.query_cache),
        })
    }

    /// Makes the configured embedder the target now (an operator's `cpersona reembed` when
    /// adoption is off, or over the hashed fallback); the worker then re-embeds the rest.
    pub(crate) fn adopt_embedder(&self) -> Result<VectorTarget> {
        let target = self.write(|tx| {
            target::settle_identity(tx, self.embedder.as_ref(), target::Adoption::Operator)
        })?;
        // A target of another model must not be searched through the old one's segments.
        *lock(&self.vectors) = target.clone();
        Ok(target)
    }

    /// The same store scanning vectors with `kernels` (tests compare scalar and detected);
    /// snapshots pick them up on next use.
    pub(crate) fn with_kernels(mut self, kernels: Kernels) -> Store {
        self.kernels = kernels;
        self
    }

    /// The highest change-log sequence number: "rows changed since seq S" reads `seq > S`.
    pub(crate) fn change_log_head(&self) -> Result<i64> {
        self.read(|conn| {
            Ok(
                conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM change_log", [], |row| {
                    row.get(0)
                })?,
            )
        })
    }

    /// Runs `f` on a reader connection (a consistent WAL snapshot per statement, or per
    /// transaction when `f` opens one).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let pooled = lock(&self.readers).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => db::open_reader(&self.settings.db_path, self.settings.busy_timeout_ms)?,
        };
        let res = f(&conn);
        let mut pool = lock(&self.readers);
        // A reader left inside a transaction would pin an old snapshot: drop it instead.
        if conn.is_autocommit() && pool.len() < READER_POOL {
            pool.push(conn);
        }
        res
    }

    /// Runs `f` inside one `BEGIN IMMEDIATE` transaction on the writer; commits on `Ok`,
    /// rolls back on `Err`.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = lock(&self.writer);
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` inside a writer transaction that is always rolled back (dry runs).
    pub(crate) fn write_dry<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = lock(&self.writer);
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.rollback()?;
        Ok(out)
    }

    /// The store's vector target as of now.
    pub(crate) fn vector_target(&self) -> VectorTarget {
        lock(&self.vectors).clone()
    }

    /// Embeds `texts` for storage: `Err` carries why not (embedder failed, wrong width, or an
    /// embedder that does not match the store), in which case the caller queues the rows.
    pub(crate) fn embed_for_store(
        &self,
        texts: &[&str],
    ) -> std::result::Result<Vec<Vec<u8>>, String> {
        let target = self.vector_target();
        if !target.embedder_matches {
            let identity = self.embedder.identity();
            return Err(format!(
                "embedder {} ({} dims) does not match the store's {} ({} dims)",
                identity.model_id, identity.dim, target.model_id, target.dim
            ));
        }
        let mut blobs = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.settings.embed_batch) {
            let vectors = self.embedder.embed(batch).map_err(|err| err.to_string())?;
            if vectors.len() != batch.len() {
                return Err(format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                ));
            }
            for vector in &vectors {
                let blob =
                    crate::vector::encode(vector, target.dim, self.settings.embedding_format)
                        .map_err(|err| err.to_string())?;
                blobs.push(blob);
            }
        }
        Ok(blobs)
    }
}

/// Locks a mutex, recovering from poisoning: every critical section either commits a
/// transaction or drops it (rolling back), so the guarded state is consistent after a panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
