//! `reconstruct` over MCP, in-process, with the real engine backend on a temporary store
//! (hash embedder): the tool is listed, answers with items traceable to stored rows, and
//! refuses bad arguments before anything runs.

use std::sync::Arc;

use cpersona_engine::embed::{Embedder, HashEmbedder};
use cpersona_engine::{Engine, EngineConfig, ReconstructConfig, StoreRequest};
use cpersona_server::config::{Config, Env};
use cpersona_server::mcp::McpServer;
use cpersona_server::mcp::engine::EngineBackend;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

async fn serve(dir: &tempfile::TempDir) -> RunningService<RoleClient, ()> {
    let db = dir.path().join("r.db");
    let config = Config::from_env(&Env::from_process().unwrap(), Some(db.clone())).unwrap();
    let mut engine_config = EngineConfig::new(db);
    // An operator's default of 2 items, as `CPERSONA_RECONSTRUCT_DEFAULT_COUNT=2` gives.
    engine_config.reconstruct = ReconstructConfig {
        default_count: 2,
        ..config.reconstruct.engine(config.recall.preview_chars)
    };
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new());
    let engine = Arc::new(Engine::open(engine_config, embedder.clone()).unwrap());
    for (n, text) in [
        "The copper kettle is in the garden shed.",
        "Kettle news: it now sits on the kitchen windowsill, next to the radio.",
        "Winter tyres go on in November.",
        "The harbor lantern needs a new wick.",
    ]
    .into_iter()
    .enumerate()
    {
        let out = engine
            .store(&StoreRequest {
                agent_id: "a".into(),
                content: text.into(),
                // The two kettle rows 30 s apart: one adjacency burst of the same source.
                timestamp: Some(if n < 2 {
                    format!("2026-01-01T10:00:{:02}Z", n * 30)
                } else {
                    format!("2026-01-0{}T10:00:00Z", n + 1)
                }),
                ..StoreRequest::default()
            })
            .unwrap();
        assert_eq!(format!("{:?}", out.result), "Stored", "{out:?}");
    }
    let backend = EngineBackend::new(engine, embedder, config.recall.clone());
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = McpServer::new(Arc::new(backend));
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("server handshake");
        let _ = running.waiting().await;
    });
    ().serve(client_io).await.expect("client handshake")
}

async fn call(client: &RunningService<RoleClient, ()>, args: Value) -> (bool, Value) {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new("reconstruct").with_arguments(args))
        .await
        .expect("call_tool");
    let text = &result.content[0].as_text().expect("text content").text;
    (
        result.is_error == Some(true),
        serde_json::from_str(text).expect("JSON body"),
    )
}

