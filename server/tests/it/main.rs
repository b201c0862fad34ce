//! The server's one integration binary: the MCP layer in-process and over real HTTP, the real
//! binary as a child process, the real-client Python test, schema snapshots, workspace
//! tidiness.

mod binary;
mod fake;
mod http;
mod mcp;
mod py;
mod schemas;
mod tidy;
