//! The MCP layer in-process: the server and rmcp's own client over a duplex pipe, with the
//! fake backend. Initialize, list tools, every tool family, and refusals that never reach
//! the backend.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use cpersona_server::mcp::{McpServer, SERVER_INSTRUCTIONS};
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::fake::FakeBackend;

pub(crate) struct Session {
    pub(crate) client: RunningService<RoleClient, ()>,
    pub(crate) backend: Arc<FakeBackend>,
}

pub(crate) async fn connect() -> Session {
    let backend = Arc::new(FakeBackend::default());
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = McpServer::new(backend.clone());
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("server handshake");
        let _ = running.waiting().await;
    });
    let client = ().serve(client_io).await.expect("client handshake");
    Session { client, backend }
}

/// Call `tool` and return (isError, the JSON body of the one text content).
pub(crate) async fn call(session: &Session, tool: &'static str, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = session
        .client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .expect("call_tool");
    assert_eq!(result.content.len(), 1, "{tool}: one content expected");
    let text = &result.content[0].as_text().expect("text content").text;
    let body: Value = serde_json::from_str(text).expect("JSON body");
    (result.is_error.unwrap_or(false), body)
}

const EXPECTED_TOOLS: &[&str] = &[
    "archive_episode",
    "calibrate_threshold",
    "check_health",
    "check_update",
    "declare_associations",
    "deep_check",
    "delete_agent_data",
    "delete_episode",
    "delete_memory",
    "export_memories",
    "get_contents",
    "get_operating_context",
    "get_profile",
    "get_queue_status",
    "get_recall_precision",
    "get_session_findings",
    "import_memories",
    "list_episodes",
    "list_memories",
    "lock_memory",
    "merge_memories",
    "migrate_channel_axis",
    "pause_persistence",
    "persistence_status",
    "recall",
    "recall_with_context",
    "reconstruct",
    "resume_persistence",
    "set_recall_precision",
    "store",
    "traverse",
    "unlock_memory",
    "update_memory",
    "update_profile",
];

#[tokio::test]
async fn initialize_gives_instructions_and_lists_every_tool() {
    let session = connect().await;
    let info = session.client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.clone().expect("server info").name,
        "cpersona"
    );
    let instructions = info.instructions.clone().unwrap_or_default();
    assert_eq!(instructions, SERVER_INSTRUCTIONS);
    for word in ["recall", "store", "reconstruct", "archive_episode"] {
        assert!(instructions.contains(word), "instructions lack {word}");
    }
    let tools = session.client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, EXPECTED_TOOLS);
    for tool in &tools {
        let description = tool.description.as_deref().unwrap_or("");
        assert!(
            description.len() > 40,
            "{} has a thin description",
            tool.name
        );
        assert!(
            tool.annotations.is_some(),
            "{} has no annotations",
            tool.name
        );
    }
    let store = tools.iter().find(|t| t.name == "store").unwrap();
    assert_eq!(
        store
            .meta
            .as_ref()
            .and_then(|m| m.0.get("anthropic/alwaysLoad")),
        Some(&json!(true))
    );
}

/// Every tool's JSON body is also its `structuredContent` (issue 21), refusals included; the
/// text content stays what text-reading clients parse.
#[tokio::test]
async fn every_body_is_also_structured_content() {
    let session = connect().await;
    for (tool, args) in [
        ("store", json!({"agent_id": "a", "content": "structured"})),
        ("recall", json!({"agent_id": "a", "query": "structured"})),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "limit": 500}),
        ),
    ] {
        let result = session
            .client
            .call_tool(
                CallToolRequestParams::new(tool).with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap();
        let text = &result.content[0].as_text().unwrap().text;
        let body: Value = serde_json::from_str(text).unwrap();
        assert_eq!(result.structured_content.as_ref(), Some(&body), "{tool}");
    }
}