#[tokio::test]
async fn reconstruct_bundles_versions_and_reports_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let client = serve(&dir).await;
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "reconstruct"));

    let (error, body) = call(
        &client,
        json!({"agent_id": "a", "query": "kettle", "trace": true, "deep": true}),
    )
    .await;
    assert!(!error, "{body}");
    // The operator's default of 2 (omitted count), stated under trace.
    assert_eq!(body["effective_count"], 2);
    let items = body["items"].as_array().unwrap();
    assert_eq!(body["returned_count"], items.len());
    assert!(!items.is_empty());
    // The two kettle rows are one burst of one source: one item, two claims.
    let kettle = items
        .iter()
        .find(|i| i["claims"].as_array().unwrap().len() == 2)
        .unwrap_or_else(|| panic!("the kettle versions bundle into one item: {body}"));
    assert_eq!(kettle["independence_reason"], "cluster:adjacent");
    let head = kettle["head_ref"].as_str().unwrap();
    let other = if head == "mem:1" { "mem:2" } else { "mem:1" };
    assert_eq!(kettle["excerpts"][0]["ref"], other);
    // Content is a verbatim stored text, never composed.
    let stored = [
        "The copper kettle is in the garden shed.",
        "Kettle news: it now sits on the kitchen windowsill, next to the radio.",
    ];
    assert!(stored.contains(&kettle["content"].as_str().unwrap()));
    // Claims newest first, each with its time; the later row's reason is its key.
    assert_eq!(kettle["claims"][0]["ref"], "mem:2");
    assert_eq!(kettle["claims"][1]["as_of"], "2026-01-01T10:00:00Z");
    assert_eq!(body["count_policy"]["source"], "server_default");
    assert!(body["trace"]["candidate_refs"].as_array().unwrap().len() >= 2);

    // A count above the maximum is clamped and says so.
    let (_, body) = call(
        &client,
        json!({"agent_id": "a", "query": "copper kettle", "count": 50}),
    )
    .await;
    assert_eq!(body["effective_count"], 10);
    assert_eq!(body["requested_count"], 50);
    assert_eq!(body["count_policy"]["clamped"], true);

    // An explicit zero.
    let (_, body) = call(
        &client,
        json!({"agent_id": "a", "query": "kettle", "count": 0}),
    )
    .await;
    assert_eq!(body["shortfall_reason"], "count_zero");
    assert_eq!(body["items"], json!([]));

    // Another agent sees nothing of a's rows.
    let (_, body) = call(&client, json!({"agent_id": "b", "query": "copper kettle"})).await;
    assert_eq!(body["returned_count"], 0);

    // Bad input never reaches the engine.
    let (error, body) = call(&client, json!({"agent_id": "a", "query": "x", "top_k": 0})).await;
    assert!(error);
    assert_eq!(body["ok"], false);
    assert_eq!(body["items"], json!([]));

    // A time cue reaches the candidate recall and comes back as recall reports it.
    let (error, body) = call(
        &client,
        json!({"agent_id": "a", "query": "kettle", "time_cue": {"ago": "long_ago", "confidence": "vague"}}),
    )
    .await;
    assert!(!error, "{body}");
    assert_eq!(body["time_cue"]["policy"], "cued-v0.3", "{body}");
    assert!(body.get("notices").is_none(), "{body}");
    // A bad cue is refused with recall's words, nothing run.
    let (error, body) = call(
        &client,
        json!({"agent_id": "a", "query": "kettle", "time_cue": {"after": "2026-02-01", "before": "2026-01-01", "confidence": "sure"}}),
    )
    .await;
    assert!(error);
    assert_eq!(body["ok"], false);

    // source_id filters as recall does: no candidate carries another source.
    let (error, body) = call(
        &client,
        json!({"agent_id": "a", "query": "copper kettle", "source_id": "nobody-has-this"}),
    )
    .await;
    assert!(!error, "{body}");
    assert_eq!(body["returned_count"], 0, "{body}");

    // A mode is applied and says what it did, its token cap included: `used_tokens` counts
    // the very body the client received (the cap is on cl100k_base tokens of that JSON).
    let (error, body) = call(
        &client,
        json!({"agent_id": "a", "query": "copper kettle", "mode": "lite"}),
    )
    .await;
    assert!(!error, "{body}");
    assert_eq!(body["mode"]["mode"], "lite");
    assert_eq!(body["mode"]["token_cap_applied"], true, "{body}");
    assert_eq!(body["mode"]["token_cap"], 3000, "{body}");
    let used = body["mode"]["used_tokens"].as_u64().expect("used_tokens") as usize;
    assert_eq!(
        used,
        cpersona_engine::tokens::cl100k_tokens(&body.to_string()),
        "{body}"
    );
    assert!(used <= 3000);
    // The short shape (reference §4.2 step 11), and the mode says what it dropped.
    assert_eq!(body["mode"]["shape"], "compact", "{body}");
    assert!(body["items"][0].get("ranges").is_none(), "{body}");
    assert!(body.get("bounds").is_none(), "{body}");
    let omitted = body["mode"]["omitted_fields"].as_array().expect("listed");
    assert!(omitted.contains(&json!("ranges")), "{body}");
    let (_, body) = call(
        &client,
        json!({"agent_id": "a", "query": "copper kettle", "mode": "pro"}),
    )
    .await;
    assert_eq!(body["effective_count"], 15, "{body}");
    // `lite` with `mode`, or an unknown mode, is a clear error.
    for args in [
        json!({"agent_id": "a", "query": "kettle", "mode": "lite", "lite": true}),
        json!({"agent_id": "a", "query": "kettle", "mode": "max"}),
    ] {
        let (error, body) = call(&client, args).await;
        assert!(error);
        assert_eq!(body["ok"], false, "{body}");
    }
}
