//! `engine::Error`: every way an engine operation fails, classified as the caller's fault or
//! ours. Messages are lowercase with no trailing period; a variant never hides its cause in a
//! string when a field can carry it.

use crate::embed::EmbedError;

/// Result with the engine's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure of an engine operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The embedder failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// An index generation failed to build or open.
    #[error(transparent)]
    Index(#[from] cpersona_index::Error),
    /// A recall input or setting was refused.
    #[error(transparent)]
    Recall(#[from] RecallError),
    /// The gate could not be calibrated from the stored vectors.
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A file operation failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The database was written by a newer cpersona-rs; opening it could corrupt it.
    #[error(
        "database schema version {found} is newer than this build supports ({supported}); upgrade cpersona-rs"
    )]
    SchemaTooNew { found: u32, supported: u32 },
    /// The file is an SQLite database that cpersona-rs did not create, and not a CPersona
    /// store (that is [`Error::CPersonaDatabase`]).
    #[error(
        "{path} is not a cpersona-rs database (found table {table}); export it as JSONL and import it"
    )]
    ForeignDatabase { path: String, table: String },
    /// The file is a CPersona store: it is converted (`cpersona migrate --from-cpersona`,
    /// or `serve` beside it), never migrated in place.
    #[error(
        "{path} is a CPersona database; convert it with `cpersona migrate --from-cpersona {path}` (serve converts it to a file beside it by itself)"
    )]
    CPersonaDatabase { path: String },
    /// A conversion's source is not a CPersona store.
    #[error("{path} is not a CPersona store: {reason}")]
    NotCPersona { path: String, reason: String },
    /// A CPersona store of a schema this build does not read.
    #[error(
        "{path} has CPersona schema version {found}; this build converts versions {oldest} to {newest} (CPersona 2.5 and 2.6)"
    )]
    CPersonaSchemaUnknown {
        path: String,
        found: i64,
        oldest: i64,
        newest: i64,
    },
    /// A CPersona store SQLite cannot read.
    #[error("cannot read {path}: {reason}")]
    CPersonaUnreadable { path: String, reason: String },
    /// A conversion's target already holds rows.
    #[error("{path} already holds memories; a conversion writes only into a new store")]
    TargetNotEmpty { path: String },
    /// A vector's dimension does not match the store's; vectors are never mixed.
    #[error("embedding dimension {received} does not match the store's dimension {expected}")]
    WrongDimension { expected: usize, received: usize },
    /// A vector holds a NaN or an infinity.
    #[error("embedding holds a non-finite value at position {position}")]
    NonFiniteEmbedding { position: usize },
    /// A request field is invalid.
    #[error("invalid {field}: {reason}")]
    InvalidInput { field: &'static str, reason: String },
    /// A timestamp could not be read as ISO-8601.
    #[error("invalid timestamp {value:?}: expected ISO-8601, e.g. 2026-01-31T09:30:00+09:00")]
    InvalidTimestamp { value: String },
    /// The memory does not exist (or belongs to another agent, which reads the same).
    #[error("memory {id} not found")]
    MemoryNotFound { id: i64 },
    /// The episode does not exist (or belongs to another agent).
    #[error("episode {id} not found")]
    EpisodeNotFound { id: i64 },
    /// The memory is locked against this operation.
    #[error("memory {id} is locked and cannot be {action}")]
    MemoryLocked { id: i64, action: &'static str },
    /// An import or export path is outside the export folder or otherwise unusable. The
    /// message names the argument, never the path: a path outside the folder must not learn
    /// whether it exists, what it is or where a symlink leads.
    #[error("{field} refused: {reason}")]
    PathRefused { field: &'static str, reason: String },
    /// An import file is malformed.
    #[error("import file malformed at line {line}: {reason}")]
    ImportMalformed { line: usize, reason: String },
    /// A reconstruct `mode`'s token cap is below its smallest response (the first item's
    /// head with one claim): nothing was cut to fit it.
    #[error(
        "cap_below_minimum: the {mode} mode's cap of {cap} cl100k_base tokens is below the smallest response ({minimum} tokens: the first item's head quote with one claim); ask without a mode or narrow the query"
    )]
    CapBelowMinimum {
        mode: &'static str,
        cap: usize,
        minimum: usize,
    },
    /// The caller cancelled a long operation at a point where nothing was yet written (or
    /// its one transaction was rolled back).
    #[error("cancelled by the caller during {during}; nothing was written")]
    Cancelled { during: &'static str },
    /// The engine configuration is invalid.
    #[error("invalid config {field}: {reason}")]
    InvalidConfig { field: &'static str, reason: String },
}

impl Error {
    /// True when the caller can fix this by changing its input.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::WrongDimension { .. }
            | Error::NonFiniteEmbedding { .. }
            | Error::InvalidInput { .. }
            | Error::InvalidTimestamp { .. }
            | Error::MemoryNotFound { .. }
            | Error::EpisodeNotFound { .. }
            | Error::MemoryLocked { .. }
            | Error::PathRefused { .. }
            | Error::ImportMalformed { .. }
            | Error::InvalidConfig { .. }
            | Error::CapBelowMinimum { .. }
            | Error::Cancelled { .. }
            | Error::Recall(_) => true,
            // Too few pairs, or a threshold above 1: the caller's rows or arguments.
            Error::Calibration(CalibrationError::LengthMismatch { .. }) => false,
            Error::Calibration(_) => true,
            Error::Embed(_)
            | Error::Index(_)
            | Error::Sqlite(_)
            | Error::Io(_)
            | Error::SchemaTooNew { .. }
            | Error::ForeignDatabase { .. }
            | Error::CPersonaDatabase { .. }
            | Error::NotCPersona { .. }
            | Error::CPersonaSchemaUnknown { .. }
            | Error::CPersonaUnreadable { .. }
            | Error::TargetNotEmpty { .. } => false,
        }
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidInput {
            field,
            reason: reason.into(),
        }
    }
}

/// A refused recall input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// The Recall Depth bounds are out of order.
    #[error(
        "invalid recall depth: floor {floor}, default {default}, max {max} (need 1 <= floor <= default <= max)"
    )]
    InvalidDepth {
        floor: usize,
        default: usize,
        max: usize,
    },
    /// `get_contents` got no refs.
    #[error("refs must be a non-empty list of mem:<id> or ep:<id>")]
    NoRefs,
    /// `get_contents` got more refs than it serves.
    #[error("too many refs ({given}; max {max})")]
    TooManyRefs { given: usize, max: usize },
    /// A configuration value is out of range.
    #[error("invalid recall setting {name}: {reason}")]
    InvalidSetting {
        name: &'static str,
        reason: &'static str,
    },
}

impl RecallError {
    /// True when the caller can fix this by changing its input (every variant).
    pub fn is_user_error(&self) -> bool {
        true
    }
}

/// Why there is no calibration.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    /// `vectors` and `sessions` differ in length.
    #[error("calibration got {vectors} vectors and {sessions} session labels")]
    LengthMismatch { vectors: usize, sessions: usize },
    /// Too few usable pairs.
    #[error(
        "too few pairs to calibrate: {null_pairs} null, {positive_pairs} positive, {needed} needed of each"
    )]
    TooFewPairs {
        null_pairs: usize,
        positive_pairs: usize,
        needed: usize,
    },
    /// The method placed the threshold above 1.0, a cosine no vector reaches.
    #[error(
        "the computed threshold {threshold} is above the maximum cosine similarity of 1.0 (method={method}); use a smaller z_factor or percentile"
    )]
    AboveOne {
        threshold: f64,
        method: &'static str,
    },
}
