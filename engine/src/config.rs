//! `EngineConfig`: the engine's typed, validated settings, with every product default as a
//! documented constant. The engine never reads environment variables; the server parses them
//! and hands a validated value down.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Memory and episode text cap in characters. CPersona's `CPERSONA_MAX_CONTENT_LENGTH`
/// default: long enough for a pasted document section, short enough that one row never
/// dominates a response budget. Longer text is cut (the response says `truncated`).
pub const DEFAULT_MAX_CONTENT_CHARS: usize = 16_000;
/// Profile text cap in characters (CPersona's `CPERSONA_MAX_PROFILE_LENGTH`): a profile is
/// injected into recalls, so it stays short.
pub const DEFAULT_MAX_PROFILE_CHARS: usize = 2_000;
/// Serialised `source` / `metadata` cap in characters (CPersona's
/// `CPERSONA_MAX_METADATA_LENGTH`). Over it the write is refused, never cut: cut JSON is
/// not JSON.
pub const DEFAULT_MAX_METADATA_CHARS: usize = 8_000;
/// Key fields (agent_id, project_id, channel, msg_id, user ids) cap in characters, fixed in
/// CPersona 2.6 at 256: they are identifiers, not text.
pub const MAX_KEY_CHARS: usize = 256;
/// Timestamp text cap in characters (CPersona 2.6 fixes 64): no ISO-8601 instant is longer.
pub const MAX_TIMESTAMP_CHARS: usize = 64;
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

/// How stored embeddings are encoded. Recorded per row, so a store may hold both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EmbeddingFormat {
    /// Little-endian f32, 4 bytes per dimension (CPersona's blob format).
    #[default]
    F32,
    /// Little-endian IEEE half, 2 bytes per dimension: half the file for a cosine error
    /// below 1e-3 on unit vectors.
    F16,
}

impl EmbeddingFormat {
    /// The tag stored in the `embedding_format` column.
    pub fn tag(self) -> &'static str {
        match self {
            EmbeddingFormat::F32 => "f32",
            EmbeddingFormat::F16 => "f16",
        }
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
    /// When set, export and import paths must resolve inside this folder (CPersona's
    /// `CPERSONA_EXPORT_DIR`); when unset only `..` segments are refused.
    pub export_dir: Option<PathBuf>,
    /// Vector scan window per table: the newest rows in scope that form the near list
    /// (CPersona's `CPERSONA_MAX_MEMORIES`, default [`crate::MAX_MEMORIES`]); older rows go
    /// to the far list.
    pub scan_window: usize,
    /// The recall stages' settings (fusion, depth, gate, preview tier).
    pub recall: crate::recall::RecallConfig,
    /// Reconstruct's window, budget and bundling settings.
    pub reconstruct: ReconstructConfig,
    /// Declared associations (`declare_associations`, `traverse`, the association cue in
    /// recall). Off by default (`CPERSONA_ASSOCIATIONS_ENABLED`): the tools refuse, saying
    /// how to enable them, and recall never reads the association tables.
    pub associations_enabled: bool,
    /// The propagation seat (CPersona 2.6's `propagation-v1`, `CPERSONA_RECALL_PROPAGATION_SEAT`):
    /// one held place for the best row of a deeper ranking. Off by default, as shipped.
    pub propagation_seat: bool,
}

