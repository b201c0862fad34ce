//! MCP logging (`logging/setLevel`, `notifications/message`): what the operator's log says
//! (the embedder down, queue retries, index merges, re-embedding) also goes to a client that
//! asked for it, at or above the level it set. Nothing is sent before a client sets a level,
//! and over stdio these are MCP frames like any other, never loose text on stdout. Over
//! stateless streamable HTTP there is no open stream to carry a message outside a request, so
//! a level is accepted and nothing is sent.
//!
//! The protocol deprecates logging (SEP-2577) in favour of nothing yet; clients of the revisions
//! before it still call `logging/setLevel`, so it is served, and the deprecation is allowed here
//! only.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::json;
use tokio::sync::broadcast;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Log events waiting for slow clients; past it a client misses the oldest (and is told how
/// many), the operator's log and the other clients are never held up.
const BACKLOG: usize = 256;

/// One operator log event, as a client is sent it.
#[derive(Clone, Debug)]
struct LogEvent {
    level: LoggingLevel,
    logger: String,
    message: String,
}

fn events() -> &'static broadcast::Sender<LogEvent> {
    static EVENTS: OnceLock<broadcast::Sender<LogEvent>> = OnceLock::new();
    EVENTS.get_or_init(|| broadcast::channel(BACKLOG).0)
}

/// The tracing layer `cli` installs beside the stderr log: it copies every event of this
/// server's crates at INFO or above to the clients that set a level. The forwarding itself
/// never logs above DEBUG, so it cannot feed itself.
pub struct ClientLogLayer;

/// The layer to install (`cli::init_logging`).
pub fn client_log_layer() -> ClientLogLayer {
    ClientLogLayer
}

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        if *metadata.level() > Level::INFO || !metadata.target().starts_with("cpersona") {
            return;
        }
        if events().receiver_count() == 0 {
            return;
        }
        let mut message = MessageText(String::new());
        event.record(&mut message);
        let level = match *metadata.level() {
            Level::ERROR => LoggingLevel::Error,
            Level::WARN => LoggingLevel::Warning,
            _ => LoggingLevel::Info,
        };
        let _ = events().send(LogEvent {
            level,
            logger: metadata.target().to_owned(),
            message: message.0,
        });
    }
}

/// An event's message and fields as one line (`message key=value ...`).
struct MessageText(String);

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        } else {
            self.0.push_str(&format!("{}={value:?}", field.name()));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            self.0.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}

/// The level one client set (`None`: it never asked, so it is sent nothing).
#[derive(Clone, Debug, Default)]
pub(crate) struct ClientLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl ClientLevel {
    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
    }

    fn admits(&self, level: LoggingLevel) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|minimum| rank(level) >= rank(minimum))
    }
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Sends `peer` the events its `level` admits until the connection closes.
pub(crate) fn forward(peer: Peer<RoleServer>, level: ClientLevel) {
    let mut receiver = events().subscribe();
    tokio::spawn(async move {
        loop {
            let event = match receiver.recv().await {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(missed)) => LogEvent {
                    level: LoggingLevel::Warning,
                    logger: "cpersona_server::mcp::logging".to_owned(),
                    message: format!(
                        "{missed} log messages were dropped: this client read them too slowly"
                    ),
                },
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if !level.admits(event.level) {
                continue;
            }
            let mut param = LoggingMessageNotificationParam::new(event.level, json!(event.message));
            param.logger = Some(event.logger);
            if peer.notify_logging_message(param).await.is_err() {
                tracing::debug!("client log: the client is gone");
                return;
            }
        }
    });
}
