//! MCP over stdin/stdout. Under this transport stdout carries only JSON-RPC: every log line
//! goes to stderr, and nothing here may print.

use rmcp::ServiceExt;

use crate::mcp::McpServer;

/// Serve `server` on this process's stdin/stdout until the client closes the pipe.
pub async fn serve(server: McpServer) -> anyhow::Result<()> {
    tracing::info!("serving MCP over stdio");
    let running = server.serve(rmcp::transport::stdio()).await?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "stdio session ended");
    Ok(())
}
