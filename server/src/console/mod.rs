//! The local web console (issue 22): `cpersona console`, and the same pages at `/console`
//! under `serve --http`. A person sees what an agent stored and corrects it, searches with
//! the recall pipeline and reads why each row came back, opens a trace (a search's, or a
//! saved `--trace-out` file), attributes a missed row and replays one changed condition, and
//! reads `check_health` as a page.
//!
//! Decisions, and why:
//! - **HTML rendered here, with `maud`.** Templates are Rust expressions checked at compile
//!   time, and every interpolated value is escaped by default, so a stored memory's text can
//!   never inject markup into the page that shows it; there are no template files to ship
//!   and no template engine at run time. maud's `axum` feature targets axum-core 0.5, the one
//!   axum 0.8 uses, so a `Markup` is a response as it is.
//! - **Plain script only where it earns its place.** One static file (`/console/static/
//!   console.js`): a confirm dialog before a delete, and loading a chosen trace file into the
//!   paste box. No htmx, no chart library: the pictures (weekly histogram, score
//!   distributions against the gate) are inline SVG written in Rust (`svg.rs`), so a page
//!   is one request and works with script off (the delete then relies on its server-side
//!   confirmation field alone).
//! - **The same credentials as HTTP.** `CPERSONA_AUTH_TOKEN`, or in ACL mode any client's
//!   token with that client's grants: each page and action is judged as the tool it mirrors
//!   (`list_memories`, `get_contents`, `update_memory`, `recall`, `check_health`, ...) by
//!   `access::decide`, so the console can never show or change more than the client's MCP
//!   calls could. A browser posts the token once to the login form and gets a random
//!   session id in an HttpOnly, SameSite=Strict, `Path=/console` cookie (never the token);
//!   `Authorization: Bearer` is accepted too. Without either: the login page with 401, and
//!   nothing read. Open only under `CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true`, as HTTP.
//! - **Every change is a POST that proves it comes from a console page** (`csrf.rs`): the
//!   session's CSRF token in a hidden field, and an Origin / Sec-Fetch-Site check that
//!   refuses cross-site requests; bodies are read under a limit (413 over it) before any
//!   field is looked at. A refusal is a page saying why, and nothing is written.
//! - **Only the `Engine` facade.** The console calls what the tools call (same validation,
//!   same change log); the recall query and time cue go through the tools' own conversion
//!   (`mcp::engine::convert`), attribution through `cpersona replay`'s (`cli::replay`).
//!   It holds no SQL and no ranking.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use cpersona_engine::embed::Embedder;

use crate::mcp::engine::EngineBackend;
use crate::transport::http::{Gate, HttpSecurity, allowed_hosts, presented_bearer};

use self::layout::Refusal;
use self::session::{Caller, Session, Sessions};
use self::state::{ConsoleState, Shared};

// Layered bottom first; a file imports only the ones above it in this list.
mod counts;
mod csrf;
mod layout;
mod login;
mod pages;
mod session;
mod state;
mod svg;

/// The console over one engine: what `cpersona console` and `serve --http` mount.
pub struct Console {
    backend: Arc<EngineBackend>,
    embedder: Arc<dyn Embedder>,
}

impl Console {
    /// The console over `backend` (the tools' own), whose embedder is `embedder` (the overflow
    /// nodes of a memory are measured with it).
    pub fn new(backend: Arc<EngineBackend>, embedder: Arc<dyn Embedder>) -> Console {
        Console { backend, embedder }
    }

    /// The pages under `/console`, admitting by `security`'s token or ACL file, judging
    /// `Host` by HTTP's list for a listener on `bound`.
    pub fn router(self, security: &HttpSecurity, bound: SocketAddr) -> Router {
        let state = Arc::new(ConsoleState {
            backend: self.backend,
            embedder: self.embedder,
            gate: Gate::of(security),
            acl: security.acl.clone(),
            sessions: Sessions::default(),
            hosts: allowed_hosts(security, bound),
            counts: counts::CountCache::default(),
        });
        let authenticated = Router::new()
            .route("/console", get(pages::agents::index))
            .route("/console/agents/{agent}", get(pages::agents::agent))
            .route(
                "/console/agents/{agent}/memories",
                get(pages::memories::list),
            )
            .route(
                "/console/agents/{agent}/memories/{id}",
                get(pages::memories::detail),
            )
            .route(
                "/console/agents/{agent}/memories/{id}/{action}",
                post(pages::memories::act),
            )
            .route(
                "/console/agents/{agent}/episodes",
                get(pages::agents::episodes),
            )
            .route(
                "/console/agents/{agent}/profile",
                get(pages::agents::profile),
            )
            .route("/console/agents/{agent}/search", get(pages::search::search))
            .route(
                "/console/trace",
                get(pages::trace::upload_form).post(pages::trace::upload),
            )
            .route("/console/trace/{id}", get(pages::trace::view))
            .route("/console/trace/{id}/json", get(pages::trace::download))
            .route("/console/health", get(pages::health::health))
            .route("/console/logout", post(login::logout))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                authenticate,
            ));
        Router::new()
            .merge(authenticated)
            .route("/console/", get(|| async { Redirect::to("/console") }))
            .route("/console/login", get(login::login_form).post(login::login))
            .route("/console/static/{file}", get(layout::static_file))
            .layer(middleware::from_fn_with_state(Arc::clone(&state), screen))
            .with_state(state)
    }
}

/// Admits a request by bearer token or session cookie (or opens a session when
/// unauthenticated HTTP was asked for); anything else gets the login page with 401.
async fn authenticate(State(state): State<Shared>, mut request: Request, next: Next) -> Response {
    let bearer = presented_bearer(request.headers());
    let mut new_cookie = None;
    let caller = if !bearer.is_empty() {
        state.gate.admit(bearer).map(|principal| Caller {
            session: Arc::new(Session::new(principal)),
            bearer: true,
        })
    } else if let Some(session) = session::from_cookie(request.headers(), &state.sessions) {
        Some(Caller {
            session,
            bearer: false,
        })
    } else if matches!(state.gate, Gate::Open) {
        let session = state.sessions.open(None);
        new_cookie = Some(session::cookie_for(&session));
        Some(Caller {
            session,
            bearer: false,
        })
    } else {
        None
    };
    let Some(caller) = caller else {
        tracing::debug!(path = %request.uri().path(), "console: no valid session or token");
        return login::login_page(
            StatusCode::UNAUTHORIZED,
            "Log in with the server's token to use the console.",
        );
    };
    request.extensions_mut().insert(caller);
    let mut response = next.run(request).await;
    if let Some(cookie) = new_cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Before anything else: the `Host` check (DNS rebinding), the cross-site check on every
/// POST, and the headers every console answer carries (no caching, no framing, no sniffing,
/// scripts and styles from this origin only).
async fn screen(State(state): State<Shared>, request: Request, next: Next) -> Response {
    if let Some(hosts) = &state.hosts {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(host_name)
            .unwrap_or("");
        if !hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Refusal::new(
                StatusCode::FORBIDDEN,
                "Unknown host",
                format!(
                    "the Host header {host:?} is not one this server answers to (add it to \
                     CPERSONA_HTTP_ALLOWED_HOSTS if it is yours)"
                ),
            )
            .into_response();
        }
    }
    if request.method() == Method::POST
        && let Err(refusal) = csrf::same_origin(request.headers())
    {
        return refusal.into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null`
        // with the console's own forms, which the cross-site check must refuse.
        (header::REFERRER_POLICY, "same-origin"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The host part of a `Host` header: `[::1]:8788` is `::1`, `localhost:8788` is `localhost`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

#[cfg(test)]
mod tests;
