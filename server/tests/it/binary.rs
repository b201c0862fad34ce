//! The real `cpersona` binary as a child process: stdio speaks JSON-RPC on stdout and nothing
//! else, HTTP refuses to start without a token, and a bad setting is a start-up error naming
//! the variable. (The real-client Python test lives in `py.rs`.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// The binary over a store in `dir` (created by the binary), with the hash embedder.
pub(crate) fn cpersona_in(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cpersona"));
    // Only what a test sets: no inherited CPERSONA_* setting may change the outcome.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CPERSONA_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("CPERSONA_DB_PATH", dir.join("store").join("test.db"));
    cmd.env("CPERSONA_EMBEDDING_MODE", "none");
    cmd
}

/// The binary over a fresh store that lives as long as the returned folder.
fn cpersona() -> (Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (cpersona_in(dir.path()), dir)
}

/// Calls `tools` in order over stdio and returns each tool's JSON body.
pub(crate) fn call_tools(dir: &Path, tools: &[(&str, Value)]) -> Vec<Value> {
    call_tools_with(cpersona_in(dir), tools)
        .into_iter()
        .map(|(_, body)| body)
        .collect()
}

/// Calls `tools` in order over stdio on `cmd` (a `cpersona_in` command, perhaps with more
/// settings) and returns each tool's `isError` flag and JSON body.
pub(crate) fn call_tools_with(cmd: Command, tools: &[(&str, Value)]) -> Vec<(bool, Value)> {
    call_tools_capturing(cmd, tools).0
}

/// As [`call_tools_with`], and what the server wrote to stderr.
pub(crate) fn call_tools_capturing(
    cmd: Command,
    tools: &[(&str, Value)],
) -> (Vec<(bool, Value)>, String) {
    let mut session = StdioSession::start(cmd);
    let bodies = tools
        .iter()
        .map(|(name, args)| session.call(name, args))
        .collect();
    (bodies, session.finish())
}

/// A running `cpersona serve` over stdio, initialised, that calls tools one at a time.
pub(crate) struct StdioSession {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    stderr: std::thread::JoinHandle<String>,
    next_id: u64,
    /// Notifications read while waiting for a response, oldest first.
    notifications: Vec<Value>,
    /// The server's answer to `initialize`.
    initialized: Value,
}

impl StdioSession {
    pub(crate) fn start(cmd: Command) -> Self {
        Self::start_as(cmd, "2025-06-18")
    }

    /// A session that asks for protocol revision `version` in `initialize`.
    pub(crate) fn start_as(mut cmd: Command, version: &str) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Drained on its own thread, so a chatty server never blocks on a full pipe.
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
            text
        });
        let mut stdin = child.stdin.take().unwrap();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}});
        writeln!(stdin, "{init}").unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Self {
            child,
            stdin,
            stdout,
            stderr,
            next_id: 1,
            notifications: Vec::new(),
            initialized: serde_json::from_str(&line).unwrap(),
        }
    }

    /// The server's answer to `initialize`.
    pub(crate) fn initialized(&self) -> &Value {
        &self.initialized
    }

    /// Sends one request and returns its response; notifications read meanwhile are kept
    /// for [`StdioSession::take_notifications`].
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let frame: Value = serde_json::from_str(&line).unwrap();
            if frame["id"] == id {
                return frame;
            }
            self.notifications.push(frame);
        }
    }

    /// The notifications read so far (sent before the last response), emptied.
    pub(crate) fn take_notifications(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.notifications)
    }

    /// Writes one raw line (a message no helper builds, e.g. a malformed one).
    pub(crate) fn send_line(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The `method` notifications the server sent within `wait` from now: after it, a ping's
    /// answer is the barrier that brings in what came before it.
    pub(crate) fn notifications_within(
        &mut self,
        wait: std::time::Duration,
        method: &str,
    ) -> Vec<Value> {
        std::thread::sleep(wait);
        self.request("ping", json!({}));
        self.take_notifications()
            .into_iter()
            .filter(|n| n["method"] == method)
            .collect()
    }

    /// Calls one tool and returns its `isError` flag and JSON body.
    pub(crate) fn call(&mut self, name: &str, args: &Value) -> (bool, Value) {
        let reply = self.request("tools/call", json!({"name": name, "arguments": args}));
        let is_error = reply["result"]["isError"].as_bool().unwrap_or(false);
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        (is_error, serde_json::from_str(text).unwrap())
    }

    /// Closes stdin, checks the server exits cleanly, and returns what it wrote to stderr.
    pub(crate) fn finish(mut self) -> String {
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.join().unwrap();
        assert!(status.success(), "{status}: {stderr}");
        stderr
    }
}

