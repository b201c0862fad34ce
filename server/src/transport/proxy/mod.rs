//! `cpersona proxy`: a stdio MCP server that serves nothing itself. Every JSON-RPC message a
//! desktop client writes on stdin is relayed to a remote streamable HTTP MCP server (a shared
//! `cpersona serve --http`, or any other), and every message of its answers is written back on
//! stdout, one per line; so a client that can only launch stdio servers reaches a shared store.
//!
//! - Requests are relayed concurrently, at most `max_inflight` at once; past that, stdin is not
//!   read until one ends (backpressure), and none is dropped.
//! - `initialize`, notifications and responses are relayed in order, before the next line is
//!   read: `initialize` opens the session every later request names, and the client's
//!   `notifications/initialized` must reach the remote before the requests that follow it.
//! - Every request gets an answer: when relaying fails (unreachable, 401, a timeout, a body
//!   that is no JSON-RPC) the proxy answers its id with a JSON-RPC error saying what happened
//!   and logs it on stderr. A line that is no JSON is answered -32700 here (there is no
//!   message to relay). Stdout carries JSON-RPC only; logs go to stderr.
//! - At the end of stdin, the requests in flight finish, the session is closed (`DELETE`, best
//!   effort), and the proxy exits.
//!
//! The HTTP side is `remote.rs` (blocking, on tokio's blocking pool), its event streams
//! `sse.rs`; stdin is read and stdout written as `transport/stdio.rs` does for `serve`.

mod error;
mod remote;
mod sse;

use std::sync::Arc;

use rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{Semaphore, mpsc};

pub use self::error::ProxyError;
use self::remote::Remote;
use super::jsonrpc::{INVALID_REQUEST, Refusal, Screened, read_id, screen};
use super::stdio::{Line, read_line, write_frames};
use crate::config::ProxySettings;

/// Frames waiting for stdout: bounded, so a client that stops reading slows the relay down
/// instead of growing memory.
const QUEUED_FRAMES: usize = 256;

/// A relay to one remote server, checked and ready.
pub struct Proxy {
    remote: Arc<Remote>,
    max_inflight: u32,
}

impl Proxy {
    /// Checks the remote's URL and token ([`ProxyError::BadUrl`], [`ProxyError::BadToken`]);
    /// nothing is sent yet.
    pub fn new(settings: &ProxySettings) -> Result<Proxy, ProxyError> {
        Ok(Proxy {
            remote: Arc::new(Remote::new(settings)?),
            max_inflight: u32::try_from(settings.max_inflight.max(1)).unwrap_or(u32::MAX),
        })
    }

    /// Relays this process's stdin and stdout until stdin ends.
    pub async fn serve_stdio(self) {
        tracing::info!(
            remote = %self.remote.shown(),
            max_inflight = self.max_inflight,
            "relaying MCP between stdio and the remote server"
        );
        self.serve_on(tokio::io::stdin(), tokio::io::stdout()).await;
    }

