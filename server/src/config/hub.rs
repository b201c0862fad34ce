//! The Hugging Face hub settings `cpersona model install` honours, read the way the hub's own
//! client reads them: `HF_ENDPOINT` (default `https://huggingface.co`), `HF_TOKEN` (sent as a
//! bearer token to the endpoint, never after a redirect), the local hub cache (`HF_HUB_CACHE`,
//! else `HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
//! `~/.cache/huggingface/hub`), from which a pinned file is taken instead of downloaded, and
//! `HF_HUB_OFFLINE` (the cache only). Parsed only by that command, so a bad value never stops
//! the server.

use std::path::PathBuf;

use super::{Env, Result, check_http_url};

/// Where and how the model is fetched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubSettings {
    /// The hub's base URL, without a trailing slash.
    pub endpoint: String,
    pub token: Option<String>,
    /// The hub client's cache folder (`…/hub`), when one can be named.
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network: only the cache may supply files.
    pub offline: bool,
}

/// The hub's default endpoint.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

impl HubSettings {
    /// Parse the hub's variables; an invalid one is an error naming it.
    pub fn from_env(env: &Env) -> Result<HubSettings> {
        let endpoint = env.get("HF_ENDPOINT").unwrap_or(DEFAULT_ENDPOINT);
        check_http_url("HF_ENDPOINT", endpoint)?;
        let cache_dir = env
            .get("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| {
                env.get("HF_HOME")
                    .map(|home| PathBuf::from(home).join("hub"))
            })
            .or_else(|| {
                env.get("XDG_CACHE_HOME")
                    .map(|cache| PathBuf::from(cache).join("huggingface").join("hub"))
            })
            .or_else(|| dirs::home_dir().map(|home| home.join(".cache/huggingface/hub")));
        Ok(HubSettings {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            token: env.get("HF_TOKEN").map(str::to_owned),
            cache_dir,
            offline: env.boolean("HF_HUB_OFFLINE", false)?,
        })
    }
}
