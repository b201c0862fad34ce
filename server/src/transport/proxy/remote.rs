//! The remote end: one streamable HTTP client (MCP 2025-06-18, "Streamable HTTP") shared by
//! every relayed message. Each message is POSTed on its own, accepting a JSON body or an event
//! stream; the `Mcp-Session-Id` the remote gives on `initialize` goes on every later request,
//! and so does the protocol version `initialize` agreed (`MCP-Protocol-Version`). When the
//! remote answers 404 to a session it no longer knows (it restarted), the client's
//! `initialize` is replayed once to open a new one and the request is sent again, as the
//! transport asks of a client; the desktop client never learns the server went away. The token goes
//! as `Authorization: Bearer`. Every way a POST can fail becomes a [`ProxyError`] that names the
//! remote as shown ([`Remote::shown`]: no credentials, no query string).

use std::io::BufReader;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::{Value, json};
use ureq::http::{Response, Uri};

use super::error::{ProxyError, quote};
use super::sse;
use crate::config::ProxySettings;

/// Bytes of one answer read at most (a JSON body or a whole event stream).
const MAX_ANSWER_BYTES: u64 = 64 << 20;
/// How long the closing `DELETE` may take: the client is gone, so it is only a courtesy.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The remote server and the session opened on it.
pub(super) struct Remote {
    agent: ureq::Agent,
    url: String,
    shown: String,
    bearer: Option<String>,
    timeout: Duration,
    session: RwLock<Session>,
    /// The client's last `initialize`, replayed to open a new session.
    initialize: Mutex<Option<Value>>,
    /// Held while a new session is opened, so concurrent 404s open one, not one each.
    reopening: Mutex<()>,
}

/// What `initialize` agreed with the remote.
#[derive(Clone, Debug, Default)]
struct Session {
    id: Option<String>,
    protocol_version: Option<String>,
}

