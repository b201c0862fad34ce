//! Raw clients of the real `cpersona` binary for the transport tests, the transport fuzz and
//! `examples/transport_fuzz.rs`: a stdio client that writes arbitrary bytes as one line and
//! reads every stdout line (each must be JSON-RPC), an HTTP client that POSTs arbitrary bytes
//! to `serve --http` on 127.0.0.1 and keeps status and body, and a fingerprint of the store
//! (row counts, change-log head and a hash of every stored text) to prove a refused call wrote
//! nothing.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use crate::crash::harness::command;

/// How long any one answer may take before the client calls it missing.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// What one stdout line was: a JSON value, or the text that is not JSON.
pub(crate) type StdoutLine = Result<Value, String>;

/// The binary on stdio over a fresh store in its own folder, no handshake sent yet.
pub(crate) struct RawStdio {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<StdoutLine>,
    pub(crate) db: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl RawStdio {
    /// Spawn `bin` over a fresh temporary store.
    pub(crate) fn spawn(bin: &Path) -> RawStdio {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = RawStdio::spawn_in(bin, dir.path());
        raw._dir = Some(dir);
        raw
    }

    /// Spawn `bin` over a fresh temporary store with these `CPERSONA_*` settings.
    pub(crate) fn spawn_with(bin: &Path, settings: &[(&str, &str)]) -> RawStdio {
        let dir = tempfile::tempdir().unwrap();
        let mut raw = RawStdio::spawn_in_with(bin, dir.path(), settings);
        raw._dir = Some(dir);
        raw
    }

    /// Spawn `bin` over a store in `dir` (kept by the caller).
    pub(crate) fn spawn_in(bin: &Path, dir: &Path) -> RawStdio {
        RawStdio::spawn_in_with(bin, dir, &[])
    }

    fn spawn_in_with(bin: &Path, dir: &Path, settings: &[(&str, &str)]) -> RawStdio {
        let db = dir.join("transport.db");
        let mut child = command(bin, &db)
            .envs(settings.iter().copied())
            .env("CPERSONA_EXPORT_DIR", dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        // A reader thread, so a client that writes much never deadlocks on a full stdout pipe.
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let parsed = serde_json::from_slice::<Value>(&line)
                    .map_err(|_| String::from_utf8_lossy(&line).into_owned());
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        RawStdio {
            child,
            stdin,
            lines,
            db,
            _dir: None,
        }
    }

    /// Write `bytes` and a newline; false when the pipe is closed (the process is gone).
    pub(crate) fn send(&mut self, bytes: &[u8]) -> bool {
        let Some(stdin) = self.stdin.as_mut() else {
            return false;
        };
        stdin.write_all(bytes).is_ok() && stdin.write_all(b"\n").is_ok() && stdin.flush().is_ok()
    }

    /// The next stdout line, or `None` when none came within `timeout` or stdout closed.
    pub(crate) fn next_line(&self, timeout: Duration) -> Option<StdoutLine> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// The next stdout line that is a JSON-RPC message with this `id`; every other line read
    /// on the way is handed back in `others`.
    pub(crate) fn reply_to(&self, id: &Value, others: &mut Vec<StdoutLine>) -> Option<Value> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left)? {
                Ok(reply) if reply.get("id") == Some(id) => return Some(reply),
                other => others.push(other),
            }
        }
    }

    /// `initialize` and `notifications/initialized`; panics when the server does not answer.
    pub(crate) fn handshake(&mut self) {
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "transport-it", "version": "0"}}});
        assert!(self.send(init.to_string().as_bytes()), "stdin closed");
        let mut others = Vec::new();
        let reply = self.reply_to(&json!("init"), &mut others);
        assert!(
            reply.is_some_and(|r| r["result"]["serverInfo"]["name"] == "cpersona"),
            "no initialize answer; other lines: {others:?}"
        );
        assert!(others.is_empty(), "stray lines: {others:?}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(self.send(initialized.to_string().as_bytes()));
    }

    /// A `ping` with `id`, and its answer (`None`: no answer, the server is gone or hangs).
    pub(crate) fn ping(&mut self, id: &str, others: &mut Vec<StdoutLine>) -> Option<Value> {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        if !self.send(ping.to_string().as_bytes()) {
            return None;
        }
        self.reply_to(&json!(id), others)
    }

    /// Close stdin, read stdout to its end, and wait for the exit.
    pub(crate) fn close(mut self) -> (ExitStatus, Vec<StdoutLine>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(line) = self.next_line(ANSWER_TIMEOUT) {
            rest.push(line);
        }
        let status = self.child.wait().unwrap();
        (status, rest)
    }

    /// Whether the process is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for RawStdio {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The bearer token the HTTP clients use.
