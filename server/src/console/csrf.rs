//! What every state-changing request must show before anything is written: that it comes
//! from a console page. Two independent checks, both required:
//! - **Origin / Sec-Fetch-Site** (run on every POST before the body is read): a browser
//!   says where a request comes from; `cross-site` or `same-site` fetch metadata, or an
//!   `Origin` whose host is not the `Host` asked, is refused. A client that sends neither
//!   (curl, a script) is no browser a page could steer, and passes this check.
//! - **The session's CSRF token** in a hidden form field, compared in constant time: a page
//!   elsewhere cannot read it (the cookie is HttpOnly and SameSite=Strict, pages are not
//!   framable). A bearer-token request needs none: a browser never adds that header itself.
//!
//! Bodies are read under a limit first ([`read_form`]): over it the answer is 413 with the
//! limit named, and no field is looked at.

use axum::body::{Body, HttpBody};
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use super::layout::Refusal;
use super::session::Caller;

/// The limit on an ordinary console form (login, lock, delete, search settings).
pub(crate) const SMALL_FORM_BYTES: usize = 64 * 1024;
/// The limit on a pasted or uploaded trace (a trace holds refs and scores, no text).
pub(crate) const TRACE_BYTES: usize = 8 * 1024 * 1024;

/// The limit on the edit form: room for the longest content the engine accepts, each
/// character percent-encoded (up to 9 bytes for a 3-byte UTF-8 character), never under
/// [`SMALL_FORM_BYTES`].
pub(crate) fn edit_form_bytes(max_content_chars: usize) -> usize {
    max_content_chars
        .saturating_mul(9)
        .saturating_add(4096)
        .max(SMALL_FORM_BYTES)
}

/// Refuses a POST a browser says came from another site.
pub(crate) fn same_origin(headers: &HeaderMap) -> Result<(), Refusal> {
    let refuse = |why: String| {
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "Cross-site request refused",
            format!("{why}; console forms are accepted only from the console's own pages"),
        ))
    };
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return refuse(format!("the browser says this request is {site}"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"));
        if origin_host != Some(host) || host.is_empty() {
            return refuse(format!(
                "the request comes from origin {origin:?}, not from this host {host:?}"
            ));
        }
    }
    Ok(())
}

/// Refuses a form whose CSRF field is not the session's (bearer requests pass).
pub(crate) fn check_token(caller: &Caller, presented: &str) -> Result<(), Refusal> {
    if caller.bearer {
        return Ok(());
    }
    let expected = caller.csrf().as_bytes();
    if presented.is_empty() || !bool::from(presented.as_bytes().ct_eq(expected)) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "Form refused",
            "the form carries no valid CSRF token for this session (reload the page and try \
             again; a form posted from elsewhere is never accepted)",
        ));
    }
    Ok(())
}

/// Bytes of a refused body read and dropped before answering, so that a client still
/// sending gets the 413 rather than a reset connection; past it the connection is closed.
const DRAIN_BYTES: usize = 16 * 1024 * 1024;

/// The request's body, at most `limit` bytes: 413 past it (the rest is read and dropped up
/// to [`DRAIN_BYTES`], see there).
pub(crate) async fn read_limited(
    request: Request,
    limit: usize,
) -> Result<(axum::http::request::Parts, Vec<u8>), Refusal> {
    let too_large = || {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request too large",
            format!(
                "the form is over this page's {limit}-byte limit; it was not read and nothing \
                 was written"
            ),
        )
    };
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > DRAIN_BYTES) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let mut body = std::pin::pin!(body);
    let mut collected = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|err| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                "Unreadable request",
                format!("the body could not be read: {err}"),
            )
        })?;
        if let Ok(data) = frame.into_data() {
            seen = seen.saturating_add(data.len());
            if seen > DRAIN_BYTES {
                return Err(too_large());
            }
            if seen <= limit {
                collected.extend_from_slice(&data);
            }
        }
    }
    if seen > limit {
        return Err(too_large());
    }
    Ok((parts, collected))
}

/// A urlencoded form of at most `limit` bytes, decoded into `T`.
pub(crate) async fn read_form<T: DeserializeOwned>(
    request: Request,
    limit: usize,
) -> Result<T, Refusal> {
    let (parts, bytes) = read_limited(request, limit).await?;
    let request = Request::from_parts(parts, Body::from(bytes));
    match axum::Form::<T>::from_request(request, &()).await {
        Ok(axum::Form(form)) => Ok(form),
        Err(rejection) => Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "Form refused",
            format!("the form could not be read: {rejection}"),
        )),
    }
}
