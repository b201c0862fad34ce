//! The HTTP and OpenAI embedders against a scripted HTTP/1.1 server on 127.0.0.1: normal
//! answers, down, slow, wrong dimension, NaN, 500-then-success, and health turning degraded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::http::sibling_url;
use super::super::*;

/// One request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    authorization: Option<String>,
    body: serde_json::Value,
}

/// What the server answers: status, body, and a delay before answering.
type Reply = (u16, String, Duration);

struct Server {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Serves each connection with `reply(call_index, request)` until the test ends.
    fn start(reply: impl Fn(usize, &Seen) -> Reply + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen_in = Arc::clone(&seen);
        let calls = AtomicUsize::new(0);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                let call = calls.fetch_add(1, Ordering::SeqCst);
                seen_in.lock().expect("lock").push(request.clone());
                let (status, body, delay) = reply(call, &request);
                std::thread::sleep(delay);
                let response = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Self { addr, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut length = 0;
    let mut authorization = None;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    Some(Seen {
        method,
        path,
        authorization,
        body,
    })
}

fn ok(body: &str) -> Reply {
    (200, body.to_owned(), Duration::ZERO)
}

fn fast_options() -> RemoteOptions {
    RemoteOptions {
        timeout: Duration::from_millis(500),
        max_retries: 2,
        backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        max_batch: 2,
        degraded_after: 2,
    }
}

/// Answers `/embed` with `[k+1, 0, 0]`-shaped unnormalised vectors of width 3.
fn embed_reply(request: &Seen) -> Reply {
    let n = request.body["texts"].as_array().map_or(0, Vec::len);
    let vectors: Vec<String> = (0..n).map(|k| format!("[{}, 4, 0]", 3 * (k + 1))).collect();
    ok(&format!(
        r#"{{"embeddings": [{}], "dimensions": 3}}"#,
        vectors.join(",")
    ))
}

fn http_with_dim(server_url: String, options: RemoteOptions) -> HttpEmbedder {
    HttpEmbedder::connect(&server_url, Some("m".to_owned()), Some(3), None, options)
        .expect("no network at construction")
}

#[test]
fn sibling_urls_keep_the_query() {
    assert_eq!(
        sibling_url("http://h:1/v1/embed?k=1", "count_tokens").as_deref(),
        Some("http://h:1/v1/count_tokens?k=1")
    );
    assert_eq!(sibling_url("http://h:1/encode", "capabilities"), None);
}

#[test]
fn http_discovers_identity_splits_batches_and_normalises() {
    let server = Server::start(|_, request| match request.path.as_str() {
        "/capabilities" => ok(
            r#"{"identity": {"provider": "x", "model": "tiny", "dimensions": 3,
            "window": 128, "pooling": "mean", "normalized": false}, "fingerprint": "1:abc",
            "incomplete": []}"#,
        ),
        _ => embed_reply(request),
    });
    let embedder = HttpEmbedder::connect(&server.url("/embed"), None, None, None, fast_options())
        .expect("connect");
    let identity = embedder.identity();
    assert_eq!(
        (
            identity.model_id.as_str(),
            identity.dim,
            identity.window_tokens
        ),
        ("tiny", 3, 128)
    );
    assert_eq!(embedder.fingerprint().as_deref(), Some("1:abc"));
    let vectors = embedder.embed(&["a", "b", "c"]).expect("embed");
    assert_eq!(vectors.len(), 3);
    // Third text went alone in the second request, so it got the first vector shape again.
    assert!((vectors[0][0] - 0.6).abs() < 1e-6 && (vectors[0][1] - 0.8).abs() < 1e-6);
    assert!((vectors[2][0] - 0.6).abs() < 1e-6, "{:?}", vectors[2]);
    let embeds: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.path == "/embed")
        .collect();
    assert_eq!(
        embeds.len(),
        2,
        "max_batch 2 splits 3 texts into 2 requests"
    );
    assert_eq!(embeds[1].body, serde_json::json!({"texts": ["c"]}));
    assert_eq!(embedder.health(), EmbedHealth::Healthy);
}

