//! Structured output against the real binary over stdio: every tool declares an
//! `outputSchema`, and a corpus of valid calls that reaches every tool (with the options that
//! add fields: traces, time cues, conversation turns, associations, a pause, a repair) gets
//! answers whose `structuredContent` equals the text body and validates against the tool's
//! schema. The random-argument fuzz (`fuzz.rs`) checks its accepted calls the same way.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use crate::crash::harness::{StdioRpc, command};

/// The validators of every tool's declared output schema, by tool name.
pub(crate) struct OutputSchemas {
    validators: BTreeMap<String, jsonschema::Validator>,
}

impl OutputSchemas {
    /// From a `tools/list` result's tools; panics when a tool declares none or an invalid one.
    pub(crate) fn from_tools(tools: &[Value]) -> OutputSchemas {
        let validators = tools
            .iter()
            .map(|tool| {
                let name = tool["name"].as_str().unwrap().to_owned();
                let schema = &tool["outputSchema"];
                assert_eq!(
                    schema["type"], "object",
                    "{name} declares no object outputSchema"
                );
                let validator = jsonschema::validator_for(schema)
                    .unwrap_or_else(|e| panic!("{name}'s outputSchema is not a schema: {e}"));
                (name, validator)
            })
            .collect();
        OutputSchemas { validators }
    }

    /// Checks a successful `tools/call` reply of `tool`: `structuredContent` is there, equals
    /// the text content's JSON, and validates against the declared schema. Returns whether
    /// the reply was a success (a refusal, `isError: true`, is not validated: MCP clients do
    /// not validate it either).
    pub(crate) fn check(&self, tool: &str, reply: &Value) -> bool {
        let result = &reply["result"];
        if result["isError"] == json!(true) {
            return false;
        }
        let text = result["content"][0]["text"].as_str().unwrap();
        let body: Value = serde_json::from_str(text).unwrap();
        let structured = &result["structuredContent"];
        assert_eq!(
            structured, &body,
            "{tool}: structuredContent differs from text"
        );
        let errors: Vec<String> = self.validators[tool]
            .iter_errors(structured)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{tool}'s answer does not match its outputSchema: {errors:?}\n{body}"
        );
        true
    }
}

struct Server {
    child: Child,
    rpc: StdioRpc,
    dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("output.db");
    let sidecar = dir.path().join("operating-context.toml");
    std::fs::write(
        &sidecar,
        "version = 1\ncontext_revision = \"r1\"\n[instructions]\nsummary = \"Be brief.\"\n\
         [registry]\nproject_ids = [\"p1\"]\n[defaults]\na = \"p1\"\n\
         [[doctrine]]\nname = \"naming\"\nbody = \"kebab-case\"\n",
    )
    .unwrap();
    let mut child = command(Path::new(env!("CARGO_BIN_EXE_cpersona")), &db)
        .env("CPERSONA_OPERATING_CONTEXT_PATH", &sidecar)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rpc = StdioRpc::connect_later(&mut child).handshake().unwrap();
    Server { child, rpc, dir }
}

