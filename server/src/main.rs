//! The `cpersona` binary: an MCP memory server over stdio or streamable HTTP, and the
//! operator's CLI. The only crate that knows MCP, HTTP, tokio and the environment.
#![forbid(unsafe_code)]

fn main() -> anyhow::Result<()> {
    Ok(())
}
