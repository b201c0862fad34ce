//! `cpersona proxy [--url URL]`: relay MCP between stdio and a remote streamable HTTP server
//! (`transport/proxy/`), for a desktop client that only launches stdio servers. Start-up
//! errors (no URL, one that is not http(s), a token no header can carry) exit with the
//! configuration code before anything is read; stdout stays JSON-RPC only.

use std::time::Duration;

use crate::cli::RunError;
use crate::config::{Env, ProxySettings};
use crate::transport::proxy::Proxy;

/// How long the runtime waits for a stdin read still blocked when the relay is done.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);

/// The arguments of `proxy`.
#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// The remote server's MCP endpoint, e.g. http://127.0.0.1:8787/mcp (overrides
    /// CPERSONA_REMOTE_URL).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
}

pub(crate) fn run(env: &Env, args: &ProxyArgs) -> Result<(), RunError> {
    let settings = ProxySettings::from_env(env, args.url.as_deref()).map_err(RunError::config)?;
    let proxy = Proxy::new(&settings).map_err(RunError::config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(proxy.serve_stdio());
    runtime.shutdown_timeout(SHUTDOWN_WAIT);
    Ok(())
}
