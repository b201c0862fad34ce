//! `cpersona embed-serve --http ADDR`: exposes an embedder on CPersona's HTTP embedding
//! contract (`POST /embed`, `POST /count_tokens`, `GET /capabilities`). Embedding runs on the
//! blocking pool, never on the async workers; this server holds no memories.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use cpersona_engine::embed::{EmbedError, Embedder, TokenInfo};
use serde::Deserialize;
use serde_json::{Value, json};

/// Request bodies larger than this are refused with 413.
const MAX_BODY_BYTES: usize = 4 << 20;
/// Texts per request, as CEmbedding accepts (1..=100).
const MAX_TEXTS: usize = 100;

/// The body of `/embed` and `/count_tokens`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextsRequest {
    texts: Vec<String>,
    /// `/embed` only: also report how each text fits the window (a JSON boolean).
    #[serde(default)]
    token_info: Option<bool>,
}

type Shared = Arc<dyn Embedder>;

/// Serves `embedder` on `addr` until the process ends.
pub(crate) async fn serve(addr: SocketAddr, embedder: Shared) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, model = %embedder.identity().model_id, "embed-serve listening");
    axum::serve(listener, router(embedder)).await?;
    Ok(())
}

/// The routes, separate from the socket so tests can serve them on any listener.
pub(crate) fn router(embedder: Shared) -> Router {
    Router::new()
        .route("/embed", post(embed))
        .route("/count_tokens", post(count_tokens))
        .route("/capabilities", get(capabilities))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(embedder)
}

/// A refused request: its status and a one-line reason, sent as `{"error": reason}`.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(json!({ "error": self.1 }))).into_response()
    }
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> ApiError {
    ApiError(status, message.to_string())
}

fn parse(body: &Bytes) -> Result<TextsRequest, ApiError> {
    let request: TextsRequest = serde_json::from_slice(body).map_err(|err| {
        error(
            StatusCode::BAD_REQUEST,
            format!("body must be {{\"texts\": [string, ...]}}: {err}"),
        )
    })?;
    if request.texts.is_empty() || request.texts.len() > MAX_TEXTS {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!(
                "texts must hold 1 to {MAX_TEXTS} strings, got {}",
                request.texts.len()
            ),
        ));
    }
    Ok(request)
}

fn token_info_json(infos: Option<Vec<TokenInfo>>) -> Value {
    match infos {
        None => Value::Null,
        Some(infos) => infos
            .iter()
            .map(|info| {
                json!({
                    "count": info.count,
                    "window": info.window,
                    "truncated": info.truncated,
                    "window_end_char": info.window_end_char,
                })
            })
            .collect(),
    }
}

/// Runs `work` on the blocking pool; a failure of the embedder answers 503.
async fn blocking<T: Send + 'static>(
    embedder: &Shared,
    work: impl FnOnce(&dyn Embedder) -> Result<T, EmbedError> + Send + 'static,
) -> Result<T, ApiError> {
    let embedder = Arc::clone(embedder);
    match tokio::task::spawn_blocking(move || work(embedder.as_ref())).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(error(StatusCode::SERVICE_UNAVAILABLE, err)),
        Err(join) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, join)),
    }
}

async fn embed(State(embedder): State<Shared>, body: Bytes) -> Result<Response, ApiError> {
    let request = parse(&body)?;
    let want_info = request.token_info == Some(true);
    let result = blocking(&embedder, move |embedder| {
        let texts: Vec<&str> = request.texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&texts)?;
        let infos = if want_info {
            Some(embedder.count_tokens(&texts)?)
        } else {
            None
        };
        Ok((vectors, infos))
    })
    .await?;
    let (vectors, infos) = result;
    let mut body = json!({
        "embeddings": vectors,
        "dimensions": embedder.identity().dim,
    });
    if let Some(infos) = infos {
        body["token_info"] = token_info_json(infos);
    }
    Ok(axum::Json(body).into_response())
}

async fn count_tokens(State(embedder): State<Shared>, body: Bytes) -> Result<Response, ApiError> {
    let request = parse(&body)?;
    let infos = blocking(&embedder, move |embedder| {
        let texts: Vec<&str> = request.texts.iter().map(String::as_str).collect();
        embedder.count_tokens(&texts)
    })
    .await?;
    Ok(axum::Json(json!({ "token_info": token_info_json(infos) })).into_response())
}

async fn capabilities(State(embedder): State<Shared>) -> Response {
    let identity = embedder.identity();
    let fingerprint = embedder.fingerprint();
    let incomplete: Vec<&str> = if fingerprint.is_some() {
        Vec::new()
    } else {
        vec!["digests"]
    };
    axum::Json(json!({
        "identity": {
            "provider": "cpersona-rs",
            "model": identity.model_id,
            "dimensions": identity.dim,
            "window": identity.window_tokens,
            "normalized": true,
        },
        "fingerprint": fingerprint,
        "incomplete": incomplete,
    }))
    .into_response()
}

#[cfg(test)]
mod tests;
