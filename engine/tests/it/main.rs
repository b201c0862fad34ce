//! The engine's one integration binary.

// Clippy's `allow-unwrap-in-tests` covers `#[test]` fns only, not the shared fixtures.
#![allow(clippy::unwrap_used)]

mod associations;
mod common;
mod cue;
mod cue_relations;
mod derived;
mod fuzz;
mod health;
mod index_fresh;
mod lexical_cap;
mod listing;
mod loop_codes;
mod merge_assoc;
mod migrations;
mod portability;
mod portability_assoc;
mod progress;
mod recall;
mod recall_credit;
mod recall_gaps;
mod recency;
mod reembed;
mod trace;
mod write_path;
