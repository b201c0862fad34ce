//! MCP logging through the real binary over stdio (issue 21): after `logging/setLevel` the
//! operator log's events at or above the level reach the client as `notifications/message`
//! frames on stdout; a client that set no level, or a higher one, gets none.

use std::time::Duration;

use serde_json::{Value, json};

use crate::binary::{StdioSession, cpersona_in};

/// Lines that make the server log a warning: a notification rmcp cannot read is dropped with
/// `warn!` (`transport/stdio.rs`).
const ODD_NOTIFICATION: &str =
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":["odd"]}"#;

/// A stdio session that sets `level` (if any), makes the server log a warning and returns
/// the log messages it was sent within two seconds.
fn log_messages(level: Option<&str>) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut session = StdioSession::start(cpersona_in(dir.path()));
    if let Some(level) = level {
        let reply = session.request("logging/setLevel", json!({"level": level}));
        assert!(reply.get("result").is_some(), "{reply}");
    }
    session.send_line(ODD_NOTIFICATION);
    let messages = session.notifications_within(Duration::from_secs(2), "notifications/message");
    session.finish();
    messages
}

#[test]
fn a_level_set_brings_the_operators_warnings_and_none_without() {
    let messages = log_messages(Some("warning"));
    assert!(!messages.is_empty(), "no log message reached the client");
    let params = &messages[0]["params"];
    assert_eq!(params["level"], "warning", "{params}");
    assert!(
        params["data"]
            .as_str()
            .unwrap()
            .contains("dropped a notification"),
        "{params}"
    );
    assert!(params["logger"].as_str().unwrap().starts_with("cpersona"));

    // No level set: nothing is sent; a level above the event's: nothing either.
    for level in [None, Some("error")] {
        let messages = log_messages(level);
        assert!(messages.is_empty(), "{level:?}: {messages:?}");
    }
}
