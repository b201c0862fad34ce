//! CPersona's HTTP embedding contract (the CEmbedding server): `POST /embed {"texts"}` →
//! `{"embeddings"}`, the window from `POST /count_tokens`, the identity from
//! `GET /capabilities`. Vectors are validated and L2-normalised; it never generates text.

use std::time::Duration;

use serde_json::{Value, json};

use super::remote::{HealthTracker, Transport, embed_in_batches, parse_vector, redact};
use super::{EmbedError, EmbedHealth, Embedder, EmbedderIdentity, RemoteOptions, TokenInfo};

/// Window assumed when neither the configuration nor `/capabilities` gives one.
pub const DEFAULT_WINDOW_TOKENS: usize = 512;
/// Texts per `/count_tokens` request (CEmbedding accepts 1..100; CPersona sends 64).
const COUNT_BATCH: usize = 64;
/// `/capabilities` is optional discovery; it gets a short leash (CPersona: 3 s).
const CAPABILITIES_TIMEOUT: Duration = Duration::from_secs(3);

/// A client of a CPersona-contract embedding server.
pub struct HttpEmbedder {
    embed_url: String,
    transport: Transport,
    identity: EmbedderIdentity,
    fingerprint: Option<String>,
    health: HealthTracker,
}

impl std::fmt::Debug for HttpEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpEmbedder")
            .field("embed_url", &redact(&self.embed_url))
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// `base/embed?q` → `base/<name>?q`; `None` when the URL does not end in `/embed`.
pub(crate) fn sibling_url(embed_url: &str, name: &str) -> Option<String> {
    let (path, query) = match embed_url.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (embed_url, None),
    };
    let base = path.strip_suffix("/embed")?;
    Some(match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    })
}

impl HttpEmbedder {
    /// Connects to `url` (the `/embed` endpoint). With `dim` and `model` given nothing is
    /// asked at start-up; otherwise `/capabilities` is tried, then one probe embed of
    /// `"test"` (as CPersona does), and failing both the embedder is unavailable.
    pub fn connect(
        url: &str,
        model: Option<String>,
        dim: Option<usize>,
        window_tokens: Option<usize>,
        options: RemoteOptions,
    ) -> Result<Self, EmbedError> {
        if options.max_batch == 0 {
            return Err(EmbedError::Config {
                reason: "max_batch must be at least 1".to_owned(),
            });
        }
        let mut embedder = Self {
            embed_url: url.to_owned(),
            health: HealthTracker::new(url, options.degraded_after),
            transport: Transport::new(options, None),
            identity: EmbedderIdentity {
                model_id: model.clone().unwrap_or_else(|| "http-embedder".to_owned()),
                dim: dim.unwrap_or(0),
                window_tokens: window_tokens.unwrap_or(DEFAULT_WINDOW_TOKENS),
            },
            fingerprint: None,
        };
        if dim.is_some() && model.is_some() {
            return Ok(embedder);
        }
        if let Some(caps) = embedder.capabilities() {
            let identity = caps.get("identity");
            let field = |name: &str| identity.and_then(|id| id.get(name));
            if let Some(model_id) = field("model").and_then(Value::as_str) {
                embedder.identity.model_id = model_id.to_owned();
            }
            if let (None, Some(reported)) = (dim, field("dimensions").and_then(Value::as_u64)) {
                embedder.identity.dim = reported as usize;
            }
            if let (None, Some(reported)) = (window_tokens, field("window").and_then(Value::as_u64))
            {
                embedder.identity.window_tokens = reported as usize;
            }
            embedder.fingerprint = caps
                .get("fingerprint")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if embedder.identity.dim == 0 {
            let probe = embedder.request(&["test"], None)?;
            embedder.identity.dim = probe.first().map_or(0, Vec::len);
        }
        Ok(embedder)
    }

    /// `GET /capabilities`, or `None` when the server has none (an older CEmbedding).
    fn capabilities(&self) -> Option<Value> {
        let url = sibling_url(&self.embed_url, "capabilities")?;
        let timeout = CAPABILITIES_TIMEOUT.min(self.transport.options().timeout);
        self.transport.get_json_once(&url, timeout).ok()
    }

    /// One `/embed` request for at most `max_batch` texts.
    fn request(&self, texts: &[&str], dim: Option<usize>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let response = self
            .transport
            .post_json(&self.embed_url, &json!({ "texts": texts }))?;
        let embeddings = response
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or_else(|| EmbedError::InvalidResponse {
                reason: "no \"embeddings\" array in the response".to_owned(),
            })?;
        if embeddings.len() != texts.len() {
            return Err(EmbedError::InvalidResponse {
                reason: format!("{} embeddings for {} texts", embeddings.len(), texts.len()),
            });
        }
        embeddings
            .iter()
            .enumerate()
            .map(|(index, value)| parse_vector(value, index, dim))
            .collect()
    }
}

/// Checks one `/count_tokens` entry against CPersona 2.6's rules.
fn parse_token_info(value: &Value, text: &str) -> Result<TokenInfo, EmbedError> {
    let invalid = |what: &str| EmbedError::InvalidResponse {
        reason: format!("token_info entry {what}: {value}"),
    };
    let int = |name: &str| value.get(name).and_then(Value::as_u64).map(|n| n as usize);
    let count = int("count").ok_or_else(|| invalid("lacks count"))?;
    let window = int("window")
        .filter(|&w| w >= 1)
        .ok_or_else(|| invalid("lacks a window ≥ 1"))?;
    let truncated = value
        .get("truncated")
        .and_then(Value::as_bool)
        .ok_or_else(|| invalid("lacks truncated"))?;
    let window_end_char = int("window_end_char").ok_or_else(|| invalid("lacks window_end_char"))?;
    let n_chars = text.chars().count();
    if truncated != (count > window)
        || window_end_char > n_chars
        || (!truncated && window_end_char != n_chars)
    {
        return Err(invalid("is inconsistent"));
    }
    Ok(TokenInfo {
        count,
        window,
        truncated,
        window_end_char,
    })
}

impl Embedder for HttpEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        embed_in_batches(&self.transport, &self.health, texts, |chunk| {
            self.request(chunk, Some(self.identity.dim))
        })
    }

    fn count_tokens(&self, texts: &[&str]) -> Result<Option<Vec<TokenInfo>>, EmbedError> {
        let Some(url) = sibling_url(&self.embed_url, "count_tokens") else {
            return Ok(None);
        };
        let mut infos = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(COUNT_BATCH) {
            let response = self.transport.post_json(&url, &json!({ "texts": chunk }))?;
            let entries = match response.get("token_info") {
                Some(Value::Array(entries)) => entries,
                Some(Value::Null) => return Ok(None),
                _ => {
                    return Err(EmbedError::InvalidResponse {
                        reason: "no \"token_info\" in the /count_tokens response".to_owned(),
                    });
                }
            };
            if entries.len() != chunk.len() {
                return Err(EmbedError::InvalidResponse {
                    reason: format!(
                        "{} token_info entries for {} texts",
                        entries.len(),
                        chunk.len()
                    ),
                });
            }
            for (entry, text) in entries.iter().zip(chunk) {
                infos.push(parse_token_info(entry, text)?);
            }
        }
        Ok(Some(infos))
    }

    fn health(&self) -> EmbedHealth {
        self.health.health()
    }

    fn fingerprint(&self) -> Option<String> {
        self.fingerprint.clone()
    }
}
