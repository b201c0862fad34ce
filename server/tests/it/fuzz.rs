//! Bad input against the real binary over stdio: a seeded random-JSON fuzz of every tool's
//! argument decoder (each call answers, either ok or `ok: false` with a message; the process
//! never dies), and a table built from every advertised schema (missing required fields, wrong
//! types, oversize strings and arrays, huge and negative numbers, NUL bytes, unknown arguments
//! and unknown ids): each case is refused with a clear `ok: false` and writes nothing. Every
//! accepted call's structured output is checked against the tool's output schema.

use std::path::Path;
use std::process::{Child, Stdio};

use rusqlite::{Connection, OpenFlags};
use serde_json::{Map, Value, json};

use crate::crash::harness::{Rng, StdioRpc, command};
use crate::output_schema::OutputSchemas;

/// Executions of the random-JSON decoder fuzz in CI.
const DECODER_FUZZ_CASES: usize = 1500;

struct Server {
    child: Child,
    rpc: StdioRpc,
    db: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("fuzz.db");
    let mut child = command(Path::new(env!("CARGO_BIN_EXE_cpersona")), &db)
        .env("CPERSONA_EXPORT_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rpc = StdioRpc::connect_later(&mut child).handshake().unwrap();
    Server {
        child,
        rpc,
        db,
        _dir: dir,
    }
}

impl Server {
    fn call(&mut self, tool: &str, args: &Value) -> Value {
        self.rpc
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .unwrap_or_else(|| panic!("no reply to {tool} {args}: the server died"))
    }

    fn tools(&mut self) -> Vec<Value> {
        let reply = self.rpc.request("tools/list", json!({})).unwrap();
        reply["result"]["tools"].as_array().unwrap().clone()
    }

    /// Every write the store could hold: each table's row count and the change-log head.
    fn fingerprint(&self) -> Vec<(String, i64)> {
        let conn = Connection::open_with_flags(&self.db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<Vec<String>, _>>()
            .unwrap()
            .into_iter()
            // FTS5's b-tree pages: serve's index upkeep merges them in the background without
            // changing a row (the `*_fts` and `*_fts_docsize` counts still cover its content).
            .filter(|t| !t.ends_with("_fts_data") && !t.ends_with("_fts_idx"))
            .collect();
        let mut out: Vec<(String, i64)> = tables
            .into_iter()
            .map(|t| {
                let n = conn
                    .query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| r.get(0))
                    .unwrap();
                (t, n)
            })
            .collect();
        let head = conn
            .query_row("SELECT coalesce(max(seq), 0) FROM change_log", [], |r| {
                r.get(0)
            })
            .unwrap();
        out.push(("change_log head".into(), head));
        out
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The tool's JSON body and whether it was refused (`isError` and `ok: false` together).
fn outcome(reply: &Value) -> (bool, Value) {
    let result = &reply["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {reply}"));
    let body: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"));
    (result["isError"] == json!(true), body)
}

fn random_json(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth == 0 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!([0i64, -1, 1, i64::MAX, i64::MIN, 100, 101, 2000, 86401][rng.below(9) as usize]),
        3 => json!([0.5f64, -1e300, 1e300, 2.5, -0.0][rng.below(5) as usize]),
        4 => json!(u64::MAX),
        5 | 6 => {
            let pool = [
                "",
                "a",
                "mem:1",
                "ep:1",
                "mem:999999",
                "\0",
                "a\u{0}b",
                "日本語",
                "😀",
                "2026-01-31",
                "recent",
                "../../etc/passwd",
                "rrf",
                "percentile",
                "move",
                "copy",
            ];
            let mut s = pool[rng.below(pool.len() as u64) as usize].to_owned();
            if rng.below(8) == 0 {
                s = s.repeat(1 + rng.below(400) as usize);
            }
            json!(s)
        }
        7 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_json(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "ref",
                "span",
                "node",
                "content",
                "kind",
                "after",
                "before",
                "confidence",
                "name",
            ];
            let mut map = Map::new();
            for _ in 0..rng.below(4) {
                map.insert(
                    keys[rng.below(keys.len() as u64) as usize].into(),
                    random_json(rng, depth - 1),
                );
            }
            Value::Object(map)
        }
    }
}

