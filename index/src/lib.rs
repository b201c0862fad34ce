//! Memory-mapped int8 index generations: the file format, the SIMD kernels, the sign-bit
//! prefilter and filtered top-k search.
//!
//! # Overview
//! An index generation is one file built from rows handed in by the caller (ids, timestamps,
//! isolation labels, normalised f32 vectors) by [`GenerationWriter`]. It is written once,
//! renamed into place, and read through a memory map by [`Generation::open`], which validates
//! it once. [`Generation::search`] runs a filtered top-k (exact int8, or sign-bit prefilter
//! then int8 re-rank) on a rayon pool; [`TailRows`] scans rows held in memory the same way.
//! [`segment`] keeps a table's index fresh without rebuilds: immutable segments (generation
//! files whose rows and tombstones shadow older copies), a manifest swapped atomically, merges
//! under a log-structured policy, and a search over them that equals one fresh generation.
//! This crate must never know about SQLite, MCP, async or JSON.

pub mod error;
pub mod exact;
pub mod filter;
pub mod format;
pub mod generation;
pub mod kernels;
mod mmap;
pub mod nn;
mod prefilter;
pub mod quantize;
mod rerank;
pub mod scan;
pub mod segment;
pub mod topk;
pub mod writer;

pub use error::{Error, Result};
pub use exact::{TailRows, search_f32};
pub use filter::{CodeSet, RowFilter, RowSet};
pub use format::Dim;
pub use generation::{EmbedderIdentity, Generation, GenerationMeta, ScopeField, SourceFingerprint};
pub use kernels::{Isa, Kernels};
pub use quantize::QueryCodes;
pub use scan::{Bounds, DEFAULT_CANDIDATES, NearFar, ScanConfig, SearchMode, SearchResult};
pub use topk::{BestK, Hit, Ranked, TopHits};
pub use writer::{GenerationWriter, QuantizedRow, Row, Scope, WriteSummary};
