//! `EngineConfig`: the engine's typed, validated settings, with every product default as a
//! documented constant. The engine never reads environment variables; the server parses them
//! and hands a validated value down.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Memory and episode text limit in characters. CPersona's `CPERSONA_MAX_CONTENT_LENGTH`
/// default: long enough for a pasted document section, short enough that one row never
/// dominates a response budget. Longer text is refused whole, never cut (issue 18); the
/// server advertises this same number as the `maxLength` of every stored text argument.
pub const DEFAULT_MAX_CONTENT_CHARS: usize = 16_000;
/// Profile text cap in characters (CPersona's `CPERSONA_MAX_PROFILE_LENGTH`): a profile is
/// injected into recalls, so it stays short.
pub const DEFAULT_MAX_PROFILE_CHARS: usize = 2_000;
/// Serialised `source` / `metadata` cap in characters (CPersona's
/// `CPERSONA_MAX_METADATA_LENGTH`). Over it the write is refused, never cut: cut JSON is
/// not JSON.
pub const DEFAULT_MAX_METADATA_CHARS: usize = 8_000;
pub use crate::text::{MAX_KEY_CHARS, MAX_TIMESTAMP_CHARS};
/// Import file cap in bytes (CPersona's `CPERSONA_MAX_IMPORT_BYTES`, 100 MiB): bounds the
/// memory one import may hold while it validates the file before writing.
pub const DEFAULT_MAX_IMPORT_BYTES: u64 = 104_857_600;
/// Rows per import transaction. Large enough that the commit cost vanishes per row, small
/// enough that a reader waiting on the WAL sees progress and memory stays flat.
pub const DEFAULT_IMPORT_BATCH_ROWS: usize = 5_000;
/// An import batch with at least this many memories fills the FTS index in one statement
/// instead of row by row (`portability/bulk.rs`); `usize::MAX` keeps every batch per-row.
pub const DEFAULT_IMPORT_BULK_MIN_ROWS: usize = 256;
/// Texts per embedder call when the queue drains or an import embeds. The embedders batch
/// internally; 32 keeps one call's latency around a second on the builtin model.
pub const DEFAULT_EMBED_BATCH: usize = 32;
/// Failed embedding attempts after which a queued row stops being retried automatically
/// (CPersona's `CPERSONA_TASK_MAX_RETRIES`); `get_queue_status` still counts it.
pub const DEFAULT_QUEUE_MAX_ATTEMPTS: u32 = 3;
/// Seconds a queued row waits after a failure before the next attempt (CPersona's
/// `CPERSONA_TASK_RETRY_DELAY`), so a dead embedder is not hammered.
pub const DEFAULT_QUEUE_RETRY_DELAY_SECS: u64 = 30;
/// SQLite busy timeout in milliseconds (CPersona uses 5000): a writer waits this long for
/// another process's lock before failing.
pub const DEFAULT_BUSY_TIMEOUT_MS: u32 = 5_000;
/// Pause TTL when `pause_persistence` gives none, and its ceiling (CPersona: 1800 / 86400).
pub const DEFAULT_PAUSE_TTL_SECS: u64 = 1_800;
/// The longest pause one call may ask for.
pub const MAX_PAUSE_TTL_SECS: u64 = 86_400;

pub use crate::reconstruct::stages::config::ReconstructConfig;
pub use crate::vector::EmbeddingFormat;

/// CPersona's `CPERSONA_MAX_MEMORIES`: the vector scan window per table (newest rows in scope).
pub const MAX_MEMORIES: usize = 10_000;

/// The folder under the data folder that `export_memories` and `import_memories` reach when
/// no `CPERSONA_EXPORT_DIR` is set: `<database folder>/exports`.
pub const DEFAULT_EXPORT_FOLDER: &str = "exports";

/// Where `export_memories` and `import_memories` may touch the filesystem. Whatever the
/// reach, an export never lands on the store's own files (the database, its `-wal`, `-shm`,
/// `-journal` and every `<db>.*` index file beside it) and never replaces an existing file
/// unless the request asks (`overwrite`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportDir {
    /// Paths resolve inside this folder (relative ones against it), symlinks that leave it
    /// are refused, and refusals say nothing about what lies outside it. Created on the
    /// first export when missing. `/` is the old, unconfined reach (`CPERSONA_EXPORT_DIR=/`).
    Folder(PathBuf),
    /// The operator's command line (`cpersona export FILE` / `import FILE`): any path the
    /// operator names, relative ones against the working directory, symlinks followed.
    Operator,
}

