//! Typed embedder configuration and the one constructor that turns it into an embedder.
//! The server maps environment variables onto these types; nothing here reads them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{BuiltinEmbedder, EmbedError, Embedder, HashEmbedder, HttpEmbedder, OpenAiEmbedder};

/// Timeouts, retries and batch limits of a remote embedder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Whole-request timeout (CPersona: `CPERSONA_EMBEDDING_TIMEOUT_SECS`, default 30 s).
    pub timeout: Duration,
    /// Retries after the first attempt, for connection failures, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// First backoff; doubles on each retry.
    pub backoff: Duration,
    /// Backoff never exceeds this.
    pub max_backoff: Duration,
    /// Texts per request at most; larger calls are split.
    pub max_batch: usize,
    /// Consecutive failed calls before health turns `Degraded` (CPersona: 2).
    pub degraded_after: u32,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            max_retries: 2,
            backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(2),
            max_batch: 64,
            degraded_after: 2,
        }
    }
}

/// Which embedder to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmbedderConfig {
    /// The in-process model in `model_dir`; falls back to [`EmbedderConfig::Hash`] when the
    /// folder or one of its required files is missing.
    Builtin { model_dir: PathBuf },
    /// The hashed n-gram fallback.
    Hash,
    /// CPersona's embedding contract: `url` is the `/embed` endpoint.
    Http {
        url: String,
        /// Model label when `/capabilities` does not report one.
        model: Option<String>,
        /// Known dimension: skips discovery, so start-up needs no network.
        dim: Option<usize>,
        /// Known window in tokens (else `/capabilities`, else 512).
        window_tokens: Option<usize>,
        options: RemoteOptions,
    },
    /// An OpenAI-compatible `/v1/embeddings` endpoint.
    OpenAi {
        url: String,
        model: String,
        api_key: Option<String>,
        /// Known dimension: skips the probe, so start-up needs no network.
        dim: Option<usize>,
        window_tokens: usize,
        options: RemoteOptions,
    },
}

/// Builds the configured embedder. A builtin model folder that is missing falls back to the
/// hash embedder, whose `health()` then reports the fallback and why; a folder that is
/// present but broken is an error, never silently replaced.
pub fn from_config(config: &EmbedderConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match config {
        EmbedderConfig::Builtin { model_dir } => match BuiltinEmbedder::load(model_dir) {
            Ok(embedder) => Arc::new(embedder),
            Err(err @ EmbedError::ModelFile { .. }) if is_missing(&err) => {
                Arc::new(HashEmbedder::fallback(err.to_string()))
            }
            Err(err) => return Err(err),
        },
        EmbedderConfig::Hash => Arc::new(HashEmbedder::new()),
        EmbedderConfig::Http {
            url,
            model,
            dim,
            window_tokens,
            options,
        } => Arc::new(HttpEmbedder::connect(
            url,
            model.clone(),
            *dim,
            *window_tokens,
            options.clone(),
        )?),
        EmbedderConfig::OpenAi {
            url,
            model,
            api_key,
            dim,
            window_tokens,
            options,
        } => Arc::new(OpenAiEmbedder::connect(
            url,
            model,
            api_key.clone(),
            *dim,
            *window_tokens,
            options.clone(),
        )?),
    })
}

fn is_missing(err: &EmbedError) -> bool {
    match err {
        EmbedError::ModelFile { path, .. } => !path.exists(),
        _ => false,
    }
}
