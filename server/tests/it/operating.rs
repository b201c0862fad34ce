//! The operating context through the real binary: the operator's summary follows ours in
//! `initialize`, `get_operating_context` serves the preview and a section, and under
//! `enforce = "reject"` a write to an unregistered project is refused and writes nothing while
//! a read only warns, and `@auto` resolves by `[defaults]`.

use rusqlite::Connection;
use serde_json::json;

use crate::binary::{StdioSession, cpersona_in};

const SIDECAR: &str = r#"
version = 1
context_revision = "r9"
[instructions]
summary = "File decisions under their project."
[registry]
project_ids = ["alpha"]
enforce = "reject"
[defaults]
ann = "alpha"
[[doctrine]]
name = "naming"
body = "Use kebab-case."
"#;

fn command(dir: &std::path::Path) -> std::process::Command {
    std::fs::create_dir_all(dir.join("store")).unwrap();
    let sidecar = dir.join("oc.toml");
    std::fs::write(&sidecar, SIDECAR).unwrap();
    let mut cmd = cpersona_in(dir);
    cmd.env("CPERSONA_OPERATING_CONTEXT_PATH", &sidecar);
    cmd
}

#[test]
fn initialize_carries_the_operators_summary_after_ours() {
    let dir = tempfile::tempdir().unwrap();
    let session = StdioSession::start(command(dir.path()));
    let instructions = session.initialized()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_owned();
    session.finish();
    assert!(
        instructions.starts_with("cpersona is your long-term memory"),
        "{instructions}"
    );
    assert!(
        instructions.ends_with("File decisions under their project."),
        "{instructions}"
    );
}

#[test]
fn the_registry_refuses_unregistered_writes_and_resolves_auto() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = StdioSession::start(command(dir.path()));
    let (is_error, preview) = session.call("get_operating_context", &json!({}));
    assert!(!is_error, "{preview}");
    assert_eq!(preview["context_revision"], "r9");
    assert_eq!(preview["registry"]["enforce"], "reject");
    assert_eq!(preview["doctrine_sections"], json!(["naming"]));
    let (_, section) = session.call("get_operating_context", &json!({"section": "naming"}));
    assert_eq!(section["body"], "Use kebab-case.");

    let (is_error, refused) = session.call(
        "store",
        &json!({"agent_id": "bob", "content": "misfiled", "project_id": "gamma"}),
    );
    assert!(is_error, "{refused}");
    assert_eq!(refused["result"], "rejected");
    assert_eq!(refused["operating_context_revision"], "r9");
    let (is_error, stored) = session.call(
        "store",
        &json!({"agent_id": "ann", "content": "filed by default", "project_id": "@auto"}),
    );
    assert!(!is_error, "{stored}");
    assert_eq!(stored["resolved_project_id"], "alpha");
    let (is_error, read) = session.call(
        "list_memories",
        &json!({"agent_id": "ann", "project_id": "gamma"}),
    );
    assert!(!is_error, "a read only warns: {read}");
    assert!(
        read["operating_context_warning"]
            .as_str()
            .unwrap()
            .contains("not in registry")
    );
    session.finish();

    let conn = Connection::open(dir.path().join("store").join("test.db")).unwrap();
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT content, project_id FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        vec![("filed by default".to_owned(), "alpha".to_owned())]
    );
}
