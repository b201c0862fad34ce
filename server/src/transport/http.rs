//! Streamable HTTP at `/mcp`: CPersona's CORS outermost (`http/cors.rs`: a preflight is
//! answered before the token check, a disallowed origin gets no grant), then a bearer token
//! checked in constant time before anything else (401 with nothing written on a missing or
//! wrong token; the scheme read case-insensitively, `http/token.rs`; in ACL mode any client's
//! token, whose `Principal` then travels with the request to the tool layer), a request body
//! limit, and the Origin/Host checks the MCP spec asks for against DNS rebinding. It refuses to start
//! without a token unless unauthenticated HTTP was asked for explicitly, and with a token that
//! is not printable ASCII or is easy to guess.
//!
//! A JSON POST body passes the screen of [`super::jsonrpc`] after the token check and before
//! rmcp: what rmcp would refuse with a bare 415 (a body that does not parse or is no
//! message) or route to "method not found" (a request with bad params) is answered here with
//! a JSON-RPC error and never reaches a tool: 400 for -32700 and -32600 (the transport's
//! status for input it cannot accept), 200 for -32602 on a request (an answered request, as
//! rmcp answers its own -32602), 413 with a -32600 body over the size limit. So that the
//! checks rmcp runs before it reads a body (Host, Origin, Accept, Content-Type) keep their
//! answers and their order, a refused body is first offered to rmcp as an empty stand-in: only
//! when rmcp gets as far as refusing that as unreadable (415) is the screen's answer sent.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use self::cors::CorsPolicy;
use super::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, Refusal, Screened, screen};
use crate::access::{Acl, Principal};
use crate::mcp::McpServer;

mod cors;
mod token;

pub use self::cors::DEFAULT_CORS_ORIGINS;
pub use self::token::{MIN_DISTINCT_CHARS, MIN_TOKEN_CHARS, WeakToken, check_token};

/// The security settings of the HTTP transport, resolved from configuration.
#[derive(Clone, Debug)]
pub struct HttpSecurity {
    /// The bearer token; `None` serves without authentication (only when explicitly allowed).
    /// Unused in ACL mode.
    pub auth_token: Option<String>,
    /// ACL mode (`CPERSONA_ACL_FILE`): a token picks its client, whose [`Principal`] travels
    /// with the request to the tool layer; a token no client holds is refused (401).
    pub acl: Option<Arc<Acl>>,
    /// Largest request body in bytes (413 above).
    pub max_body_bytes: usize,
    /// Browser Origins allowed besides the loopback ones; each also gets a CORS grant, as
    /// CPersona's `https://claude.ai` and `https://www.claude.ai` do.
    pub extra_allowed_origins: Vec<String>,
    /// `Host` header values allowed besides the loopback ones.
    pub extra_allowed_hosts: Vec<String>,
}

/// Why the HTTP transport will not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpStartError {
    /// No token and no explicit opt-out.
    #[error(
        "refusing to serve HTTP without CPERSONA_AUTH_TOKEN: set it to a long random secret \
         (clients send `Authorization: Bearer <token>`), or set \
         CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true to serve without authentication"
    )]
    NoToken,
    /// The token is not printable ASCII, too short or easy to guess.
    #[error("CPERSONA_AUTH_TOKEN: {0}")]
    WeakToken(#[from] WeakToken),
}

/// The token to require, or `None` when unauthenticated HTTP was asked for. Applies on every
/// bind address, loopback included.
pub fn resolve_auth(
    token: Option<String>,
    allow_unauthenticated: bool,
) -> Result<Option<String>, HttpStartError> {
    match token {
        Some(token) => {
            check_token(&token)?;
            Ok(Some(token))
        }
        None if allow_unauthenticated => {
            tracing::warn!(
                "serving HTTP WITHOUT authentication (CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true)"
            );
            Ok(None)
        }
        None => Err(HttpStartError::NoToken),
    }
}