/// The workflows of the instructions as MCP prompts (issue 21): listed with their arguments,
/// each written from the caller's arguments, a missing required one refused as invalid params.
#[tokio::test]
async fn prompts_list_and_get() {
    let session = connect().await;
    let prompts = session.client.list_all_prompts().await.unwrap();
    let mut names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "end_session",
            "remember_this",
            "start_session",
            "what_do_i_know"
        ]
    );
    let start = prompts.iter().find(|p| p.name == "start_session").unwrap();
    let required: Vec<&str> = start
        .arguments
        .as_deref()
        .unwrap()
        .iter()
        .filter(|a| a.required == Some(true))
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(required, ["agent_id", "task"]);
    let mut arguments = serde_json::Map::new();
    arguments.insert("agent_id".into(), json!("a"));
    arguments.insert("topic".into(), json!("tea"));
    let got = session
        .client
        .get_prompt(GetPromptRequestParams::new("what_do_i_know").with_arguments(arguments))
        .await
        .unwrap();
    let text = &got.messages[0].content.as_text().unwrap().text;
    assert!(
        text.contains("`recall`") && text.contains(r#"query "tea""#),
        "{text}"
    );
    let missing = session
        .client
        .get_prompt(GetPromptRequestParams::new("start_session"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("agent_id"), "{missing}");
}

#[tokio::test]
async fn store_recall_get_update_lock_delete_round_trip() {
    let s = connect().await;
    let (err, body) = call(
        &s,
        "store",
        json!({"agent_id": "a", "content": "The user likes green tea"}),
    )
    .await;
    assert!(!err);
    assert_eq!(body["result"], "stored");
    let id = body["id"].as_i64().unwrap();
    // The legacy `message` form lands the same way.
    let (_, body) = call(
        &s,
        "store",
        json!({"agent_id": "a", "message": {"content": "Meeting moved to Friday"}}),
    )
    .await;
    assert_eq!(body["result"], "stored");
    let (_, body) = call(
        &s,
        "store",
        json!({"agent_id": "a", "content": "The user likes green tea"}),
    )
    .await;
    assert_eq!(body["result"], "skipped");
    assert_eq!(body["id"], id);

    let (err, body) = call(&s, "recall", json!({"agent_id": "a", "query": "tea"})).await;
    assert!(!err);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["ref"], format!("mem:{id}"));

    let (_, body) = call(
        &s,
        "get_contents",
        json!({"agent_id": "a", "refs": [format!("mem:{id}"), "mem:999"]}),
    )
    .await;
    assert_eq!(body["items"][0]["content"], "The user likes green tea");
    assert_eq!(body["missing"], json!(["mem:999"]));

    let (_, body) = call(
        &s,
        "update_memory",
        json!({"memory_id": id, "agent_id": "a", "content": "The user likes black tea"}),
    )
    .await;
    assert_eq!(body, json!({"ok": true, "updated_id": id}));
    let (_, body) = call(&s, "lock_memory", json!({"memory_id": id, "agent_id": "a"})).await;
    assert_eq!(body["locked_id"], id);
    let (err, body) = call(
        &s,
        "delete_memory",
        json!({"memory_id": id, "agent_id": "a"}),
    )
    .await;
    assert!(err);
    assert_eq!(body["ok"], false);
    assert!(body["error"].as_str().unwrap().contains("locked"), "{body}");
    call(
        &s,
        "unlock_memory",
        json!({"memory_id": id, "agent_id": "a"}),
    )
    .await;
    let (err, body) = call(
        &s,
        "delete_memory",
        json!({"memory_id": id, "agent_id": "a"}),
    )
    .await;
    assert!(!err, "{body}");
    assert_eq!(body["deleted_id"], id);
    assert_eq!(s.backend.len(), 1);
}

