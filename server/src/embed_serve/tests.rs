//! embed-serve over a real socket with the hash embedder: the three routes and the 400s.

use std::sync::Arc;

use cpersona_engine::embed::{Embedder, HashEmbedder};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new());
    tokio::spawn(async move {
        let _ = axum::serve(listener, super::router(embedder)).await;
    });
    addr
}

/// One HTTP/1.1 exchange; returns the status and the JSON body.
async fn call(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let status = response[9..12].parse().expect("status");
    let (_, body) = response.split_once("\r\n\r\n").expect("head");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn embed_count_and_capabilities_follow_the_contract() {
    let addr = start().await;
    let (status, body) = call(
        addr,
        "POST",
        "/embed",
        r#"{"texts": ["a b", ""], "token_info": true}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["embeddings"].as_array().expect("embeddings").len(), 2);
    assert_eq!(body["embeddings"][0].as_array().expect("vector").len(), 384);
    assert_eq!(body["dimensions"], 384);
    assert_eq!(body["token_info"][0]["count"], 3);
    let (status, body) = call(addr, "POST", "/count_tokens", r#"{"texts": ["héllo"]}"#).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_info"][0]["window_end_char"], 5);
    let (status, body) = call(addr, "GET", "/capabilities", "").await;
    assert_eq!(status, 200);
    assert_eq!(body["identity"]["model"], "hash-ngram-v1");
    assert_eq!(body["incomplete"], serde_json::json!([]));
    assert!(body["fingerprint"].is_string(), "{body}");
}

#[tokio::test]
async fn bad_requests_answer_400_with_a_reason() {
    let addr = start().await;
    for bad in [
        "not json",
        r#"{"text": ["a"]}"#,
        r#"{"texts": []}"#,
        r#"{"texts": ["a"], "token_info": "yes"}"#,
        r#"{"texts": [1]}"#,
    ] {
        let (status, body) = call(addr, "POST", "/embed", bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["error"].is_string(), "{bad}: {body}");
    }
    let many = format!(r#"{{"texts": [{}]}}"#, vec![r#""x""#; 101].join(","));
    let (status, _) = call(addr, "POST", "/count_tokens", &many).await;
    assert_eq!(status, 400);
}
