//! The reproductions of issue 18 on stdio, through the real binary: a line that does not
//! parse, one that parses but is no request, and a request with bad params each get exactly
//! one JSON-RPC error with the id when one can be read; the server keeps serving, writes
//! nothing, and exits cleanly when stdin closes.

use std::time::Duration;

use serde_json::{Value, json};

use super::bin;
use super::client::{RawStdio, StdoutLine, StoreView};

/// A request line with `id` and `params`, as a client would write it.
fn request(id: Value, method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// Sends `line`, then a ping, and returns every non-ping line that came back, waiting a
/// little past the ping's answer for one that may arrive after it.
fn exchange(raw: &mut RawStdio, line: &[u8], ping_id: &str) -> Vec<StdoutLine> {
    assert!(raw.send(line), "stdin closed before {ping_id}");
    let mut others = Vec::new();
    let pong = raw.ping(ping_id, &mut others);
    assert!(
        pong.is_some(),
        "the server stopped answering after {ping_id}; lines: {others:?}"
    );
    if others.is_empty()
        && let Some(late) = raw.next_line(Duration::from_secs(2))
    {
        others.push(late);
    }
    others
}

struct Case {
    what: &'static str,
    line: Vec<u8>,
    code: i64,
    id: Value,
    /// A word the error message must hold.
    says: &'static str,
}

fn case(
    what: &'static str,
    line: impl Into<Vec<u8>>,
    code: i64,
    id: Value,
    says: &'static str,
) -> Case {
    Case {
        what,
        line: line.into(),
        code,
        id,
        says,
    }
}

fn bad_lines() -> Vec<Case> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_call = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"store","arguments":{{"agent_id":"a","content":"x","metadata":{{"n":{}{}}}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let mut raw_byte_call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"store","arguments":{"agent_id":"a","content":"bad "#.to_vec();
    raw_byte_call.extend_from_slice(b"\xff\xfe byte\"}}}");
    let huge_limit = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall","arguments":{"agent_id":"a","query":"q","limit":1e309}}}"#;
    let null = Value::Null;
    vec![
        case(
            "the text hello",
            "hello",
            -32700,
            null.clone(),
            "Parse error",
        ),
        case("a raw 0xff byte", vec![0xff], -32700, null.clone(), "UTF-8"),
        case(
            "0xff inside a call",
            raw_byte_call,
            -32700,
            json!(3),
            "UTF-8",
        ),
        case("nesting 10,000 deep", deep, -32700, null.clone(), "deep"),
        case(
            "a call nesting 10,000 deep",
            deep_call,
            -32700,
            json!(4),
            "deep",
        ),
        case("limit: 1e309", huge_limit, -32700, json!(5), "limit"),
        case(
            "a truncated request",
            r#"{"jsonrpc":"2.0","id":6,"method":"ping""#,
            -32700,
            json!(6),
            "Parse error",
        ),
        case(
            "a lone surrogate",
            r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"store","arguments":{"agent_id":"a","content":"\ud800"}}}"#,
            -32700,
            json!("s"),
            "surrogate",
        ),
        case(
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#,
            -32600,
            json!(7),
            "jsonrpc",
        ),
        case(
            "no jsonrpc",
            r#"{"id":8,"method":"ping"}"#,
            -32600,
            json!(8),
            "jsonrpc",
        ),
        case(
            "no method",
            r#"{"jsonrpc":"2.0","id":9}"#,
            -32600,
            json!(9),
            "method",
        ),
        case(
            "a number for method",
            r#"{"jsonrpc":"2.0","id":10,"method":5}"#,
            -32600,
            json!(10),
            "method",
        ),
        case(
            "id true",
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            -32600,
            null.clone(),
            "id",
        ),
        case(
            "id null",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            -32600,
            null.clone(),
            "id",
        ),
        case(
            "id 1.5",
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            -32600,
            null.clone(),
            "id",
        ),
        case(
            "id an object",
            r#"{"jsonrpc":"2.0","id":{"n":1},"method":"ping"}"#,
            -32600,
            null.clone(),
            "id",
        ),
        case("an empty batch", "[]", -32600, null.clone(), "batch"),
        case(
            "a batch",
            r#"[{"jsonrpc":"2.0","id":11,"method":"ping"}]"#,
            -32600,
            null.clone(),
            "batch",
        ),
        case("a number", "42", -32600, null.clone(), "object"),
        case("a string", r#""ping""#, -32600, null.clone(), "object"),
        case("null", "null", -32600, null.clone(), "object"),
        case(
            "params a string",
            r#"{"jsonrpc":"2.0","id":12,"method":"ping","params":"x"}"#,
            -32600,
            json!(12),
            "params",
        ),
        case(
            "a notification with params a number",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":7}"#,
            -32600,
            null.clone(),
            "params",
        ),
        case(
            "a response with both result and error",
            r#"{"jsonrpc":"2.0","id":13,"result":{},"error":{"code":1,"message":"x"}}"#,
            -32600,
            null.clone(),
            "result",
        ),
        case(
            "arguments as an array",
            request(
                json!(14),
                "tools/call",
                json!({"name": "recall", "arguments": ["a", "q"]}),
            ),
            -32602,
            json!(14),
            "arguments",
        ),
        case(
            "tools/call with a number for name",
            request(json!(15), "tools/call", json!({"name": 7, "arguments": {}})),
            -32602,
            json!(15),
            "name",
        ),
        case(
            "tools/list with params an array",
            request(json!(16), "tools/list", json!([])),
            -32602,
            json!(16),
            "params",
        ),
        case(
            "initialize without clientInfo",
            request(
                json!(17),
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
            ),
            -32602,
            json!(17),
            "initialize",
        ),
    ]
}

#[test]
fn every_bad_line_gets_one_json_rpc_error_and_the_server_keeps_serving() {
    let mut raw = RawStdio::spawn(bin());
    raw.handshake();
    let store = json!({"agent_id": "a", "content": "the kettle is copper"});
    let stored = exchange(
        &mut raw,
        &request(
            json!("seed"),
            "tools/call",
            json!({"name": "store", "arguments": store}),
        ),
        "ping-seed",
    );
    assert!(
        matches!(stored.as_slice(), [Ok(r)] if r["id"] == "seed" && r["result"]["isError"] != true),
        "{stored:?}"
    );
    let view = StoreView::open(&raw.db).unwrap();
    let before = view.fingerprint();
    let mut wrong = Vec::new();
    for (i, case) in bad_lines().into_iter().enumerate() {
        let lines = exchange(&mut raw, &case.line, &format!("ping-{i}"));
        let verdict = match lines.as_slice() {
            [Ok(reply)] => {
                let message = reply["error"]["message"].as_str().unwrap_or_default();
                if reply["jsonrpc"] != "2.0"
                    || reply.get("id") != Some(&case.id)
                    || reply["error"]["code"] != case.code
                    || !message.contains(case.says)
                {
                    Some(format!("wrong answer {reply}"))
                } else {
                    None
                }
            }
            [] => Some("no answer".to_owned()),
            more => Some(format!("{} lines: {more:?}", more.len())),
        };
        if let Some(verdict) = verdict {
            wrong.push(format!(
                "{} (expected {} with id {}): {verdict}",
                case.what, case.code, case.id
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} cases:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert_eq!(view.fingerprint(), before, "a refused line wrote");
    let (status, rest) = raw.close();
    assert!(rest.is_empty(), "stray lines: {rest:?}");
    assert!(status.success(), "{status}");
}

/// Before this change a notification sent ahead of `initialize` ended the process (rmcp's
/// handshake wants a request first), so the next request was never answered.
#[test]
fn a_notification_before_initialize_does_not_end_the_server() {
    let mut raw = RawStdio::spawn(bin());
    for early in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "id": 77, "result": {}}),
    ] {
        assert!(raw.send(early.to_string().as_bytes()));
    }
    let mut others = Vec::new();
    assert!(raw.ping("early", &mut others).is_some(), "{others:?}");
    raw.handshake();
    assert!(raw.ping("after", &mut others).is_some(), "{others:?}");
    assert!(others.is_empty(), "{others:?}");
    let (status, rest) = raw.close();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
}

/// JSON-RPC never answers a notification or a response, valid or odd in its method and
/// params; only a message that is no valid notification at all gets an error.
#[test]
fn notifications_and_responses_get_no_answer() {
    let mut raw = RawStdio::spawn(bin());
    raw.handshake();
    for silent in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}),
        json!({"jsonrpc": "2.0", "method": "notifications/no_such_thing", "params": {}}),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "store"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": ["odd"]}),
        json!({"jsonrpc": "2.0", "id": 500, "result": {}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "client side"}}),
    ] {
        assert!(raw.send(silent.to_string().as_bytes()));
    }
    assert!(raw.send(b""), "a blank line is no message");
    assert!(raw.send(b"   \r"));
    let mut others = Vec::new();
    assert!(raw.ping("last", &mut others).is_some(), "{others:?}");
    let (status, rest) = raw.close();
    others.extend(rest);
    assert!(others.is_empty(), "answered: {others:?}");
    assert!(status.success(), "{status}");
}

/// A line longer than one message may be (rmcp's 16 MiB) was dropped without a word; it is
/// now answered, with the id read from its head, and the next line is served.
#[test]
fn a_line_over_the_limit_is_answered_and_the_next_one_served() {
    let mut raw = RawStdio::spawn(bin());
    raw.handshake();
    let content = "x".repeat(17 << 20);
    let line = request(
        json!("big"),
        "tools/call",
        json!({"name": "store", "arguments": {"agent_id": "a", "content": content}}),
    );
    let lines = exchange(&mut raw, &line, "after-big");
    let [Ok(reply)] = lines.as_slice() else {
        panic!("expected one answer, got {lines:?}");
    };
    assert_eq!(reply["id"], "big", "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("16777216"), "{message}");
    let view = StoreView::open(&raw.db).unwrap();
    assert_eq!(view.fingerprint().change_log_head, 0, "the long line wrote");
    let (status, rest) = raw.close();
    assert!(rest.is_empty(), "{rest:?}");
    assert!(status.success(), "{status}");
}
