//! Progress and cancellation of long calls through the real binary over stdio: an
//! `import_memories` (and `check_health` with fix, `reconstruct`) sent with a `progressToken`
//! gets `notifications/progress` for that token,
//! counting up to the rows imported, all before its answer; one sent without gets none; and an
//! import cancelled with `notifications/cancelled` right after it was sent leaves the store
//! with all of the file or none of it, never a part.

use std::path::Path;

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::binary::{StdioSession, cpersona_in};

/// Writes a CPersona export of `rows` memories for agent `imp` into `dir`.
fn import_file(dir: &Path, rows: usize) -> String {
    let mut text = json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "",
                          "memory_count": rows, "episode_count": 0, "profile_count": 0})
    .to_string();
    for i in 0..rows {
        let line = json!({"_type": "memory", "id": i + 1, "agent_id": "imp",
                          "content": format!("imported fact {i} about the orchard"),
                          "timestamp": "2026-05-01T12:00:00Z"});
        text.push('\n');
        text.push_str(&line.to_string());
    }
    let path = dir.join("in.jsonl");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn session(dir: &Path) -> StdioSession {
    std::fs::create_dir_all(dir.join("store")).unwrap();
    let mut cmd = cpersona_in(dir);
    cmd.env("CPERSONA_EXPORT_DIR", dir);
    StdioSession::start(cmd)
}

fn progress_of(notifications: &[Value], token: &str) -> Vec<(f64, Option<f64>)> {
    notifications
        .iter()
        .filter(|n| {
            n["method"] == "notifications/progress" && n["params"]["progressToken"] == token
        })
        .map(|n| {
            (
                n["params"]["progress"].as_f64().unwrap(),
                n["params"]["total"].as_f64(),
            )
        })
        .collect()
}

#[test]
fn a_long_call_with_a_progress_token_reports_before_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = import_file(dir.path(), 120);
    let mut session = session(dir.path());
    let reply = session.request(
        "tools/call",
        json!({"name": "import_memories", "arguments": {"input_path": path},
               "_meta": {"progressToken": "imp-1"}}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let steps = progress_of(&session.take_notifications(), "imp-1");
    assert!(steps.len() >= 2, "{steps:?}");
    assert!(steps.windows(2).all(|w| w[0].0 <= w[1].0), "{steps:?}");
    assert_eq!(steps.last(), Some(&(120.0, Some(120.0))), "{steps:?}");

    // Without a token: no progress at all.
    let reply = session.request(
        "tools/call",
        json!({"name": "check_health", "arguments": {"fix": true}}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let any: Vec<_> = session
        .take_notifications()
        .into_iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(any.is_empty(), "{any:?}");
    // With one, check_health's three phases.
    session.request(
        "tools/call",
        json!({"name": "check_health", "arguments": {"fix": true},
               "_meta": {"progressToken": 7}}),
    );
    let notifications = session.take_notifications();
    let steps: Vec<f64> = notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == 7)
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(steps, vec![0.0, 1.0, 2.0, 3.0]);
    // reconstruct's phases: recall, (pro's deeper recall), assembly, done.
    let reply = session.request(
        "tools/call",
        json!({"name": "reconstruct", "arguments": {"agent_id": "imp", "query": "orchard",
                                                     "mode": "pro"},
               "_meta": {"progressToken": "rc"}}),
    );
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let steps = progress_of(&session.take_notifications(), "rc");
    let done: Vec<f64> = steps.iter().map(|s| s.0).collect();
    assert_eq!(done, vec![0.0, 1.0, 2.0, 3.0], "{steps:?}");
    session.finish();
}

#[test]
fn a_cancelled_import_lands_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    // More than one batch (5,000 rows a transaction).
    let rows = 7_000;
    let path = import_file(dir.path(), rows);
    let mut session = session(dir.path());
    let call = json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call",
                      "params": {"name": "import_memories", "arguments": {"input_path": path}}});
    session.send_line(&call.to_string());
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 900, "reason": "test"}});
    session.send_line(&cancel.to_string());
    // Whatever the race, the server stays up; wait until the import is over either way.
    let db = dir.path().join("store").join("test.db");
    let count = || -> i64 {
        let conn = Connection::open(&db).unwrap();
        conn.query_row(
            "SELECT count(*) FROM memories WHERE agent_id = 'imp'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let mut seen = Vec::new();
    for _ in 0..40 {
        session.request("ping", json!({}));
        seen.push(count());
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let last = *seen.last().unwrap();
    assert!(
        last == 0 || last == rows as i64,
        "a cancelled import left {last} of {rows} rows"
    );
    // Never a part visible from outside while it ran, except between its batches once the
    // first committed (then it runs to the end).
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    eprintln!("cancelled import: {last} of {rows} rows landed");
    session.finish();
}
