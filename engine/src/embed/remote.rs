//! What the two remote embedders share: one HTTP round trip with a timeout and bounded
//! retries, response validation (cardinality, dimension, finite values) and the health state
//! that turns into the degraded advisory. It never logs or returns an API key.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::{EmbedError, EmbedHealth, RemoteOptions, Severity, l2_normalize};

/// Bytes of a response read at most (CPersona's 64 MiB budget).
const MAX_RESPONSE_BYTES: u64 = 64 << 20;
/// Characters of an error body quoted in an error message.
const QUOTED_BODY_CHARS: usize = 200;

/// A blocking JSON client with retries; one per remote embedder.
pub(crate) struct Transport {
    agent: ureq::Agent,
    options: RemoteOptions,
    bearer: Option<String>,
}

/// How one attempt failed: whether trying again can help.
enum Attempt {
    Retry(EmbedError),
    Fatal(EmbedError),
}

impl Transport {
    pub(crate) fn new(options: RemoteOptions, bearer: Option<String>) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            .build();
        Self {
            agent: ureq::Agent::new_with_config(config),
            options,
            bearer,
        }
    }

    pub(crate) fn options(&self) -> &RemoteOptions {
        &self.options
    }

    /// `POST url` with a JSON body; retries connection failures, timeouts, 429 and 5xx with
    /// exponential backoff, at most `max_retries` times.
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Value, EmbedError> {
        self.with_retries(|| {
            let mut request = self.agent.post(url);
            if let Some(key) = &self.bearer {
                request = request.header("Authorization", format!("Bearer {key}"));
            }
            classify(url, request.send_json(body))
        })
    }

    /// `GET url` once with `timeout`: used for optional discovery, so no retries.
    pub(crate) fn get_json_once(&self, url: &str, timeout: Duration) -> Result<Value, EmbedError> {
        let mut request = self
            .agent
            .get(url)
            .config()
            .timeout_global(Some(timeout))
            .build();
        if let Some(key) = &self.bearer {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        match classify(url, request.call()) {
            Ok(value) => Ok(value),
            Err(Attempt::Retry(err) | Attempt::Fatal(err)) => Err(err),
        }
    }

    fn with_retries(
        &self,
        mut attempt: impl FnMut() -> Result<Value, Attempt>,
    ) -> Result<Value, EmbedError> {
        let mut delay = self.options.backoff;
        let mut tries = 0;
        loop {
            match attempt() {
                Ok(value) => return Ok(value),
                Err(Attempt::Fatal(err)) => return Err(err),
                Err(Attempt::Retry(err)) => {
                    if tries >= self.options.max_retries {
                        return Err(err);
                    }
                    tries += 1;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(self.options.max_backoff);
                }
            }
        }
    }
}

fn classify(
    url: &str,
    result: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<Value, Attempt> {
    let mut response = result.map_err(|err| {
        Attempt::Retry(EmbedError::Unavailable {
            reason: format!("POST {} failed: {err}", redact(url)),
        })
    })?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(MAX_RESPONSE_BYTES)
        .read_to_string()
        .map_err(|err| {
            Attempt::Retry(EmbedError::Unavailable {
                reason: format!(
                    "{} answered {status} but its body failed: {err}",
                    redact(url)
                ),
            })
        })?;
    if !(200..300).contains(&status) {
        let quoted: String = text.chars().take(QUOTED_BODY_CHARS).collect();
        let err = EmbedError::Unavailable {
            reason: format!("{} answered {status}: {quoted}", redact(url)),
        };
        return Err(if status == 429 || status >= 500 {
            Attempt::Retry(err)
        } else {
            Attempt::Fatal(err)
        });
    }
    serde_json::from_str(&text).map_err(|err| {
        Attempt::Fatal(EmbedError::InvalidResponse {
            reason: format!("{} answered non-json ({err})", redact(url)),
        })
    })
}

/// The URL without credentials in its authority, for messages.
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***{}", &url[..scheme_end], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Checks one vector from JSON: numbers only, finite in f32, the expected width; then
/// L2-normalises it (CPersona 2.5 stored http vectors as returned; we never do).
pub(crate) fn parse_vector(
    value: &Value,
    index: usize,
    expected_dim: Option<usize>,
) -> Result<Vec<f32>, EmbedError> {
    let items = value
        .as_array()
        .ok_or_else(|| EmbedError::InvalidResponse {
            reason: format!("vector {index} is not an array"),
        })?;
    if let Some(expected) = expected_dim
        && items.len() != expected
    {
        return Err(EmbedError::WrongDimension {
            expected,
            received: items.len(),
        });
    }
    if items.is_empty() {
        return Err(EmbedError::InvalidResponse {
            reason: format!("vector {index} is empty"),
        });
    }
    let mut vector = Vec::with_capacity(items.len());
    for item in items {
        let x = item.as_f64().ok_or_else(|| EmbedError::InvalidResponse {
            reason: format!("vector {index} holds a non-number: {item}"),
        })?;
        if !x.is_finite() || x.abs() > f64::from(f32::MAX) {
            return Err(EmbedError::NonFinite { index });
        }
        vector.push(x as f32);
    }
    l2_normalize(&mut vector, index)?;
    Ok(vector)
}

/// Consecutive failures of a remote embedder, turned into CPersona's degraded advisory.
pub(crate) struct HealthTracker {
    failures: AtomicU32,
    last_error: Mutex<Option<String>>,
    degraded_after: u32,
    endpoint: String,
}

impl HealthTracker {
    pub(crate) fn new(endpoint: &str, degraded_after: u32) -> Self {
        Self {
            failures: AtomicU32::new(0),
            last_error: Mutex::new(None),
            degraded_after: degraded_after.max(1),
            endpoint: redact(endpoint),
        }
    }

    /// Records one embed call's outcome and passes it through.
    pub(crate) fn observe<T>(&self, result: Result<T, EmbedError>) -> Result<T, EmbedError> {
        match &result {
            Ok(_) => {
                self.failures.store(0, Ordering::Relaxed);
            }
            Err(err) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                let mut last = self
                    .last_error
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *last = Some(err.to_string());
            }
        }
        result
    }

    pub(crate) fn health(&self) -> EmbedHealth {
        let failures = self.failures.load(Ordering::Relaxed);
        if failures < self.degraded_after {
            return EmbedHealth::Healthy;
        }
        let evidence = self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        EmbedHealth::Degraded {
            severity: Severity::Fault,
            reason: format!(
                "the embedding backend {} failed {failures} times in a row",
                self.endpoint
            ),
            evidence,
            advisory: format!(
                "semantic recall is degraded: the embedding backend at {} is not answering, so \
                 recall runs on the lexical arms and new memories wait in the embedding queue. \
                 Check that the embedding server is running and reachable (CPERSONA_EMBEDDING_URL \
                 or CPERSONA_EMBEDDING_API_URL), or unset CPERSONA_EMBEDDING_MODE to use the \
                 builtin model",
                self.endpoint
            ),
        }
    }
}

/// Embeds `texts` in batches of the transport's `max_batch`, each batch through `request`
/// and observed by `health`: the embed loop both remote embedders share.
pub(crate) fn embed_in_batches(
    transport: &Transport,
    health: &HealthTracker,
    texts: &[&str],
    mut request: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(transport.options().max_batch) {
        out.extend(health.observe(request(chunk))?);
    }
    Ok(out)
}
