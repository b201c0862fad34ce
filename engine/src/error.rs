//! `engine::Error`: every way an engine operation fails, classified as the caller's fault or
//! ours. Messages are lowercase with no trailing period.

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
    /// SQLite failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A file operation failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// True when the caller can fix this by changing its input.
    pub fn is_user_error(&self) -> bool {
        false
    }
}
