//! Memory-mapped int8 index generations: the file format, the SIMD kernels, the sign-bit
//! prefilter and filtered top-k search.
//!
//! # Overview
//! An index generation is one file built from rows handed in by the caller (ids, timestamps,
//! isolation codes, normalised f32 vectors). It is written once, renamed into place, and read
//! through a memory map. This crate must never know about SQLite, MCP, async or JSON.

pub mod error;
pub mod kernels;

pub use error::{Error, Result};

pub use kernels::{Isa, Kernels};
