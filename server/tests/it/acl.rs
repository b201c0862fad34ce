//! ACL mode through the real binary over HTTP: every tool × every kind of grant (none, read,
//! read-write, the wildcard, an exact grant beating the wildcard either way) and a missing or
//! wrong token, with the allow or deny CPersona's classification gives; every deny answers
//! `permission_denied` (or 401) and leaves the store and the export folder as they were.
// See: issue 19

use std::path::{Path, PathBuf};

use cpersona_server::access;
use cpersona_server::mcp::McpServer;
use serde_json::{Value, json};

use crate::transport::client::{Fingerprint, HttpReply, RawHttp, StoreView, TOKEN, good_headers};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cpersona"))
}

/// The clients of the test's ACL file: (client_id, token, grants).
const CLIENTS: &[(&str, &str, &str)] = &[
    ("nobody", "Nb7Qx2Lm9Vt4Rc8Wz1Hk5Jp3", r#"{"alice": "none"}"#),
    ("reader", "Rd3Kw8Pz1Xv6Tq9Mb2Ls7Hn4", r#"{"alice": "read"}"#),
    (
        "writer",
        "Wr5Jt2Yc8Nq1Fx7Gd4Vk9Ms3",
        r#"{"alice": "read-write"}"#,
    ),
    ("all", "Al9Hs4Bq7Zw2Kt5Xp8Cv1Rm6", r#"{"*": "read-write"}"#),
    // Exact beats wildcard, both ways.
    (
        "except",
        "Ex2Vn6Tw9Lq3Jd8Sb5Hz1Kf7",
        r#"{"*": "read-write", "alice": "none"}"#,
    ),
    (
        "narrow",
        "Na8Wc3Rp6Yk1Hm9Qd4Tx7Gb2",
        r#"{"*": "none", "alice": "read-write"}"#,
    ),
];

/// The columns of [`TABLE`], in order.
const PRINCIPALS: &[&str] = &["nobody", "reader", "writer", "all", "except", "narrow"];

/// Every tool (some twice, with the argument that changes its demand), called on agent
/// `alice` (a merge from `bob`), and per principal of [`PRINCIPALS`]: `A` allowed, `D` denied.
/// Written out by hand from CPersona's classification, not computed by the code under test.
const TABLE: &[(&str, &str)] = &[
    ("store", "DDAADA"),
    ("recall", "DAAADA"),
    ("recall_with_context", "DAAADA"),
    ("reconstruct", "DAAADA"),
    ("traverse", "DAAADA"),
    ("get_contents", "DAAADA"),
    ("archive_episode", "DDAADA"),
    ("update_memory", "DDAADA"),
    ("lock_memory", "DDAADA"),
    ("unlock_memory", "DDAADA"),
    ("delete_memory", "DDAADA"),
    ("delete_episode", "DDAADA"),
    ("get_profile", "DAAADA"),
    ("update_profile", "DDAADA"),
    ("list_memories", "DAAADA"),
    ("list_episodes", "DAAADA"),
    ("declare_associations", "DDAADA"),
    ("calibrate_threshold", "DDAADA"),
    ("set_recall_precision", "DDAADA"),
    ("get_recall_precision", "DAAADA"),
    ("check_health", "DAAADA"),
    // fix=true runs repairs that reach every agent: read-write on `*`...
    ("check_health+fix", "DDDADD"),
    // ...unless `checks` names only the one that stays inside its agent.
    ("check_health+fix-own", "DDAADA"),
    // Read on the source (bob: only the wildcard reaches him), read-write on the target.
    ("merge_memories", "DDDADD"),
    // Export and import demand read-write on every agent.
    ("export_memories", "DDDADD"),
    ("import_memories", "DDDADD"),
    ("pause_persistence", "DDDADD"),
    ("resume_persistence", "DDDADD"),
    // No agent's data: any authenticated client.
    ("persistence_status", "AAAAAA"),
    ("get_queue_status", "AAAAAA"),
    // The running server is no agent's data: read on every agent.
    ("check_update", "DDDADD"),
    // The whole store's findings: read on every agent.
    ("get_session_findings", "DDDADD"),
    // Read on the agent; fix=true writes it (both repairs stay inside it).
    ("deep_check", "DAAADA"),
    ("get_operating_context", "AAAAAA"),
    ("migrate_channel_axis", "DDAADA"),
    ("deep_check+fix", "DDAADA"),
    ("delete_agent_data", "DDAADA"),
];

/// The server in ACL mode over a fresh store, with `CPERSONA_AUTH_TOKEN` set too (ignored).
struct Served {
    raw: RawHttp,
    export_dir: PathBuf,
}

fn acl_file(dir: &Path) -> PathBuf {
    let clients: Vec<Value> = CLIENTS
        .iter()
        .map(|(id, token, grants)| {
            json!({"client_id": id, "token": token,
                   "grants": serde_json::from_str::<Value>(grants).unwrap()})
        })
        .collect();
    let path = dir.join("acl.json");
    std::fs::write(&path, json!({ "clients": clients }).to_string()).unwrap();
    private(&path);
    path
}

#[cfg(unix)]
fn private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[cfg(not(unix))]
fn private(_path: &Path) {}

fn serve(acl_dir: &Path) -> Served {
    let acl = acl_file(acl_dir);
    // A folder of its own, so its listing holds exports only (not the store's WAL, which the
    // background index upkeep grows).
    let export_dir = acl_dir.join("exports");
    std::fs::create_dir(&export_dir).unwrap();
    let raw = RawHttp::spawn_with(
        bin(),
        &[
            ("CPERSONA_ACL_FILE", acl.to_str().unwrap()),
            ("CPERSONA_EXPORT_DIR", export_dir.to_str().unwrap()),
        ],
    );
    Served { raw, export_dir }
}

fn token_of(client: &str) -> &'static str {
    CLIENTS.iter().find(|(id, ..)| *id == client).unwrap().1
}

/// One `tools/call` presenting `token` (`None`: no Authorization header at all).
fn call(raw: &RawHttp, token: Option<&str>, tool: &str, args: &Value) -> HttpReply {
    let mut headers = good_headers();
    headers.retain(|(name, _)| *name != "Authorization");
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    // A 401 leaves the body unread, so the server may close the connection: never pool it.
    headers.push(("Connection", "close".to_owned()));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    raw.post_with(&headers, body.to_string().as_bytes())
        .unwrap_or_else(|| panic!("no answer to {tool}"))
}

/// The tool's body and `isError` from a 200 reply.
fn tool_body(reply: &HttpReply, what: &str) -> (bool, Value) {
    assert_eq!(reply.status, 200, "{what}: {reply:?}");
    let json = reply
        .json
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: {reply:?}"));
    let result = &json["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {json}"));
    let body: Value = serde_json::from_str(text).unwrap();
    // Every answer, a denial included, carries its body as structured content too.
    assert_eq!(result["structuredContent"], body, "{what}: {json}");
    (result["isError"] == true, body)
}

/// A call by the all-agents client that must succeed; its body.
fn setup(raw: &RawHttp, tool: &str, args: Value) -> Value {
    let (is_error, body) = tool_body(&call(raw, Some(token_of("all")), tool, &args), tool);
    assert!(!is_error, "setup {tool}: {body}");
    body
}

/// The arguments of `tool` on agent `alice`, after creating the rows it needs.
fn args_for(raw: &RawHttp, tool: &str, export_dir: &Path) -> Value {
    let memory = |raw: &RawHttp| {
        setup(
            raw,
            "store",
            json!({"agent_id": "alice", "content": format!("fact {}", rand_id())}),
        )["id"]
            .as_i64()
            .unwrap()
    };
    match tool {
        "store" => json!({"agent_id": "alice", "content": format!("new fact {}", rand_id())}),
        "recall" | "recall_with_context" | "reconstruct" => {
            json!({"agent_id": "alice", "query": "fact"})
        }
        "traverse" => json!({"agent_id": "alice", "entity": "Alice"}),
        "get_contents" => json!({"agent_id": "alice", "refs": [format!("mem:{}", memory(raw))]}),
        "archive_episode" => json!({"agent_id": "alice", "summary": "a session"}),
        "update_memory" => {
            json!({"agent_id": "alice", "memory_id": memory(raw), "content": "rewritten"})
        }
        "lock_memory" | "delete_memory" => json!({"agent_id": "alice", "memory_id": memory(raw)}),
        "unlock_memory" => {
            let id = memory(raw);
            setup(
                raw,
                "lock_memory",
                json!({"agent_id": "alice", "memory_id": id}),
            );
            json!({"agent_id": "alice", "memory_id": id})
        }
        "delete_episode" => {
            let episode = setup(
                raw,
                "archive_episode",
                json!({"agent_id": "alice", "summary": format!("episode {}", rand_id())}),
            );
            json!({"agent_id": "alice", "episode_id": episode["episode_id"]})
        }
        "update_profile" => json!({"agent_id": "alice", "profile": "likes tea"}),
        "declare_associations" => json!({"agent_id": "alice",
            "associations": {"entities": [{"name": "Alice"}]}}),
        "calibrate_threshold" => json!({"agent_id": "alice"}),
        "check_update" => json!({}),
        "deep_check" => json!({"agent_id": "alice"}),
        "get_operating_context" => json!({}),
        "migrate_channel_axis" => json!({"agent_id": "alice"}),
        "deep_check+fix" => json!({"agent_id": "alice", "fix": true}),
        "set_recall_precision" => json!({"agent_id": "alice", "precision": "balanced"}),
        "check_health+fix" => json!({"agent_id": "alice", "fix": true}),
        "check_health+fix-own" => {
            json!({"agent_id": "alice", "fix": true, "checks": ["duplicate_content"]})
        }
        "merge_memories" => {
            setup(
                raw,
                "store",
                json!({"agent_id": "bob", "content": format!("bob {}", rand_id())}),
            );
            json!({"source_agent_id": "bob", "target_agent_id": "alice"})
        }
        "export_memories" => json!({"agent_id": "alice",
            "output_path": export_dir.join("alice.jsonl").display().to_string(), "overwrite": true}),
        "import_memories" => {
            let file = export_dir.join("seed.jsonl");
            if !file.exists() {
                setup(
                    raw,
                    "export_memories",
                    json!({"agent_id": "bob",
                    "output_path": file.display().to_string()}),
                );
            }
            json!({"target_agent_id": "alice", "input_path": file.display().to_string()})
        }
        "pause_persistence" => json!({"session_key": "acl-test", "ttl_seconds": 60}),
        "resume_persistence" | "persistence_status" => json!({"session_key": "acl-test"}),
        "delete_agent_data" => {
            memory(raw);
            json!({"agent_id": "alice"})
        }
        _ => json!({"agent_id": "alice"}),
    }
}

/// A distinct number per call, so no two stored texts are duplicates.
fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The files of the export folder with their sizes: a denied export writes none.
fn files(dir: &Path) -> Vec<(String, u64)> {
    let mut listed: Vec<(String, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    listed.sort();
    listed
}

fn state(served: &Served) -> (Fingerprint, Vec<(String, u64)>) {
    let view = StoreView::open(&served.raw.db).unwrap();
    (view.fingerprint(), files(&served.export_dir))
}

#[test]
fn r19_every_tool_under_every_grant_allows_or_denies_as_classified() {
    let acl_dir = tempfile::tempdir().unwrap();
    let served = serve(acl_dir.path());
    let raw = &served.raw;
    let mut wrong = Vec::new();
    for (entry, expected) in TABLE {
        let tool = entry.split('+').next().unwrap();
        for (principal, verdict) in PRINCIPALS.iter().zip(expected.chars()) {
            let args = args_for(raw, entry, &served.export_dir);
            let before = state(&served);
            let reply = call(raw, Some(token_of(principal)), tool, &args);
            let (is_error, body) = tool_body(&reply, entry);
            let denied = body["error"] == "permission_denied";
            if denied != (verdict == 'D') {
                wrong.push(format!(
                    "{entry} as {principal}: expected {verdict}, got {body}"
                ));
                continue;
            }
            if denied {
                assert!(is_error, "{entry} as {principal}: {body}");
                assert_eq!(body["tool"], tool, "{body}");
                assert_eq!(body["client_id"], *principal, "{body}");
                assert!(
                    body["agent_id"].is_string() && body["required"].is_string(),
                    "{body}"
                );
                assert_eq!(
                    state(&served),
                    before,
                    "{entry} as {principal} wrote: {body}"
                );
            }
        }
        // No token, a wrong one, and CPERSONA_AUTH_TOKEN (ignored in ACL mode): 401, no write.
        let args = args_for(raw, entry, &served.export_dir);
        let before = state(&served);
        for token in [None, Some("Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"), Some(TOKEN)] {
            let reply = call(raw, token, tool, &args);
            assert_eq!(reply.status, 401, "{entry} with {token:?}: {reply:?}");
        }
        assert_eq!(state(&served), before, "{entry}: a refused request wrote");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn r19_the_table_covers_every_served_tool() {
    let tools: Vec<String> = McpServer::all_tools()
        .list_all()
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    for tool in &tools {
        // Each is classified for the guard too: an unclassified tool would be denied always.
        assert!(
            access::classified_tools().any(|c| c == tool),
            "{tool} is served but not classified"
        );
        assert!(
            TABLE
                .iter()
                .any(|(entry, _)| entry.split('+').next() == Some(tool.as_str())),
            "{tool} is served but not in the ACL table"
        );
    }
}

#[test]
fn r19_an_omitted_store_agent_is_the_connections_one_writable_agent() {
    let acl_dir = tempfile::tempdir().unwrap();
    let served = serve(acl_dir.path());
    let reply = call(
        &served.raw,
        Some(token_of("writer")),
        "store",
        &json!({"content": "no agent named"}),
    );
    let (is_error, body) = tool_body(&reply, "store");
    assert!(!is_error, "{body}");
    assert_eq!(body["resolved_agent_id"], "alice", "{body}");
    // `all` can write to every agent: no single one to stand for, so the call is a sweep.
    let reply = call(
        &served.raw,
        Some(token_of("all")),
        "store",
        &json!({"content": "no agent named"}),
    );
    let (is_error, body) = tool_body(&reply, "store");
    assert!(is_error, "{body}");
    assert_ne!(body["error"], "permission_denied", "{body}");
    assert!(body.get("resolved_agent_id").is_none(), "{body}");
}

/// Over stdio the caller is `local`: its entry's grants apply, and without one it reaches no
/// agent (the tools that touch no agent still answer).
#[test]
fn r19_stdio_is_the_local_principal() {
    let dir = tempfile::tempdir().unwrap();
    let with_local = dir.path().join("with-local.json");
    let document = json!({"clients": [
        {"client_id": "local", "grants": {"alice": "read"}},
        {"client_id": "laptop", "token": token_of("all"), "grants": {"*": "read-write"}}]});
    std::fs::write(&with_local, document.to_string()).unwrap();
    private(&with_local);
    let calls = [
        (
            "store",
            json!({"agent_id": "alice", "content": "over stdio"}),
        ),
        ("list_memories", json!({"agent_id": "alice"})),
        ("list_memories", json!({"agent_id": "bob"})),
        ("persistence_status", json!({})),
    ];
    let mut cmd = crate::binary::cpersona_in(dir.path());
    cmd.env("CPERSONA_ACL_FILE", &with_local);
    let bodies = crate::binary::call_tools_with(cmd, &calls);
    let denied: Vec<bool> = bodies
        .iter()
        .map(|(_, body)| body["error"] == "permission_denied")
        .collect();
    assert_eq!(denied, [true, false, true, false], "{bodies:?}");
    assert_eq!(bodies[0].1["client_id"], "local");
    assert_eq!(bodies[0].1["result"], "rejected");

    let without_local = dir.path().join("without-local.json");
    let document = json!({"clients": [
        {"client_id": "laptop", "token": token_of("all"), "grants": {"*": "read-write"}}]});
    std::fs::write(&without_local, document.to_string()).unwrap();
    private(&without_local);
    let mut cmd = crate::binary::cpersona_in(dir.path());
    cmd.env("CPERSONA_ACL_FILE", &without_local);
    let bodies = crate::binary::call_tools_with(cmd, &calls[1..]);
    assert_eq!(bodies[0].1["error"], "permission_denied", "{bodies:?}");
    assert!(
        bodies[0].1["detail"].as_str().unwrap().contains("no entry"),
        "{bodies:?}"
    );
    assert!(!bodies[2].0, "{bodies:?}");
}

/// A file other users can read stops the server before the store opens, naming the variable.
#[cfg(unix)]
#[test]
fn r19_an_acl_file_other_users_can_read_stops_the_server() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = acl_file(dir.path());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = crate::binary::cpersona_in(dir.path())
        .env("CPERSONA_ACL_FILE", &path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("CPERSONA_ACL_FILE") && stderr.contains("other users"),
        "{stderr}"
    );
    assert!(CLIENTS.iter().all(|(_, token, _)| !stderr.contains(token)));
    assert!(!dir.path().join("store").exists(), "the store was opened");
}

/// `token new` prints a token and the entry for it; that entry, as the whole file, serves:
/// the token is that client, with exactly the grants asked for.
#[test]
fn r19_token_new_entries_load_as_an_acl_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::binary::cpersona_in(dir.path())
        .args([
            "token",
            "new",
            "--client",
            "dashboard",
            "--grant",
            "alice=read",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (token, entry) = stdout.split_once('\n').unwrap();
    let entry: Value = serde_json::from_str(entry).unwrap();
    let path = dir.path().join("acl.json");
    std::fs::write(&path, json!({"clients": [entry]}).to_string()).unwrap();
    private(&path);
    let raw = RawHttp::spawn_with(bin(), &[("CPERSONA_ACL_FILE", path.to_str().unwrap())]);
    let verdicts: Vec<Value> = [
        ("recall", json!({"agent_id": "alice", "query": "tea"})),
        ("store", json!({"agent_id": "alice", "content": "tea"})),
        ("list_memories", json!({"agent_id": "bob"})),
    ]
    .iter()
    .map(|(tool, args)| tool_body(&call(&raw, Some(token), tool, args), tool).1["error"].clone())
    .collect();
    assert_ne!(verdicts[0], "permission_denied", "{verdicts:?}");
    assert_eq!(verdicts[1], "permission_denied", "{verdicts:?}");
    assert_eq!(verdicts[2], "permission_denied", "{verdicts:?}");
}

/// One raw JSON-RPC request presenting `token`; its parsed reply.
fn rpc_as(raw: &RawHttp, token: &str, method: &str, params: Value) -> Value {
    let mut headers = good_headers();
    headers.retain(|(name, _)| *name != "Authorization");
    headers.push(("Authorization", format!("Bearer {token}")));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = raw
        .post_with(&headers, body.to_string().as_bytes())
        .unwrap_or_else(|| panic!("no answer to {method}"));
    assert_eq!(reply.status, 200, "{method}: {reply:?}");
    reply.json.clone().unwrap()
}

/// Resources follow the grants as `get_contents` does (issue 21): a client lists only the
/// rows of agents it may read, and another agent's row reads exactly as a missing one.
#[test]
fn r21_resources_follow_the_grants() {
    let acl_dir = tempfile::tempdir().unwrap();
    let served = serve(acl_dir.path());
    let raw = &served.raw;
    let alice = setup(
        raw,
        "store",
        json!({"agent_id": "alice", "content": "alice's fact"}),
    );
    let bob = setup(
        raw,
        "store",
        json!({"agent_id": "bob", "content": "bob's fact"}),
    );
    let uri =
        |agent: &str, body: &Value| format!("cpersona://agents/{agent}/memories/{}", body["id"]);
    let listed = |client: &str| -> Vec<String> {
        let reply = rpc_as(raw, token_of(client), "resources/list", json!({}));
        reply["result"]["resources"]
            .as_array()
            .unwrap_or_else(|| panic!("{reply}"))
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(listed("reader"), [uri("alice", &alice)]);
    assert!(listed("nobody").is_empty());
    let mut every = listed("all");
    every.sort();
    let mut both = vec![uri("alice", &alice), uri("bob", &bob)];
    both.sort();
    assert_eq!(every, both);

    let read = |client: &str, target: &str| {
        rpc_as(
            raw,
            token_of(client),
            "resources/read",
            json!({"uri": target}),
        )
    };
    let own = read("reader", &uri("alice", &alice));
    assert_eq!(
        own["result"]["contents"][0]["text"], "alice's fact",
        "{own}"
    );
    let other = read("reader", &uri("bob", &bob));
    let missing = read("reader", "cpersona://agents/bob/memories/999999");
    assert_eq!(
        other["error"]["code"], missing["error"]["code"],
        "{other} {missing}"
    );
    assert!(other.get("result").is_none(), "{other}");
    let (shown, absent) = (
        other["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&uri("bob", &bob), "URI"),
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .replace("cpersona://agents/bob/memories/999999", "URI"),
    );
    assert_eq!(shown, absent, "a row not yours reads as a missing one");
}

/// `completion/complete` offers the store's agent and project names for a prompt's arguments,
/// and in ACL mode only those of agents the caller may read (issue 21).
#[test]
fn r21_completion_offers_only_readable_names() {
    let acl_dir = tempfile::tempdir().unwrap();
    let served = serve(acl_dir.path());
    let raw = &served.raw;
    setup(
        raw,
        "store",
        json!({"agent_id": "alice", "content": "a", "project_id": "apollo"}),
    );
    setup(
        raw,
        "store",
        json!({"agent_id": "bob", "content": "b", "project_id": "artemis"}),
    );
    let complete = |client: &str, argument: &str, value: &str| -> Vec<String> {
        let reply = rpc_as(
            raw,
            token_of(client),
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "start_session"},
                   "argument": {"name": argument, "value": value}}),
        );
        reply["result"]["completion"]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("{reply}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(complete("all", "agent_id", ""), ["alice", "bob"]);
    assert_eq!(complete("all", "agent_id", "b"), ["bob"]);
    assert_eq!(complete("all", "project_id", "a"), ["apollo", "artemis"]);
    assert_eq!(complete("reader", "agent_id", ""), ["alice"]);
    assert_eq!(complete("reader", "project_id", "a"), ["apollo"]);
    assert!(complete("nobody", "agent_id", "").is_empty());
    assert!(complete("all", "task", "").is_empty());
}