/// Valid calls that reach every tool, in an order where each finds what it needs.
fn corpus(dir: &Path) -> Vec<(&'static str, Value)> {
    let topics = [
        "Alice prefers green tea in the morning",
        "The deploy pipeline runs on Fridays at noon",
        "Bob moved to Lisbon in March",
        "The quarterly report is due on the fifth",
        "Carol's cat is named Miso",
        "We chose SQLite for the memory store",
        "東京の会議は火曜日に決まった",
        "The API key rotation happens every 90 days",
    ];
    let mut calls = Vec::new();
    // Seven rounds: 56 rows, past the 50 from which recall adds the profile row.
    for round in 0..7 {
        for (i, topic) in topics.iter().enumerate() {
            calls.push((
                "store",
                json!({"agent_id": "a", "content": format!("{topic} (note {round}-{i})"),
                       "timestamp": format!("2026-0{}-1{}T10:00:00Z", 1 + round, i),
                       "source": {"type": "User", "id": "u1", "name": "Uma"},
                       "project_id": if i % 2 == 0 { "p1" } else { "" }}),
            ));
        }
    }
    calls.push((
        "store",
        json!({"agent_id": "a", "content": "Alice met Bob at the Lisbon office", "lock": true,
               "associations": {"entities": [{"name": "Alice"}, {"name": "Bob"}],
                                "relations": [{"subject": "Alice", "predicate": "met",
                                               "object": "Bob"}]}}),
    ));
    let export = dir.join("out.jsonl");
    calls.extend([
        ("update_profile", json!({"agent_id": "a", "profile": "Prefers short answers."})),
        ("recall", json!({"agent_id": "a", "query": "Miso", "limit": 100})),
        ("update_memory", json!({"agent_id": "a", "memory_id": 2, "content": "The deploy pipeline runs on Thursdays"})),
        ("lock_memory", json!({"agent_id": "a", "memory_id": 3})),
        ("unlock_memory", json!({"agent_id": "a", "memory_id": 3})),
        ("list_memories", json!({"agent_id": "a", "limit": 5})),
        ("list_memories", json!({"agent_id": "", "project_id": "p1"})),
        ("get_contents", json!({"agent_id": "a", "refs": ["mem:1", {"ref": "mem:2", "span": [0, 10]}, "mem:999"]})),
        ("recall", json!({"agent_id": "a", "query": "what tea does Alice like"})),
        ("recall", json!({"agent_id": "a", "query": "deploy pipeline", "trace": true, "limit": 3})),
        ("recall", json!({"agent_id": "a", "query": "report", "full_content": true,
                          "time_cue": {"after": "2026-02-01", "before": "2026-04-01", "confidence": "likely"}})),
        ("recall", json!({"agent_id": "a", "query": "Lisbon", "exclude_contents": ["Bob moved to Lisbon in March (note 0-2)"]})),
        ("recall_with_context", json!({"agent_id": "a", "query": "Alice",
            "external_context": [
                {"role": "user", "content": "what about Alice?", "name": "Uma", "timestamp": "2026-03-01T00:00:00Z"},
                {"role": "assistant", "content": "Let me check."},
                {"role": "system", "content": "be brief"}]})),
        ("reconstruct", json!({"agent_id": "a", "query": "Alice and Bob"})),
        ("reconstruct", json!({"agent_id": "a", "query": "deploy", "trace": true, "count": 3})),
        ("reconstruct", json!({"agent_id": "a", "query": "report", "mode": "lite",
                               "time_cue": {"ago": {"value": 2, "unit": "months"}, "confidence": "vague"}})),
        ("archive_episode", json!({"agent_id": "a", "summary": "Talked about Alice's tea and the deploy day",
                                   "keywords": "tea, deploy"})),
        ("list_episodes", json!({"agent_id": "a"})),
        ("get_profile", json!({"agent_id": "a"})),
        ("update_profile", json!({"agent_id": "a", "profile": "Prefers short answers"})),
        ("get_profile", json!({"agent_id": "a"})),
        ("declare_associations", json!({"agent_id": "a", "associations": {
            "entities": [{"name": "Carol", "aliases": ["C."]}],
            "relations": [{"subject": "Carol", "predicate": "knows", "object": "Alice"}]}})),
        ("traverse", json!({"agent_id": "a", "entity": "Alice"})),
        ("calibrate_threshold", json!({"agent_id": "a"})),
        ("calibrate_threshold", json!({"agent_id": "", "method": "percentile", "percentile": 95})),
        ("set_recall_precision", json!({"agent_id": "a", "precision": "strict"})),
        ("get_recall_precision", json!({"agent_id": "a"})),
        ("check_health", json!({})),
        ("check_health", json!({"agent_id": "a", "fix": true})),
        ("get_queue_status", json!({})),
        ("get_session_findings", json!({})),
        ("get_operating_context", json!({})),
        ("store", json!({"agent_id": "a", "content": "bridged row", "channel": "discord",
                         "metadata": {"session_id": "1234:99:0"}})),
        ("migrate_channel_axis", json!({"agent_id": "a"})),
        ("migrate_channel_axis", json!({"agent_id": "a", "dry_run": false, "globalize_unrecoverable": true})),
        ("get_operating_context", json!({"section": "naming"})),
        ("store", json!({"agent_id": "a", "content": "filed by @auto", "project_id": "@auto"})),
        ("recall", json!({"agent_id": "a", "query": "filed", "project_id": "unregistered"})),
        ("store", json!({"agent_id": "a", "content": "[Dana] ok?", "source": {"type": "User", "id": "", "name": ""}})),
        ("deep_check", json!({"agent_id": "a"})),
        ("deep_check", json!({"agent_id": "a", "fix": true, "checks": ["anonymous_source", "short_content"]})),
        ("get_session_findings", json!({"per_kind_limit": 1, "include_summary": false, "session_key": "s1"})),
        ("check_update", json!({})),
        ("pause_persistence", json!({"ttl_seconds": 60})),
        ("persistence_status", json!({})),
        ("store", json!({"agent_id": "a", "content": "said while paused"})),
        ("resume_persistence", json!({})),
        ("export_memories", json!({"agent_id": "a", "output_path": export.to_str().unwrap()})),
        ("import_memories", json!({"input_path": export.to_str().unwrap(), "target_agent_id": "b", "dry_run": true})),
        ("import_memories", json!({"input_path": export.to_str().unwrap(), "target_agent_id": "b"})),
        ("merge_memories", json!({"source_agent_id": "b", "target_agent_id": "c", "dry_run": true})),
        ("merge_memories", json!({"source_agent_id": "b", "target_agent_id": "c", "mode": "move"})),
        ("delete_episode", json!({"agent_id": "a", "episode_id": 1})),
        ("delete_memory", json!({"agent_id": "a", "memory_id": 4})),
        ("delete_agent_data", json!({"agent_id": "c"})),
    ]);
    calls
}

