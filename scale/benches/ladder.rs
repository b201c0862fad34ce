//! The 1K to 1M ladder; placeholder until it lands.
#![forbid(unsafe_code)]
fn main() {}