pub(crate) fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn stdio_is_the_default_and_stdout_carries_only_json_rpc() {
    let (mut cmd, _dir) = cpersona();
    let mut child = cmd
        .env("RUST_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "recall", "arguments": {"agent_id": "a", "query": "q", "limit": 500}}})
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON-RPC ({e}): {line:?}"));
        assert_eq!(reply["jsonrpc"], "2.0");
        replies.push(reply);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(rest.trim().is_empty(), "stray stdout: {rest:?}");
    assert!(status.success(), "{status}");
    assert_eq!(replies[0]["result"]["serverInfo"]["name"], "cpersona");
    let text = replies[1]["result"]["content"][0]["text"].as_str().unwrap();
    let body: Value = serde_json::from_str(text).unwrap();
    assert_eq!(body["ok"], false);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("`limit` is 500, above the maximum 100")
    );
}

#[test]
fn http_refuses_to_start_without_a_token() {
    let (mut cmd, _dir) = cpersona();
    let out = cmd
        .args(["serve", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to serve HTTP without CPERSONA_AUTH_TOKEN"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    // Binding to every interface changes nothing.
    let (mut cmd, _dir) = cpersona();
    let out = cmd.args(["serve", "--http", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_invalid_setting_is_a_start_up_error_naming_the_variable() {
    let (mut cmd, _dir) = cpersona();
    let out = cmd.env("CPERSONA_RRF_K", "many").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CPERSONA_RRF_K=\"many\" is invalid"),
        "{stderr}"
    );
}

#[test]
fn store_lands_in_the_file_and_check_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = call_tools(
        dir.path(),
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "the user's cat is called Miso"}),
            ),
            (
                "store",
                json!({"agent_id": "a", "content": "the user's cat is called Miso"}),
            ),
            ("check_health", json!({})),
        ],
    );
    assert_eq!(bodies[0]["result"], "stored", "{}", bodies[0]);
    assert_eq!(bodies[0]["advisory"]["severity"], "hint", "{}", bodies[0]);
    assert_eq!(bodies[1]["result"], "skipped", "{}", bodies[1]);
    assert_eq!(bodies[1]["id"], bodies[0]["id"]);
    assert_eq!(bodies[2]["stats"]["memories"], 1, "{}", bodies[2]);
    assert_eq!(bodies[2]["embedder"]["model_id"], "hash-ngram-v1");
    assert!(bodies[2]["index"]["tables"].is_array(), "{}", bodies[2]);
    let check: Value = serde_json::from_str(&run_ok(cpersona_in(dir.path()).arg("check"))).unwrap();
    assert_eq!(check["stats"]["memories"], 1, "{check}");
    assert_eq!(check["stats"]["integrity"], json!(["ok"]));
}

#[test]
fn export_then_import_into_a_fresh_store_round_trips() {
    let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let texts = ["prefers green tea", "lives in Kyoto", "is learning Rust"];
    let stores: Vec<(&str, Value)> = texts
        .iter()
        .map(|t| ("store", json!({"agent_id": "a", "content": t})))
        .collect();
    call_tools(from.path(), &stores);
    let file = from.path().join("a.jsonl");
    let exported: Value = serde_json::from_str(&run_ok(
        cpersona_in(from.path()).args(["export", file.to_str().unwrap()]),
    ))
    .unwrap();
    assert_eq!(exported["memories"], 3, "{exported}");
    let imported: Value = serde_json::from_str(&run_ok(
        cpersona_in(to.path()).args(["import", file.to_str().unwrap()]),
    ))
    .unwrap();
    assert_eq!(imported["imported_memories"], 3, "{imported}");
    // The fresh store now exports the same rows (to stdout this time).
    let again = run_ok(cpersona_in(to.path()).arg("export"));
    let mut contents: Vec<String> = again
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| v["content"].as_str().map(str::to_owned))
        .collect();
    contents.sort();
    let mut expected: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    expected.sort();
    assert_eq!(contents, expected, "{again}");
}

