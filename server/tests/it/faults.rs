//! Faults around the real binary: an HTTP embedder that is down, slow, answers the wrong width
//! or non-finite numbers (writes still land, queued and persisted across a restart; recall runs
//! lexically with an advisory; nothing crashes), a disk that fills up (RLIMIT_FSIZE on the
//! child: a clear error, nothing half-written, the file whole afterwards), and a database the
//! process may not write (a clear start-up error, the file untouched).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

use crate::crash::harness::{StdioRpc, command};

/// How the fake embedder behaves for the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Mode {
    Up = 0,
    /// Accepts and drops the connection (a crashed or restarting server).
    Down = 1,
    /// 503 with a body.
    Unavailable = 2,
    /// Answers after the client's timeout.
    Slow = 3,
    WrongDims = 4,
    /// A number beyond f32.
    NonFinite = 5,
    /// A literal `NaN`, which is not JSON.
    NanLiteral = 6,
}

const DIM: usize = 8;

/// A tiny HTTP/1.1 server on CPersona's embedding contract, good for one request per
/// connection.
struct FakeEmbedder {
    url: String,
    mode: Arc<AtomicU8>,
}

impl FakeEmbedder {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/embed", listener.local_addr().unwrap());
        let mode = Arc::new(AtomicU8::new(Mode::Up as u8));
        let shared = Arc::clone(&mode);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mode = shared.load(Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = serve_one(stream, mode);
                });
            }
        });
        Self { url, mode }
    }

    fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }
}

fn serve_one(stream: TcpStream, mode: u8) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n_texts = request["texts"].as_array().map_or(0, Vec::len);
    let path = request_line.split(' ').nth(1).unwrap_or("");
    let (status, text) = if mode == Mode::Down as u8 {
        return Ok(()); // dropped: the client sees a reset connection
    } else if path.ends_with("/capabilities") {
        (
            200,
            json!({"identity": {"model": "fake-embedder", "dimensions": DIM, "window": 512}})
                .to_string(),
        )
    } else if path.ends_with("/count_tokens") {
        (200, json!({"token_info": null}).to_string())
    } else if mode == Mode::Unavailable as u8 {
        (503, "overloaded".to_owned())
    } else {
        if mode == Mode::Slow as u8 {
            std::thread::sleep(Duration::from_millis(1_600));
        }
        let width = if mode == Mode::WrongDims as u8 {
            DIM - 1
        } else {
            DIM
        };
        let vectors: Vec<String> = (0..n_texts)
            .map(|i| {
                let mut v: Vec<String> = (0..width)
                    .map(|j| format!("{}", 0.1 + (i * 7 + j) as f64 * 0.01))
                    .collect();
                if mode == Mode::NonFinite as u8 {
                    v[0] = "1e39".into();
                } else if mode == Mode::NanLiteral as u8 {
                    v[0] = "NaN".into();
                }
                format!("[{}]", v.join(","))
            })
            .collect();
        (200, format!("{{\"embeddings\":[{}]}}", vectors.join(",")))
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )?;
    stream.flush()
}

struct Server {
    child: Child,
    rpc: StdioRpc,
}

impl Server {
    fn spawn(db: &Path, env: &[(&str, &str)]) -> Self {
        let mut cmd = command(Path::new(env!("CARGO_BIN_EXE_cpersona")), db);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let rpc = StdioRpc::connect_later(&mut child)
            .handshake()
            .expect("handshake");
        Self { child, rpc }
    }

