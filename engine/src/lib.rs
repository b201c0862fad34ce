//! The memory model: the SQLite store, the write path, the embedders, the recall arms,
//! fusion, the gate, the recall process, reconstruct and the trace.
//!
//! # Overview
//! [`Engine`] owns one SQLite file (the source of truth) and the index generations derived
//! from it. It is synchronous, speaks no MCP, runs no async runtime and reads no environment
//! variables: configuration arrives as typed values from the server.
#![forbid(unsafe_code)]

pub mod embed;
pub mod error;
pub mod recall;

pub use error::{Error, Result};
