//! The page shell (head, navigation, the log-out form), the refusal page, the two static
//! files (stylesheet and the confirm script), and small renderers the pages share (a JSON
//! value as nested tables, a source, a query string).

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use serde_json::Value;

/// A page answering why nothing was done: status, a title and a sentence.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    title: &'static str,
    detail: String,
}

impl Refusal {
    pub(crate) fn new(
        status: StatusCode,
        title: &'static str,
        detail: impl Into<String>,
    ) -> Refusal {
        Refusal {
            status,
            title,
            detail: detail.into(),
        }
    }

    /// A 404 for something the caller's scope does not hold.
    pub(crate) fn not_found(detail: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::NOT_FOUND, "Not found", detail)
    }

    /// A 400 for an argument the page cannot use.
    pub(crate) fn bad(detail: impl Into<String>) -> Refusal {
        Refusal::new(StatusCode::BAD_REQUEST, "Refused", detail)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = html! {
            div.refusal {
                h1 { (self.title) }
                p { (self.detail) }
                p.note { "Nothing was written. " a href="/console" { "Back to the console" } }
            }
        };
        (self.status, page(self.title, None, body)).into_response()
    }
}

/// What the shell shows of who is logged in (`session::Caller::nav`).
pub(crate) struct Nav<'a> {
    /// The session's CSRF token, for the log-out form.
    pub(crate) csrf: &'a str,
    /// Whether to offer the log-out form (a bearer request has no session to end).
    pub(crate) logout: bool,
}

/// A whole page: `title`, the navigation when someone is logged in, then `body`.
pub(crate) fn page(title: &str, nav: Option<Nav<'_>>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · cpersona console" }
                link rel="stylesheet" href="/console/static/console.css";
                script src="/console/static/console.js" defer {}
            }
            body {
                header {
                    a.brand href="/console" { "cpersona" }
                    @if let Some(nav) = nav {
                        nav {
                            a href="/console" { "Agents" }
                            a href="/console/trace" { "Open a trace" }
                            a href="/console/health" { "Health" }
                        }
                        @if nav.logout {
                            form.logout method="post" action="/console/logout" {
                                input type="hidden" name="csrf" value=(nav.csrf);
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The hidden CSRF field every POST form carries.
pub(crate) fn csrf_field(csrf: &str) -> Markup {
    html! { input type="hidden" name="csrf" value=(csrf); }
}

/// A JSON value as display text: strings bare, the rest as JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An engine failure as a refusal: the caller's fault said as is (400), ours logged (500).
pub(crate) fn engine_refusal(err: cpersona_engine::Error) -> Refusal {
    if err.is_user_error() {
        Refusal::new(StatusCode::BAD_REQUEST, "Refused", err.to_string())
    } else {
        tracing::error!(%err, "console: engine failure");
        Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal error",
            format!("the engine failed: {err}"),
        )
    }
}

/// A JSON value as nested tables (objects) and lists (arrays); strings are escaped text.
pub(crate) fn json_view(value: &Value) -> Markup {
    match value {
        Value::Object(map) if map.is_empty() => html! { span.muted { "{}" } },
        Value::Object(map) => html! {
            table.kv {
                @for (key, value) in map {
                    tr { th { (key) } td { (json_view(value)) } }
                }
            }
        },
        Value::Array(items) if items.is_empty() => html! { span.muted { "none" } },
        Value::Array(items) if items.iter().all(|v| !v.is_object() && !v.is_array()) => html! {
            (items.iter().map(text_of).collect::<Vec<_>>().join(", "))
        },
        // A list of flat records (index segments, findings' rows) as one table.
        Value::Array(items) if items.iter().all(is_flat_object) => {
            let mut keys: Vec<&String> = Vec::new();
            for item in items.iter().filter_map(Value::as_object) {
                for key in item.keys() {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
            html! {
                table {
                    tr { @for key in &keys { th { (key) } } }
                    @for item in items.iter().take(MAX_JSON_ROWS) {
                        tr { @for key in &keys { td { (item.get(key.as_str()).map(text_of).unwrap_or_default()) } } }
                    }
                }
                @if items.len() > MAX_JSON_ROWS { p.note { "… and " (items.len() - MAX_JSON_ROWS) " more" } }
            }
        }
        Value::Array(items) => html! {
            ol.json { @for item in items.iter().take(MAX_JSON_ROWS) { li { (json_view(item)) } } }
            @if items.len() > MAX_JSON_ROWS { p.note { "… and " (items.len() - MAX_JSON_ROWS) " more" } }
        },
        Value::Null => html! { span.muted { "null" } },
        other => html! { (text_of(other)) },
    }
}

/// Items of a JSON list shown at most (a page stays light whatever a report holds).
const MAX_JSON_ROWS: usize = 200;

/// An object whose values are all scalars.
fn is_flat_object(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| map.values().all(|v| !v.is_object() && !v.is_array()))
}

/// A row's `source` in one line: `type id (name)`.
pub(crate) fn source_line(source: &Value) -> String {
    match source {
        Value::Object(map) => ["type", "id", "name"]
            .iter()
            .filter_map(|k| map.get(*k).map(text_of))
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" · "),
        other => text_of(other),
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push('…');
    out
}

/// A query string from pairs, each part percent-encoded; empty values are left out.
pub(crate) fn query_string(pairs: &[(&str, &str)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// Percent-encodes everything but the unreserved characters (a path segment or a query
/// value).
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

const CSS: &str = include_str!("static/console.css");
const JS: &str = include_str!("static/console.js");

/// `GET /console/static/{file}`: the stylesheet and the script (no data, no login needed).
pub(crate) async fn static_file(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(kind))],
        body,
    )
        .into_response()
}
