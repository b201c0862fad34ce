//! `ProxyError`: why the proxy cannot start, or why one message could not be relayed. Every
//! message names the remote (as shown: no credentials, no query) and what happened, because it
//! is what the desktop client shows its user: a relayed request that fails is answered with it
//! as a JSON-RPC error, and it is logged to stderr.

use serde_json::Value;

use crate::transport::jsonrpc::Refusal;

/// The JSON-RPC code of a request the proxy could not relay (the range JSON-RPC leaves to
/// implementations, "server error").
pub(crate) const RELAY_FAILED: i64 = -32000;

/// Why the proxy could not start, or could not relay one message.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The URL cannot be used.
    #[error("the remote URL {url:?} {reason}")]
    BadUrl { url: String, reason: String },
    /// The token holds bytes an HTTP header cannot carry.
    #[error(
        "CPERSONA_AUTH_TOKEN cannot be sent in an HTTP header (it holds a control character \
         or a byte outside ASCII)"
    )]
    BadToken,
    /// No connection: refused, no route, name not found, TLS failure.
    #[error("remote {url} is unreachable: {reason}")]
    Unreachable { url: String, reason: String },
    /// No whole answer within the timeout.
    #[error("remote {url} did not answer within {secs} s (CPERSONA_PROXY_TIMEOUT_SECS)")]
    Timeout { url: String, secs: u64 },
    /// 401 although a token was sent.
    #[error("remote {url} refused the token (401): check CPERSONA_AUTH_TOKEN")]
    TokenRefused { url: String },
    /// 401 and no token was set.
    #[error("remote {url} asks for a token (401): set CPERSONA_AUTH_TOKEN")]
    TokenMissing { url: String },
    /// 404 on a session the remote no longer knows (it restarted), and opening a new one
    /// failed too.
    #[error(
        "remote {url} no longer knows this session (404) and a new one could not be opened: {reason}"
    )]
    SessionLost { url: String, reason: String },
    /// Another status without a JSON-RPC answer in its body.
    #[error("remote {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// A success status whose body is no JSON-RPC message.
    #[error(
        "remote {url} answered HTTP {status} with a body that is not JSON-RPC ({content_type}): {body}"
    )]
    NotJsonRpc {
        url: String,
        status: u16,
        content_type: String,
        body: String,
    },
    /// The answer broke off while it was read.
    #[error("remote {url}'s answer broke off: {reason}")]
    BrokenAnswer { url: String, reason: String },
    /// The remote ended its answer without one to this request.
    #[error("remote {url} ended its answer (HTTP {status}) without an answer to this request")]
    NoAnswer { url: String, status: u16 },
}

impl ProxyError {
    /// The JSON-RPC error answering the request `id` with this error.
    pub(crate) fn answer(&self, id: Value) -> Vec<u8> {
        Refusal::new(id, RELAY_FAILED, self.to_string()).to_line()
    }
}

/// At most `QUOTED_CHARS` characters of a body, on one line, to quote in an error.
pub(super) fn quote(body: &str) -> String {
    const QUOTED_CHARS: usize = 200;
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut quoted: String = one_line.chars().take(QUOTED_CHARS).collect();
    if quoted.len() < one_line.len() {
        quoted.push('…');
    }
    if quoted.is_empty() {
        "(empty body)".to_owned()
    } else {
        quoted
    }
}