pub(crate) const TOKEN: &str = "transport-test-token-0123456789abcdef";

/// One HTTP exchange: the status, the content type and the body (`json` when it parses).
#[derive(Debug)]
pub(crate) struct HttpReply {
    pub(crate) status: u16,
    pub(crate) content_type: String,
    /// Every response header, names lower-case.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
    pub(crate) json: Option<Value>,
}

impl HttpReply {
    /// The value of header `name` (lower-case), when present.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one HTTP answer whole: status, content type, headers, body (JSON when it parses).
fn read_reply(mut response: ureq::http::Response<ureq::Body>) -> Option<HttpReply> {
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                value.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut bytes = Vec::new();
    response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .reader()
        .read_to_end(&mut bytes)
        .ok()?;
    let body = String::from_utf8_lossy(&bytes).into_owned();
    // JSON, or an SSE stream whose `data:` line carries the JSON-RPC message.
    let json_text = body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .unwrap_or(body.trim());
    let json = serde_json::from_str(json_text).ok();
    Some(HttpReply {
        status,
        content_type,
        headers,
        body,
        json,
    })
}

/// The binary serving streamable HTTP on an ephemeral 127.0.0.1 port over a fresh store.
pub(crate) struct RawHttp {
    child: Child,
    pub(crate) url: String,
    pub(crate) db: PathBuf,
    agent: ureq::Agent,
    _dir: tempfile::TempDir,
}

/// The headers a well-behaved client sends (token, JSON body, both answer types, version).
pub(crate) fn good_headers() -> Vec<(&'static str, String)> {
    vec![
        ("Authorization", format!("Bearer {TOKEN}")),
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2025-06-18".to_owned()),
    ]
}

impl RawHttp {
    /// Spawn `bin serve --http 127.0.0.1:0` and read the bound address from its log.
    pub(crate) fn spawn(bin: &Path) -> RawHttp {
        RawHttp::spawn_with(bin, &[])
    }