#[test]
fn store_then_recall_returns_the_stored_row() {
    let dir = tempfile::tempdir().unwrap();
    let bodies = call_tools(
        dir.path(),
        &[
            (
                "store",
                json!({"agent_id": "a", "content": "the user's cat is called Miso"}),
            ),
            (
                "store",
                json!({"agent_id": "a", "content": "the quarterly report is due Friday"}),
            ),
            (
                "store",
                json!({"agent_id": "b", "content": "the user's cat is called Miso too"}),
            ),
            (
                "recall",
                json!({"agent_id": "a", "query": "cat called Miso"}),
            ),
        ],
    );
    let id = bodies[0]["id"].as_i64().unwrap();
    let recalled = &bodies[3];
    let messages = recalled["messages"].as_array().unwrap();
    // Ascending relevance: the last row is the best; agent b's row never shows.
    let last = messages.last().unwrap_or_else(|| panic!("{recalled}"));
    assert_eq!(last["ref"], format!("mem:{id}"), "{recalled}");
    assert!(
        messages
            .iter()
            .all(|m| m["content"] != "the user's cat is called Miso too")
    );
    assert_eq!(recalled["advisory"]["degraded"], true, "{recalled}");
}

#[test]
fn index_rebuild_then_status_covers_the_stored_rows() {
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<(&str, Value)> = (0..5)
        .map(|i| {
            (
                "store",
                json!({"agent_id": "a", "content": format!("fact number {i}")}),
            )
        })
        .collect();
    call_tools(dir.path(), &stores);
    let rebuilt: Value = serde_json::from_str(&run_ok(
        cpersona_in(dir.path()).args(["index", "rebuild", "--table", "memories"]),
    ))
    .unwrap();
    assert_eq!(rebuilt[0]["table"], "memories", "{rebuilt}");
    assert_eq!(rebuilt[0]["rows"], 5, "{rebuilt}");
    let status: Value =
        serde_json::from_str(&run_ok(cpersona_in(dir.path()).args(["index", "status"]))).unwrap();
    let memories = status["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "memories")
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(memories["rows"], 5, "{status}");
    assert_eq!(memories["live_tail"], 0, "{status}");
}

/// The memories table's entry of `cpersona index status` over `dir`.
fn memories_status(dir: &Path) -> Value {
    let status: Value =
        serde_json::from_str(&run_ok(cpersona_in(dir).args(["index", "status"]))).unwrap();
    status["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == "memories")
        .cloned()
        .unwrap_or_else(|| panic!("{status}"))
}

/// Issue 16's default path: `serve` alone, with no operator step, puts what an agent stores
/// into index segments (a first build, then flushes) while it keeps serving, so recall never
/// falls back to scoring every row from SQLite.
#[test]
fn serve_indexes_what_it_stores_with_no_operator_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cpersona_in(dir.path());
    cmd.env("CPERSONA_INDEX_FLUSH_MS", "50");
    let mut session = StdioSession::start(cmd);
    let poll_until_indexed = |want: u64| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let status = memories_status(dir.path());
            if status["rows"] == want && status["live_tail"] == 0 {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not indexed after 30 s: {status}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    for i in 0..5 {
        let (failed, body) = session.call(
            "store",
            &json!({"agent_id": "a", "content": format!("fact number {i}")}),
        );
        assert!(!failed, "{body}");
    }
    let first = poll_until_indexed(5);
    for i in 5..8 {
        session.call(
            "store",
            &json!({"agent_id": "a", "content": format!("later fact {i}")}),
        );
    }
    let (_, deleted) = session.call("delete_memory", &json!({"agent_id": "a", "memory_id": 1}));
    assert_eq!(deleted["ok"], true, "{deleted}");
    let later = poll_until_indexed(7);
    assert!(
        later["segments"].as_array().unwrap().len() >= first["segments"].as_array().unwrap().len(),
        "{later}"
    );
    session.finish();
}

/// A lone UTF-16 surrogate cannot become a Rust string: the stdio line filter answers the
/// request with a JSON-RPC parse error carrying its id, before any tool runs (so nothing can
/// be written), and the server keeps serving.
#[test]
fn a_lone_surrogate_gets_a_parse_error_and_the_server_keeps_serving() {
    let (mut cmd, dir) = cpersona();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    // serde_json cannot write a lone surrogate, so this line is spelled by hand.
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"store","arguments":{{"agent_id":"a","content":"bad \ud800 half"}}}}}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut replies = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        replies.push(reply);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // The refusal is written by the filter, so it may overtake the answer to `initialize`.
    replies.sort_by_key(|r| r["id"].as_i64());
    let ids: Vec<Value> = replies.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
    assert_eq!(replies[1]["error"]["code"], -32700, "{}", replies[1]);
    assert!(replies[2]["result"]["tools"].is_array(), "{}", replies[2]);
    // Nothing was stored: a listing of the agent's memories is empty.
    let bodies = call_tools(dir.path(), &[("list_memories", json!({"agent_id": "a"}))]);
    assert_eq!(bodies[0]["count"], 0, "{}", bodies[0]);
}

