//! The streamable HTTP transport over a real socket on 127.0.0.1 (ephemeral port): initialize,
//! list and call tools with the right token; 401 with nothing written on a missing, wrong or
//! same-length token; foreign browser Origins and oversize bodies refused.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use cpersona_server::mcp::McpServer;
use cpersona_server::transport::http::{self, HttpSecurity, HttpStartError, WeakToken};
use serde_json::{Value, json};

use crate::fake::FakeBackend;

const TOKEN: &str = "s3cret-token-for-tests-0123456789";

struct Served {
    url: String,
    backend: Arc<FakeBackend>,
}

async fn serve(max_body_bytes: usize) -> Served {
    let backend = Arc::new(FakeBackend::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bound: SocketAddr = listener.local_addr().unwrap();
    let security = HttpSecurity {
        acl: None,
        auth_token: Some(TOKEN.to_owned()),
        max_body_bytes,
        extra_allowed_origins: vec!["https://app.example.com:443".to_owned()],
        extra_allowed_hosts: vec![],
    };
    let app = http::router(McpServer::new(backend.clone()), &security, bound);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Served {
        url: format!("http://{bound}/mcp"),
        backend,
    }
}

/// POST a JSON-RPC message; returns (status, parsed JSON body or Null, WWW-Authenticate).
async fn post(
    url: &str,
    headers: Vec<(&'static str, String)>,
    body: String,
) -> (u16, Value, Option<String>) {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let mut response = request.send(body).expect("HTTP round trip");
        let status = response.status().as_u16();
        let www = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.body_mut().read_to_string().unwrap_or_default();
        // JSON, or an SSE stream whose `data:` line carries the JSON-RPC message.
        let json_text = text
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .unwrap_or(text.trim())
            .to_owned();
        (
            status,
            serde_json::from_str(&json_text).unwrap_or(Value::Null),
            www,
        )
    })
    .await
    .unwrap()
}

fn bearer(token: &str) -> Vec<(&'static str, String)> {
    vec![("Authorization", format!("Bearer {token}"))]
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize() -> String {
    rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}),
    )
}

fn store_call() -> String {
    rpc(
        3,
        "tools/call",
        json!({"name": "store", "arguments": {"agent_id": "a", "content": "written over HTTP"}}),
    )
}

#[tokio::test]
async fn initialize_list_and_call_with_the_token() {
    let s = serve(4 << 20).await;
    let (status, body, _) = post(&s.url, bearer(TOKEN), initialize()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "cpersona");
    assert!(
        body["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("archive_episode")
    );

    let (status, body, _) = post(&s.url, bearer(TOKEN), rpc(2, "tools/list", json!({}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["tools"].as_array().unwrap().len(), 34);

    let (status, body, _) = post(&s.url, bearer(TOKEN), store_call()).await;
    assert_eq!(status, 200, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    let stored: Value = serde_json::from_str(text).unwrap();
    assert_eq!(stored["result"], "stored");
    assert_eq!(s.backend.len(), 1);
}

#[tokio::test]
async fn missing_wrong_and_same_length_tokens_get_401_and_write_nothing() {
    let s = serve(4 << 20).await;
    let mut same_length = TOKEN.to_owned().into_bytes();
    same_length[0] ^= 1;
    let same_length = String::from_utf8(same_length).unwrap();
    let mut last_byte = TOKEN.to_owned().into_bytes();
    *last_byte.last_mut().unwrap() ^= 1;
    let last_byte = String::from_utf8(last_byte).unwrap();
    let attempts: Vec<(&str, Vec<(&'static str, String)>)> = vec![
        ("missing", vec![]),
        ("wrong", bearer("wrong")),
        ("empty", bearer("")),
        ("same length, first byte differs", bearer(&same_length)),
        ("same length, last byte differs", bearer(&last_byte)),
        ("prefix", bearer(&TOKEN[..TOKEN.len() - 1])),
        ("longer", bearer(&format!("{TOKEN}x"))),
        (
            "basic scheme",
            vec![("Authorization", format!("Basic {TOKEN}"))],
        ),
        (
            "lowercase scheme",
            vec![("Authorization", format!("bearer{TOKEN}"))],
        ),
    ];
    for (what, headers) in attempts {
        for body in [initialize(), store_call()] {
            let (status, reply, www) = post(&s.url, headers.clone(), body).await;
            assert_eq!(status, 401, "{what}");
            assert_eq!(reply, json!({"error": "unauthorized"}), "{what}");
            assert_eq!(www.as_deref(), Some("Bearer"), "{what}");
        }
    }
    assert_eq!(s.backend.calls.load(Ordering::SeqCst), 0);
    assert_eq!(s.backend.len(), 0);
}

#[tokio::test]
async fn foreign_browser_origins_are_refused_local_ones_pass() {
    let s = serve(4 << 20).await;
    let with_origin = |origin: &str| {
        let mut h = bearer(TOKEN);
        h.push(("Origin", origin.to_owned()));
        h
    };
    let (status, _, _) = post(&s.url, with_origin("https://evil.example"), store_call()).await;
    assert_eq!(status, 403);
    assert_eq!(s.backend.len(), 0);
    for origin in [
        "http://localhost:5173",
        "http://127.0.0.1:8080",
        "https://app.example.com",
    ] {
        let (status, body, _) = post(&s.url, with_origin(origin), initialize()).await;
        assert_eq!(status, 200, "{origin}: {body}");
    }
}

#[tokio::test]
async fn oversize_bodies_are_refused() {
    let s = serve(64 * 1024).await;
    let big = rpc(
        4,
        "tools/call",
        json!({"name": "store", "arguments": {"agent_id": "a", "content": "x".repeat(100_000)}}),
    );
    let (status, _, _) = post(&s.url, bearer(TOKEN), big).await;
    assert_eq!(status, 413);
    assert_eq!(s.backend.len(), 0);
}

#[test]
fn http_refuses_to_start_without_a_token_unless_told() {
    assert!(matches!(
        http::resolve_auth(None, false),
        Err(HttpStartError::NoToken)
    ));
    assert!(matches!(http::resolve_auth(None, true), Ok(None)));
    assert!(matches!(
        http::resolve_auth(Some("short".into()), false),
        Err(HttpStartError::WeakToken(WeakToken::Short { len: 5 }))
    ));
    // See: issue 19
    for weak in ["aaaaaaaaaaaaaaaa", "abcdefghabcdefgh", "éééééééééééééééé"] {
        assert!(
            matches!(
                http::resolve_auth(Some(weak.into()), false),
                Err(HttpStartError::WeakToken(_))
            ),
            "{weak}"
        );
    }
    assert_eq!(
        http::resolve_auth(Some(TOKEN.into()), false)
            .unwrap()
            .as_deref(),
        Some(TOKEN)
    );
    let message = HttpStartError::NoToken.to_string();
    assert!(
        message.contains("CPERSONA_AUTH_TOKEN")
            && message.contains("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP")
    );
}
