//! An OpenAI-compatible `/v1/embeddings` client (OpenAI, Ollama, llama.cpp, vLLM, TEI):
//! `{"model", "input": [...]}` → `{"data": [{"index", "embedding"}]}`, placed by index,
//! validated and L2-normalised. It never sends or logs the API key anywhere but its header.

use serde_json::{Value, json};

use super::remote::{HealthTracker, Transport, embed_in_batches, parse_vector, redact};
use super::{EmbedError, EmbedHealth, Embedder, EmbedderIdentity, RemoteOptions};

/// A client of an OpenAI-compatible embeddings endpoint.
pub struct OpenAiEmbedder {
    url: String,
    transport: Transport,
    identity: EmbedderIdentity,
    health: HealthTracker,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("url", &redact(&self.url))
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// Connects to `url` (the full `/v1/embeddings` URL) for `model`. Without `dim`, one probe
    /// embed of `"test"` learns it, and failing that the embedder is unavailable.
    pub fn connect(
        url: &str,
        model: &str,
        api_key: Option<String>,
        dim: Option<usize>,
        window_tokens: usize,
        options: RemoteOptions,
    ) -> Result<Self, EmbedError> {
        if options.max_batch == 0 || model.is_empty() {
            return Err(EmbedError::Config {
                reason: "openai embedder needs a model name and max_batch ≥ 1".to_owned(),
            });
        }
        let mut embedder = Self {
            url: url.to_owned(),
            health: HealthTracker::new(url, options.degraded_after),
            transport: Transport::new(options, api_key.filter(|key| !key.is_empty())),
            identity: EmbedderIdentity {
                model_id: model.to_owned(),
                dim: dim.unwrap_or(0),
                window_tokens,
            },
        };
        if dim.is_none() {
            let probe = embedder.request(&["test"], None)?;
            embedder.identity.dim = probe.first().map_or(0, Vec::len);
        }
        Ok(embedder)
    }

    fn request(&self, texts: &[&str], dim: Option<usize>) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = json!({ "model": self.identity.model_id, "input": texts });
        let response = self.transport.post_json(&self.url, &body)?;
        let data = response
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| EmbedError::InvalidResponse {
                reason: "no \"data\" array in the response".to_owned(),
            })?;
        if data.len() != texts.len() {
            return Err(EmbedError::InvalidResponse {
                reason: format!("{} embeddings for {} texts", data.len(), texts.len()),
            });
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for item in data {
            let index = item
                .get("index")
                .and_then(Value::as_u64)
                .map(|i| i as usize)
                .filter(|&i| i < texts.len())
                .ok_or_else(|| EmbedError::InvalidResponse {
                    reason: "a data item lacks an index in 0..n".to_owned(),
                })?;
            let embedding = item
                .get("embedding")
                .ok_or_else(|| EmbedError::InvalidResponse {
                    reason: format!("data item {index} lacks \"embedding\""),
                })?;
            if out[index].is_some() {
                return Err(EmbedError::InvalidResponse {
                    reason: format!("index {index} appears twice"),
                });
            }
            out[index] = Some(parse_vector(embedding, index, dim)?);
        }
        // Every slot is filled: n distinct indices in 0..n.
        Ok(out.into_iter().flatten().collect())
    }
}

impl Embedder for OpenAiEmbedder {
    fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        embed_in_batches(&self.transport, &self.health, texts, |chunk| {
            self.request(chunk, Some(self.identity.dim))
        })
    }

    fn health(&self) -> EmbedHealth {
        self.health.health()
    }
}
