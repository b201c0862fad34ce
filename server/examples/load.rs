//! Load on the real binary, two ways, with a table of figures:
//! 1. N concurrent MCP clients over streamable HTTP on loopback (N = 1, 8, 32 by default), a
//!    store/recall mix for a bounded time each: ops, errors, "database is locked" answers,
//!    rows lost (acknowledged stores missing from the file afterwards), p50/p99 latency.
//! 2. Several stdio processes on one database file, each storing as fast as it can: every
//!    write must be acknowledged (busy timeouts and retries inside the server), none lost.
//!
//! `cargo run -p cpersona-server --example load -- [--seconds 10] [--clients 1,8,32]
//! [--stdio-procs 4] [--bin PATH]`
//!
//! It uses the hash embedder (`CPERSONA_EMBEDDING_MODE=none`), so the figures measure the
//! store, the lock discipline and the transport, not a model. It never touches a store it did
//! not create.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../tests/it/crash/check.rs"]
mod check;
#[allow(dead_code)]
#[path = "../tests/it/crash/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use serde_json::{Value, json};

const TOKEN: &str = "load-test-token-0123456789abcdef";

struct Args {
    seconds: u64,
    clients: Vec<usize>,
    stdio_procs: usize,
    bin: PathBuf,
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("load.db");
    println!(
        "load: {}s per step, hash embedder, store/recall 50/50, binary {}",
        args.seconds,
        args.bin.display()
    );
    let (mut server, url) = start_http(&args.bin, &db);
    println!();
    println!("HTTP clients on one server (streamable HTTP, loopback)");
    println!(
        "{:>4} {:>7} {:>8} {:>6} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9}",
        "N",
        "ops",
        "ops/s",
        "errors",
        "locked",
        "lost",
        "store p50",
        "store p99",
        "recall p50",
        "recall p99"
    );
    for &n in &args.clients {
        let step = http_step(&url, &db, n, Duration::from_secs(args.seconds));
        println!(
            "{:>4} {:>7} {:>8.0} {:>6} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9}",
            n,
            step.ops,
            step.ops as f64 / args.seconds as f64,
            step.errors,
            step.locked,
            step.lost,
            ms(percentile(&step.store_ms, 50.0)),
            ms(percentile(&step.store_ms, 99.0)),
            ms(percentile(&step.recall_ms, 50.0)),
            ms(percentile(&step.recall_ms, 99.0)),
        );
        for e in step.samples.iter().take(3) {
            println!("      error sample: {e}");
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    if args.stdio_procs > 0 {
        println!();
        println!("stdio processes on one database file");
        let step = stdio_step(
            &args.bin,
            &db,
            args.stdio_procs,
            Duration::from_secs(args.seconds),
        );
        println!(
            "{:>5} {:>7} {:>8} {:>6} {:>7} {:>5} {:>9} {:>9}",
            "procs", "stores", "stores/s", "errors", "busy", "lost", "p50", "p99"
        );
        println!(
            "{:>5} {:>7} {:>8.0} {:>6} {:>7} {:>5} {:>9} {:>9}",
            args.stdio_procs,
            step.ops,
            step.ops as f64 / args.seconds as f64,
            step.errors,
            step.locked,
            step.lost,
            ms(percentile(&step.store_ms, 50.0)),
            ms(percentile(&step.store_ms, 99.0)),
        );
        for e in step.samples.iter().take(3) {
            println!("      error sample: {e}");
        }
    }
}

fn ms(v: f64) -> String {
    format!("{v:.1}ms")
}

fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

#[derive(Default)]
struct Step {
    ops: usize,
    errors: usize,
    locked: usize,
    lost: usize,
    store_ms: Vec<f64>,
    recall_ms: Vec<f64>,
    samples: Vec<String>,
}

impl Step {
    fn merge(&mut self, other: Step) {
        self.ops += other.ops;
        self.errors += other.errors;
        self.locked += other.locked;
        self.store_ms.extend(other.store_ms);
        self.recall_ms.extend(other.recall_ms);
        self.samples.extend(other.samples);
    }
}

fn start_http(bin: &Path, db: &Path) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = harness::command(bin, db)
        .env("CPERSONA_AUTH_TOKEN", TOKEN)
        .args(["serve", "--http", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://{addr}/mcp");
    let agent = agent();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "0"}}});
        if post(&agent, &url, &init).is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the HTTP server never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, url)
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// One JSON-RPC POST; the reply from a JSON body or the SSE `data:` line.
fn post(agent: &ureq::Agent, url: &str, message: &Value) -> Result<Value, String> {
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Authorization", format!("Bearer {TOKEN}"))
        .send(message.to_string())
        .map_err(|e| format!("transport: {e}"))?;
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("body: {e}"))?;
    if status != 200 {
        return Err(format!("HTTP {status}: {text}"));
    }
    let json_text = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .unwrap_or(text.trim());
    serde_json::from_str(json_text).map_err(|e| format!("reply is not JSON ({e}): {text}"))
}

/// A tool call over HTTP: Ok(body) or Err(message).
fn call(agent: &ureq::Agent, url: &str, id: u64, tool: &str, args: Value) -> Result<Value, String> {
    let reply = post(
        agent,
        url,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
    )?;
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("no content: {reply}"))?;
    let body: Value = serde_json::from_str(text).map_err(|e| format!("{e}: {text}"))?;
    if reply["result"]["isError"] == json!(true) || body["ok"] == json!(false) {
        return Err(body.to_string());
    }
    Ok(body)
}

const WORDS: &[&str] = &[
    "kettle", "harbour", "violet", "granite", "lantern", "orchard", "copper", "meadow", "thunder",
    "saffron", "glacier", "ember", "falcon", "juniper", "quartz", "willow",
];