impl ExportDir {
    /// The default for a store at `db_path`: [`DEFAULT_EXPORT_FOLDER`] beside the database.
    pub fn default_for(db_path: &Path) -> ExportDir {
        let parent = db_path.parent().unwrap_or(Path::new(""));
        ExportDir::Folder(parent.join(DEFAULT_EXPORT_FOLDER))
    }
}

/// Everything the engine needs to open a store.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The SQLite file (created when absent).
    pub db_path: PathBuf,
    /// See [`DEFAULT_MAX_CONTENT_CHARS`].
    pub max_content_chars: usize,
    /// See [`DEFAULT_MAX_PROFILE_CHARS`].
    pub max_profile_chars: usize,
    /// See [`DEFAULT_MAX_METADATA_CHARS`].
    pub max_metadata_chars: usize,
    /// See [`DEFAULT_MAX_IMPORT_BYTES`].
    pub max_import_bytes: u64,
    /// See [`DEFAULT_IMPORT_BATCH_ROWS`].
    pub import_batch_rows: usize,
    /// See [`DEFAULT_IMPORT_BULK_MIN_ROWS`].
    pub import_bulk_min_rows: usize,
    /// See [`DEFAULT_EMBED_BATCH`].
    pub embed_batch: usize,
    /// See [`DEFAULT_QUEUE_MAX_ATTEMPTS`].
    pub queue_max_attempts: u32,
    /// See [`DEFAULT_QUEUE_RETRY_DELAY_SECS`].
    pub queue_retry_delay_secs: u64,
    /// See [`DEFAULT_BUSY_TIMEOUT_MS`].
    pub busy_timeout_ms: u32,
    /// Encoding of embeddings written from now on.
    pub embedding_format: EmbeddingFormat,
    /// Where export and import paths may reach (CPersona's `CPERSONA_EXPORT_DIR`; by
    /// default [`ExportDir::default_for`] the database, never unconfined).
    pub export_dir: ExportDir,
    /// Vector scan window per table: the newest rows in scope that form the near list
    /// (CPersona's `CPERSONA_MAX_MEMORIES`, default [`MAX_MEMORIES`]); older rows go
    /// to the far list.
    pub scan_window: usize,
    /// The recall stages' settings (fusion, depth, gate, preview tier).
    pub recall: crate::recall::stages::config::RecallConfig,
    /// Reconstruct's window, budget and bundling settings.
    pub reconstruct: ReconstructConfig,
    /// Declared associations (`declare_associations`, `traverse`, the association cue in
    /// recall). On by default, as CPersona 2.6 ships them (an empty registry leaves recall
    /// byte for byte as it was); off (`CPERSONA_ASSOCIATIONS_ENABLED=false`), the tools
    /// refuse, saying how to enable them, and recall never reads the association tables.
    pub associations_enabled: bool,
    /// The propagation seat (CPersona 2.6's `propagation-v1`, `CPERSONA_RECALL_PROPAGATION_SEAT`):
    /// one held place for the best row of a deeper ranking. Off by default, as shipped.
    pub propagation_seat: bool,
    /// Adopt a new embedder when the store's vectors were written by another one: the store
    /// targets the configured embedder at once and its rows are re-embedded
    /// ([`crate::Engine::reembed_step`]) until none of the old model is left. Never toward
    /// the hashed fallback over a real model's vectors (a missing model folder must not
    /// wipe them). On by default; off keeps the old target (writes queue, the vector arm is
    /// skipped) until an operator runs `cpersona reembed`.
    pub reembed_on_model_change: bool,
    /// What `store` does with a timestamp ahead of the clock.
    pub future_timestamps: FutureTimestamps,
    /// `deep_check`'s scan bounds.
    pub deep: DeepConfig,
    /// The query-vector cache's bounds.
    pub query_cache: QueryCacheConfig,
}

