//! `cpersona proxy` through the real binary: a client on its stdio reaches a real
//! `cpersona serve --http` (same tools, a store then a recall that finds it); a wrong token, an
//! unreachable remote, a hung one and a body that is no JSON-RPC answer each request with an
//! error naming what happened; many requests at once come back under their own ids within the
//! in-flight bound; against a scripted remote (`proxy/fake_remote.rs`) the session id, the
//! protocol version, event streams and the closing `DELETE`. The npm client
//! `@modelcontextprotocol/inspector-cli` drives it in `proxy/inspector.rs`.
// See: issue 19

mod fake_remote;
mod inspector;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use self::fake_remote::{Answer, FakeRemote, Received};
use crate::transport::client::{ANSWER_TIMEOUT, RawHttp, TOKEN};

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cpersona"))
}

/// `cpersona proxy` with only the given `CPERSONA_*` settings (none inherited).
pub(crate) fn proxy_command(settings: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CPERSONA_") {
            cmd.env_remove(key);
        }
    }
    cmd.arg("proxy").envs(settings.iter().copied());
    cmd
}

/// A running proxy: lines written to its stdin, every stdout line read on a thread (each must
/// be JSON), stderr kept.
struct ProxyChild {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl ProxyChild {
    fn start(settings: &[(&str, &str)]) -> ProxyChild {
        let mut child = proxy_command(settings)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        ProxyChild {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next stdout line as JSON; panics on a line that is not, or none in time.
    fn next(&self, within: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(within)
            .unwrap_or_else(|_| panic!("no line from the proxy within {within:?}"));
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// Sends a request and returns the answer with its id (no other line may come first).
    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let reply = self.next(ANSWER_TIMEOUT);
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    fn initialize(&mut self) -> Value {
        let reply = self.request(
            json!(0),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "proxy-it", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    /// One tool call; its `isError` flag and JSON body.
    fn call(&mut self, id: u64, tool: &str, args: Value) -> (bool, Value) {
        let reply = self.request(
            json!(id),
            "tools/call",
            json!({"name": tool, "arguments": args}),
        );
        tool_body(&reply)
    }

    /// Closes stdin; the exit status, the stdout lines left, and stderr.
    fn finish(mut self) -> (ExitStatus, Vec<String>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the proxy did not exit at EOF");
            std::thread::sleep(Duration::from_millis(20));
        };
        let rest = self.lines.try_iter().collect();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (status, rest, stderr)
    }
}

impl Drop for ProxyChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tool_body(reply: &Value) -> (bool, Value) {
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no tool result: {reply}"));
    (
        reply["result"]["isError"] == true,
        serde_json::from_str(text).unwrap(),
    )
}

/// The server's own tool list, asked over HTTP without the proxy, by name.
fn tool_names_of(served: &RawHttp) -> BTreeSet<String> {
    served.initialize();
    let list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"});
    let reply = served.post(list.to_string().as_bytes()).unwrap();
    names(&reply.json.unwrap())
}

fn names(tools_list: &Value) -> BTreeSet<String> {
    tools_list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {tools_list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A remote URL nothing listens on.
fn closed_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    url
}

fn error_message(reply: &Value) -> &str {
    reply["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {reply}"))
}

#[test]
fn a_stdio_client_stores_and_recalls_on_a_shared_server_through_the_proxy() {
    let served = RawHttp::spawn(bin());
    let mut proxy = ProxyChild::start(&[
        ("CPERSONA_REMOTE_URL", served.url.as_str()),
        ("CPERSONA_AUTH_TOKEN", TOKEN),
    ]);
    let init = proxy.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "cpersona", "{init}");
    let listed = proxy.request(json!("tools"), "tools/list", json!({}));
    let expected = tool_names_of(&served);
    assert!(expected.contains("store") && expected.contains("recall"));
    assert_eq!(names(&listed), expected);

    let content = "the shared notebook lives on the staging host under /srv/notes";
    let (failed, stored) = proxy.call(1, "store", json!({"agent_id": "a", "content": content}));
    assert!(!failed, "{stored}");
    let id = stored["id"].as_i64().unwrap();
    let (failed, recalled) = proxy.call(
        2,
        "recall",
        json!({"agent_id": "a", "query": "shared notebook staging host"}),
    );
    assert!(!failed, "{recalled}");
    let found = recalled["messages"].as_array().unwrap();
    assert!(
        found
            .iter()
            .any(|m| m["ref"] == format!("mem:{id}") && m["content"] == content),
        "{recalled}"
    );

    let (status, rest, stderr) = proxy.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(rest.is_empty(), "stray lines: {rest:?}");
    // The stored row is in the server's store: the proxy holds nothing of its own.
    let rows: i64 = rusqlite::Connection::open(&served.db)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM memories WHERE content = ?1",
            [content],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 1);
}

#[test]
fn a_wrong_token_answers_every_request_with_the_401() {
    let served = RawHttp::spawn(bin());
    let mut proxy = ProxyChild::start(&[
        ("CPERSONA_REMOTE_URL", served.url.as_str()),
        ("CPERSONA_AUTH_TOKEN", "not-the-token-0123456789abcdefXYZ"),
    ]);
    let init = proxy.request(
        json!("init"),
        "initialize",
        json!({"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "proxy-it", "version": "0"}}),
    );
    let message = error_message(&init);
    assert!(message.contains("refused the token (401)"), "{message}");
    assert!(message.contains(&served.url), "{message}");
    let listed = proxy.request(json!(7), "tools/list", json!({}));
    assert!(error_message(&listed).contains("401"), "{listed}");
    let (status, rest, stderr) = proxy.finish();
    assert!(status.success(), "{status}: {stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(stderr.contains("refused the token (401)"), "{stderr}");
    assert!(
        !stderr.contains("not-the-token"),
        "the token leaked into the log: {stderr}"
    );
}

#[test]
fn an_unreachable_remote_answers_with_an_error_at_once() {
    let url = closed_url();
    let mut proxy = ProxyChild::start(&[("CPERSONA_REMOTE_URL", url.as_str())]);
    let started = Instant::now();
    let reply = proxy.request(json!(1), "initialize", json!({}));
    let message = error_message(&reply);
    assert!(
        message.contains(&format!("remote {url} is unreachable")),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    // A notification gets no answer, even when it cannot be relayed; the next request does.
    proxy.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let reply = proxy.request(json!(2), "ping", json!({}));
    assert!(error_message(&reply).contains("unreachable"), "{reply}");
    let (status, rest, _) = proxy.finish();
    assert!(status.success());
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn many_requests_at_once_each_come_back_under_their_own_id() {
    const CALLS: u64 = 40;
    let served = RawHttp::spawn(bin());
    let mut proxy = ProxyChild::start(&[
        ("CPERSONA_REMOTE_URL", served.url.as_str()),
        ("CPERSONA_AUTH_TOKEN", TOKEN),
        ("CPERSONA_PROXY_MAX_INFLIGHT", "4"),
    ]);
    proxy.initialize();
    // Every request written before any answer is read.
    for i in 0..CALLS {
        proxy.send(&json!({"jsonrpc": "2.0", "id": format!("call-{i}"), "method": "tools/call",
            "params": {"name": "store", "arguments": {"agent_id": "many", "content": format!("fact number {i}")}}}));
    }
    let mut ids = BTreeSet::new();
    for _ in 0..CALLS {
        let reply = proxy.next(ANSWER_TIMEOUT);
        let (failed, body) = tool_body(&reply);
        assert!(!failed, "{body}");
        assert!(
            ids.insert(reply["id"].as_str().unwrap().to_owned()),
            "twice: {reply}"
        );
    }
    let expected: BTreeSet<String> = (0..CALLS).map(|i| format!("call-{i}")).collect();
    assert_eq!(ids, expected);
    let (status, rest, stderr) = proxy.finish();
    assert!(status.success(), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    let contents: BTreeSet<String> = {
        let db = rusqlite::Connection::open(&served.db).unwrap();
        let mut rows = db
            .prepare("SELECT content FROM memories WHERE agent_id = 'many'")
            .unwrap();
        rows.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let written: BTreeSet<String> = (0..CALLS).map(|i| format!("fact number {i}")).collect();
    assert_eq!(contents, written);
}

/// A remote that keeps sessions (as CPersona's does): the session id and the protocol
/// version from `initialize` on every later request, answers as event streams, `DELETE` at
/// the end; and what the proxy answers for a hung remote and a body that is not JSON-RPC.
#[test]
fn against_a_session_remote_ids_streams_errors_and_the_closing_delete() {
    let remote = FakeRemote::start(|request: &Received| {
        let Some(body) = &request.body else {
            return Answer::with_type(200, "text/plain", "bye".into());
        };
        let id = body["id"].clone();
        let sse = |events: &[Value]| {
            let stream: String = events
                .iter()
                .map(|e| format!("id: x\ndata: {e}\n\n"))
                .collect();
            Answer::with_type(200, "text/event-stream", format!(": priming\n\n{stream}"))
        };
        match body["method"].as_str() {
            Some("initialize") => {
                let mut answer = sse(&[json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-03-26", "capabilities": {},
                    "serverInfo": {"name": "fake", "version": "1"}}})]);
                answer.headers.push(("Mcp-Session-Id", "session-42".into()));
                answer
            }
            Some("tools/list") => sse(&[
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "t", "progress": 1}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}),
            ]),
            Some("hang") => Answer {
                delay: Duration::from_secs(8),
                ..Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            },
            Some("html") => Answer::with_type(200, "text/html", "<html>Sign in</html>".into()),
            Some("slow") => Answer {
                delay: Duration::from_millis(300),
                ..Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            },
            _ => Answer::accepted(),
        }
    });
    let mut proxy = ProxyChild::start(&[
        ("CPERSONA_REMOTE_URL", remote.url.as_str()),
        ("CPERSONA_AUTH_TOKEN", "fake-token"),
        ("CPERSONA_PROXY_TIMEOUT_SECS", "2"),
        ("CPERSONA_PROXY_MAX_INFLIGHT", "3"),
    ]);
    let init = proxy.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "fake", "{init}");
    // The progress notification of the stream comes first, then the answer.
    proxy.send(&json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
    let first = proxy.next(ANSWER_TIMEOUT);
    assert_eq!(first["method"], "notifications/progress", "{first}");
    let listed = proxy.next(ANSWER_TIMEOUT);
    assert_eq!(
        listed,
        json!({"jsonrpc": "2.0", "id": "list", "result": {"tools": []}})
    );

    // Nine slow requests with room for three at a time: all answered, never more than three.
    for i in 0..9 {
        proxy.send(&json!({"jsonrpc": "2.0", "id": i, "method": "slow"}));
    }
    let answered: BTreeSet<i64> = (0..9)
        .map(|_| proxy.next(ANSWER_TIMEOUT)["id"].as_i64().unwrap())
        .collect();
    assert_eq!(answered, (0..9).collect());
    assert_eq!(remote.most_at_once(), 3);

    // (The hung request comes after: its remote thread stays busy past the proxy's timeout.)
    let hung = proxy.request(json!("hang"), "hang", json!({}));
    assert!(
        error_message(&hung).contains("did not answer within 2 s"),
        "{hung}"
    );
    let html = proxy.request(json!("html"), "html", json!({}));
    let message = error_message(&html);
    assert!(
        message.contains("not JSON-RPC (text/html)") && message.contains("Sign in"),
        "{message}"
    );

    let (status, rest, stderr) = proxy.finish();
    assert!(status.success(), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    let received = remote.received();
    let (first, later) = received.split_first().unwrap();
    assert_eq!(first.body.as_ref().unwrap()["method"], "initialize");
    assert!(!first.headers.contains_key("mcp-session-id"));
    for request in later {
        assert_eq!(
            request.headers.get("mcp-session-id").map(String::as_str),
            Some("session-42"),
            "{request:?}"
        );
        assert_eq!(
            request
                .headers
                .get("mcp-protocol-version")
                .map(String::as_str),
            Some("2025-03-26"),
            "{request:?}"
        );
    }
    for request in &received {
        assert_eq!(
            request.headers.get("authorization").map(String::as_str),
            Some("Bearer fake-token")
        );
    }
    let last = received.last().unwrap();
    assert_eq!(last.method, "DELETE", "{last:?}");
    let posts = received.iter().filter(|r| r.method == "POST").count();
    // initialize, initialized, tools/list, nine slow, hang, html.
    assert_eq!(posts, 14, "{received:?}");
}

/// A remote that restarts (forgets its sessions): the next request gets 404; the proxy opens
/// a new session with the client's `initialize` replayed and sends the request again, so the
/// client never sees the restart.
#[test]
fn a_remote_that_forgot_the_session_gets_a_new_one_and_the_request_again() {
    // Sessions opened so far, and the one the remote knows.
    let state = Arc::new(Mutex::new((0u32, None::<String>)));
    let remote = FakeRemote::start(move |request: &Received| {
        let mut state = state.lock().unwrap();
        let body = request.body.clone().unwrap_or(Value::Null);
        let id = body["id"].clone();
        match body["method"].as_str() {
            Some("initialize") => {
                state.0 += 1;
                let session = format!("s-{}", state.0);
                state.1 = Some(session.clone());
                let mut answer = Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "serverInfo": {"name": "fake", "version": "1"}}}));
                answer.headers.push(("Mcp-Session-Id", session));
                answer
            }
            _ if request.headers.get("mcp-session-id") != state.1.as_ref() => {
                Answer::with_type(404, "text/plain", "Session not found".into())
            }
            Some("restart") => {
                state.1 = None;
                Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            }
            Some(_) if id.is_null() => Answer::accepted(),
            _ => Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {"session": state.1}})),
        }
    });
    let mut proxy = ProxyChild::start(&[("CPERSONA_REMOTE_URL", remote.url.as_str())]);
    proxy.initialize();
    let before = proxy.request(json!(1), "who", json!({}));
    assert_eq!(before["result"]["session"], "s-1", "{before}");
    proxy.request(json!(2), "restart", json!({}));
    let after = proxy.request(json!(3), "who", json!({}));
    assert_eq!(after["result"]["session"], "s-2", "{after}");
    let (status, rest, stderr) = proxy.finish();
    assert!(status.success(), "{stderr}");
    assert!(rest.is_empty(), "{rest:?}");
    assert!(stderr.contains("opened a new one"), "{stderr}");
    let initializes: Vec<Value> = remote
        .received()
        .into_iter()
        .filter_map(|r| r.body)
        .filter(|b| b["method"] == "initialize")
        .collect();
    assert_eq!(initializes.len(), 2);
    assert_eq!(
        initializes[0], initializes[1],
        "the client's initialize, replayed"
    );
}