#[test]
fn http_down_is_unavailable_and_turns_degraded_after_two_failures() {
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}/embed");
    let err = HttpEmbedder::connect(&url, None, None, None, fast_options())
        .expect_err("discovery needs the server");
    assert!(matches!(err, EmbedError::Unavailable { .. }), "{err}");
    let embedder = http_with_dim(url, fast_options());
    assert!(embedder.embed(&["x"]).is_err());
    assert_eq!(
        embedder.health(),
        EmbedHealth::Healthy,
        "one failure is not a fault"
    );
    let err = embedder.embed(&["x"]).expect_err("still down");
    assert!(matches!(err, EmbedError::Unavailable { .. }), "{err}");
    match embedder.health() {
        EmbedHealth::Degraded {
            severity, evidence, ..
        } => {
            assert_eq!(severity, Severity::Fault);
            assert!(evidence.expect("evidence").contains(&port.to_string()));
        }
        EmbedHealth::Healthy => panic!("two failures in a row must degrade"),
    }
}

#[test]
fn http_slow_server_times_out_within_the_bound() {
    let server = Server::start(|_, request| {
        let (status, body, _) = embed_reply(request);
        (status, body, Duration::from_millis(1500))
    });
    let options = RemoteOptions {
        timeout: Duration::from_millis(200),
        max_retries: 0,
        ..fast_options()
    };
    let embedder = http_with_dim(server.url("/embed"), options);
    let started = Instant::now();
    let err = embedder.embed(&["x"]).expect_err("too slow");
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
    assert!(err.to_string().to_lowercase().contains("timeout"), "{err}");
}