/// The `store` call of note `i` of `agent`: five notes per session (`source.id` `s<i/5>`), so a
/// few dozen of them give `calibrate_threshold` positive (same-session) and null pairs.
pub(crate) fn session_note(agent: &str, i: usize) -> (&'static str, Value) {
    (
        "store",
        json!({"agent_id": agent, "content": format!("session {} apple river note {i}", i / 5),
               "source": {"type": "User", "id": format!("s{}", i / 5)}}),
    )
}

/// `calibrate_threshold` honours CPersona's `method`, `percentile` (95 read as 0.95),
/// `z_factor` and `sample_size`, and `agent_id: ""` calibrates the global threshold.
#[test]
fn calibrate_threshold_takes_cpersonas_arguments_and_the_global_scope() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls: Vec<(&str, Value)> = (0..40)
        .map(|i| session_note(if i % 2 == 0 { "a" } else { "b" }, i))
        .collect();
    calls.extend([
        (
            "calibrate_threshold",
            json!({"agent_id": "a", "method": "percentile", "percentile": 95, "sample_size": 12}),
        ),
        (
            "calibrate_threshold",
            json!({"agent_id": "a", "method": "zscore", "z_factor": 0.5}),
        ),
        ("calibrate_threshold", json!({"agent_id": ""})),
    ]);
    let out = call_tools(dir.path(), &calls);
    let (percentile, zscore, global) = (&out[40], &out[41], &out[42]);
    assert_eq!(percentile["method"], "percentile", "{percentile}");
    assert_eq!(percentile["percentile"], 0.95, "{percentile}");
    assert_eq!(percentile["sampled_embeddings"], 12, "{percentile}");
    assert_eq!(zscore["method"], "zscore", "{zscore}");
    assert_eq!(zscore["calibration"]["z_factor"], 0.5, "{zscore}");
    assert_ne!(zscore["new_threshold"], percentile["new_threshold"]);
    assert_eq!(global["scope"], "global", "{global}");
    assert_eq!(global["sampled_embeddings"], 40, "{global}");
}