fn sentence(rng: &mut harness::Rng, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_locked(message: &str) -> bool {
    let m = message.to_lowercase();
    m.contains("locked") || m.contains("busy")
}

fn http_step(url: &str, db: &Path, n: usize, duration: Duration) -> Step {
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(n + 1));
    let handles: Vec<_> = (0..n)
        .map(|t| {
            let (url, stop, barrier) = (url.to_owned(), Arc::clone(&stop), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let agent = agent();
                let agent_id = format!("load-{n}-{t}");
                let mut rng = harness::Rng::new((n * 1000 + t) as u64);
                let mut step = Step::default();
                let mut acked = 0usize;
                barrier.wait();
                let mut id = 10u64;
                while !stop.load(Ordering::Relaxed) {
                    id += 1;
                    let store = rng.below(2) == 0;
                    let started = Instant::now();
                    let result = if store {
                        let content = format!("{agent_id} op {id}: {}", sentence(&mut rng, 12));
                        call(
                            &agent,
                            &url,
                            id,
                            "store",
                            json!({"agent_id": agent_id, "content": content}),
                        )
                    } else {
                        call(
                            &agent,
                            &url,
                            id,
                            "recall",
                            json!({"agent_id": agent_id, "query": sentence(&mut rng, 3)}),
                        )
                    };
                    let elapsed = started.elapsed().as_secs_f64() * 1e3;
                    step.ops += 1;
                    match result {
                        Ok(body) => {
                            if store {
                                step.store_ms.push(elapsed);
                                if body["result"] == "stored" {
                                    acked += 1;
                                }
                            } else {
                                step.recall_ms.push(elapsed);
                            }
                        }
                        Err(e) => {
                            step.errors += 1;
                            step.locked += usize::from(is_locked(&e));
                            if step.samples.len() < 3 {
                                step.samples.push(e.chars().take(200).collect());
                            }
                        }
                    }
                }
                (step, agent_id, acked)
            })
        })
        .collect();
    barrier.wait();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    tally(db, handles.into_iter().map(|h| h.join().unwrap()))
}

fn stdio_step(bin: &Path, db: &Path, procs: usize, duration: Duration) -> Step {
    let barrier = Arc::new(Barrier::new(procs + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..procs)
        .map(|p| {
            let mut child = harness::command(bin, db)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let (barrier, stop) = (Arc::clone(&barrier), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rpc = harness::StdioRpc::connect_later(&mut child)
                    .handshake()
                    .unwrap();
                let agent_id = format!("stdio-{p}");
                let mut rng = harness::Rng::new(p as u64 + 77);
                let mut step = Step::default();
                let mut acked = 0usize;
                barrier.wait();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let content = format!("{agent_id} op {i}: {}", sentence(&mut rng, 12));
                    let started = Instant::now();
                    let result =
                        rpc.call("store", json!({"agent_id": agent_id, "content": content}));
                    step.store_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    step.ops += 1;
                    match result {
                        Some(Ok(_)) => acked += 1,
                        Some(Err(body)) => {
                            let e = body.to_string();
                            step.errors += 1;
                            step.locked += usize::from(is_locked(&e));
                            if step.samples.len() < 3 {
                                step.samples.push(e.chars().take(200).collect());
                            }
                        }
                        None => {
                            step.errors += 1;
                            step.samples.push("the process died".into());
                            break;
                        }
                    }
                }
                drop(rpc);
                let _ = child.wait();
                (step, agent_id, acked)
            })
        })
        .collect();
    barrier.wait();
    std::thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    tally(db, results)
}

/// Merges each worker's step and counts its lost rows: writes it saw acknowledged that the
/// file does not hold for its agent.
fn tally(db: &Path, results: impl IntoIterator<Item = (Step, String, usize)>) -> Step {
    let mut total = Step::default();
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    for (step, agent_id, acked) in results {
        let found: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories WHERE agent_id = ?1",
                [&agent_id],
                |r| r.get(0),
            )
            .unwrap();
        total.lost += acked.saturating_sub(found as usize);
        total.merge(step);
    }
    total
}

fn parse_args() -> Args {
    let mut args = Args {
        seconds: 10,
        clients: vec![1, 8, 32],
        stdio_procs: 4,
        bin: PathBuf::new(),
    };
    let mut bin = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        match arg.as_str() {
            "--seconds" => args.seconds = value.parse().unwrap_or_else(|_| usage("--seconds")),
            "--clients" => {
                args.clients = value
                    .split(',')
                    .map(|n| n.trim().parse().unwrap_or_else(|_| usage("--clients")))
                    .collect();
            }
            "--stdio-procs" => {
                args.stdio_procs = value.parse().unwrap_or_else(|_| usage("--stdio-procs"))
            }
            "--bin" => bin = Some(PathBuf::from(value)),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    args.bin = bin.unwrap_or_else(sibling_binary);
    args
}

/// `target/<profile>/cpersona` beside `target/<profile>/examples/load`; built when missing.
fn sibling_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("cpersona"))
        .unwrap_or_default();
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = std::process::Command::new(cargo)
            .args(["build", "-p", "cpersona-server", "--bin", "cpersona"])
            .status()
            .is_ok_and(|s| s.success());
        if !ok || !bin.exists() {
            usage(&format!("{} is missing; pass --bin", bin.display()));
        }
    }
    bin
}

fn usage(problem: &str) -> ! {
    eprintln!("load: {problem}");
    eprintln!("usage: load [--seconds S] [--clients 1,8,32] [--stdio-procs P] [--bin PATH]");
    std::process::exit(2)
}
