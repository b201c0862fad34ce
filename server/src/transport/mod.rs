//! The two ways an MCP client reaches the server: stdio (what a desktop client launches) and
//! streamable HTTP at `/mcp` behind a bearer token. Transports carry messages; they never
//! interpret tools.

pub mod http;
mod jsonrpc;
pub mod stdio;
