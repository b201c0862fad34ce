//! `index::Error`: structured failures of building, opening and searching a generation.

/// Result with the index's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure of the index crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file operation failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}