/// CPersona's `[Profile]` row: once the agent holds 50 rows, an answer with a free place
/// carries the profile first (the least relevant place of a last-is-best list), without a
/// ref; `recall_with_context` keeps it among the undated rows it orders first.
#[test]
fn recall_adds_the_profile_row_where_the_answer_leaves_a_place() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls: Vec<(&str, Value)> = (0..52)
        .map(|i| {
            (
                "store",
                json!({"agent_id": "a", "content": format!("day {i}: walked the dog by the river")}),
            )
        })
        .collect();
    calls.extend([
        ("recall", json!({"agent_id": "a", "query": "dog", "limit": 100})),
        ("update_profile", json!({"agent_id": "a", "profile": "Owns a dog named Rex."})),
        ("recall", json!({"agent_id": "a", "query": "dog", "limit": 100})),
        ("recall", json!({"agent_id": "a", "query": "dog", "limit": 3})),
        ("recall_with_context", json!({"agent_id": "a", "query": "dog", "limit": 100,
            "external_context": [{"role": "user", "content": "hi", "timestamp": "2026-01-01T00:00:00Z"}]})),
    ]);
    let out = call_tools(dir.path(), &calls);
    let (before, with_room, full, with_context) = (&out[52], &out[54], &out[55], &out[56]);
    let first = |body: &Value| body["messages"][0].clone();
    assert!(
        !first(before)["content"]
            .as_str()
            .unwrap()
            .starts_with("[Profile]"),
        "no profile yet: {before}"
    );
    let profile = first(with_room);
    assert_eq!(
        profile["content"], "[Profile] Owns a dog named Rex.",
        "{with_room}"
    );
    assert_eq!(profile["source"], json!({"System": "profile"}));
    assert_eq!(profile["match_reason"]["signal"], "profile");
    assert!(profile.get("ref").is_none(), "{profile}");
    let rows = with_room["messages"].as_array().unwrap();
    assert_eq!(rows.len(), before["messages"].as_array().unwrap().len() + 1);
    assert_eq!(full["messages"].as_array().unwrap().len(), 3, "{full}");
    assert!(
        full["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m.get("ref").is_some())
    );
    assert_eq!(
        first(with_context)["content"],
        "[Profile] Owns a dog named Rex.",
        "{with_context}"
    );
}

/// The five tools that lacked CPersona's `session_key` take it, and a paused session writes
/// nothing through them: a calibration is computed but not stored, a precision is left as it
/// was, an import and a merge become dry runs, `fix` becomes a read. Another session writes.
#[test]
fn a_paused_session_key_holds_back_calibration_precision_import_merge_and_fix() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls: Vec<(&str, Value)> = (0..20).map(|i| session_note("a", i)).collect();
    let exports = dir.path().join("store/exports");
    std::fs::create_dir_all(&exports).unwrap();
    std::fs::write(
        exports.join("in.jsonl"),
        "{\"content\": \"imported while paused\", \"agent_id\": \"a\"}\n",
    )
    .unwrap();
    let paused = json!("held");
    calls.extend([
        ("pause_persistence", json!({"session_key": paused})),
        (
            "calibrate_threshold",
            json!({"agent_id": "a", "session_key": paused}),
        ),
        (
            "set_recall_precision",
            json!({"agent_id": "a", "precision": "strict", "session_key": paused}),
        ),
        (
            "import_memories",
            json!({"input_path": "in.jsonl", "session_key": paused}),
        ),
        (
            "merge_memories",
            json!({"source_agent_id": "a", "target_agent_id": "b", "session_key": paused}),
        ),
        ("check_health", json!({"fix": true, "session_key": paused})),
        ("get_recall_precision", json!({"agent_id": "a"})),
        ("list_memories", json!({"agent_id": "b"})),
        (
            "set_recall_precision",
            json!({"agent_id": "a", "precision": "strict", "session_key": "other"}),
        ),
    ]);
    let out = call_tools(dir.path(), &calls);
    let [
        calibrated,
        precision,
        imported,
        merged,
        health,
        after,
        listed_b,
        elsewhere,
    ] = std::array::from_fn(|i| out[21 + i].clone());
    assert_eq!(calibrated["persisted"], false, "{calibrated}");
    assert!(
        calibrated["new_threshold"].is_number(),
        "computed: {calibrated}"
    );
    assert_eq!(precision["persisted"], false, "{precision}");
    assert_eq!(precision["ok"], true, "{precision}");
    assert_eq!(
        after["beta"], 1.0,
        "the paused call left the precision: {after}"
    );
    assert_eq!(imported["persisted"], false, "{imported}");
    assert_eq!(merged["persisted"], false, "{merged}");
    assert_eq!(
        listed_b["memories"],
        json!([]),
        "nothing merged: {listed_b}"
    );
    assert_eq!(health["repairs_skipped"], true, "{health}");
    assert!(elsewhere.get("persisted").is_none(), "{elsewhere}");
    assert_eq!(elsewhere["beta"], 2.0, "{elsewhere}");
}