fn run_proxy(settings: &[(&str, &str)], args: &[&str]) -> Output {
    proxy_command(settings)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn start_up_errors_are_clear_and_write_nothing_on_stdout() {
    let out = run_proxy(&[], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("CPERSONA_REMOTE_URL must be set"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    let out = run_proxy(&[("CPERSONA_REMOTE_URL", "ftp://example.com/mcp")], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("must be an http:// or https:// URL"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());

    // --url wins over the variable; with stdin already at its end the proxy exits at once.
    let out = run_proxy(
        &[("CPERSONA_REMOTE_URL", "ftp://example.com/mcp")],
        &["--url", "http://127.0.0.1:9/mcp"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());

    // A token for plain http to another machine is warned about (nothing is sent: no input).
    let out = run_proxy(
        &[
            ("CPERSONA_REMOTE_URL", "http://192.0.2.1:8787/mcp"),
            ("CPERSONA_AUTH_TOKEN", "t"),
        ],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("over plain http"), "{stderr}");
}

#[test]
fn a_line_that_is_no_json_is_answered_here_and_the_relay_goes_on() {
    let remote = FakeRemote::start(|request: &Received| {
        let id = request
            .body
            .as_ref()
            .map_or(Value::Null, |b| b["id"].clone());
        Answer::json(&json!({"jsonrpc": "2.0", "id": id, "result": {}}))
    });
    let mut proxy = ProxyChild::start(&[("CPERSONA_REMOTE_URL", remote.url.as_str())]);
    writeln!(
        proxy.stdin.as_mut().unwrap(),
        "{{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": "
    )
    .unwrap();
    let refused = proxy.next(ANSWER_TIMEOUT);
    assert_eq!(refused["error"]["code"], -32700, "{refused}");
    assert_eq!(refused["id"], 5, "{refused}");
    let reply = proxy.request(json!(6), "ping", json!({}));
    assert_eq!(reply["result"], json!({}));
    let (status, _, _) = proxy.finish();
    assert!(status.success());
    assert_eq!(remote.received().len(), 1, "only the ping was relayed");
}