    /// (refused, body) of one tool call; panics when the server stopped answering.
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let reply = self
            .rpc
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .unwrap_or_else(|| panic!("{tool}: the server died"));
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        (
            reply["result"]["isError"] == json!(true),
            serde_json::from_str(text).unwrap(),
        )
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rows(db: &Path) -> Vec<(i64, String, bool)> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.prepare("SELECT id, content, embedding IS NOT NULL FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn queued(db: &Path) -> i64 {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    conn.query_row("SELECT count(*) FROM embedding_queue", [], |r| r.get(0))
        .unwrap()
}

fn integrity_ok(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    conn.execute(
        "INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)",
        [],
    )
    .unwrap();
}

#[test]
fn a_failing_embedder_never_loses_a_write_and_recall_degrades_to_lexical() {
    let embedder = FakeEmbedder::start();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("faults.db");
    let env = [
        ("CPERSONA_EMBEDDING_MODE", "http"),
        ("CPERSONA_EMBEDDING_URL", embedder.url.as_str()),
        ("CPERSONA_EMBEDDING_TIMEOUT_SECS", "1"),
    ];
    let mut server = Server::spawn(&db, &env);
    let (refused, body) = server.call(
        "store",
        json!({"agent_id": "a", "content": "healthy row about kettles"}),
    );
    assert!(!refused, "{body}");
    let faults = [
        (Mode::Down, "dropped connection row about harbours"),
        (Mode::Unavailable, "overloaded server row about lanterns"),
        (Mode::Slow, "slow server row about orchards"),
        (Mode::WrongDims, "narrow vector row about meadows"),
        (Mode::NonFinite, "overflowing vector row about glaciers"),
        (Mode::NanLiteral, "not a number row about falcons"),
    ];
    for (mode, content) in faults {
        embedder.set(mode);
        let (refused, body) = server.call("store", json!({"agent_id": "a", "content": content}));
        assert!(!refused, "{mode:?}: {body}");
        assert_eq!(body["result"], "stored", "{mode:?}: {body}");
    }
    // Recall while the embedder is down: the lexical arms find the row, and the response says
    // why semantic recall is missing.
    embedder.set(Mode::Down);
    let (refused, body) = server.call(
        "recall",
        json!({"agent_id": "a", "query": "lanterns overloaded"}),
    );
    assert!(!refused, "{body}");
    let messages = body["messages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["content"].as_str().unwrap_or("").contains("lanterns")),
        "{body}"
    );
    assert!(body["advisory"].is_object(), "no advisory: {body}");
    let (_, health) = server.call("check_health", json!({}));
    assert!(health.to_string().contains("degraded"), "{health}");
    server.kill();
    // Killed with six rows waiting: the queue is in the file.
    let stored = rows(&db);
    assert_eq!(stored.len(), 7);
    assert_eq!(stored.iter().filter(|r| !r.2).count(), 6, "{stored:?}");
    assert_eq!(queued(&db), 6);
    integrity_ok(&db);
    // Back up and restarted: rows never tried drain on their own; rows the old process
    // already retried wait out the retry delay (30 s), so the operator's `fix` drains now.
    embedder.set(Mode::Up);
    let mut server = Server::spawn(&db, &env);
    let (refused, body) = server.call("check_health", json!({"fix": true}));
    assert!(!refused, "{body}");
    server.kill();
    assert_eq!(queued(&db), 0, "the queue did not drain after the restart");
    assert!(rows(&db).iter().all(|r| r.2), "{:?}", rows(&db));
    integrity_ok(&db);
}

#[test]
fn an_embedder_down_at_start_up_is_a_clear_start_up_error() {
    let embedder = FakeEmbedder::start();
    embedder.set(Mode::Down);
    let dir = tempfile::tempdir().unwrap();
    let out = command(
        Path::new(env!("CARGO_BIN_EXE_cpersona")),
        &dir.path().join("x.db"),
    )
    .env("CPERSONA_EMBEDDING_MODE", "http")
    .env("CPERSONA_EMBEDDING_URL", &embedder.url)
    .env("CPERSONA_EMBEDDING_TIMEOUT_SECS", "1")
    .stdin(Stdio::null())
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot start the embedder"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// The binary under `ulimit -f` with SIGXFSZ ignored, so a write past the limit fails with
/// EFBIG (what a full disk looks like to SQLite) instead of killing the process.
fn spawn_size_limited(db: &Path, blocks: u64) -> Server {
    let bin = env!("CARGO_BIN_EXE_cpersona");
    let mut cmd = command(Path::new("/bin/sh"), db);
    cmd.args([
        "-c",
        &format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\""),
        bin,
    ]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rpc = StdioRpc::connect_later(&mut child)
        .handshake()
        .expect("handshake");
    Server { child, rpc }
}

#[test]
fn a_full_disk_is_a_clear_error_and_leaves_the_file_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("full.db");
    // Create and migrate the store without a limit, then give it a little room.
    Server::spawn(&db, &[]).kill();
    let size = std::fs::metadata(&db).unwrap().len();
    let mut server = spawn_size_limited(&db, size / 512 + 300);
    let mut acked = Vec::new();
    let mut refusal = None;
    for i in 0..400 {
        let content = format!("row {i} {}", "filler text about a full disk ".repeat(400));
        let (refused, body) = server.call("store", json!({"agent_id": "a", "content": content}));
        if refused {
            refusal = Some(body);
            break;
        }
        assert_eq!(body["result"], "stored", "{body}");
        acked.push(body["id"].as_i64().unwrap());
    }
    let refusal = refusal.expect("the size limit never bit");
    assert_eq!(refusal["ok"], false, "{refusal}");
    let message = refusal["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        message.contains("full")
            || message.contains("disk")
            || message.contains("i/o")
            || message.contains("large"),
        "unclear error: {refusal}"
    );
    // Still answering reads.
    let (refused, body) = server.call("list_memories", json!({"agent_id": "a", "limit": 5}));
    assert!(!refused, "{body}");
    server.kill();
    // Restarted without the limit: every acknowledged row, nothing else, the file whole.
    let mut server = Server::spawn(&db, &[]);
    let (refused, body) = server.call(
        "store",
        json!({"agent_id": "a", "content": "after the disk was freed"}),
    );
    assert!(!refused, "{body}");
    server.kill();
    let ids: Vec<i64> = rows(&db).into_iter().map(|r| r.0).collect();
    assert_eq!(ids.len(), acked.len() + 1, "acked {acked:?}, found {ids:?}");
    assert!(acked.iter().all(|id| ids.contains(id)));
    integrity_ok(&db);
}

/// Root ignores file modes, so the read-only case mounts a read-only tmpfs when it can;
/// an unprivileged run gets the same effect from `chmod`.
#[test]
fn a_read_only_database_is_a_clear_error_and_stays_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ro");
    std::fs::create_dir(&store).unwrap();
    let db = store.join("ro.db");
    let mut server = Server::spawn(&db, &[]);
    let (refused, body) = server.call(
        "store",
        json!({"agent_id": "a", "content": "written before the lock"}),
    );
    assert!(!refused, "{body}");
    drop(server.rpc);
    let _ = server.child.wait();
    let before = std::fs::read(&db).unwrap();
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let mounted = is_root
        && std::process::Command::new("mount")
            .args(["--bind", "-o", "ro"])
            .arg(&store)
            .arg(&store)
            .status()
            .is_ok_and(|s| s.success())
        && std::process::Command::new("mount")
            .args(["-o", "remount,bind,ro"])
            .arg(&store)
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        if is_root {
            eprintln!("read-only case: cannot mount as root here; chmod cannot bite root either");
            return;
        }
        for p in [&db, &store] {
            let mut perms = std::fs::metadata(p).unwrap().permissions();
            perms.set_readonly(true);
            std::fs::set_permissions(p, perms).unwrap();
        }
    }
    let out = command(Path::new(env!("CARGO_BIN_EXE_cpersona")), &db)
        .arg("check")
        .output();
    let mut child = command(Path::new(env!("CARGO_BIN_EXE_cpersona")), &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rpc = StdioRpc::connect_later(&mut child).handshake();
    let outcome = rpc.map(|mut rpc| {
        rpc.request(
            "tools/call",
            json!({"name": "store", "arguments": {"agent_id": "a", "content": "must not land"}}),
        )
    });
    let _ = child.kill();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    let _ = child.wait();
    if mounted {
        let _ = std::process::Command::new("umount").arg(&store).status();
    } else {
        for p in [&store, &db] {
            let mut perms = std::fs::metadata(p).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(p, perms).unwrap();
        }
    }
    // Either the server refuses to start with a message, or it starts and refuses the write.
    match outcome {
        None => assert!(
            stderr.contains("readonly")
                || stderr.contains("read-only")
                || stderr.contains("cannot open"),
            "{stderr}"
        ),
        Some(reply) => {
            let reply = reply.expect("a reply");
            let text = reply["result"]["content"][0]["text"].as_str().unwrap();
            let body: Value = serde_json::from_str(text).unwrap();
            assert_eq!(body["ok"], false, "{body}");
        }
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    let check = out.unwrap();
    assert!(!String::from_utf8_lossy(&check.stderr).contains("panicked"));
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the read-only file changed"
    );
    assert_eq!(rows(&db).len(), 1);
    integrity_ok(&db);
}