    /// Relays messages read from `input`, writing every answer to `output`, until `input` ends.
    pub async fn serve_on<R, W>(self, input: R, output: W)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (frames, frames_rx) = mpsc::channel::<Vec<u8>>(QUEUED_FRAMES);
        let writer = tokio::spawn(write_frames(frames_rx, output));
        let slots = Arc::new(Semaphore::new(self.max_inflight as usize));
        let mut input = BufReader::new(input);
        loop {
            let message = match read_line(&mut input).await {
                Line::End => break,
                Line::TooLong { head, len } => {
                    let _ = frames.send(too_long(&head, len).to_line()).await;
                    continue;
                }
                Line::Whole(line) => match parse(&line) {
                    Parsed::Blank => continue,
                    Parsed::Refused(refusal) => {
                        tracing::warn!(message = %refusal.message, "answered a line that is no JSON");
                        let _ = frames.send(refusal.to_line()).await;
                        continue;
                    }
                    Parsed::Message(message) => message,
                },
            };
            let id = request_id(&message);
            let remote = Arc::clone(&self.remote);
            let frames = frames.clone();
            let in_order = id.is_none() || method(&message) == Some("initialize");
            if in_order {
                let relayed = tokio::task::spawn_blocking(move || {
                    relay_one(&remote, &message, id, &frames);
                });
                let _ = relayed.await;
                continue;
            }
            // A slot first: past the bound, stdin waits here.
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            tokio::task::spawn_blocking(move || {
                relay_one(&remote, &message, id, &frames);
                drop(slot);
            });
        }
        // Stdin ended: every request in flight finishes (all the slots are free again) before
        // the session is closed.
        let _ = slots.acquire_many(self.max_inflight).await;
        let remote = Arc::clone(&self.remote);
        let _ = tokio::task::spawn_blocking(move || remote.close()).await;
        drop(frames);
        let _ = writer.await;
        tracing::info!("stdin ended; every request was answered");
    }
}

/// What one stdin line holds.
enum Parsed {
    Blank,
    /// No JSON: answered here, as nothing can be relayed.
    Refused(Refusal),
    Message(Value),
}

fn parse(line: &[u8]) -> Parsed {
    let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Blank;
    }
    match serde_json::from_slice::<Value>(text) {
        Ok(message) => Parsed::Message(message),
        // The screen `serve` uses says why and finds the id, when one can be read.
        Err(_) => match screen(line, &[]) {
            Screened::Refuse(refusal) | Screened::Unserved(refusal) => Parsed::Refused(refusal),
            Screened::Blank => Parsed::Blank,
            Screened::Pass(_) => Parsed::Refused(Refusal::new(
                read_id(line),
                super::jsonrpc::PARSE_ERROR,
                "Parse error: the line is not JSON; nothing was relayed",
            )),
        },
    }
}

/// The answer to a line over the length limit: it was not held in memory, so not relayed.
fn too_long(head: &[u8], len: usize) -> Refusal {
    tracing::warn!(len, "answered a line over the length limit");
    Refusal::new(
        read_id(head),
        INVALID_REQUEST,
        format!(
            "Invalid Request: the line is {len} bytes, over the {DEFAULT_MAX_LINE_LENGTH}-byte \
             limit of one message; it was not relayed"
        ),
    )
}

fn method(message: &Value) -> Option<&str> {
    message.get("method").and_then(Value::as_str)
}

/// The id of a request (a method and an id); `None` for a notification or a response.
fn request_id(message: &Value) -> Option<Value> {
    method(message)?;
    message.get("id").filter(|id| !id.is_null()).cloned()
}

/// Relays one message and writes what comes back; a request that gets no answer from the
/// remote is answered with the reason (notifications and responses get none: JSON-RPC).
fn relay_one(remote: &Remote, message: &Value, id: Option<Value>, frames: &mpsc::Sender<Vec<u8>>) {
    let mut answered = false;
    let outcome = remote.relay(message, &mut |mut reply| {
        if let Some(id) = &id {
            // A remote that could not read the id answers with `null`; it is this request's.
            if reply.get("error").is_some() && reply.get("id").is_some_and(Value::is_null) {
                reply["id"] = id.clone();
            }
            answered |= reply.get("method").is_none() && reply.get("id") == Some(id);
        }
        let mut frame = reply.to_string().into_bytes();
        frame.push(b'\n');
        let _ = frames.blocking_send(frame);
    });
    let failure = match outcome {
        Ok(_) if answered || id.is_none() => return,
        Ok(status) => ProxyError::NoAnswer {
            url: remote.shown().to_owned(),
            status,
        },
        Err(failure) => failure,
    };
    let what = method(message).unwrap_or("a response");
    tracing::error!(method = what, "{failure}");
    if let Some(id) = id
        && !answered
    {
        let _ = frames.blocking_send(failure.answer(id));
    }
}
