//! Numbers an argument cannot hold, through the real binary: for every top-level integer
//! argument of every advertised tool, a value one past what its declared `format` holds
//! (`int64`: 2^64 - 1, `uint32`: 2^32) is refused with `ok: false` and a message that names
//! the argument, and nothing is written. Before, an argument without a `maximum` (`memory_id`,
//! `episode_id`) passed the schema check and failed in the decoder with serde's "invalid
//! value: integer ..., expected i64", which names no argument.

use serde_json::{Map, Value, json};

use super::bin;
use super::client::{RawStdio, StoreView};

/// A value one past what `format` holds, for the integer formats the wire types use.
fn beyond(format: &str) -> Option<Value> {
    match format {
        "int64" => Some(json!(u64::MAX)),
        "uint32" => Some(json!(u64::from(u32::MAX) + 1)),
        _ => None,
    }
}

/// A valid value for a required argument, so each case breaks one thing.
fn valid(tool: &str, name: &str, prop: &Value) -> Value {
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

/// One `tools/call` on `raw`: (`isError`, the body).
pub(crate) fn call(raw: &mut RawStdio, id: usize, tool: &str, args: &Value) -> (bool, Value) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}});
    assert!(raw.send(line.to_string().as_bytes()));
    let mut others = Vec::new();
    let reply = raw
        .reply_to(&json!(id), &mut others)
        .unwrap_or_else(|| panic!("no answer to {tool} {args}"));
    let result = &reply["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool} {args}: {reply}"));
    (
        result["isError"] == true,
        serde_json::from_str(text).unwrap(),
    )
}

#[test]
fn a_number_beyond_an_arguments_format_is_refused_by_name() {
    let mut raw = RawStdio::spawn(bin());
    raw.handshake();
    let (refused, body) = call(
        &mut raw,
        1,
        "store",
        &json!({"agent_id": "a", "content": "the lantern is violet"}),
    );
    assert!(!refused, "{body}");
    let tools_line = json!({"jsonrpc": "2.0", "id": "tools", "method": "tools/list"});
    assert!(raw.send(tools_line.to_string().as_bytes()));
    let mut others = Vec::new();
    let tools = raw.reply_to(&json!("tools"), &mut others).unwrap();
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    let view = StoreView::open(&raw.db).unwrap();
    let before = view.fingerprint();
    let mut cases = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        let empty = Map::new();
        let props = schema["properties"].as_object().unwrap_or(&empty);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (arg, prop) in props {
            let Some(value) = prop["format"].as_str().and_then(beyond) else {
                continue;
            };
            let mut args: Map<String, Value> = required
                .iter()
                .map(|r| ((*r).to_owned(), valid(name, r, &props[*r])))
                .collect();
            args.insert(arg.clone(), value);
            cases.push((name.to_owned(), arg.clone(), Value::Object(args)));
        }
    }
    // One nested argument: a block index inside a ref.
    cases.push((
        "get_contents".into(),
        "refs[0].block".into(),
        json!({"agent_id": "a", "refs": [{"ref": "mem:1", "block": u64::from(u32::MAX) + 1}]}),
    ));
    assert!(cases.len() >= 15, "only {} cases", cases.len());
    let mut wrong = Vec::new();
    for (i, (tool, arg, args)) in cases.iter().enumerate() {
        let (refused, body) = call(&mut raw, 100 + i, tool, args);
        let message = body["error"].as_str().unwrap_or_default();
        if !refused || body["ok"] != false || !message.contains(&format!("`{arg}`")) {
            wrong.push(format!("{tool} `{arg}` = {}: {body}", args[arg.as_str()]));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} not refused by name:\n{}",
        wrong.len(),
        cases.len(),
        wrong.join("\n")
    );
    assert_eq!(view.fingerprint(), before, "a refused call wrote");
    let (status, _) = raw.close();
    assert!(status.success());
}
