//! The `cpersona` server as a library: the MCP layer, its transports, configuration and the
//! CLI. The only crate that knows MCP, HTTP, tokio and the environment; it holds no ranking
//! logic (that is the engine's).
#![forbid(unsafe_code)]

pub mod access;
pub mod cli;
pub mod config;
pub mod console;
mod embed_serve;
pub mod mcp;
pub mod model;
pub mod operating;
pub mod transport;