#[test]
fn http_refuses_wrong_dimension_nan_and_overflow() {
    let server = Server::start(|call, _| match call {
        0 => ok(r#"{"embeddings": [[1, 2, 3, 4]]}"#),
        1 => ok(r#"{"embeddings": [[NaN, 1, 2]]}"#),
        2 => ok(r#"{"embeddings": [[1e39, 1, 2]]}"#),
        3 => ok(r#"{"embeddings": [[0, 0, 0]]}"#),
        _ => ok(r#"{"embeddings": [[1, 0, 0], [1, 0, 0]]}"#),
    });
    let embedder = http_with_dim(server.url("/embed"), fast_options());
    let err = embedder.embed(&["x"]).expect_err("4 != 3");
    assert!(
        matches!(
            err,
            EmbedError::WrongDimension {
                expected: 3,
                received: 4
            }
        ),
        "{err}"
    );
    let err = embedder.embed(&["x"]).expect_err("NaN is not json");
    assert!(matches!(err, EmbedError::InvalidResponse { .. }), "{err}");
    let err = embedder.embed(&["x"]).expect_err("overflows f32");
    assert!(matches!(err, EmbedError::NonFinite { index: 0 }), "{err}");
    let err = embedder.embed(&["x"]).expect_err("zero vector");
    assert!(matches!(err, EmbedError::InvalidResponse { .. }), "{err}");
    let err = embedder
        .embed(&["x"])
        .expect_err("two vectors for one text");
    assert!(
        err.to_string().contains("2 embeddings for 1 texts"),
        "{err}"
    );
    assert!(matches!(embedder.health(), EmbedHealth::Degraded { .. }));
}

#[test]
fn http_retries_a_500_then_succeeds_but_not_a_400() {
    let server = Server::start(|call, request| match call {
        0 => (500, r#"{"error": "warming up"}"#.to_owned(), Duration::ZERO),
        1 => embed_reply(request),
        _ => (400, r#"{"error": "bad"}"#.to_owned(), Duration::ZERO),
    });
    let embedder = http_with_dim(server.url("/embed"), fast_options());
    let vectors = embedder.embed(&["x"]).expect("retried");
    assert_eq!(vectors.len(), 1);
    assert_eq!(server.seen().len(), 2);
    let err = embedder.embed(&["x"]).expect_err("400 is the caller's");
    assert!(err.to_string().contains("400"), "{err}");
    assert_eq!(server.seen().len(), 3, "a 400 is not retried");
}

#[test]
fn http_count_tokens_validates_entries() {
    let server = Server::start(|call, _| match call {
        0 => ok(
            r#"{"token_info": [{"count": 3, "window": 8, "truncated": false,
            "window_end_char": 5}, {"count": 9, "window": 8, "truncated": true,
            "window_end_char": 4}]}"#,
        ),
        1 => ok(r#"{"token_info": null}"#),
        _ => ok(
            r#"{"token_info": [{"count": 9, "window": 8, "truncated": false,
            "window_end_char": 5}]}"#,
        ),
    });
    let embedder = http_with_dim(server.url("/embed"), fast_options());
    let infos = embedder
        .count_tokens(&["hello", "long text"])
        .expect("count")
        .expect("counted");
    assert_eq!(infos[1].window_end_char, 4);
    assert!(infos[1].truncated && !infos[0].truncated);
    assert_eq!(server.seen()[0].path, "/count_tokens");
    assert_eq!(embedder.count_tokens(&["x"]).expect("null"), None);
    let err = embedder
        .count_tokens(&["hello"])
        .expect_err("count > window but not truncated");
    assert!(matches!(err, EmbedError::InvalidResponse { .. }), "{err}");
}

#[test]
fn openai_places_by_index_sends_the_key_and_probes_the_dimension() {
    let server = Server::start(|_, request| {
        if request.authorization.as_deref() != Some("Bearer sk-test") {
            return (401, r#"{"error": "no key"}"#.to_owned(), Duration::ZERO);
        }
        let n = request.body["input"].as_array().map_or(0, Vec::len);
        // Answer in reverse order: the client must place by index.
        let items: Vec<String> = (0..n)
            .rev()
            .map(|i| format!(r#"{{"index": {i}, "embedding": [{}, 1]}}"#, i + 1))
            .collect();
        ok(&format!(
            r#"{{"data": [{}], "model": "m"}}"#,
            items.join(",")
        ))
    });
    let embedder = OpenAiEmbedder::connect(
        &server.url("/v1/embeddings"),
        "nomic-embed-text",
        Some("sk-test".to_owned()),
        None,
        2048,
        fast_options(),
    )
    .expect("probe learns the dimension");
    assert_eq!(embedder.identity().dim, 2);
    let vectors = embedder.embed(&["a", "b", "c"]).expect("embed");
    let first_ratio = vectors[0][0] / vectors[0][1];
    let third_ratio = vectors[2][0] / vectors[2][1];
    assert!((first_ratio - 1.0).abs() < 1e-6, "{vectors:?}");
    assert!((third_ratio - 1.0).abs() < 1e-6, "{vectors:?}");
    assert!(
        (vectors[1][0] / vectors[1][1] - 2.0).abs() < 1e-6,
        "{vectors:?}"
    );
    let seen = server.seen();
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[1].body["model"], "nomic-embed-text");
    let err = OpenAiEmbedder::connect(
        &server.url("/v1/embeddings"),
        "m",
        None,
        None,
        512,
        fast_options(),
    )
    .expect_err("no key, 401");
    assert!(err.to_string().contains("401"), "{err}");
}

#[test]
fn openai_refuses_duplicate_or_missing_indices() {
    let server = Server::start(|_, _| {
        ok(r#"{"data": [{"index": 0, "embedding": [1, 0]}, {"index": 0, "embedding": [0, 1]}]}"#)
    });
    let embedder = OpenAiEmbedder::connect(
        &server.url("/v1/embeddings"),
        "m",
        None,
        Some(2),
        512,
        fast_options(),
    )
    .expect("no probe with a known dimension");
    let err = embedder.embed(&["a", "b"]).expect_err("index 0 twice");
    assert!(err.to_string().contains("twice"), "{err}");
}
