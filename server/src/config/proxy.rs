//! The settings of `cpersona proxy`, CPersona's names: `CPERSONA_REMOTE_URL` (the remote
//! server's MCP endpoint; the `--url` flag wins over it), `CPERSONA_AUTH_TOKEN` (sent to it as a
//! bearer token), `CPERSONA_PROXY_MAX_INFLIGHT` (requests relayed at once; more wait), and this
//! server's `CPERSONA_PROXY_TIMEOUT_SECS` (how long one request may take). Parsed only by that
//! command, as the hub's settings are, so a bad value never stops `serve`.

use std::time::Duration;

use super::{ConfigError, Env, Result, check_http_url};

/// Where and how the proxy relays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxySettings {
    /// The remote MCP endpoint, an http(s) URL (e.g. `http://127.0.0.1:8787/mcp`).
    pub remote_url: String,
    /// The bearer token for the remote, when it asks for one.
    pub token: Option<String>,
    /// Requests relayed at once; the next waits (and stdin is not read) until one ends.
    pub max_inflight: usize,
    /// How long one request may take, answer included, before it is answered with an error.
    pub timeout: Duration,
}

/// `CPERSONA_PROXY_MAX_INFLIGHT`'s default (CPersona's).
const DEFAULT_MAX_INFLIGHT: u64 = 16;
/// `CPERSONA_PROXY_TIMEOUT_SECS`'s default: above any tool call of this server on a sound
/// store (an import of a large file included), below a desktop client's patience.
const DEFAULT_TIMEOUT_SECS: u64 = 120;

impl ProxySettings {
    /// Parse the proxy's variables; `url_flag` is `--url`, which wins over
    /// `CPERSONA_REMOTE_URL`. Without either, or with a URL that is not http(s), an error
    /// naming the variable.
    pub fn from_env(env: &Env, url_flag: Option<&str>) -> Result<ProxySettings> {
        let env_url = env.get("CPERSONA_REMOTE_URL");
        let max_inflight = env.int("CPERSONA_PROXY_MAX_INFLIGHT", DEFAULT_MAX_INFLIGHT, 1, 1024)?;
        let timeout_secs = env.int(
            "CPERSONA_PROXY_TIMEOUT_SECS",
            DEFAULT_TIMEOUT_SECS,
            1,
            86_400,
        )?;
        let token = env.get("CPERSONA_AUTH_TOKEN").map(str::to_owned);
        let (var, url) = match (url_flag.map(str::trim), env_url) {
            (Some(flag), _) if !flag.is_empty() => ("--url", flag),
            (_, Some(url)) => ("CPERSONA_REMOTE_URL", url),
            _ => {
                return Err(ConfigError::Missing {
                    var: "CPERSONA_REMOTE_URL",
                    reason: "`cpersona proxy` relays to the remote server's MCP endpoint, e.g. \
                             http://127.0.0.1:8787/mcp (or pass --url)"
                        .into(),
                });
            }
        };
        check_http_url(var, url)?;
        Ok(ProxySettings {
            remote_url: url.to_owned(),
            token,
            max_inflight: max_inflight as usize,
            timeout: Duration::from_secs(timeout_secs),
        })
    }
}
