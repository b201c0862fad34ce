//! Placeholder until the bench lands.
#![forbid(unsafe_code)]
fn main() {}
