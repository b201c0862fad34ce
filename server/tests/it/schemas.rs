//! A snapshot of every tool's name, description, annotations and input schema, so a change to
//! the surface agents see is deliberate (`UPDATE_EXPECT=1 cargo test -p cpersona-server`).

use cpersona_server::mcp::McpServer;
use serde_json::{Value, json};

fn surface(router: rmcp::handler::server::router::tool::ToolRouter<McpServer>) -> Vec<Value> {
    let mut tools = router.list_all();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    tools
        .into_iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "annotations": t.annotations,
                "meta": t.meta.map(|m| Value::Object(m.0)),
                "inputSchema": Value::Object((*t.input_schema).clone()),
            })
        })
        .collect()
}

#[test]
fn registered_tool_schemas() {
    let text = serde_json::to_string_pretty(&surface(McpServer::all_tools())).unwrap();
    expect_test::expect_file!["snapshots/tools.json"].assert_eq(&text);
}

/// Argument names agents already send must keep their CPersona spelling.
#[test]
fn cpersona_argument_names_are_kept() {
    let tools = surface(McpServer::all_tools());
    let props = |tool: &str| -> Vec<String> {
        let t = tools.iter().find(|t| t["name"] == tool).unwrap();
        t["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let has = |tool: &str, names: &[&str]| {
        let p = props(tool);
        for n in names {
            assert!(p.iter().any(|x| x == n), "{tool} lacks `{n}`: {p:?}");
        }
    };
    has(
        "store",
        &[
            "agent_id",
            "content",
            "id",
            "source",
            "timestamp",
            "metadata",
            "lock",
            "message",
            "channel",
            "project_id",
            "session_key",
            "associations",
        ],
    );
    has(
        "recall",
        &[
            "agent_id",
            "query",
            "limit",
            "deep",
            "channel",
            "exclude_contents",
            "project_id",
            "source_id",
            "full_content",
            "session_key",
            "trace",
            "time_cue",
        ],
    );
    has("recall_with_context", &["external_context"]);
    has("get_contents", &["agent_id", "refs"]);
    has(
        "archive_episode",
        &[
            "agent_id",
            "summary",
            "history",
            "keywords",
            "resolved",
            "project_id",
            "channel",
        ],
    );
    has("update_memory", &["memory_id", "content", "agent_id"]);
    has("delete_episode", &["episode_id", "agent_id"]);
    has("update_profile", &["agent_id", "profile"]);
    has(
        "export_memories",
        &["agent_id", "output_path", "include_embeddings"],
    );
    has(
        "import_memories",
        &["input_path", "target_agent_id", "dry_run"],
    );
    has(
        "merge_memories",
        &[
            "source_agent_id",
            "target_agent_id",
            "strategy",
            "mode",
            "dry_run",
        ],
    );
    has(
        "calibrate_threshold",
        &[
            "agent_id",
            "sample_size",
            "z_factor",
            "method",
            "percentile",
        ],
    );
    has("set_recall_precision", &["agent_id", "precision", "beta"]);
    has("check_health", &["agent_id", "fix", "checks"]);
    has("pause_persistence", &["ttl_seconds", "session_key"]);
}
