//! The tool families, one `#[tool_router(router = …)]` impl block per file, summed in
//! `mcp/mod.rs`. Each handler only names its wire type and its backend method: checking,
//! decoding and encoding happen once, in `McpServer::call`.

mod associations;
mod episodes;
mod health;
mod memory;
mod persistence;
mod portability;
mod profile;
mod quality;
mod recall;
mod reconstruct;