#[tokio::test]
async fn export_import_round_trip() {
    let s = connect().await;
    for text in ["alpha fact", "beta fact", "gamma fact"] {
        call(&s, "store", json!({"agent_id": "src", "content": text})).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("export.jsonl");
    let path = path.to_str().unwrap();
    let (_, body) = call(
        &s,
        "export_memories",
        json!({"agent_id": "src", "output_path": path}),
    )
    .await;
    assert_eq!(body["memories"], 3);
    let (_, body) = call(
        &s,
        "import_memories",
        json!({"input_path": path, "target_agent_id": "dst", "dry_run": true}),
    )
    .await;
    assert_eq!(body["imported_memories"], 3);
    assert_eq!(s.backend.len(), 3, "a dry run writes nothing");
    let (_, body) = call(
        &s,
        "import_memories",
        json!({"input_path": path, "target_agent_id": "dst"}),
    )
    .await;
    assert_eq!(body["imported_memories"], 3);
    let (_, body) = call(
        &s,
        "import_memories",
        json!({"input_path": path, "target_agent_id": "dst"}),
    )
    .await;
    assert_eq!(body["skipped_memories"], 3);
    let (_, body) = call(&s, "list_memories", json!({"agent_id": "dst"})).await;
    assert_eq!(body["count"], 3);
}

#[tokio::test]
async fn internal_errors_are_ok_false_with_a_message() {
    let s = connect().await;
    let (err, body) = call(&s, "calibrate_threshold", json!({"agent_id": "a"})).await;
    assert!(err);
    assert_eq!(body["ok"], false);
    assert_eq!(
        body["error"],
        "internal error: the fake backend has no embeddings"
    );
}

#[tokio::test]
async fn session_tools_and_defaults_reach_the_backend() {
    let s = connect().await;
    call(&s, "pause_persistence", json!({})).await;
    call(
        &s,
        "pause_persistence",
        json!({"ttl_seconds": 60, "session_key": "s1"}),
    )
    .await;
    call(&s, "persistence_status", json!({"session_key": "s2"})).await;
    call(&s, "resume_persistence", json!({})).await;
    call(
        &s,
        "check_health",
        json!({"fix": true, "checks": ["integrity"]}),
    )
    .await;
    call(&s, "check_health", json!({})).await;
    let received = s.backend.received.lock().unwrap().clone();
    assert_eq!(
        received,
        vec![
            // The MCP layer's defaults: CPersona's 1800 s ttl, the process bucket.
            (
                "pause_persistence",
                json!({"ttl_seconds": 1800, "session_key": ""})
            ),
            (
                "pause_persistence",
                json!({"ttl_seconds": 60, "session_key": "s1"})
            ),
            ("persistence_status", json!({"session_key": "s2"})),
            ("resume_persistence", json!({"session_key": ""})),
            (
                "check_health",
                json!({"agent_id": "", "fix": true, "checks": ["integrity"], "session_key": ""})
            ),
            (
                "check_health",
                json!({"agent_id": "", "fix": false, "checks": [], "session_key": ""})
            ),
        ]
    );
}

/// Every malformed call is refused with `ok: false` and a message naming what is wrong, and
/// the backend is never called (so nothing can be written).
#[tokio::test]
async fn malformed_arguments_never_reach_the_backend() {
    let s = connect().await;
    let long_key = "k".repeat(257);
    // Over the one content limit (16,000 on defaults; issue 18), which the schema advertises.
    let huge = "x".repeat(16_001);
    let cases: Vec<(&'static str, Value, &str)> = vec![
        (
            "store",
            json!({"content": "x"}),
            "missing required argument `agent_id`",
        ),
        (
            "store",
            json!({"agent_id": "", "content": "x"}),
            "`agent_id` must not be empty",
        ),
        (
            "store",
            json!({"agent_id": 7, "content": "x"}),
            "`agent_id` must be a string, got integer",
        ),
        (
            "store",
            json!({"agent_id": "a"}),
            "missing required argument `content`",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "x", "message": {"content": "y"}}),
            "not both",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "nul\u{0}byte"}),
            "`content` contains a NUL",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": huge}),
            "`content` has 16001 characters, more than the maximum 16000",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "x", "channel": long_key}),
            "`channel` has 257 characters",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "x", "agentId": "b"}),
            "unknown argument `agentId`",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "x", "lock": "yes"}),
            "`lock` must be a boolean",
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "x", "source": {"kind": "User"}}),
            "unknown argument `source.kind`",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "limit": -1}),
            "`limit` is -1, below the minimum 0",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "limit": 101}),
            "above the maximum 100",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "limit": "ten"}),
            "`limit` must be an integer, got string",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "limit": 2.5}),
            "must be an integer, got number",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "time_cue": {"confidence": "certain"}}),
            "`time_cue.confidence` must be one of",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "time_cue": {"after": "2024-01-01"}}),
            "missing required argument `time_cue.confidence`",
        ),
        (
            "recall",
            json!({"agent_id": "a", "query": "q", "exclude_contents": ["a", 3]}),
            "`exclude_contents[1]` must be a string",
        ),
        (
            "recall",
            json!({"agent_id": "a"}),
            "missing required argument `query`",
        ),
        (
            "get_contents",
            json!({"agent_id": "a", "refs": []}),
            "`refs` must not be empty",
        ),
        (
            "get_contents",
            json!({"agent_id": "a", "refs": vec!["mem:1"; 21]}),
            "`refs` has 21 items, more than the maximum 20",
        ),
        (
            "get_contents",
            json!({"agent_id": "a", "refs": [{"ref": "mem:1", "span": [5, 1]}]}),
            "starts after it ends",
        ),
        (
            "get_contents",
            json!({"agent_id": "a", "refs": [{"ref": "mem:1", "span": [0, 1], "node": 0}]}),
            "at most one of",
        ),
        (
            "update_memory",
            json!({"memory_id": 0, "content": "x", "agent_id": "a"}),
            "`memory_id` is 0, below the minimum 1",
        ),
        (
            "update_memory",
            json!({"memory_id": "1", "content": "x", "agent_id": "a"}),
            "`memory_id` must be an integer",
        ),
        (
            "delete_memory",
            json!({"memory_id": 1e30, "agent_id": "a"}),
            "must be an integer, got number",
        ),
        (
            "merge_memories",
            json!({"source_agent_id": "a", "target_agent_id": "a"}),
            "must differ",
        ),
        (
            "merge_memories",
            json!({"source_agent_id": "a", "target_agent_id": "b", "mode": "swap"}),
            "`mode` must be one of",
        ),
        (
            "calibrate_threshold",
            json!({"agent_id": "a", "method": "magic"}),
            "`method` must be one of",
        ),
        (
            "calibrate_threshold",
            json!({"agent_id": "a", "sample_size": 5000}),
            "above the maximum 2000",
        ),
        (
            "set_recall_precision",
            json!({"agent_id": "a", "precision": "exact"}),
            "`precision` must be one of",
        ),
        (
            "pause_persistence",
            json!({"ttl_seconds": 0}),
            "below the minimum 1",
        ),
        (
            "pause_persistence",
            json!({"ttl_seconds": 86401}),
            "above the maximum 86400",
        ),
        (
            "list_memories",
            json!({"limit": 501}),
            "above the maximum 500",
        ),
        (
            "get_queue_status",
            json!({"verbose": true}),
            "unknown argument `verbose`",
        ),
        (
            "delete_agent_data",
            json!({"agent_id": ""}),
            "must not be empty",
        ),
    ];
    let n_cases = cases.len();
    for (tool, args, expected) in cases {
        let (err, body) = call(&s, tool, args.clone()).await;
        assert!(err, "{tool} {args}: not refused");
        assert_eq!(body["ok"], false, "{tool}: {body}");
        let message = body["error"].as_str().unwrap_or_default();
        assert!(
            message.contains(expected),
            "{tool}: expected {expected:?} in {message:?}"
        );
    }
    assert_eq!(
        s.backend.calls.load(Ordering::SeqCst),
        0,
        "a refusal reached the backend"
    );
    assert_eq!(s.backend.len(), 0);
    assert!(n_cases >= 30);
}

#[tokio::test]
async fn refusals_keep_the_tool_collection_shape() {
    let s = connect().await;
    let (_, body) = call(&s, "store", json!({"agent_id": ""})).await;
    assert_eq!(body["result"], "rejected");
    assert!(body["reason"].is_string());
    let (_, body) = call(&s, "recall", json!({"agent_id": "a", "query": 1})).await;
    assert_eq!(body["messages"], json!([]));
    let (_, body) = call(&s, "list_memories", json!({"limit": -5})).await;
    assert_eq!(body["memories"], json!([]));
    assert_eq!(body["count"], 0);
}