#[test]
fn every_tool_answers_with_structured_content_that_matches_its_output_schema() {
    let mut server = serve();
    let reply = server.rpc.request("tools/list", json!({})).unwrap();
    let tools = reply["result"]["tools"].as_array().unwrap().clone();
    let schemas = OutputSchemas::from_tools(&tools);
    let mut validated: BTreeSet<&str> = BTreeSet::new();
    for (tool, args) in corpus(server.dir.path()) {
        let reply = server
            .rpc
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .unwrap_or_else(|| panic!("no reply to {tool}"));
        assert!(
            schemas.check(tool, &reply),
            "a valid call was refused: {tool} {args}: {reply}"
        );
        validated.insert(tool);
    }
    let served: BTreeSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let missed: Vec<_> = served.difference(&validated).collect();
    assert!(missed.is_empty(), "no valid call validated for {missed:?}");
}

#[test]
fn a_body_that_breaks_its_schema_is_caught() {
    // The validator is not a formality: the real `store` schema refuses a body whose result
    // word or id has the wrong type.
    let mut server = serve();
    let reply = server.rpc.request("tools/list", json!({})).unwrap();
    let tools = reply["result"]["tools"].as_array().unwrap().clone();
    let store = tools.iter().find(|t| t["name"] == "store").unwrap();
    let validator = jsonschema::validator_for(&store["outputSchema"]).unwrap();
    assert!(validator.is_valid(&json!({"ok": true, "result": "stored", "id": 7})));
    assert!(!validator.is_valid(&json!({"ok": true, "result": "banana", "id": 7})));
    assert!(!validator.is_valid(&json!({"ok": "yes", "result": "stored"})));
    assert!(!validator.is_valid(&json!({"ok": true, "result": "stored", "id": [1]})));
}
