//! The screen's rule, case by case (the binary-level reproductions are in
//! `tests/it/transport/`).

use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

use super::*;

fn screened(text: &[u8]) -> Screened {
    screen(text, ProtocolVersion::KNOWN_VERSIONS)
}

/// The refusal's (code, id), or what else the screen decided.
fn refusal(text: &[u8]) -> (i64, Value) {
    match screened(text) {
        Screened::Refuse(r) => (r.code, r.id),
        other => panic!("{}: {other:?}", String::from_utf8_lossy(text)),
    }
}

fn passed(text: &[u8]) -> Passed {
    match screened(text) {
        Screened::Pass(p) => p,
        other => panic!("{}: {other:?}", String::from_utf8_lossy(text)),
    }
}

#[test]
fn what_does_not_parse_is_a_parse_error_with_the_id_when_it_can_be_read() {
    assert_eq!(refusal(b"hello"), (PARSE_ERROR, Value::Null));
    assert_eq!(refusal(b"\xff"), (PARSE_ERROR, Value::Null));
    assert_eq!(
        refusal(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"limit":1e309}}}"#),
        (PARSE_ERROR, json!(5))
    );
    assert_eq!(
        refusal(b"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"params\":\"\xff\"}"),
        (PARSE_ERROR, json!("x"))
    );
    // An id that is no valid id is not echoed, even from a line that does not parse.
    assert_eq!(
        refusal(br#"{"id":true,"method":"#),
        (PARSE_ERROR, Value::Null)
    );
    assert_eq!(refusal(br#"{"id":2.0,"method":"#), (PARSE_ERROR, json!(2)));
    let Screened::Refuse(r) = screened(br#"{"id":1,"a":{"b":[-1e999]}}"#) else {
        panic!()
    };
    assert!(r.message.contains("`a.b[0]` is -1e999"), "{}", r.message);
}

#[test]
fn valid_json_that_is_no_message_is_an_invalid_request() {
    for (text, id) in [
        (&br#"[]"#[..], Value::Null),
        (
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            Value::Null,
        ),
        (br#"7"#, Value::Null),
        (br#"{"id":1,"method":"ping"}"#, json!(1)),
        (
            br#"{"jsonrpc":"2.0","id":"a","method":["ping"]}"#,
            json!("a"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":"ping","params":true}"#,
            json!(3),
        ),
        (
            br#"{"jsonrpc":"2.0","method":"x","params":"s"}"#,
            Value::Null,
        ),
        (br#"{"jsonrpc":"2.0","id":4}"#, json!(4)),
        (
            br#"{"jsonrpc":"2.0","id":4,"method":"ping","result":{}}"#,
            json!(4),
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"result":{},"error":{}}"#,
            Value::Null,
        ),
    ] {
        assert_eq!(
            refusal(text),
            (INVALID_REQUEST, id),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn a_request_whose_params_do_not_fit_is_invalid_params_with_its_id() {
    for (text, says) in [
        (
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"recall","arguments":[]}}"#[..],
            "`params.arguments` must be an object",
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            "`params.name`",
        ),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#, "array"),
        (br#"{"jsonrpc":"2.0","id":1,"method":"no/such","params":[1]}"#, "array"),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":7}}"#,
            "resources/read",
        ),
    ] {
        let Screened::Refuse(r) = screened(text) else {
            panic!("{}", String::from_utf8_lossy(text))
        };
        assert_eq!((r.code, &r.id), (INVALID_PARAMS, &json!(1)));
        assert!(r.message.contains(says), "{}", r.message);
    }
}

#[test]
fn requests_notifications_and_responses_rmcp_reads_pass() {
    let p = passed(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1]}}}"#);
    assert_eq!((p.kind, p.opens_session), (Kind::Request, false));
    // An unknown method passes: rmcp answers "method not found" with the id itself.
    assert_eq!(
        passed(br#"{"jsonrpc":"2.0","id":"u","method":"no/such"}"#).kind,
        Kind::Request
    );
    // Null params are no params.
    assert_eq!(
        passed(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":null}"#).kind,
        Kind::Request
    );
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}"#;
    assert!(passed(init).opens_session);
    assert!(!passed(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#).opens_session);
    // A BOM and a carriage return are ignored, as rmcp ignores them.
    assert_eq!(
        passed(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}\r").kind,
        Kind::Request
    );
    for text in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","method":"notifications/odd","params":{"x":1}}"#,
        br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"store"}}"#,
    ] {
        assert_eq!(passed(text).kind, Kind::Notification);
    }
    for text in [
        &br#"{"jsonrpc":"2.0","id":9,"result":{}}"#[..],
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
    ] {
        assert_eq!(passed(text).kind, Kind::Response);
    }
}

#[test]
fn notifications_and_responses_rmcp_cannot_read_are_unserved_not_answered() {
    for text in [
        &br#"{"jsonrpc":"2.0","method":"notifications/progress","params":["odd"]}"#[..],
        br#"{"jsonrpc":"2.0","id":9,"error":"not an error object"}"#,
        br#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
    ] {
        assert!(
            matches!(screened(text), Screened::Unserved(r) if r.id.is_null()),
            "{}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn blank_lines_are_no_message() {
    for text in [&b""[..], b" ", b"\t \r", b"\xEF\xBB\xBF"] {
        assert!(matches!(screened(text), Screened::Blank));
    }
}

#[test]
fn a_refusal_is_one_json_rpc_line() {
    let line = Refusal::new(json!(3), PARSE_ERROR, "m").to_line();
    assert_eq!(line.last(), Some(&b'\n'));
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
    let value: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(
        value,
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32700, "message": "m"}})
    );
}
