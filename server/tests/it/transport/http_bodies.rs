//! The reproductions of issue 18 over streamable HTTP, through the real binary: a body that
//! does not parse or is no request gets 400 with a JSON-RPC error (it was 415 with a text
//! body), a request with bad params gets its -32602 (it was -32601 "method not found"), and
//! the checks in front (token, Host/Origin, Accept, Content-Type, size) answer first, as
//! before.

use serde_json::{Value, json};

use super::bin;
use super::client::{RawHttp, StoreView, TOKEN, good_headers};

/// Just over the default body limit (`CPERSONA_HTTP_MAX_BODY_BYTES`, 4 MiB): little enough
/// is left unread when the server answers early that the client always gets to read it.
const OVER_THE_LIMIT: usize = (4 << 20) + 64;

fn with(name: &'static str, value: &str) -> Vec<(&'static str, String)> {
    let mut headers: Vec<(&'static str, String)> = good_headers()
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
        .collect();
    headers.push((name, value.to_owned()));
    headers
}

#[test]
fn bad_bodies_get_400_with_a_json_rpc_error_and_bad_params_get_32602() {
    let http = RawHttp::spawn(bin());
    http.initialize();
    let huge_limit = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"recall","arguments":{"agent_id":"a","query":"q","limit":1e309}}}"#;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let arguments_array = json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call",
        "params": {"name": "recall", "arguments": ["a", "q"]}})
    .to_string();
    let cases: Vec<(&str, Vec<u8>, u16, i64, Value)> = vec![
        ("hello", b"hello".to_vec(), 400, -32700, Value::Null),
        ("an empty body", Vec::new(), 400, -32700, Value::Null),
        ("a raw 0xff byte", vec![0xff], 400, -32700, Value::Null),
        (
            "nesting 10,000 deep",
            deep.into_bytes(),
            400,
            -32700,
            Value::Null,
        ),
        ("limit: 1e309", huge_limit.to_vec(), 400, -32700, json!(5)),
        (
            "jsonrpc 1.0",
            br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#.to_vec(),
            400,
            -32600,
            json!(7),
        ),
        (
            "no method",
            br#"{"jsonrpc":"2.0","id":9}"#.to_vec(),
            400,
            -32600,
            json!(9),
        ),
        (
            "id true",
            br#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#.to_vec(),
            400,
            -32600,
            Value::Null,
        ),
        ("an empty batch", b"[]".to_vec(), 400, -32600, Value::Null),
        ("a number", b"42".to_vec(), 400, -32600, Value::Null),
        (
            "arguments as an array",
            arguments_array.into_bytes(),
            200,
            -32602,
            json!(14),
        ),
    ];
    let view = StoreView::open(&http.db).unwrap();
    let before = view.fingerprint();
    let mut wrong = Vec::new();
    for (what, body, status, code, id) in cases {
        let Some(reply) = http.post(&body) else {
            wrong.push(format!("{what}: no HTTP answer"));
            continue;
        };
        let json = reply.json.clone().unwrap_or(Value::Null);
        if reply.status != status
            || !reply.content_type.starts_with("application/json")
            || json["jsonrpc"] != "2.0"
            || json["error"]["code"] != code
            || json.get("id") != Some(&id)
        {
            wrong.push(format!(
                "{what}: expected {status} with {code} and id {id}, got {reply:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(view.fingerprint(), before, "a refused body wrote");
    assert!(http.ping());
    let status = http.stop();
    assert!(status.success(), "{status}");
}

/// The checks in front of the body keep their answers and their order: a bad body from a
/// caller without the token, from a foreign Origin, with the wrong Accept or Content-Type, or
/// over the size limit gets what it got before (401, 403, 406, 415, 413), never the body's
/// 400.
#[test]
fn token_origin_accept_type_and_size_checks_answer_before_the_body() {
    let http = RawHttp::spawn(bin());
    http.initialize();
    let bad = b"hello".to_vec();
    let no_token: Vec<(&'static str, String)> = good_headers()
        .into_iter()
        .filter(|(n, _)| *n != "Authorization")
        .collect();
    type Headers = Vec<(&'static str, String)>;
    let cases: Vec<(&str, Headers, Vec<u8>, u16)> = vec![
        ("no token", no_token, bad.clone(), 401),
        (
            "a wrong token",
            with("Authorization", &format!("Bearer {TOKEN}x")),
            bad.clone(),
            401,
        ),
        (
            "a foreign Origin",
            with("Origin", "https://evil.example"),
            bad.clone(),
            403,
        ),
        (
            "a foreign Host",
            with("Host", "evil.example"),
            bad.clone(),
            403,
        ),
        (
            "Accept JSON only",
            with("Accept", "application/json"),
            bad.clone(),
            406,
        ),
        (
            "a text body",
            with("Content-Type", "text/plain"),
            bad.clone(),
            415,
        ),
        (
            "a foreign Origin with a body over the limit",
            with("Origin", "https://evil.example"),
            vec![b'x'; OVER_THE_LIMIT],
            403,
        ),
    ];
    for (what, headers, body, status) in cases {
        let reply = http.post_with(&headers, &body).unwrap();
        assert_eq!(reply.status, status, "{what}: {reply:?}");
    }
    // Over the limit with good headers: still 413, and the client is told why in JSON-RPC.
    let big = json!({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
        "params": {"name": "store", "arguments": {"agent_id": "a", "content": "x".repeat(OVER_THE_LIMIT)}}});
    let reply = http.post(big.to_string().as_bytes()).unwrap();
    assert_eq!(reply.status, 413, "{reply:?}");
    let body = reply.json.unwrap_or_default();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("4194304"),
        "{body}"
    );
    let view = StoreView::open(&http.db).unwrap();
    assert_eq!(view.fingerprint().change_log_head, 0);
    assert!(http.ping());
    assert!(http.stop().success());
}
