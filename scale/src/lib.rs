//! The scale ladder's library: the seeded synthetic corpus shared with the benches, and the
//! report printer.
#![forbid(unsafe_code)]
