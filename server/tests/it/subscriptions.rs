//! `resources/subscribe` through the real binary over stdio (issue 21): a subscribed row's
//! change and removal reach the client as `notifications/resources/updated`; an unsubscribed
//! or unchanged row sends nothing; a row that does not exist cannot be subscribed to.

use std::time::Duration;

use serde_json::{Value, json};

use crate::binary::{StdioSession, cpersona_in};

/// Long enough for the watcher (every 500 ms) to have read the rows again.
fn settle(session: &mut StdioSession) -> Vec<Value> {
    session.notifications_within(
        Duration::from_millis(1_500),
        "notifications/resources/updated",
    )
}

#[test]
fn a_subscribed_row_tells_its_changes_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = StdioSession::start(cpersona_in(dir.path()));
    let (_, first) = session.call("store", &json!({"agent_id": "a", "content": "first fact"}));
    let (_, second) = session.call("store", &json!({"agent_id": "a", "content": "second fact"}));
    let uri = |body: &Value| format!("cpersona://agents/a/memories/{}", body["id"]);
    for body in [&first, &second] {
        let reply = session.request("resources/subscribe", json!({"uri": uri(body)}));
        assert!(reply.get("result").is_some(), "{reply}");
    }
    assert!(settle(&mut session).is_empty(), "nothing changed yet");

    session.call(
        "update_memory",
        &json!({"agent_id": "a", "memory_id": first["id"], "content": "first fact, revised"}),
    );
    let told = settle(&mut session);
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["params"]["uri"], uri(&first));

    let reply = session.request("resources/unsubscribe", json!({"uri": uri(&second)}));
    assert!(reply.get("result").is_some(), "{reply}");
    session.call(
        "update_memory",
        &json!({"agent_id": "a", "memory_id": second["id"], "content": "second, revised"}),
    );
    session.call(
        "delete_memory",
        &json!({"agent_id": "a", "memory_id": first["id"]}),
    );
    let told = settle(&mut session);
    assert_eq!(told.len(), 1, "only the subscribed row, removed: {told:?}");
    assert_eq!(told[0]["params"]["uri"], uri(&first));

    let missing = session.request(
        "resources/subscribe",
        json!({"uri": "cpersona://agents/a/memories/999999"}),
    );
    assert!(missing.get("error").is_some(), "{missing}");
    session.finish();
}