/// Random arguments for `tool`: its own property names (and sometimes an unknown one) with
/// random values, some dropped.
fn random_args(rng: &mut Rng, schema: &Value) -> Value {
    let mut args = Map::new();
    if let Some(props) = schema["properties"].as_object() {
        for name in props.keys() {
            if rng.below(3) != 0 {
                args.insert(name.clone(), random_json(rng, 2));
            }
        }
    }
    if rng.below(6) == 0 {
        args.insert("zz_unknown".into(), random_json(rng, 1));
    }
    Value::Object(args)
}

#[test]
fn random_arguments_to_every_tool_answer_ok_or_a_clear_error() {
    let mut server = serve();
    let tools = server.tools();
    assert!(tools.len() >= 26, "{tools:?}");
    let schemas = OutputSchemas::from_tools(&tools);
    let mut rng = Rng::new(0xF022_0009);
    let (mut ok, mut refused) = (0usize, 0usize);
    for i in 0..DECODER_FUZZ_CASES {
        let tool = &tools[i % tools.len()];
        let name = tool["name"].as_str().unwrap();
        let args = random_args(&mut rng, &tool["inputSchema"]);
        let reply = server.call(name, &args);
        let (is_error, body) = outcome(&reply);
        if is_error {
            refused += 1;
            assert_eq!(body["ok"], false, "{name} {args}: {body}");
            let message = body["error"].as_str().unwrap_or_default();
            assert!(message.len() > 5, "{name} {args}: unclear error {body}");
        } else {
            ok += 1;
            assert!(schemas.check(name, &reply));
            assert_ne!(
                body["ok"], false,
                "{name} {args}: ok:false without isError: {body}"
            );
        }
    }
    // The server is still whole and answering.
    let (is_error, body) = outcome(&server.call("check_health", &json!({})));
    assert!(!is_error, "{body}");
    eprintln!("decoder fuzz: {DECODER_FUZZ_CASES} calls, {ok} ok, {refused} refused");
    assert!(
        refused > ok,
        "the fuzz mostly sent valid input: {ok} ok, {refused} refused"
    );
}

/// A valid value for a required field, so each case breaks exactly one thing.
fn valid_value(tool: &str, name: &str, prop: &Value) -> Value {
    match (tool, name) {
        ("get_contents", "refs") => json!(["mem:1"]),
        (_, "output_path") => json!("out.jsonl"),
        (_, "input_path") => json!("in.jsonl"),
        (_, "memory_id" | "episode_id") => json!(1),
        _ => match prop["type"].as_str() {
            Some("integer") => json!(prop["minimum"].as_i64().unwrap_or(1)),
            Some("number") => json!(1.0),
            Some("boolean") => json!(false),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("a"),
        },
    }
}

fn wrong_types(prop: &Value) -> Vec<Value> {
    let types: Vec<&str> = match &prop["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return vec![json!(12345)],
    };
    let mut out = Vec::new();
    let candidates = [
        ("string", json!(12345)),
        ("integer", json!("seven")),
        ("boolean", json!("yes")),
        ("array", json!({"not": "a list"})),
        ("object", json!(["not", "an", "object"])),
        ("number", json!("1.5")),
    ];
    for t in &types {
        for (kind, value) in &candidates {
            if kind == t {
                out.push(value.clone());
            }
        }
    }
    if types.contains(&"integer") {
        out.push(json!(1.5));
    }
    // A value that matches none of the types.
    if !types.contains(&"null") {
        out.push(Value::Null);
    }
    out.retain(|v| {
        !types.iter().any(|t| match (*t, v) {
            ("string", Value::String(_))
            | ("boolean", Value::Bool(_))
            | ("array", Value::Array(_))
            | ("object", Value::Object(_)) => true,
            ("number", Value::Number(_)) => true,
            ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        })
    });
    out
}

