//! The engine's one integration binary.

// Clippy's `allow-unwrap-in-tests` covers `#[test]` fns only, not the shared fixtures.
#![allow(clippy::unwrap_used)]

mod common;
mod fuzz;
mod migrations;
mod portability;
mod recall;
mod write_path;
