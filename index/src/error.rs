//! `index::Error`: structured failures of building, opening and searching a generation.
//! Every variant carries fields, never a preformatted message; nothing here panics.

/// Result with the index's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure of the index crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file operation failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),

    /// The file does not start with the generation magic: not a generation file at all.
    #[error("not a generation file: magic {found:02x?}")]
    Magic {
        /// The first eight bytes found (zero padded when the file is shorter).
        found: [u8; 8],
    },

    /// The file is a generation of a format version this build does not read.
    #[error("unsupported generation format version {found} (this build reads 1 to {supported})")]
    Version {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads (and the one it writes).
        supported: u32,
    },

    /// The file is a generation but its bytes are inconsistent (truncated, overwritten, foreign).
    #[error("corrupt generation: {section}: {reason} (at byte {offset})")]
    Corrupt {
        /// The header field or section where the inconsistency was found.
        section: &'static str,
        /// What is wrong, in a few words.
        reason: &'static str,
        /// Byte offset in the file the check was about (0 when not applicable).
        offset: u64,
    },

    /// A vector's length does not match the generation's dimension.
    #[error("wrong vector dimension: expected {expected}, got {found}")]
    Dim {
        /// The dimension the generation (or query) was built for.
        expected: usize,
        /// The length handed in.
        found: usize,
    },

    /// A dimension outside what the format supports (0 or above [`crate::format::MAX_DIM`]).
    #[error("unsupported dimension {dim}")]
    DimUnsupported {
        /// The dimension asked for.
        dim: usize,
    },

    /// A vector handed in holds a NaN or an infinity.
    #[error("vector of row {row} holds a non-finite value")]
    NonFinite {
        /// Position of the row in the input (0 for a query).
        row: u64,
    },

    /// Rows were handed to the writer out of the file's order (created_at DESC, id ASC, ids
    /// unique).
    #[error("row {position} (id {id}) is out of order: rows must come created_at desc, id asc")]
    RowOrder {
        /// Position of the offending row in the input.
        position: u64,
        /// Its id.
        id: i64,
    },

    /// A string handed in is too long for the format (model id or dictionary entry).
    #[error("{field} is too long: {len} bytes")]
    TooLong {
        /// Which string.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },

    /// Too many rows or dictionary entries for the format's u32 positions and codes.
    #[error("too many {what} for one generation")]
    TooMany {
        /// Rows or dictionary entries.
        what: &'static str,
    },

    /// Two rows handed to one generation share an id.
    #[error("id {id} appears twice in one generation")]
    DuplicateId {
        /// The id.
        id: i64,
    },

    /// A segment manifest is unreadable or inconsistent with the files it lists.
    #[error("segment manifest {path}: {reason} (line {line})")]
    Manifest {
        /// The manifest file.
        path: std::path::PathBuf,
        /// What is wrong, in a few words.
        reason: &'static str,
        /// The 1-based line the check was about (0 when not applicable).
        line: usize,
    },

    /// A segment does not fit the set it is listed in (another model, dimension or row count).
    #[error("segment {segment}: {reason}")]
    SegmentMismatch {
        /// The segment's sequence number.
        segment: u64,
        /// What differs.
        reason: &'static str,
    },

    /// A commit was based on a change-log head the manifest no longer has (another writer
    /// committed first); nothing was written. Read the manifest's head and retry from it.
    #[error("stale commit: based on change-log head {based_on}, the manifest is at {current}")]
    StaleCommit {
        /// The head the commit said it continues from.
        based_on: u64,
        /// The head the manifest has.
        current: u64,
    },

    /// A merge plan no longer matches the manifest (its segments were merged or replaced);
    /// nothing was published.
    #[error("stale merge plan: segment {segment} is no longer where the plan found it")]
    StalePlan {
        /// A segment of the plan that moved or went.
        segment: u64,
    },

    /// A failure injected by a test at a named step of a commit or merge (never in production:
    /// only [`FaultPoint`] hooks raise it).
    #[error("injected failure at {point:?}")]
    Injected {
        /// Where.
        point: FaultPoint,
    },
}

/// A step of a commit, merge or rebuild where a test can make the operation stop as a kill
/// would: it returns [`Error::Injected`] at once and cleans nothing up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// The new segment is written and fsynced under its pending name.
    SegmentWritten,
    /// The segment is renamed to `seg-N.gen`; the manifest still lists the old set.
    SegmentRenamed,
    /// The new manifest is written and fsynced under its temporary name, not renamed.
    ManifestWritten,
    /// The new manifest is renamed into place; the directory is not yet fsynced.
    ManifestRenamed,
    /// A merge or rebuild is published; the files it replaced are not yet removed.
    OldSegmentsKept,
}