/// Origins of pages served from this machine, any port.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The axum app: `/mcp` behind the token check. `bound` is the address the listener is on.
pub fn router(server: McpServer, security: &HttpSecurity, bound: SocketAddr) -> Router {
    let mut origins: Vec<String> = LOOPBACK_ORIGINS.iter().map(|o| (*o).to_owned()).collect();
    // rmcp reads an entry without a port as any port: the CORS defaults name 443.
    origins.extend(DEFAULT_CORS_ORIGINS.iter().map(|o| format!("{o}:443")));
    origins.extend(security.extra_allowed_origins.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(security.max_body_bytes)
        .with_allowed_origins(origins)
        .enforce_origin_validation();
    match allowed_hosts(security, bound) {
        None => {
            tracing::warn!(
                "bound to every interface with no CPERSONA_HTTP_ALLOWED_HOSTS: the Host check is \
                 off (the bearer token still guards every request)"
            );
            config = config.disable_allowed_hosts();
        }
        Some(hosts) => config = config.with_allowed_hosts(hosts),
    }
    let screen_state = Arc::new(BodyScreen {
        max_body_bytes: security.max_body_bytes,
        supported: rmcp::ServerHandler::supported_protocol_versions(&server).into_owned(),
    });
    let server = server.over_http();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate::of(security));
    let cors_policy = Arc::new(CorsPolicy::new(&security.extra_allowed_origins));
    // The last layer added runs first: CORS, then the token, then the body screen.
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(screen_state, screen_body))
        .layer(middleware::from_fn_with_state(gate, require_bearer))
        .layer(middleware::from_fn_with_state(cors_policy, cors::cors))
}

/// The `Host` values a request may name (DNS rebinding): the loopback names, the bound
/// address when it is a specific one, and `CPERSONA_HTTP_ALLOWED_HOSTS`; `None` when bound to
/// every interface with no list (the check is off). The console applies the same list.
pub(crate) fn allowed_hosts(security: &HttpSecurity, bound: SocketAddr) -> Option<Vec<String>> {
    if bound.ip().is_unspecified() && security.extra_allowed_hosts.is_empty() {
        return None;
    }
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    if !bound.ip().is_loopback() && !bound.ip().is_unspecified() {
        hosts.push(bound.ip().to_string());
    }
    hosts.extend(security.extra_allowed_hosts.iter().cloned());
    Some(hosts)
}

/// Who may pass the bearer check; the console admits by the same rule.
pub(crate) enum Gate {
    /// Unauthenticated HTTP, explicitly allowed.
    Open,
    /// The one `CPERSONA_AUTH_TOKEN`.
    Token(String),
    /// Any client of the ACL file, by its token.
    Acl(Arc<Acl>),
}

impl Gate {
    /// The gate `security` sets.
    pub(crate) fn of(security: &HttpSecurity) -> Gate {
        match &security.acl {
            Some(acl) => Gate::Acl(Arc::clone(acl)),
            None => match &security.auth_token {
                Some(token) => Gate::Token(token.clone()),
                None => Gate::Open,
            },
        }
    }

    /// Whether `presented` passes: `None` refused, `Some(None)` passed with no principal
    /// (one token, or none needed), `Some(Some(p))` an ACL client. Constant time per token.
    pub(crate) fn admit(&self, presented: &str) -> Option<Option<Principal>> {
        match self {
            Gate::Open => Some(None),
            Gate::Token(expected) => token::matches(presented, expected).then_some(None),
            Gate::Acl(acl) => acl.principal_for_token(presented).map(Some),
        }
    }
}

/// The token an `Authorization: Bearer` header presents (the scheme in any case), `""` when
/// there is none.
pub(crate) fn presented_bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(token::presented)
        .unwrap_or("")
}