/// `check_update` answers in CPersona's shape that this server does not update itself
/// (`state: "disabled"`, the running version), and refuses `apply` with nothing run.
#[test]
fn check_update_says_updates_come_from_the_installer() {
    let dir = tempfile::tempdir().unwrap();
    let out = call_tools_with(
        cpersona_in(dir.path()),
        &[
            ("check_update", json!({"refresh": true})),
            ("check_update", json!({"apply": true})),
        ],
    );
    let (is_error, body) = &out[0];
    assert!(!is_error, "{body}");
    assert_eq!(body["state"], "disabled", "{body}");
    assert_eq!(body["enabled"], false);
    assert_eq!(body["running"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["install"]["restart_required"], true);
    let (is_error, refused) = &out[1];
    assert!(is_error, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("apply is not supported"),
        "{refused}"
    );
}

/// `recall_with_context` merges the caller's conversation as CPersona does: every turn's
/// text filters the recall, user and assistant turns join `messages` in time order with
/// CPersona's sources, and other roles are reported as filter-only.
#[test]
fn recall_with_context_merges_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let calls = vec![
        (
            "store",
            json!({"agent_id": "a", "content": "the copper kettle sits on the stove",
                   "timestamp": "2026-01-01T10:00:00+00:00"}),
        ),
        (
            "store",
            json!({"agent_id": "a", "content": "copper pans hang by the window",
                   "timestamp": "2026-01-03T10:00:00+00:00"}),
        ),
        (
            "recall_with_context",
            json!({"agent_id": "a", "query": "copper", "external_context": [
                {"role": "user", "content": "copper pans hang by the window", "user_id": "42",
                 "timestamp": "2026-01-02T10:00:00+00:00"},
                {"role": "assistant", "content": "noted the copper",
                 "timestamp": "2026-01-04T10:00:00+00:00"},
                {"role": "system", "content": "the copper kettle sits on the stove"},
            ]}),
        ),
    ];
    let out = call_tools(dir.path(), &calls);
    let body = &out[2];
    let messages = body["messages"].as_array().unwrap();
    let contents: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    // Both stored rows are in the context, so neither is recalled; the two shown turns are
    // merged in time order; the system turn only filtered.
    assert_eq!(
        contents,
        ["copper pans hang by the window", "noted the copper"],
        "{body}"
    );
    assert!(messages.iter().all(|m| m["context_type"] == "conversation"));
    assert_eq!(messages[0]["source"]["id"], "discord:42", "{body}");
    assert_eq!(
        messages[1]["source"],
        json!({"type": "Agent", "id": "self"})
    );
    assert_eq!(
        body["context_filter_only"]["roles"],
        json!(["system"]),
        "{body}"
    );
    // Hits removed, counted per arm: both rows, each found by more than one arm.
    assert!(body["excluded"].as_u64().unwrap() >= 2, "{body}");
}

