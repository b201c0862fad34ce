//! The two ways an MCP client reaches the server: stdio (what a desktop client launches) and
//! streamable HTTP at `/mcp` behind a bearer token; and the proxy, a stdio server that relays
//! every message to a remote one over streamable HTTP. Transports carry messages; they never
//! interpret tools.

pub mod http;
mod jsonrpc;
pub mod proxy;
pub mod stdio;
