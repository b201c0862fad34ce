//! The `cpersona` binary: an MCP memory server over stdio or streamable HTTP, and the
//! operator's CLI. The only crate that knows MCP, HTTP, tokio and the environment.
#![forbid(unsafe_code)]

mod embed_serve;

fn main() -> anyhow::Result<()> {
    // Temporary until the CLI lands: keeps `embed_serve::serve` referenced.
    let _ = embed_serve::serve;
    Ok(())
}
