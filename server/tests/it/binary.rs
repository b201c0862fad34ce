//! The real `cpersona` binary as a child process: stdio speaks JSON-RPC on stdout and nothing
//! else, HTTP refuses to start without a token, and a bad setting is a start-up error naming
//! the variable. (The real-client Python test lives in `py.rs`.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn cpersona() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cpersona"));
    // Only what a test sets: no inherited CPERSONA_* setting may change the outcome.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CPERSONA_") {
            cmd.env_remove(key);
        }
    }
    let dir = std::env::temp_dir().join("cpersona-it-binary");
    cmd.env("CPERSONA_DB_PATH", dir.join("test.db"));
    cmd
}

#[test]
fn stdio_is_the_default_and_stdout_carries_only_json_rpc() {
    let mut child = cpersona()
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
    let out = cpersona()
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
    let out = cpersona()
        .args(["serve", "--http", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_invalid_setting_is_a_start_up_error_naming_the_variable() {
    let out = cpersona().env("CPERSONA_RRF_K", "many").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("CPERSONA_RRF_K=\"many\" is invalid"),
        "{stderr}"
    );
}

#[test]
fn unwired_subcommands_say_so() {
    for args in [
        &["index", "status"][..],
        &["index", "rebuild", "--table", "memories"],
        &["check"],
        &["export"],
        &["import", "x.jsonl"],
        &["model", "install", "/tmp"],
        &["embed-serve", "--http", "127.0.0.1:0"],
    ] {
        let out = cpersona().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("not available in this build"),
            "{args:?}: {stderr}"
        );
    }
}

/// A lone UTF-16 surrogate cannot become a Rust string: rmcp's stdio codec drops the line
/// before any tool runs (so nothing can be written), and the server keeps serving. The
/// dropped request gets no reply; see the report of issue 5.
#[test]
fn a_lone_surrogate_is_dropped_and_the_server_keeps_serving() {
    let mut child = cpersona()
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
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        ids.push(reply["id"].clone());
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(ids, vec![json!(1), json!(3)]);
}
