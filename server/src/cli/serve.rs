//! `cpersona serve`: build the backend and the MCP server, then run the chosen transport on a
//! tokio runtime. HTTP start-up checks (token) run before anything else is opened.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::cli::RunError;
use crate::config::Config;
use crate::mcp::McpServer;
use crate::mcp::unwired::Unwired;
use crate::transport::http::{self, HttpSecurity};

/// Serve over HTTP when `--http` (or `CPERSONA_TRANSPORT=streamable-http`) says so, else stdio.
pub(crate) fn run(config: Config, http_flag: Option<SocketAddr>) -> Result<(), RunError> {
    let http_addr = http_flag.or(config.http.env_bind);
    // Preflight first, as CPersona does: an HTTP server without a token never opens the store.
    let security = match http_addr {
        Some(_) => Some(HttpSecurity {
            auth_token: http::resolve_auth(
                config.http.auth_token.clone(),
                config.http.allow_unauthenticated,
            )
            .map_err(RunError::config)?,
            max_body_bytes: config.http.max_body_bytes,
            extra_allowed_origins: config.http.extra_allowed_origins.clone(),
            extra_allowed_hosts: config.http.extra_allowed_hosts.clone(),
        }),
        None => None,
    };
    tracing::info!(db = %config.db_path.display(), embedder = ?config.embedder, "starting");
    // The engine backend replaces this once the engine lands (next wave).
    let server = McpServer::new(Arc::new(Unwired));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match (http_addr, security) {
            (Some(addr), Some(security)) => http::serve(server, security, addr).await,
            _ => crate::transport::stdio::serve(server).await,
        }
    })?;
    Ok(())
}
