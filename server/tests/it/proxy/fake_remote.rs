//! A scripted streamable HTTP remote for the proxy's tests, on an ephemeral 127.0.0.1 port:
//! each request is read whole (request line, headers, a `Content-Length` body), recorded, and
//! answered by the test's handler on a connection of its own (`Connection: close`), so it can
//! answer with an event stream, a body that is no JSON, or not at all within the timeout.
//! It records how many requests were being answered at once, to check the proxy's bound.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request as the remote received it.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub(crate) method: String,
    /// Header names lower-case.
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Option<Value>,
}

/// What the handler answers.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: String,
    /// Wait this long before answering (a slow or hung remote).
    pub(crate) delay: Duration,
}

impl Answer {
    pub(crate) fn json(body: &Value) -> Answer {
        Answer::with_type(200, "application/json", body.to_string())
    }

    pub(crate) fn with_type(status: u16, content_type: &str, body: String) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body,
            delay: Duration::ZERO,
        }
    }

    pub(crate) fn accepted() -> Answer {
        Answer {
            status: 202,
            headers: Vec::new(),
            body: String::new(),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&Received) -> Answer + Send + Sync;

/// The remote, serving until the test ends.
pub(crate) struct FakeRemote {
    pub(crate) url: String,
    received: Arc<Mutex<Vec<Received>>>,
    most_at_once: Arc<AtomicUsize>,
}

impl FakeRemote {
    pub(crate) fn start(handler: impl Fn(&Received) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let most_at_once = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let now = Arc::new(AtomicUsize::new(0));
        let (log, most) = (Arc::clone(&received), Arc::clone(&most_at_once));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (handler, log, now, most) = (
                    Arc::clone(&handler),
                    Arc::clone(&log),
                    Arc::clone(&now),
                    Arc::clone(&most),
                );
                std::thread::spawn(move || {
                    let Some(request) = read_request(&stream) else {
                        return;
                    };
                    log.lock().unwrap().push(request.clone());
                    let at_once = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(at_once, Ordering::SeqCst);
                    let answer = handler(&request);
                    std::thread::sleep(answer.delay);
                    now.fetch_sub(1, Ordering::SeqCst);
                    write_answer(stream, &answer);
                });
            }
        });
        FakeRemote {
            url,
            received,
            most_at_once,
        }
    }

    /// Every request received so far, in order of arrival.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The most requests that were being answered at one time.
    pub(crate) fn most_at_once(&self) -> usize {
        self.most_at_once.load(Ordering::SeqCst)
    }
}

fn read_request(stream: &TcpStream) -> Option<Received> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let method = line.split_whitespace().next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Received {
        method,
        headers,
        body: serde_json::from_slice(&body).ok(),
    })
}

fn write_answer(mut stream: TcpStream, answer: &Answer) {
    let mut head = format!(
        "HTTP/1.1 {} Fake\r\nConnection: close\r\nContent-Length: {}\r\n",
        answer.status,
        answer.body.len()
    );
    for (name, value) in &answer.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(answer.body.as_bytes());
    let _ = stream.flush();
}
