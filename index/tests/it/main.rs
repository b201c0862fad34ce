//! The index crate's one integration binary: round trips, golden files, corrupt files.