impl EngineConfig {
    /// The defaults for a store at `db_path`.
    pub fn new(db_path: impl Into<PathBuf>) -> EngineConfig {
        EngineConfig {
            db_path: db_path.into(),
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
            export_dir: None,
            scan_window: crate::MAX_MEMORIES,
            recall: crate::recall::RecallConfig::default(),
            reconstruct: ReconstructConfig::default(),
            associations_enabled: false,
            propagation_seat: false,
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

/// Reconstruct's settings (design §7, reference cpersona-2.6.14 §4 and §7 "Reconstruct").
/// The defaults are the shipped line's, not the design page's where they differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReconstructConfig {
    /// Items when the caller names no count. **[design≠code]** the design page says 1; the
    /// shipped 2.6 line (reference §4.1) ships 10, the value a reader measurement asked for,
    /// and this follows the shipped line.
    pub default_count: usize,
    /// The absolute ceiling on items (`CPERSONA_RECONSTRUCT_MAX_COUNT`, 10).
    pub max_count: usize,
    /// An operator-pinned count that wins over the caller's (unset by default).
    pub forced_count: Option<usize>,
    /// Candidate rows asked of recall (`CPERSONA_RECONSTRUCT_TOP_K`, 20): the pool's depth,
    /// never derived from the count.
    pub top_k: usize,
    /// Relation hops the walk may take (`CPERSONA_RECONSTRUCT_MAX_HOPS`, 2, at most 5).
    pub max_hops: usize,
    /// Claims retained per item (`CPERSONA_RECONSTRUCT_MAX_EVIDENCE`, 40, at most 100).
    pub max_evidence: usize,
    /// The whole adjacency burst must fit in this many milliseconds
    /// (`CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS` 60 s).
    pub adjacency_ms: i64,
    /// Head quote size of the first `full_quotes` items (800; 0 = one preview-tier excerpt).
    pub quote_chars: usize,
    /// How many items get the full head quote (5).
    pub full_quotes: usize,
    /// Head quote size after them (400).
    pub tail_quote_chars: usize,
    /// The preview tier's size: every other claim's excerpt is cut to it (500).
    pub excerpt_chars: usize,
    /// The payload budget when nobody names one (4,000 characters of quoted text; raised to
    /// the window's head quotes summed when that is more).
    pub default_budget: usize,
    /// The ceiling on the payload budget (20,000).
    pub max_budget: usize,
    /// An operator-pinned budget (unset by default).
    pub forced_budget: Option<usize>,
}

impl Default for ReconstructConfig {
    fn default() -> ReconstructConfig {
        ReconstructConfig {
            default_count: 10,
            max_count: 10,
            forced_count: None,
            top_k: 20,
            max_hops: 2,
            max_evidence: 40,
            adjacency_ms: 60_000,
            quote_chars: 800,
            full_quotes: 5,
            tail_quote_chars: 400,
            excerpt_chars: 500,
            default_budget: 4_000,
            max_budget: 20_000,
            forced_budget: None,
        }
    }
}

impl ReconstructConfig {
    /// The largest `top_k` a call may ask (the library ceiling).
    pub const TOP_K_CEILING: usize = 100;
    /// The most hops a walk may take.
    pub const MAX_HOPS_CEILING: usize = 5;
    /// The most claims an item may retain.
    pub const MAX_EVIDENCE_CEILING: usize = 100;

    /// A default or forced value above its maximum is a start-up error, never a clamp.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, reason: String| Err(Error::InvalidConfig { field, reason });
        if self.max_count == 0 {
            return bad("reconstruct.max_count", "must be at least 1".into());
        }
        for (field, count) in [
            ("reconstruct.default_count", Some(self.default_count)),
            ("reconstruct.forced_count", self.forced_count),
        ] {
            if let Some(count) = count
                && count > self.max_count
            {
                return bad(
                    field,
                    format!("{count} is above the maximum count {}", self.max_count),
                );
            }
        }
        if !(1..=Self::TOP_K_CEILING).contains(&self.top_k) {
            return bad("reconstruct.top_k", "must be in 1..=100".into());
        }
        if self.max_hops > Self::MAX_HOPS_CEILING {
            return bad("reconstruct.max_hops", "must be at most 5".into());
        }
        if !(1..=Self::MAX_EVIDENCE_CEILING).contains(&self.max_evidence) {
            return bad("reconstruct.max_evidence", "must be in 1..=100".into());
        }
        if self.adjacency_ms < 0 {
            return bad("reconstruct.adjacency_ms", "must be >= 0".into());
        }
        if self.excerpt_chars == 0 {
            return bad("reconstruct.excerpt_chars", "must be at least 1".into());
        }
        if self.quote_chars > 0
            && (self.tail_quote_chars == 0 || self.tail_quote_chars > self.quote_chars)
        {
            return bad(
                "reconstruct.tail_quote_chars",
                format!("must be in 1..={}", self.quote_chars),
            );
        }
        let floor = self.excerpt_chars;
        for (field, budget) in [
            ("reconstruct.max_budget", Some(self.max_budget)),
            ("reconstruct.default_budget", Some(self.default_budget)),
            ("reconstruct.forced_budget", self.forced_budget),
        ] {
            if let Some(budget) = budget {
                if budget < floor {
                    return bad(field, format!("{budget} is below one excerpt ({floor})"));
                }
                if budget > self.max_budget {
                    return bad(
                        field,
                        format!("{budget} is above the maximum budget {}", self.max_budget),
                    );
                }
            }
        }
        Ok(())
    }
}
