//! `cpersona console [--bind 127.0.0.1:PORT]`: the local web console (`crate::console`) on
//! its own listener, loopback by default. It needs the token HTTP needs (or the ACL file's
//! clients); without one it starts only with `CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true` and
//! only on a loopback address, so an open console is never reachable from another machine.
//! It runs no background upkeep: `serve` keeps the index and the queue (a write made here
//! is searched exactly from the live tail until then).

use std::net::SocketAddr;
use std::sync::Arc;

use crate::cli::{RunError, open, serve};
use crate::config::Config;
use crate::console::Console;
use crate::mcp::engine::EngineBackend;
use crate::transport::http;

/// The address served when `--bind` is not given.
pub(crate) const DEFAULT_BIND: &str = "127.0.0.1:8788";

/// What `cpersona console` was asked.
#[derive(Debug, clap::Args)]
pub struct ConsoleArgs {
    /// Address to listen on (loopback unless a token guards it), e.g. 127.0.0.1:8788; port 0
    /// picks a free one (the log line says which).
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_BIND)]
    pub bind: SocketAddr,
}

/// Checks the settings, opens the store and serves the console until Ctrl-C / SIGTERM.
pub(crate) fn run(config: Config, args: &ConsoleArgs) -> Result<(), RunError> {
    if let Some(refused) = config.refused_setting() {
        return Err(RunError::config(refused));
    }
    let acl = serve::load_acl(&config)?;
    let security = serve::http_security(&config, acl.as_ref())?;
    if security.acl.is_none() && security.auth_token.is_none() && !args.bind.ip().is_loopback() {
        return Err(RunError::config(anyhow::anyhow!(
            "refusing to serve the console on {} without a token: an unauthenticated console \
             binds a loopback address only (set CPERSONA_AUTH_TOKEN, or bind 127.0.0.1)",
            args.bind
        )));
    }
    let served = crate::cli::migrate::for_serve(config)?;
    let config = served.config;
    let (engine, embedder) = open::open(&config)?;
    let backend = Arc::new(
        EngineBackend::new(engine, Arc::clone(&embedder), config.recall.clone())
            .with_unhonoured_settings(config.unhonoured.clone()),
    );
    let console = Console::new(backend, embedder);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let bind = args.bind;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {bind}: {e}"))?;
        let bound = listener.local_addr()?;
        let app = console.router(&security, bound);
        tracing::info!(%bound, "serving the console at http://{bound}/console");
        axum::serve(listener, app)
            .with_graceful_shutdown(http::shutdown_signal())
            .await?;
        anyhow::Ok(())
    })?;
    Ok(())
}
