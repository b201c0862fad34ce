//! The index crate's one integration binary: round trips, golden files, corrupt files, filter
//! semantics against a brute-force model, the writer's swap, segments against a fresh
//! generation, and the segment store under injected failures and kills.

mod corrupt;
mod filter;
mod fuzz;
mod golden;
mod roundtrip;
mod segment_crash;
mod segments;
mod util;
mod writer;