/// 401 unless the request carries `Authorization: Bearer <token>` (the scheme in any case)
/// with the token, or in ACL mode a client's token; the comparison takes the same time
/// wherever the first differing byte is. In ACL mode the request carries its [`Principal`]
/// on to the tool layer (rmcp hands the request's parts to the handler).
async fn require_bearer(
    State(gate): State<Arc<Gate>>,
    mut request: Request,
    next: Next,
) -> Response {
    let passed = match gate.admit(presented_bearer(request.headers())) {
        Some(principal) => {
            if let Some(principal) = principal {
                request.extensions_mut().insert::<Principal>(principal);
            }
            true
        }
        None => false,
    };
    if passed {
        return next.run(request).await;
    }
    tracing::warn!(path = %request.uri().path(), "rejected a request without a valid bearer token");
    let mut response = (
        StatusCode::UNAUTHORIZED,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        r#"{"error":"unauthorized"}"#,
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// What the body screen needs: the size limit and the versions the handler serves.
struct BodyScreen {
    max_body_bytes: usize,
    supported: Vec<rmcp::model::ProtocolVersion>,
}

/// Whether the request says its body is JSON, by the rule rmcp applies (the media type before
/// any `;` parameters, case-insensitive).
fn says_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The body, or why it could not be read: over `limit` bytes (`Ok(None)`), or a read error.
async fn read_body(body: Body, limit: usize) -> Result<Option<Vec<u8>>, String> {
    let mut body = std::pin::pin!(body);
    let mut collected = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|e| e.to_string())?;
        if let Ok(data) = frame.into_data() {
            if data.len() > limit.saturating_sub(collected.len()) {
                return Ok(None);
            }
            collected.extend_from_slice(&data);
        }
    }
    Ok(Some(collected))
}

/// Screens a JSON POST body (see the module doc); everything else goes to rmcp untouched.
async fn screen_body(
    State(screen_state): State<Arc<BodyScreen>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || !says_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let limit = screen_state.max_body_bytes;
    let (status, refusal) = match read_body(body, limit).await {
        Ok(Some(bytes)) => match screen(&bytes, &screen_state.supported) {
            Screened::Pass(_) => {
                return next
                    .run(Request::from_parts(parts, Body::from(bytes)))
                    .await;
            }
            Screened::Blank => (
                StatusCode::BAD_REQUEST,
                Refusal::new(
                    serde_json::Value::Null,
                    PARSE_ERROR,
                    "Parse error: the body is empty; send one JSON-RPC message",
                ),
            ),
            Screened::Refuse(refusal) if refusal.code == INVALID_PARAMS => {
                (StatusCode::OK, refusal)
            }
            Screened::Refuse(refusal) | Screened::Unserved(refusal) => {
                (StatusCode::BAD_REQUEST, refusal)
            }
        },
        Ok(None) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::new(
                serde_json::Value::Null,
                INVALID_REQUEST,
                format!(
                    "Invalid Request: the body is over the {limit}-byte limit \
                     (CPERSONA_HTTP_MAX_BODY_BYTES); it was not read and nothing was run"
                ),
            ),
        ),
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Refusal::new(
                serde_json::Value::Null,
                PARSE_ERROR,
                format!("Parse error: the body could not be read: {e}"),
            ),
        ),
    };
    // rmcp judges the headers exactly as for any body: an empty stand-in reaches its parse
    // step (and its 415) only when every check before that passed.
    let stand_in = next.run(Request::from_parts(parts, Body::empty())).await;
    if stand_in.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return stand_in;
    }
    tracing::debug!(code = refusal.code, message = %refusal.message, "refused a body");
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        refusal.to_json().to_string(),
    )
        .into_response()
}

/// The console's routes for a listener on the given address (the console's router), handed in by
/// the CLI so that this transport does not depend on the console.
pub type ConsoleMount = Box<dyn FnOnce(&HttpSecurity, SocketAddr) -> Router + Send>;

/// Bind `addr` and serve until Ctrl-C / SIGTERM; with `console`, its pages at `/console`
/// beside `/mcp` (outside `/mcp`'s CORS and bearer layers: the console has its own login,
/// same-origin only).
pub async fn serve(
    server: McpServer,
    security: HttpSecurity,
    addr: SocketAddr,
    console: Option<ConsoleMount>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    let mut app = router(server, &security, bound);
    if let Some(console) = console {
        app = app.merge(console(&security, bound));
        tracing::info!(%bound, "console at http://{bound}/console");
    }
    tracing::info!(%bound, "serving MCP over streamable HTTP at http://{bound}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM (the console's own listener stops on it too).
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(%e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(e) => {
                tracing::error!(%e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
