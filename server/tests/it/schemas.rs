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

/// The JSON types a property schema admits (`$ref` and `anyOf`/`oneOf` followed); `None`
/// when it names none.
fn admitted_types(schema: &Value, defs: &Value) -> Option<std::collections::BTreeSet<String>> {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
        return admitted_types(&defs[name], defs);
    }
    match &schema["type"] {
        Value::String(t) => Some([t.clone()].into()),
        Value::Array(ts) => Some(
            ts.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect(),
        ),
        _ => {
            let alternatives = schema["anyOf"].as_array().or(schema["oneOf"].as_array())?;
            let union: std::collections::BTreeSet<String> = alternatives
                .iter()
                .filter_map(|alt| admitted_types(alt, defs))
                .flatten()
                .collect();
            (!union.is_empty()).then_some(union)
        }
    }
}

/// Issue 20: every tool CPersona 2.6.14 lists (asked over MCP, `tools/list`) is served here
/// with every argument it declares, each admitting the JSON types CPersona's does; ours
/// requires nothing CPersona leaves optional except `agent_id`, which CPersona refuses at run
/// time when missing and our schema refuses up front. Needs `CPERSONA_TEST_PYTHON`
/// (`scripts/test`).
#[test]
fn every_cpersona_tool_and_argument_is_served_with_its_types() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cp.db");
    let listed = crate::migrate::run_script(&[
        "tools".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
        "--embed-url".as_ref(),
        "http://127.0.0.1:9/embed".as_ref(),
    ]);
    let theirs: Vec<Value> = serde_json::from_value(listed).unwrap();
    assert_eq!(theirs.len(), 34, "CPersona 2.6.14 lists 34 tools");
    let ours = surface(McpServer::all_tools());
    let mut problems = Vec::new();
    for tool in &theirs {
        let name = tool["name"].as_str().unwrap();
        let Some(mine) = ours.iter().find(|t| t["name"] == name) else {
            problems.push(format!("{name}: not served"));
            continue;
        };
        let schema = &mine["inputSchema"];
        for (arg, their_type) in tool["arguments"].as_object().unwrap() {
            let Some(prop) = schema["properties"].get(arg) else {
                problems.push(format!("{name}.{arg}: missing"));
                continue;
            };
            let theirs = admitted_types(&json!({"type": their_type}), &Value::Null);
            let mine = admitted_types(prop, &schema["$defs"]);
            if let (Some(theirs), Some(mine)) = (theirs, mine) {
                // An integer is a number; a number schema admits CPersona's integers.
                let covered = theirs
                    .iter()
                    .all(|t| mine.contains(t) || (t == "integer" && mine.contains("number")));
                if !covered {
                    problems.push(format!("{name}.{arg}: CPersona {theirs:?}, ours {mine:?}"));
                }
            }
        }
        let their_required: Vec<&Value> = tool["required"].as_array().unwrap().iter().collect();
        for required in schema["required"].as_array().into_iter().flatten() {
            if required != "agent_id" && !their_required.contains(&required) {
                problems.push(format!("{name}: requires {required}, CPersona does not"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