/// `set_recall_precision` stores the agent's β and recalibrates with it; `get_recall_precision`
/// reads it back; `check_health` warns once the live tail passes the stated share.
#[test]
fn recall_precision_round_trip_and_stale_index_warning() {
    let dir = tempfile::tempdir().unwrap();
    let stores: Vec<(&str, Value)> = (0..40).map(|i| session_note("a", i)).collect();
    call_tools(dir.path(), &stores);
    run_ok(cpersona_in(dir.path()).args(["index", "rebuild"]));
    let mut calls = vec![
        (
            "set_recall_precision",
            json!({"agent_id": "a", "precision": "strict"}),
        ),
        ("get_recall_precision", json!({"agent_id": "a"})),
        ("get_recall_precision", json!({"agent_id": "other"})),
        ("check_health", json!({})),
    ];
    calls.extend((0..12).map(|i| {
        (
            "store",
            json!({"agent_id": "a", "content": format!("a later fact {i}")}),
        )
    }));
    calls.push(("check_health", json!({})));
    // The background flush would fold the later rows in; a long period keeps them a live
    // tail for the warning (its first pass runs at start, before any of these calls land).
    let mut cmd = cpersona_in(dir.path());
    cmd.env("CPERSONA_INDEX_FLUSH_MS", "60000");
    let bodies: Vec<Value> = call_tools_with(cmd, &calls)
        .into_iter()
        .map(|(_, body)| body)
        .collect();
    let set = &bodies[0];
    assert_eq!(set["ok"], true, "{set}");
    assert_eq!(set["precision"], "strict", "{set}");
    assert_eq!(set["calibrate"]["ok"], true, "{set}");
    assert_eq!(bodies[1]["beta"], 2.0, "{}", bodies[1]);
    assert_eq!(bodies[1]["overridden"], true, "{}", bodies[1]);
    assert_eq!(bodies[2]["overridden"], false, "{}", bodies[2]);
    assert_eq!(bodies[2]["precision"], "balanced", "{}", bodies[2]);
    let stale = |body: &Value| {
        body["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["check"] == "index_freshness")
    };
    assert!(!stale(&bodies[3]), "{}", bodies[3]);
    let last = bodies.last().unwrap();
    // 12 of 40 rows changed since the generation: 30% > the default 20%.
    assert!(stale(last), "{last}");
}

/// Blocks end to end through MCP: `store` reports the division, `get_contents` serves a block
/// range exactly and lists a node range of a record without nodes as unresolved, and
/// `index rebuild --table blocks` builds the block generation.
#[test]
fn store_reports_blocks_and_get_contents_serves_block_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let text =
        "The harbor opened at dawn. Boats left early.\nLanterns (red. green.) hung on masts.";
    let first = call_tools(
        dir.path(),
        &[("store", json!({"agent_id": "a", "content": text}))],
    );
    assert_eq!(first[0]["blocks"], 3, "{}", first[0]);
    assert!(first[0].get("nodes").is_none(), "{}", first[0]);
    let r = format!("mem:{}", first[0]["id"].as_i64().unwrap());
    let bodies = call_tools(
        dir.path(),
        &[(
            "get_contents",
            json!({"agent_id": "a", "refs": [
                {"ref": r, "block": [1, 2]},
                {"ref": r, "node": 0},
                {"ref": r, "block": 3},
            ]}),
        )],
    );
    let body = &bodies[0];
    assert_eq!(
        body["items"][0]["content"], " Boats left early.\nLanterns (red. green.) hung on masts.",
        "{body}"
    );
    assert_eq!(body["items"][0]["range"]["block"], json!([1, 2]), "{body}");
    assert_eq!(body["items"][0]["range"]["of"], 3, "{body}");
    assert_eq!(
        body["unresolved"],
        json!([{"ref": r, "reason": "no_current_nodes"}, {"ref": r, "reason": "block_out_of_range"}]),
        "{body}"
    );
    let rebuilt: Value = serde_json::from_str(&run_ok(
        cpersona_in(dir.path()).args(["index", "rebuild", "--table", "blocks"]),
    ))
    .unwrap();
    assert_eq!(rebuilt[0]["table"], "blocks", "{rebuilt}");
    assert_eq!(rebuilt[0]["rows"], 3, "{rebuilt}");
}

/// The protocol revisions the server negotiates (README "Beyond tools"): each one a client
/// asks for is answered in kind, and an unknown one with the newest revision that still
/// has `initialize`.
#[test]
fn initialize_negotiates_every_revision_it_states() {
    for (asked, answered) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2023-01-01", "2025-11-25"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = cpersona_in(dir.path());
        cmd.arg("serve");
        let session = StdioSession::start_as(cmd, asked);
        let reply = session.initialized().clone();
        session.finish();
        assert_eq!(
            reply["result"]["protocolVersion"], answered,
            "{asked}: {reply}"
        );
    }
}
