//! MCP logging through the real binary over stdio (issue 21): after `logging/setLevel` the
//! operator log's events at or above the level reach the client as `notifications/message`
//! frames on stdout; a client that set no level, or a higher one, gets none.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::binary::cpersona_in;

/// Lines that make the server log a warning: a notification rmcp cannot read is dropped with
/// `warn!` (`transport/stdio.rs`).
const ODD_NOTIFICATION: &str =
    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":["odd"]}"#;

/// Runs a stdio session: initialize, then `level` (if any) with `logging/setLevel`, then the
/// odd notification and a ping; returns every frame the server wrote once the ping is answered
/// and a log message arrived (or two seconds passed).
fn session(level: Option<&str>) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut child = cpersona_in(dir.path())
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, frames) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(value) = serde_json::from_str(&line) {
                let _ = lines.send(value);
            }
        }
    });
    let mut send = |value: Value| writeln!(stdin, "{value}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "logging-test", "version": "1"}}}),
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    if let Some(level) = level {
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
                    "params": {"level": level}}),
        );
    }
    let mut seen = Vec::new();
    let wait_for = |seen: &mut Vec<Value>, done: &dyn Fn(&[Value]) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(2);
        while !done(seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match frames.recv_timeout(left) {
                Ok(frame) => seen.push(frame),
                Err(_) => break,
            }
        }
    };
    wait_for(&mut seen, &|s| s.iter().any(|f| f["id"] == 1));
    if level.is_some() {
        wait_for(&mut seen, &|s| s.iter().any(|f| f["id"] == 2));
    }
    writeln!(stdin, "{ODD_NOTIFICATION}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    )
    .unwrap();
    wait_for(&mut seen, &|s| {
        s.iter().any(|f| f["id"] == 3) && s.iter().any(|f| f["method"] == "notifications/message")
    });
    drop(stdin);
    let _ = child.wait();
    seen
}

fn log_messages(frames: &[Value]) -> Vec<&Value> {
    frames
        .iter()
        .filter(|f| f["method"] == "notifications/message")
        .collect()
}

#[test]
fn a_level_set_brings_the_operators_warnings_and_none_without() {
    let frames = session(Some("warning"));
    assert!(
        frames
            .iter()
            .any(|f| f["id"] == 2 && f.get("result").is_some()),
        "{frames:?}"
    );
    let messages = log_messages(&frames);
    assert!(
        !messages.is_empty(),
        "no log message reached the client: {frames:?}"
    );
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
        let frames = session(level);
        assert!(frames.iter().any(|f| f["id"] == 3), "{frames:?}");
        assert!(log_messages(&frames).is_empty(), "{level:?}: {frames:?}");
    }
}
