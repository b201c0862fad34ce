//! The server's one integration binary: the MCP layer in-process and over real HTTP, the real
//! binary as a child process, the real-client tests (Python's `mcp` SDK; the npm inspector CLI
//! through `cpersona proxy`), schema snapshots, workspace tidiness.

// `allow-unwrap-in-tests` covers `#[test]` functions only; the helpers here (fake backend,
// clients) are test code too, and a panic is the failure report they should give.
#![allow(clippy::unwrap_used)]

mod access;
mod acl;
mod associations;
mod binary;
mod conformance;
mod console;
mod crash;
mod fake;
mod fake_hub;
mod faults;
mod fuzz;
mod health;
mod http;
mod logging;
mod mcp;
mod migrate;
mod model;
mod operating;
mod output_schema;
mod progress;
mod proxy;
mod py;
mod recency;
mod reconstruct;
mod replay_cli;
mod safe_paths;
mod schemas;
mod settings;
mod subscriptions;
mod tidy;
mod transport;
