//! `declare_associations` and `traverse` through the real binary over stdio: on by default;
//! switched off, a refusal naming the setting and a `store` that still lands; declare →
//! traverse → recall with the association cue, and another agent sees nothing.

use std::path::Path;

use serde_json::{Value, json};

use crate::binary::{call_tools_with, cpersona_in};

/// Calls `tools` in order over stdio against a store in `dir`, with `env` set, and returns
/// each tool's (isError, JSON body).
fn call_tools(dir: &Path, env: &[(&str, &str)], tools: &[(&str, Value)]) -> Vec<(bool, Value)> {
    let mut cmd = cpersona_in(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    call_tools_with(cmd, tools)
}

/// Switched off (`CPERSONA_ASSOCIATIONS_ENABLED=false`), the tools refuse and name the setting,
/// and a `store` carrying associations still stores its memory, listing them as dropped.
#[test]
fn switched_off_the_tools_refuse_and_a_store_still_lands() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_tools(
        dir.path(),
        &[("CPERSONA_ASSOCIATIONS_ENABLED", "false")],
        &[
            (
                "declare_associations",
                json!({"agent_id": "a", "associations": {"entities": [{"name": "Alice"}]}}),
            ),
            ("traverse", json!({"agent_id": "a", "entity": "Alice"})),
            (
                "store",
                json!({"agent_id": "a", "content": "Alice was here",
                       "associations": {"entities": [{"name": "Alice"}]}}),
            ),
            ("list_memories", json!({"agent_id": "a"})),
        ],
    );
    for (is_error, body) in &out[..2] {
        assert!(*is_error, "{body}");
        assert_eq!(body["ok"], false);
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains("CPERSONA_ASSOCIATIONS_ENABLED=true"),
            "{error}"
        );
    }
    let (is_error, stored) = &out[2];
    assert!(!is_error, "{stored}");
    assert_eq!(stored["result"], "stored", "{stored}");
    assert_eq!(stored["associations"]["entities"], 0, "{stored}");
    let dropped = &stored["associations"]["dropped"][0];
    assert_eq!(dropped["item"], "associations");
    assert!(
        dropped["reason"]
            .as_str()
            .unwrap()
            .contains("CPERSONA_ASSOCIATIONS_ENABLED"),
        "{stored}"
    );
    assert_eq!(out[3].1["count"], 1, "{}", out[3].1);
}

/// By default, as CPersona ships them, `store`'s associations are declared, and one that
/// cannot be (a relation to a record that does not exist) never costs the memory.
#[test]
fn on_by_default_and_a_store_never_loses_its_memory_to_its_associations() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_tools(
        dir.path(),
        &[],
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "Alice was here",
                       "associations": {"entities": [{"name": "Alice"}]}}),
            ),
            ("traverse", json!({"agent_id": "a", "entity": "alice"})),
            (
                "store",
                json!({"agent_id": "a", "content": "Bob too",
                       "associations": {"relations": [
                           {"subject": "Alice", "predicate": "knows", "object": "mem:999"}]}}),
            ),
            ("list_memories", json!({"agent_id": "a"})),
        ],
    );
    let (is_error, first) = &out[0];
    assert!(!is_error, "{first}");
    assert_eq!(first["associations"]["entities"], 1, "{first}");
    assert_eq!(out[1].1["entities"][0]["name"], "Alice", "{}", out[1].1);
    let (is_error, second) = &out[2];
    assert!(!is_error, "{second}");
    assert_eq!(second["result"], "stored", "{second}");
    assert_eq!(second["associations"]["relations"], 0, "{second}");
    assert_eq!(
        second["associations"]["dropped"].as_array().map(Vec::len),
        Some(1),
        "{second}"
    );
    assert_eq!(out[3].1["count"], 2, "{}", out[3].1);
}

#[test]
fn declare_traverse_recall_and_another_agent_sees_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let on = [("CPERSONA_ASSOCIATIONS_ENABLED", "true")];
    let stored = call_tools(
        dir.path(),
        &on,
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "Alice moved to Lisbon",
                       "associations": {"entities": [{"name": "Alice", "aliases": ["Ali"]}]}}),
            ),
            (
                "store",
                json!({"agent_id": "a", "content": "The quarterly report came late"}),
            ),
            (
                "store",
                json!({"agent_id": "a", "content": "weather was rainy"}),
            ),
        ],
    );
    assert_eq!(
        stored[0].1["associations"]["entities"], 1,
        "{}",
        stored[0].1
    );
    assert_eq!(stored[0].1["associations"]["mentions"], 1);
    let alice = stored[0].1["id"].as_i64().unwrap();
    let report = stored[1].1["id"].as_i64().unwrap();
    let out = call_tools(
        dir.path(),
        &on,
        &[
            (
                "declare_associations",
                json!({"agent_id": "a", "anchor_ref": format!("mem:{report}"),
                       "associations": {"entities": [{"name": "Acme"}],
                                        "relations": [{"subject": "ali", "predicate": "works_at", "object": "Acme"}]}}),
            ),
            (
                "traverse",
                json!({"agent_id": "a", "entity": "ALICE", "max_hops": 1}),
            ),
            ("traverse", json!({"agent_id": "b", "entity": "Alice"})),
            (
                "recall",
                json!({"agent_id": "a", "query": "rainy weather for alice", "limit": 1}),
            ),
            (
                "recall",
                json!({"agent_id": "b", "query": "alice", "limit": 5}),
            ),
            (
                "declare_associations",
                json!({"agent_id": "a", "anchor_ref": "mem:999999",
                       "associations": {"entities": [{"name": "Ghost"}]}}),
            ),
            ("traverse", json!({"agent_id": "a", "entity": "Ghost"})),
        ],
    );
    let (err, declared) = &out[0];
    assert!(!err, "{declared}");
    assert_eq!(declared["result"], "declared");
    assert_eq!(declared["relations"].as_array().unwrap().len(), 1);

    let walk = &out[1].1;
    let names: Vec<&str> = walk["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Alice", "Acme"], "{walk}");
    assert_eq!(
        walk["entities"][0]["mentions"],
        json!([format!("mem:{alice}")])
    );
    assert_eq!(walk["relations"][0]["predicate"], "works_at");

    assert_eq!(out[2].1["reason"], "no_such_entity", "{}", out[2].1);
    assert_eq!(out[2].1["entities"], json!([]));

    let messages = out[3].1["messages"].as_array().unwrap();
    let held: Vec<&str> = messages
        .iter()
        .filter(|m| m["match_reason"]["signal"] == "association")
        .map(|m| m["ref"].as_str().unwrap())
        .collect();
    assert!(
        held.contains(&format!("mem:{report}").as_str()),
        "{}",
        out[3].1
    );

    assert_eq!(out[4].1["messages"], json!([]), "{}", out[4].1);

    let (err, refused) = &out[5];
    assert!(*err);
    assert!(refused["error"].as_str().unwrap().contains("anchor_ref"));
    assert_eq!(out[6].1["reason"], "no_such_entity");
}
