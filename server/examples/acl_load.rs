//! ACL mode under load (issue 19): the real binary over streamable HTTP with four clients of
//! different grants, 16 concurrent connections (4 per client) calling a store/recall/list/
//! profile mix on three agents for a bounded time. Every answer's verdict (allowed, or
//! `permission_denied`) is checked against a table written out by hand: the run reports the
//! wrong allows and wrong denies (both must be 0), the calls per second, and the latency of
//! allowed and denied calls. Then the grant check alone (`access::decide`, in process) is
//! timed per call, p50/p99: what ACL mode adds to every call.
//!
//! `cargo run -p cpersona-server --example acl_load -- [--seconds 20] [--connections 16]
//! [--bin PATH]`
//!
//! It uses the hash embedder (`CPERSONA_EMBEDDING_MODE=none`) and never touches a store it did
//! not create.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../tests/it/crash/check.rs"]
mod check;
#[allow(dead_code)]
#[path = "../tests/it/crash/harness.rs"]
mod harness;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use cpersona_server::access::{self, Decision, Principal};
use serde_json::{Map, Value, json};

/// (client, token, grants).
const CLIENTS: &[(&str, &str, &str)] = &[
    ("none", "Nb7Qx2Lm9Vt4Rc8Wz1Hk5Jp3", r#"{"alice": "none"}"#),
    (
        "reader",
        "Rd3Kw8Pz1Xv6Tq9Mb2Ls7Hn4",
        r#"{"alice": "read", "bob": "read"}"#,
    ),
    (
        "writer",
        "Wr5Jt2Yc8Nq1Fx7Gd4Vk9Ms3",
        r#"{"alice": "read-write"}"#,
    ),
    (
        "except",
        "Ex2Vn6Tw9Lq3Jd8Sb5Hz1Kf7",
        r#"{"*": "read-write", "carol": "none"}"#,
    ),
];

/// What each client may do per agent, by hand: `-` none, `r` read, `w` read-write, for
/// alice, bob, carol. No client may sweep (`none`, `reader` and `writer` hold no wildcard;
/// `except`'s weakest row is `none`).
const MAY: &[(&str, &str)] = &[
    ("none", "---"),
    ("reader", "rr-"),
    ("writer", "w--"),
    ("except", "ww-"),
];

const AGENTS: &[&str] = &["alice", "bob", "carol"];

/// The mix: (tool, needs write); `list_memories` without an agent is the sweep.
const TOOLS: &[(&str, bool)] = &[
    ("store", true),
    ("recall", false),
    ("list_memories", false),
    ("get_profile", false),
    ("update_profile", true),
    ("sweep", false),
];

struct Args {
    seconds: u64,
    connections: usize,
    bin: PathBuf,
}

/// One connection's tally.
#[derive(Default)]
struct Tally {
    calls: u64,
    wrong_allows: Vec<String>,
    wrong_denies: Vec<String>,
    errors: u64,
    allowed_ms: Vec<f64>,
    denied_ms: Vec<f64>,
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let acl_path = dir.path().join("acl.json");
    std::fs::write(&acl_path, acl_document().to_string()).unwrap();
    private(&acl_path);
    let db = dir.path().join("acl-load.db");
    let (mut server, url) = start_http(&args.bin, &db, &acl_path);
    println!(
        "acl_load: {} connections (4 clients), {}s, hash embedder, binary {}",
        args.connections,
        args.seconds,
        args.bin.display()
    );
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let started = Instant::now();
    let handles: Vec<_> = (0..args.connections)
        .map(|i| {
            let url = url.clone();
            std::thread::spawn(move || connection(i, &url, deadline))
        })
        .collect();
    let tallies: Vec<Tally> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    let _ = server.kill();
    let _ = server.wait();

    let calls: u64 = tallies.iter().map(|t| t.calls).sum();
    let errors: u64 = tallies.iter().map(|t| t.errors).sum();
    let wrong_allows: Vec<&String> = tallies.iter().flat_map(|t| &t.wrong_allows).collect();
    let wrong_denies: Vec<&String> = tallies.iter().flat_map(|t| &t.wrong_denies).collect();
    let allowed: Vec<f64> = tallies.iter().flat_map(|t| t.allowed_ms.clone()).collect();
    let denied: Vec<f64> = tallies.iter().flat_map(|t| t.denied_ms.clone()).collect();
    println!();
    println!(
        "{:>8} {:>8} {:>12} {:>12} {:>7}",
        "calls", "calls/s", "wrong allow", "wrong deny", "errors"
    );
    println!(
        "{calls:>8} {:>8.0} {:>12} {:>12} {errors:>7}",
        calls as f64 / elapsed,
        wrong_allows.len(),
        wrong_denies.len()
    );
    println!();
    println!(
        "{:>8} {:>8} {:>10} {:>10}",
        "verdict", "calls", "p50 ms", "p99 ms"
    );
    for (name, samples) in [("allowed", &allowed), ("denied", &denied)] {
        println!(
            "{name:>8} {:>8} {:>10.2} {:>10.2}",
            samples.len(),
            percentile(samples, 50.0),
            percentile(samples, 99.0)
        );
    }
    for wrong in wrong_allows.iter().chain(&wrong_denies).take(10) {
        println!("WRONG: {wrong}");
    }
    println!();
    grant_check_cost();
    if !wrong_allows.is_empty() || !wrong_denies.is_empty() {
        std::process::exit(1);
    }
}

fn acl_document() -> Value {
    let clients: Vec<Value> = CLIENTS
        .iter()
        .map(|(id, token, grants)| {
            json!({"client_id": id, "token": token,
                   "grants": serde_json::from_str::<Value>(grants).unwrap()})
        })
        .collect();
    json!({ "clients": clients })
}

#[cfg(unix)]
fn private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[cfg(not(unix))]
fn private(_path: &Path) {}

/// The call a connection makes next: (tool as served, arguments, whether it must be allowed).
fn next_call(rng: &mut harness::Rng, client: &str, n: u64) -> (&'static str, Value, bool) {
    let (tool, writes) = TOOLS[rng.below(TOOLS.len() as u64) as usize];
    let agent_index = rng.below(AGENTS.len() as u64) as usize;
    let agent = AGENTS[agent_index];
    let may = MAY.iter().find(|(c, _)| *c == client).unwrap().1;
    let level = may.as_bytes()[agent_index];
    let allowed = if writes { level == b'w' } else { level != b'-' };
    match tool {
        "store" => (
            "store",
            json!({"agent_id": agent, "content": format!("{client} note {n}")}),
            allowed,
        ),
        "recall" => (
            "recall",
            json!({"agent_id": agent, "query": "note"}),
            allowed,
        ),
        "list_memories" => (
            "list_memories",
            json!({"agent_id": agent, "limit": 5}),
            allowed,
        ),
        "get_profile" => ("get_profile", json!({"agent_id": agent}), allowed),
        "update_profile" => (
            "update_profile",
            json!({"agent_id": agent, "profile": format!("profile {n}")}),
            allowed,
        ),
        _ => ("list_memories", json!({"limit": 5}), false),
    }
}

fn connection(index: usize, url: &str, deadline: Instant) -> Tally {
    let (client, token, _) = CLIENTS[index % CLIENTS.len()];
    let agent = ureq_agent();
    let mut rng = harness::Rng::new(0xAC10 + index as u64);
    let mut tally = Tally::default();
    while Instant::now() < deadline {
        let (tool, args, expected) = next_call(&mut rng, client, tally.calls);
        let message = json!({"jsonrpc": "2.0", "id": tally.calls, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let started = Instant::now();
        let reply = post(&agent, url, token, &message);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        tally.calls += 1;
        let Some(body) = reply else {
            tally.errors += 1;
            continue;
        };
        let denied = body["error"] == "permission_denied";
        let what = || format!("{client} {tool} {args}: {body}");
        match (expected, denied) {
            (true, true) => tally.wrong_denies.push(what()),
            (false, false) => tally.wrong_allows.push(what()),
            (true, false) => tally.allowed_ms.push(ms),
            (false, true) => tally.denied_ms.push(ms),
        }
    }
    tally
}

/// The grant check alone, in process, over the same mix: `access::decide` timed per call.
fn grant_check_cost() {
    let acl = access::parse(&acl_document().to_string(), &|_| None).unwrap();
    let mut rng = harness::Rng::new(42);
    let mut samples = Vec::with_capacity(200_000);
    for n in 0..200_000u64 {
        let (client, ..) = CLIENTS[(n % CLIENTS.len() as u64) as usize];
        let principal = Principal::client(client);
        let (tool, args, _) = next_call(&mut rng, client, n);
        let mut args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
        let started = Instant::now();
        let decision = access::decide(&acl, Some(&principal), tool, &mut args);
        let ns = started.elapsed().as_nanos() as f64;
        std::hint::black_box(matches!(decision, Decision::Allow { .. }));
        samples.push(ns);
    }
    println!(
        "grant check (access::decide, in process, {} calls): p50 {:.0} ns, p99 {:.0} ns",
        samples.len(),
        percentile(&samples, 50.0),
        percentile(&samples, 99.0)
    );
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

fn start_http(bin: &Path, db: &Path, acl: &Path) -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let child = harness::command(bin, db)
        .env("CPERSONA_ACL_FILE", acl)
        .args(["serve", "--http", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = format!("http://{addr}/mcp");
    let agent = ureq_agent();
    let ping = json!({"jsonrpc": "2.0", "id": 0, "method": "ping"});
    let deadline = Instant::now() + Duration::from_secs(60);
    while post(&agent, &url, CLIENTS[0].1, &ping).is_none() {
        assert!(Instant::now() < deadline, "the HTTP server never answered");
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, url)
}

fn ureq_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// One JSON-RPC POST with `token`; a tool call's body (or a ping's result), `None` on any
/// transport or HTTP failure.
fn post(agent: &ureq::Agent, url: &str, token: &str, message: &Value) -> Option<Value> {
    let mut response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .header("Authorization", format!("Bearer {token}"))
        .send(message.to_string())
        .ok()?;
    if response.status().as_u16() != 200 {
        return None;
    }
    let reply: Value = serde_json::from_str(&response.body_mut().read_to_string().ok()?).ok()?;
    match reply["result"]["content"][0]["text"].as_str() {
        Some(text) => serde_json::from_str(text).ok(),
        None => reply.get("result").cloned(),
    }
}

fn parse_args() -> Args {
    let mut args = Args {
        seconds: 20,
        connections: 16,
        bin: PathBuf::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--seconds" => args.seconds = value.parse().unwrap_or_else(|_| usage("--seconds N")),
            "--connections" => {
                args.connections = value.parse().unwrap_or_else(|_| usage("--connections N"));
            }
            "--bin" => args.bin = PathBuf::from(value),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if args.bin.as_os_str().is_empty() {
        args.bin = sibling_binary();
    }
    args
}

fn sibling_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("cpersona"))
        .unwrap_or_default();
    if !bin.exists() {
        usage(&format!(
            "{} is missing; build it or pass --bin",
            bin.display()
        ));
    }
    bin
}

fn usage(problem: &str) -> ! {
    eprintln!("acl_load: {problem}");
    eprintln!("usage: acl_load [--seconds S] [--connections N] [--bin PATH]");
    std::process::exit(2)
}
