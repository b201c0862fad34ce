//! Shared helpers for the criterion benches; the benches themselves live in `benches/`.
#![forbid(unsafe_code)]
