//! The index crate's one integration binary: round trips, golden files, corrupt files, filter
//! semantics against a brute-force model, and the writer's swap.

mod corrupt;
mod filter;
mod fuzz;
mod golden;
mod roundtrip;
mod util;
mod writer;
