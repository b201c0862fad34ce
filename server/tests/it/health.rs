//! `check_health` through the real binary over stdio: on the hashed fallback it warns about
//! the embedder with the install remedy, and on a store whose rows carry another model's
//! vectors it never answers `healthy` (issue 17: it did, with `issues: []`).

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::binary::call_tools;

fn issue<'a>(body: &'a Value, check: &str) -> &'a Value {
    body["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["check"] == check)
        .unwrap_or_else(|| panic!("no {check} issue: {body}"))
}

#[test]
fn the_hashed_fallback_is_a_warning_with_the_install_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = call_tools(
        dir.path(),
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "my cat is called Miso"}),
            ),
            ("check_health", json!({})),
        ],
    );
    let health = &bodies[1];
    assert_eq!(health["embedder"]["model_id"], "hash-ngram-v1", "{health}");
    assert_eq!(health["status"], "degraded", "{health}");
    let embedder = issue(health, "embedder");
    assert_eq!(embedder["severity"], "warn", "{embedder}");
    assert_eq!(embedder["fallback"], true, "{embedder}");
    assert!(
        embedder["hint"]
            .as_str()
            .unwrap()
            .contains("cpersona model install"),
        "{embedder}"
    );
    // Nothing else is wrong with this store: the fallback alone degrades it.
    assert_eq!(health["severity_summary"]["warn"], 1, "{health}");
}

#[test]
fn rows_of_another_model_are_never_healthy() {
    let dir = tempfile::tempdir().unwrap();
    let texts = [
        "my cat is called Miso",
        "I live in Kyoto",
        "I drink green tea",
    ];
    let stores: Vec<(&str, Value)> = texts
        .iter()
        .map(|t| ("store", json!({"agent_id": "a", "content": t})))
        .collect();
    call_tools(dir.path(), &stores);
    // The store's vectors now claim another model, as after switching embedders.
    let db = dir.path().join("store").join("test.db");
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "UPDATE memories SET embedding_model = 'sentence-transformers/all-MiniLM-L6-v2'; \
         UPDATE meta SET value = 'sentence-transformers/all-MiniLM-L6-v2' \
         WHERE key = 'embedding_model';",
    )
    .unwrap();
    drop(conn);
    let bodies = call_tools(
        dir.path(),
        &[
            ("check_health", json!({})),
            ("check_health", json!({"fix": true})),
        ],
    );
    for health in &bodies {
        assert_ne!(health["status"], "healthy", "{health}");
        let model = issue(health, "embedding_model");
        assert_eq!(model["severity"], "warn", "{model}");
        assert_eq!(model["count"], 3, "{model}");
        assert!(
            model["reason"]
                .as_str()
                .unwrap()
                .contains("vector arm skipped"),
            "{model}"
        );
        assert_eq!(
            issue(health, "vector_coverage")["searchable"],
            0,
            "{health}"
        );
    }
    // fix cannot re-embed with another model: it says so, and wrote nothing.
    assert_eq!(
        issue(&bodies[1], "embedding_model")["fixed"]["action"],
        "report_only"
    );
}
