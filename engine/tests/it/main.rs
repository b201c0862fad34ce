//! The engine's one integration binary.

mod common;
mod migrations;
mod portability;
mod write_path;
