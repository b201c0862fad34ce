//! CORS as CPersona serves it, outermost: browser pages on `https://claude.ai` and
//! `https://www.claude.ai` (plus `CPERSONA_HTTP_ALLOWED_ORIGINS`) may call `/mcp` and read
//! `Mcp-Session-Id`. A preflight `OPTIONS` is answered here, before the token check (a browser
//! never sends credentials on a preflight, so it must never get 401); a disallowed origin gets
//! no CORS grant, ever. This layer only grants reading: it never lets a request past the token.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The browser origins CPersona grants by default (its Starlette `CORSMiddleware`).
pub const DEFAULT_CORS_ORIGINS: &[&str] = &["https://claude.ai", "https://www.claude.ai"];

/// Methods a preflight may ask for (CPersona's list).
const ALLOW_METHODS: &str = "GET, POST, DELETE, OPTIONS";
/// Request headers a preflight may ask for (CPersona's list).
const ALLOW_HEADERS: &str =
    "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-Id";
/// Response headers a page may read.
const EXPOSE_HEADERS: &str = "Mcp-Session-Id";
/// How long a browser may cache a preflight answer, in seconds (Starlette's default).
const MAX_AGE: &str = "600";

/// One origin as a browser compares it: scheme, host, port (`None` = any port, from `:*`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

/// The origins a page may call from.
#[derive(Clone, Debug)]
pub(super) struct CorsPolicy {
    origins: Vec<Origin>,
}

impl CorsPolicy {
    /// CPersona's defaults plus `extra` (`scheme://host[:port]`, `:*` for any port); an entry
    /// that is no origin is skipped with a warning.
    pub(super) fn new(extra: &[String]) -> CorsPolicy {
        let mut origins = Vec::new();
        for entry in DEFAULT_CORS_ORIGINS
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
        {
            match parse(entry, true) {
                Some(origin) => origins.push(origin),
                None => tracing::warn!(entry, "not an origin (scheme://host[:port]); skipped"),
            }
        }
        CorsPolicy { origins }
    }

    /// Whether a page on `origin` (the `Origin` header's value) gets a CORS grant.
    pub(super) fn allows(&self, origin: &str) -> bool {
        let Some(asked) = parse(origin, false) else {
            return false;
        };
        self.origins.iter().any(|allowed| {
            allowed.scheme == asked.scheme
                && allowed.host == asked.host
                && allowed.port.is_none_or(|port| Some(port) == asked.port)
        })
    }
}

/// Reads `scheme://host[:port]` (no path, query or user). A wildcard port (`:*`) only where
/// `wildcard` is allowed (the configured list); a missing port is the scheme's default.
fn parse(text: &str, wildcard: bool) -> Option<Origin> {
    let text = text.trim();
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, port) = match rest.rsplit_once(':') {
        // An IPv6 literal's colons are inside brackets.
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (rest, None),
    };
    let port = match port {
        Some("*") if wildcard => None,
        Some(port) => Some(port.parse::<u16>().ok()?),
        None => Some(match scheme.as_str() {
            "https" => 443,
            "http" => 80,
            _ => return None,
        }),
    };
    if host.is_empty() {
        return None;
    }
    Some(Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// The `Origin` header, when it is readable text.
fn origin_of(headers: &HeaderMap) -> Option<HeaderValue> {
    headers.get(header::ORIGIN).cloned()
}

/// Answers every `OPTIONS` before the token check, and marks every other answer to an allowed
/// origin as readable by it.
pub(super) async fn cors(
    State(policy): State<Arc<CorsPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    let origin = origin_of(request.headers());
    let granted = origin
        .as_ref()
        .and_then(|o| o.to_str().ok())
        .is_some_and(|o| policy.allows(o));
    if request.method() == Method::OPTIONS {
        let preflight = origin.is_some()
            && request
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        let mut response = match (preflight, granted) {
            (true, true) => StatusCode::NO_CONTENT.into_response(),
            // A preflight from an origin we do not grant: answered, without a grant.
            (true, false) => (StatusCode::FORBIDDEN, "Disallowed CORS origin").into_response(),
            (false, _) => {
                let mut response = StatusCode::NO_CONTENT.into_response();
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(ALLOW_METHODS));
                response
            }
        };
        let headers = response.headers_mut();
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
        if let (true, Some(origin)) = (preflight && granted, origin) {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static(ALLOW_METHODS),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(ALLOW_HEADERS),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static(MAX_AGE),
            );
        }
        return response;
    }
    let mut response = next.run(request).await;
    if let (true, Some(origin)) = (granted, origin) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSE_HEADERS),
        );
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    response
}

#[cfg(test)]
mod tests;