/// Every case for one tool: (what, arguments).
fn bad_cases(tool: &str, schema: &Value) -> Vec<(String, Value)> {
    let empty = Map::new();
    let props = schema["properties"].as_object().unwrap_or(&empty);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let base: Map<String, Value> = required
        .iter()
        .map(|name| ((*name).to_owned(), valid_value(tool, name, &props[*name])))
        .collect();
    let with = |name: &str, value: Value| {
        let mut args = base.clone();
        args.insert(name.to_owned(), value);
        Value::Object(args)
    };
    let mut cases = Vec::new();
    for name in &required {
        let mut args = base.clone();
        args.remove(*name);
        cases.push((format!("missing {name}"), Value::Object(args)));
    }
    cases.push(("unknown argument".into(), with("zz_unknown", json!(1))));
    for (name, prop) in props {
        for value in wrong_types(prop) {
            cases.push((format!("{name} wrong type {value}"), with(name, value)));
        }
        if let Some(max) = prop["maxLength"].as_u64() {
            cases.push((
                format!("{name} oversize"),
                with(name, json!("x".repeat(max as usize + 1))),
            ));
        }
        if let Some(max) = prop["maxItems"].as_u64() {
            let item = if name == "refs" {
                json!("mem:1")
            } else {
                json!("x")
            };
            cases.push((
                format!("{name} too many items"),
                with(name, json!(vec![item; max as usize + 1])),
            ));
        }
        if prop["type"] == "string" {
            cases.push((format!("{name} NUL byte"), with(name, json!("a\u{0}b"))));
        }
        if prop["type"] == "integer" || prop["type"] == "number" {
            if prop["maximum"].is_number() {
                cases.push((format!("{name} huge"), with(name, json!(u64::MAX))));
            }
            cases.push((format!("{name} 1e300"), with(name, json!(1e300))));
            if prop["minimum"].as_f64().is_some_and(|m| m >= 0.0) {
                cases.push((format!("{name} negative"), with(name, json!(-1))));
            }
        }
    }
    for id in ["memory_id", "episode_id"] {
        if required.contains(&id) && props.contains_key(id) {
            cases.push((format!("unknown {id}"), with(id, json!(987_654_321))));
        }
    }
    cases
}

#[test]
fn every_tool_refuses_bad_input_clearly_and_writes_nothing() {
    let mut server = serve();
    // Rows for the bad cases to miss: ids 1 exist, so only the argument is at fault.
    for content in ["the user likes green tea", "the deadline is Friday"] {
        let (is_error, body) =
            outcome(&server.call("store", &json!({"agent_id": "a", "content": content})));
        assert!(!is_error, "{body}");
    }
    let (is_error, body) = outcome(&server.call(
        "archive_episode",
        &json!({"agent_id": "a", "summary": "we planned the trip", "keywords": "trip plan"}),
    ));
    assert!(!is_error, "{body}");
    let before = server.fingerprint();
    let tools = server.tools();
    let mut tried = 0usize;
    let mut accepted = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        for (what, args) in bad_cases(name, &tool["inputSchema"]) {
            tried += 1;
            let (is_error, body) = outcome(&server.call(name, &args));
            let message = body["error"].as_str().unwrap_or_default();
            if !is_error || body["ok"] != false || message.len() < 6 {
                accepted.push(format!("{name} [{what}]: {body}"));
            }
        }
    }
    assert!(
        accepted.is_empty(),
        "{} of {tried} bad cases were not refused clearly:\n{}",
        accepted.len(),
        accepted.join("\n")
    );
    assert_eq!(server.fingerprint(), before, "a refused call wrote");
    assert!(tried >= 200, "only {tried} cases");
    eprintln!(
        "bad-input table: {tried} cases over {} tools, all refused, nothing written",
        tools.len()
    );
}