    /// As [`RawHttp::spawn`], with more environment variables (overriding the token too).
    pub(crate) fn spawn_with(bin: &Path, env: &[(&str, &str)]) -> RawHttp {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("transport.db");
        let mut cmd = command(bin, &db);
        cmd.env("CPERSONA_EXPORT_DIR", dir.path())
            .env("CPERSONA_AUTH_TOKEN", TOKEN)
            .env("RUST_LOG", "info");
        // The caller's settings win over the defaults above.
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .args(["serve", "--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        // Read the log until the bound address shows, then keep draining it so the server
        // never blocks on a full stderr pipe.
        std::thread::spawn(move || {
            let mut stderr = BufReader::new(stderr);
            let mut tx = Some(tx);
            loop {
                let mut line = String::new();
                match stderr.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if let Some(at) = line.find("streamable HTTP at http://")
                    && let Some(tx) = tx.take()
                {
                    let rest = &line[at + "streamable HTTP at http://".len()..];
                    let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
                    let _ = tx.send(format!("http://{addr}"));
                }
            }
        });
        let url = rx
            .recv_timeout(ANSWER_TIMEOUT)
            .unwrap_or_else(|_| panic!("the HTTP server never logged its address"));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(ANSWER_TIMEOUT))
            .build()
            .into();
        RawHttp {
            child,
            url,
            db,
            agent,
            _dir: dir,
        }
    }

    /// POST `body` with `headers`; `None` when no HTTP answer came (the server is gone).
    pub(crate) fn post_with(
        &self,
        headers: &[(&'static str, String)],
        body: &[u8],
    ) -> Option<HttpReply> {
        let mut request = self.agent.post(&self.url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let response = request.send(body).ok()?;
        read_reply(response)
    }

    /// `OPTIONS` with `headers` (no body), as a browser's preflight.
    pub(crate) fn options(&self, headers: &[(&'static str, String)]) -> Option<HttpReply> {
        let mut request = self.agent.options(&self.url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        read_reply(request.call().ok()?)
    }

    /// POST `body` as a well-behaved client would.
    pub(crate) fn post(&self, body: &[u8]) -> Option<HttpReply> {
        self.post_with(&good_headers(), body)
    }

    /// One `tools/call` with the good headers plus `extra`; the tool's body and `isError`.
    pub(crate) fn call_tool(
        &self,
        extra: &[(&'static str, String)],
        tool: &str,
        args: &Value,
    ) -> (bool, Value) {
        let mut headers = good_headers();
        headers.extend(extra.iter().cloned());
        let call = json!({"jsonrpc": "2.0", "id": tool, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let reply = self
            .post_with(&headers, call.to_string().as_bytes())
            .unwrap_or_else(|| panic!("no answer to {tool}"));
        assert_eq!(reply.status, 200, "{tool}: {reply:?}");
        let json = reply
            .json
            .unwrap_or_else(|| panic!("{tool}: {}", reply.body));
        let result = &json["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool} {args}: {json}"));
        (
            result["isError"] == true,
            serde_json::from_str(text).unwrap(),
        )
    }

    /// `initialize`; panics when the server does not answer it.
    pub(crate) fn initialize(&self) {
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "transport-it", "version": "0"}}});
        let reply = self.post(init.to_string().as_bytes()).unwrap();
        assert_eq!(reply.status, 200, "{reply:?}");
    }

    /// A `ping`; true when it was answered with an empty result.
    pub(crate) fn ping(&self) -> bool {
        let ping = json!({"jsonrpc": "2.0", "id": "ping", "method": "ping"});
        self.post(ping.to_string().as_bytes())
            .and_then(|r| r.json)
            .is_some_and(|j| j["id"] == "ping" && j["result"].is_object())
    }

    /// Whether the process is still running.
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM (the server shuts down gracefully) and wait for the exit.
    pub(crate) fn stop(mut self) -> ExitStatus {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                return self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RawHttp {
    fn drop(&mut self) {
        if self.is_running() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Everything a write could change: each table's row count, the change-log head, and a hash
/// of every stored text with its owner (memories, episodes, profiles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(crate) counts: Vec<(String, i64)>,
    pub(crate) change_log_head: i64,
    pub(crate) text_hash: u64,
}

/// A read-only view of the store a server writes.
pub(crate) struct StoreView {
    conn: Connection,
}

impl StoreView {
    /// Open `db` read-only; `None` until the server has created it.
    pub(crate) fn open(db: &Path) -> Option<StoreView> {
        let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
        Some(StoreView { conn })
    }

    /// The store's fingerprint now.
    pub(crate) fn fingerprint(&self) -> Fingerprint {
        let tables: Vec<String> = self
            .conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<Vec<String>, _>>()
            .unwrap()
            .into_iter()
            // FTS5's b-tree pages: serve's index upkeep merges them in the background without
            // changing a row (the `*_fts` and `*_fts_docsize` counts still cover its content).
            .filter(|t| !t.ends_with("_fts_data") && !t.ends_with("_fts_idx"))
            .collect();
        let counts = tables
            .into_iter()
            .map(|t| {
                let n = self
                    .conn
                    .query_row(&format!("SELECT count(*) FROM \"{t}\""), [], |r| r.get(0))
                    .unwrap();
                (t, n)
            })
            .collect();
        let change_log_head = self
            .conn
            .query_row("SELECT coalesce(max(seq), 0) FROM change_log", [], |r| {
                r.get(0)
            })
            .unwrap();
        let mut hasher = DefaultHasher::new();
        for sql in [
            "SELECT id, agent_id, content FROM memories ORDER BY id",
            "SELECT id, agent_id, summary FROM episodes ORDER BY id",
            "SELECT id, agent_id, content FROM profiles ORDER BY id",
        ] {
            let mut statement = self.conn.prepare(sql).unwrap();
            let rows = statement
                .query_map([], |r| {
                    Ok((
                        r.get::<_, rusqlite::types::Value>(0)?,
                        r.get::<_, rusqlite::types::Value>(1)?,
                        r.get::<_, rusqlite::types::Value>(2)?,
                    ))
                })
                .unwrap();
            for row in rows {
                format!("{:?}", row.unwrap()).hash(&mut hasher);
            }
        }
        Fingerprint {
            counts,
            change_log_head,
            text_hash: hasher.finish(),
        }
    }
}