impl Remote {
    /// The remote of `settings`, checked: an http(s) URL with a host, and a token an HTTP
    /// header can carry. A token bound for plain http on another machine is warned about.
    pub(super) fn new(settings: &ProxySettings) -> Result<Remote, ProxyError> {
        let url = settings.remote_url.clone();
        let bad = |reason: &str| ProxyError::BadUrl {
            url: url.clone(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e| bad(&format!("does not parse: {e}")))?;
        let scheme = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {
                s.to_ascii_lowercase()
            }
            _ => return Err(bad("must be an http:// or https:// URL")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("names no host"))?;
        let port = uri.port().map(|p| format!(":{p}")).unwrap_or_default();
        let shown = format!("{scheme}://{host}{port}{}", uri.path());
        let bearer = settings.token.as_ref().map(|t| format!("Bearer {t}"));
        if let Some(bearer) = &bearer
            && ureq::http::HeaderValue::from_str(bearer).is_err()
        {
            return Err(ProxyError::BadToken);
        }
        if bearer.is_some() && scheme == "http" && !is_loopback(host) {
            tracing::warn!(
                remote = %shown,
                "sending CPERSONA_AUTH_TOKEN over plain http to another machine: anyone on the \
                 path can read it; use https"
            );
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(settings.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("cpersona-proxy/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Remote {
            agent,
            url,
            shown,
            bearer,
            timeout: settings.timeout,
            session: RwLock::new(Session::default()),
            initialize: Mutex::new(None),
            reopening: Mutex::new(()),
        })
    }

    /// The URL as messages show it.
    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// POSTs `message` and hands each JSON-RPC message of the answer to `deliver` as it
    /// arrives; returns the HTTP status. On `initialize` it keeps the session id and the
    /// protocol version the answer carries.
    pub(super) fn relay(
        &self,
        message: &Value,
        deliver: &mut dyn FnMut(Value),
    ) -> Result<u16, ProxyError> {
        self.post(message, deliver, true)
    }

    fn post(
        &self,
        message: &Value,
        deliver: &mut dyn FnMut(Value),
        may_reopen: bool,
    ) -> Result<u16, ProxyError> {
        let initializing = message.get("method").and_then(Value::as_str) == Some("initialize");
        if initializing {
            *lock(&self.initialize) = Some(message.clone());
        }
        let session = self.session().clone();
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        request = self.with_session(request, &session);
        let response = request
            .send(message.to_string())
            .map_err(|e| self.failure(e))?;
        let status = response.status().as_u16();
        if initializing && (200..300).contains(&status) {
            let id = header(&response, "mcp-session-id");
            self.session_mut().id = id;
        }
        match status {
            401 => Err(match self.bearer {
                Some(_) => ProxyError::TokenRefused {
                    url: self.shown.clone(),
                },
                None => ProxyError::TokenMissing {
                    url: self.shown.clone(),
                },
            }),
            404 if session.id.is_some() && !initializing && may_reopen => {
                self.reopen(&session)?;
                self.post(message, deliver, true)
            }
            404 if session.id.is_some() => Err(ProxyError::SessionLost {
                url: self.shown.clone(),
                reason: "it answered 404 again after a new session was opened".to_owned(),
            }),
            200..=299 => {
                let mut on_message = |value: Value| {
                    if initializing
                        && let Some(version) = value["result"]["protocolVersion"].as_str()
                    {
                        self.session_mut().protocol_version = Some(version.to_owned());
                    }
                    deliver(value);
                };
                self.read_answer(response, &mut on_message)?;
                Ok(status)
            }
            _ => self.read_refusal(response, deliver).map(|()| status),
        }
    }

    /// Opens a new session in place of `stale`, which the remote no longer knows: the
    /// client's `initialize` again (its answer was given long ago, so this one is dropped),
    /// then `notifications/initialized`. A request that finds the session already replaced
    /// by another's reopening has nothing to do.
    fn reopen(&self, stale: &Session) -> Result<(), ProxyError> {
        let _one_at_a_time = lock(&self.reopening);
        if self.session().id != stale.id {
            return Ok(());
        }
        let lost = |reason: String| ProxyError::SessionLost {
            url: self.shown.clone(),
            reason,
        };
        let initialize = lock(&self.initialize)
            .clone()
            .ok_or_else(|| lost("the client never sent initialize".to_owned()))?;
        *self.session_mut() = Session::default();
        let mut refused = None;
        self.post(
            &initialize,
            &mut |answer| refused = answer.get("error").cloned(),
            false,
        )
        .map_err(|e| lost(e.to_string()))?;
        if let Some(error) = refused {
            return Err(lost(format!("initialize was refused: {error}")));
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&initialized, &mut |_| {}, false)
            .map_err(|e| lost(e.to_string()))?;
        tracing::warn!(
            remote = %self.shown,
            old = stale.id.as_deref().unwrap_or_default(),
            new = self.session().id.as_deref().unwrap_or("(none)"),
            "the remote no longer knew the session (404); opened a new one"
        );
        Ok(())
    }

    /// Ends the session with `DELETE` (MCP: a client that leaves should), best effort: the
    /// remote may not allow it (405) or be gone; either is logged, neither is an error.
    pub(super) fn close(&self) {
        let session = self.session().clone();
        let Some(id) = &session.id else { return };
        let mut request = self
            .agent
            .delete(&self.url)
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build();
        request = self.with_session(request, &session);
        match request.call() {
            Ok(r) if r.status().is_success() => tracing::info!(session = %id, "session closed"),
            Ok(r) => {
                tracing::info!(session = %id, status = r.status().as_u16(), "the remote did not close the session")
            }
            Err(e) => {
                tracing::warn!(session = %id, "could not close the session: {}", self.failure(e))
            }
        }
    }

    /// The token, the session id and the protocol version, each when there is one.
    fn with_session<B>(
        &self,
        mut request: ureq::RequestBuilder<B>,
        session: &Session,
    ) -> ureq::RequestBuilder<B> {
        if let Some(bearer) = &self.bearer {
            request = request.header("Authorization", bearer.as_str());
        }
        if let Some(id) = &session.id {
            request = request.header("Mcp-Session-Id", id.as_str());
        }
        if let Some(version) = &session.protocol_version {
            request = request.header("MCP-Protocol-Version", version.as_str());
        }
        request
    }

    /// A 2xx body: nothing (202 and any empty body), one JSON message or an array of them, or
    /// an event stream whose events are each a message.
    fn read_answer(
        &self,
        response: Response<ureq::Body>,
        deliver: &mut dyn FnMut(Value),
    ) -> Result<(), ProxyError> {
        let status = response.status().as_u16();
        let content_type = header(&response, "content-type").unwrap_or_default();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let body = response
            .into_body()
            .into_with_config()
            .limit(MAX_ANSWER_BYTES);
        if essence == "text/event-stream" {
            let mut stray = None;
            let events =
                sse::read_events(
                    BufReader::new(body.reader()),
                    |data| match serde_json::from_str::<Value>(data) {
                        Ok(value) => deliver(value),
                        Err(_) => stray = Some(quote(data)),
                    },
                );
            if let Some(data) = stray {
                tracing::warn!(remote = %self.shown, %data, "skipped an event whose data is not JSON");
            }
            return events.map_err(|e| self.failure(ureq::Error::from(e)));
        }
        let text = body.read_to_string().map_err(|e| self.failure(e))?;
        if text.trim().is_empty() {
            return Ok(());
        }
        let not_json_rpc = || ProxyError::NotJsonRpc {
            url: self.shown.clone(),
            status,
            content_type: if content_type.is_empty() {
                "no content type".to_owned()
            } else {
                content_type.clone()
            },
            body: quote(&text),
        };
        if essence != "application/json" {
            return Err(not_json_rpc());
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(messages)) => messages.into_iter().for_each(deliver),
            Ok(message @ Value::Object(_)) => deliver(message),
            _ => return Err(not_json_rpc()),
        }
        Ok(())
    }

    /// A status other than 2xx and 401: a JSON-RPC error in the body (as this server sends for
    /// a message it refuses) is relayed; any other body becomes [`ProxyError::Status`].
    fn read_refusal(
        &self,
        mut response: Response<ureq::Body>,
        deliver: &mut dyn FnMut(Value),
    ) -> Result<(), ProxyError> {
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .unwrap_or_default();
        match serde_json::from_str::<Value>(&text) {
            Ok(message) if message.get("error").is_some_and(Value::is_object) => {
                deliver(message);
                Ok(())
            }
            _ => Err(ProxyError::Status {
                url: self.shown.clone(),
                status,
                body: quote(&text),
            }),
        }
    }

    /// What a ureq error means to the user.
    fn failure(&self, error: ureq::Error) -> ProxyError {
        let url = self.shown.clone();
        match error {
            ureq::Error::Timeout(_) => ProxyError::Timeout {
                url,
                secs: self.timeout.as_secs(),
            },
            ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => ProxyError::Timeout {
                url,
                secs: self.timeout.as_secs(),
            },
            ureq::Error::HostNotFound => ProxyError::Unreachable {
                url,
                reason: "its host name does not resolve".to_owned(),
            },
            ureq::Error::BodyExceedsLimit(limit) => ProxyError::BrokenAnswer {
                url,
                reason: format!("it is over the {limit}-byte limit of one answer"),
            },
            ureq::Error::Io(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
                ) =>
            {
                ProxyError::BrokenAnswer {
                    url,
                    reason: e.to_string(),
                }
            }
            other => ProxyError::Unreachable {
                url,
                reason: other.to_string(),
            },
        }
    }

    fn session(&self) -> std::sync::RwLockReadGuard<'_, Session> {
        // A relay that panicked holding the lock left a whole value behind.
        self.session.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn session_mut(&self) -> std::sync::RwLockWriteGuard<'_, Session> {
        self.session.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A mutex's value; one a panicking relay held is still whole (it is only ever replaced).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A header's value as text, when present and readable.
fn header(response: &Response<ureq::Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Whether `host` (as a URI spells it) is this machine.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