impl EngineConfig {
    /// The defaults for a store at `db_path`.
    pub fn new(db_path: impl Into<PathBuf>) -> EngineConfig {
        let db_path = db_path.into();
        EngineConfig {
            export_dir: ExportDir::default_for(&db_path),
            db_path,
            max_content_chars: DEFAULT_MAX_CONTENT_CHARS,
            max_profile_chars: DEFAULT_MAX_PROFILE_CHARS,
            max_metadata_chars: DEFAULT_MAX_METADATA_CHARS,
            max_import_bytes: DEFAULT_MAX_IMPORT_BYTES,
            import_batch_rows: DEFAULT_IMPORT_BATCH_ROWS,
            import_bulk_min_rows: DEFAULT_IMPORT_BULK_MIN_ROWS,
            embed_batch: DEFAULT_EMBED_BATCH,
            queue_max_attempts: DEFAULT_QUEUE_MAX_ATTEMPTS,
            queue_retry_delay_secs: DEFAULT_QUEUE_RETRY_DELAY_SECS,
            busy_timeout_ms: DEFAULT_BUSY_TIMEOUT_MS,
            embedding_format: EmbeddingFormat::F32,
            scan_window: MAX_MEMORIES,
            recall: crate::recall::stages::config::RecallConfig::default(),
            reconstruct: ReconstructConfig::default(),
            associations_enabled: true,
            propagation_seat: false,
            reembed_on_model_change: true,
            future_timestamps: FutureTimestamps::default(),
            deep: DeepConfig::default(),
            query_cache: Default::default(),
        }
    }

    /// Checks every field; [`crate::Engine::open`] calls it.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("max_content_chars", self.max_content_chars),
            ("max_profile_chars", self.max_profile_chars),
            ("max_metadata_chars", self.max_metadata_chars),
            ("import_batch_rows", self.import_batch_rows),
            ("embed_batch", self.embed_batch),
            ("scan_window", self.scan_window),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(Error::InvalidConfig {
                    field,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if self.max_import_bytes == 0 {
            return Err(Error::InvalidConfig {
                field: "max_import_bytes",
                reason: "must be at least 1".into(),
            });
        }
        self.recall.validate()?;
        self.reconstruct.validate()?;
        if self.db_path.as_os_str().is_empty() {
            return Err(Error::InvalidConfig {
                field: "db_path",
                reason: "is empty".into(),
            });
        }
        Ok(())
    }
}

/// What `store` does with a `timestamp` further ahead of the clock than the allowance
/// (CPersona 2.6's `CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS` and `_MODE`; the boundary itself
/// is accepted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutureTimestamps {
    /// Seconds ahead of the clock still accepted silently (default 300).
    pub allowance_secs: i64,
    pub mode: FutureTimestampMode,
}

/// `warn` stores the row and reports `timestamp_ahead_of_clock`; `reject` refuses the write;
/// `off` stores it without a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FutureTimestampMode {
    Warn,
    Reject,
    Off,
}

impl Default for FutureTimestamps {
    fn default() -> FutureTimestamps {
        FutureTimestamps {
            allowance_secs: 300,
            mode: FutureTimestampMode::Warn,
        }
    }
}

/// How much of an agent's store `deep_check`'s scanning checks read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeepConfig {
    /// Embedded rows `near_duplicate` compares, newest first (its work is quadratic in them;
    /// CPersona's `CPERSONA_NEAR_DUPLICATE_ROW_CAP`, default 5,000).
    pub near_duplicate_row_cap: usize,
    /// Rows per table `unnormalized_content` reads, newest first
    /// (`CPERSONA_NORMALIZATION_SCAN_CAP`, default 10,000).
    pub normalization_scan_cap: usize,
}

impl Default for DeepConfig {
    fn default() -> DeepConfig {
        DeepConfig {
            near_duplicate_row_cap: 5_000,
            normalization_scan_cap: 10_000,
        }
    }
}

/// Recall's query-vector cache: its bounds (`store/query_vectors.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryCacheConfig {
    /// Entries kept at most; 0 turns the cache off.
    pub entries: usize,
    /// How long an entry answers.
    pub ttl: std::time::Duration,
}

impl Default for QueryCacheConfig {
    fn default() -> QueryCacheConfig {
        QueryCacheConfig {
            entries: 256,
            ttl: std::time::Duration::from_secs(300),
        }
    }
}
