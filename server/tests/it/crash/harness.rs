//! The crash-safety harness, shared by the CI test (`tests/it/crash.rs`, a short seeded run)
//! and the soak example (`examples/crash_soak.rs`, many iterations). It drives the real
//! `cpersona` binary over stdio with a minimal JSON-RPC writer, streams acknowledged writes
//! (store, update, delete, import batches) while an `index rebuild` may run beside it, kills
//! both with SIGKILL at a seeded random moment, restarts, and checks the file: every
//! acknowledged write present, the one write in flight either whole or absent, `PRAGMA
//! integrity_check` ok, FTS5 and the change log in step with the rows, and the generation file
//! either the old bytes or a file that opens and validates.
//!
//! It never shares state between runs and never retries a failed check: a failure is a finding.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::check::{Account, Op, check_generation, restart_check, verify};

/// The one agent the harness writes as.
pub(crate) const AGENT: &str = "crash";

/// What a run is asked to do.
#[derive(Clone, Debug)]
pub(crate) struct CrashConfig {
    /// The `cpersona` binary.
    pub(crate) bin: PathBuf,
    /// The folder the store lives in (created if missing).
    pub(crate) dir: PathBuf,
    /// Seed of every random choice (op mix, kill moment, contents).
    pub(crate) seed: u64,
    /// Kill/restart cycles.
    pub(crate) iterations: usize,
    /// The kill lands uniformly in `0..max_kill_ms` after the spawn.
    pub(crate) max_kill_ms: u64,
    /// Print one line per iteration to stderr.
    pub(crate) verbose: bool,
}

/// What a run saw.
#[derive(Clone, Default)]
pub(crate) struct CrashReport {
    pub(crate) iterations: usize,
    /// Writes the server acknowledged (each import counts once).
    pub(crate) acked_writes: usize,
    /// Kills that landed with a write sent and not yet acknowledged.
    pub(crate) in_flight_kills: usize,
    /// Of those, how many had landed (whole) anyway.
    pub(crate) in_flight_landed: usize,
    /// Kills that landed while `index rebuild` was running.
    pub(crate) rebuild_kills: usize,
    /// Rebuilds that finished before the kill (a new generation was published).
    pub(crate) rebuilds_finished: usize,
    /// Generation files opened and validated after a kill.
    pub(crate) generations_validated: usize,
    /// Rows in the store at the end.
    pub(crate) final_rows: usize,
    /// Every broken invariant, with its iteration.
    pub(crate) failures: Vec<String>,
    /// The rows the store must hold at the end (id → content).
    pub(crate) model: BTreeMap<i64, String>,
}

impl std::fmt::Debug for CrashReport {
    /// Everything but the model, which can be megabytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrashReport")
            .field("iterations", &self.iterations)
            .field("acked_writes", &self.acked_writes)
            .field("in_flight_kills", &self.in_flight_kills)
            .field("in_flight_landed", &self.in_flight_landed)
            .field("rebuild_kills", &self.rebuild_kills)
            .field("rebuilds_finished", &self.rebuilds_finished)
            .field("generations_validated", &self.generations_validated)
            .field("final_rows", &self.final_rows)
            .field("failures", &self.failures)
            .finish_non_exhaustive()
    }
}

/// splitmix64: enough randomness for choices, no dependency.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

const WORDS: &[&str] = &[
    "kettle", "harbour", "violet", "granite", "lantern", "orchard", "copper", "meadow", "thunder",
    "saffron", "glacier", "ember", "falcon", "juniper", "quartz", "willow",
];

/// A content that no other op reuses: a unique token the FTS check searches for, some
/// words, and sometimes a long tail so a write spans many pages.
fn content(rng: &mut Rng, token: &str) -> String {
    let mut text = format!("{token} note:");
    for _ in 0..(3 + rng.below(8)) {
        text.push(' ');
        text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    if rng.below(6) == 0 {
        let n = 2_000 + rng.below(12_000) as usize;
        let word = WORDS[rng.below(WORDS.len() as u64) as usize];
        while text.len() < n {
            text.push(' ');
            text.push_str(word);
        }
    }
    text
}

/// The binary with only the settings the harness chooses.
pub(crate) fn command(bin: &Path, db: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CPERSONA_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("CPERSONA_DB_PATH", db);
    // The import files are written beside the database: that folder is the export folder.
    if let Some(folder) = db.parent() {
        cmd.env("CPERSONA_EXPORT_DIR", folder);
    }
    cmd.env("CPERSONA_EMBEDDING_MODE", "none");
    cmd.env_remove("RUST_LOG");
    cmd
}

/// A minimal JSON-RPC client on a child's stdio: one request line, one reply line.
pub(crate) struct StdioRpc {
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl StdioRpc {
    fn send(&mut self, message: &Value) -> Option<()> {
        writeln!(self.stdin, "{message}").ok()?;
        self.stdin.flush().ok()
    }

    /// One request and its reply; `None` when the pipe broke (the child was killed).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line).ok()? == 0 {
                return None;
            }
            let reply: Value = serde_json::from_str(&line).ok()?;
            if reply["id"] == json!(id) {
                return Some(reply);
            }
        }
    }

    /// A tool call: `Some(Ok(body))` acknowledged, `Some(Err(body))` refused, `None` no reply.
    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Option<Result<Value, Value>> {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": args}))?;
        let text = reply["result"]["content"][0]["text"].as_str()?;
        let body: Value = serde_json::from_str(text).ok()?;
        if reply["result"]["isError"] == json!(true) || body["ok"] == json!(false) {
            Some(Err(body))
        } else {
            Some(Ok(body))
        }
    }
}

/// Runs the whole seeded campaign; failures are collected, never panicked.
pub(crate) fn run(config: &CrashConfig) -> CrashReport {
    std::fs::create_dir_all(&config.dir).ok();
    let db = config.dir.join("crash.db");
    let gen_path = PathBuf::from(format!("{}.memories.gen", db.display()));
    let mut rng = Rng::new(config.seed);
    let mut report = CrashReport::default();
    let mut model: BTreeMap<i64, String> = BTreeMap::new();
    let mut serial = 0u64;
    for iteration in 0..config.iterations {
        report.iterations += 1;
        // A fresh store every STORE_ITERATIONS kills, so a long soak stays fast: each check
        // reads every row, and the store only grows.
        if iteration > 0 && iteration % STORE_ITERATIONS == 0 {
            for suffix in ["", "-wal", "-shm", ".memories.gen", ".episodes.gen"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
            }
            model.clear();
        }
        let old_gen = std::fs::read(&gen_path).ok();
        let mut server = match command(&config.bin, &db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(err) => {
                report
                    .failures
                    .push(format!("#{iteration}: spawn failed: {err}"));
                break;
            }
        };
        let spawned = Instant::now();
        let mut rebuild = (rng.below(3) == 0).then(|| {
            command(&config.bin, &db)
                .args(["index", "rebuild", "--table", "memories"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()
        });
        let plan = Plan {
            seed: rng.next_u64(),
            iteration,
            serial_start: serial,
            model: model.clone(),
            dir: config.dir.clone(),
        };
        serial += 1_000;
        let (tx, rx) = mpsc::channel();
        let rpc = StdioRpc::connect_later(&mut server);
        let ops = std::thread::spawn(move || plan.stream(rpc, &tx));
        // One kill in eight lands during start-up (open, WAL recovery, migrations); the rest
        // land after the handshake, while writes stream.
        let during_start_up = rng.below(8) == 0;
        let kill_at = Duration::from_millis(rng.below(config.max_kill_ms.max(1)));
        if !during_start_up {
            // Wait for the handshake (or the thread's end), then count from there.
            let _ = rx.recv_timeout(Duration::from_secs(30));
        }
        let started = Instant::now();
        let _ = rx.recv_timeout(kill_at);
        let kill_at = if during_start_up {
            spawned.elapsed()
        } else {
            started.elapsed()
        };
        let _ = server.kill();
        let _ = server.wait();
        let rebuild_was_running = match rebuild.as_mut() {
            Some(Some(child)) => {
                let running = matches!(child.try_wait(), Ok(None));
                let _ = child.kill();
                let status = child.wait().ok();
                if !running && status.is_some_and(|s| s.success()) {
                    report.rebuilds_finished += 1;
                }
                running
            }
            _ => false,
        };
        if rebuild_was_running {
            report.rebuild_kills += 1;
        }
        let account = match ops.join() {
            Ok(account) => account,
            Err(_) => {
                report
                    .failures
                    .push(format!("#{iteration}: the ops thread panicked"));
                break;
            }
        };
        for reason in &account.refused {
            report
                .failures
                .push(format!("#{iteration}: a valid write was refused: {reason}"));
        }
        report.acked_writes += account.acked.len();
        if account.in_flight.is_some() {
            report.in_flight_kills += 1;
        }
        // Restart: the binary opens the killed file (WAL recovery, migrations) and checks it.
        if let Err(reason) = restart_check(&config.bin, &db) {
            report.failures.push(format!("#{iteration}: {reason}"));
        }
        match verify(&db, &mut model, &account) {
            Ok(landed) => report.in_flight_landed += usize::from(landed),
            Err(reason) => report.failures.push(format!("#{iteration}: {reason}")),
        }
        match check_generation(&gen_path, old_gen.as_deref()) {
            Ok(validated) => report.generations_validated += usize::from(validated),
            Err(reason) => report.failures.push(format!("#{iteration}: {reason}")),
        }
        if config.verbose {
            eprintln!(
                "#{iteration}: kill at {kill_at:?}, {} acked, in flight {:?}, rebuild running {}, rows {}",
                account.acked.len(),
                account.in_flight.as_ref().map(op_name),
                rebuild_was_running,
                model.len()
            );
        }
    }
    report.final_rows = model.len();
    report.model = model;
    report
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Store { .. } => "store",
        Op::Update { .. } => "update",
        Op::Delete { .. } => "delete",
        Op::Import { .. } => "import",
    }
}

/// What the ops thread needs: its own seed and the rows it may update or delete.
struct Plan {
    seed: u64,
    iteration: usize,
    serial_start: u64,
    model: BTreeMap<i64, String>,
    dir: PathBuf,
}

/// The pipes, taken before the ops thread starts so the main thread keeps the `Child`.
pub(crate) struct LaterRpc {
    stdin: Option<std::process::ChildStdin>,
    stdout: Option<std::process::ChildStdout>,
}

impl StdioRpc {
    /// Takes the pipes now; the handshake happens on the ops thread.
    pub(crate) fn connect_later(child: &mut Child) -> LaterRpc {
        LaterRpc {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
        }
    }
}

impl LaterRpc {
    pub(crate) fn handshake(self) -> Option<StdioRpc> {
        let mut rpc = StdioRpc {
            stdin: self.stdin?,
            stdout: BufReader::new(self.stdout?),
            next_id: 0,
        };
        rpc.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "crash", "version": "0"}}),
        )?;
        rpc.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Some(rpc)
    }
}

/// Kills one store takes before the soak starts a fresh one.
const STORE_ITERATIONS: usize = 25;

/// The most writes one iteration sends (the kill usually comes first).
const MAX_OPS_PER_ITERATION: usize = 400;

impl Plan {
    /// Sends writes one at a time until the pipe breaks; each reply is an acknowledgement.
    fn stream(mut self, rpc: LaterRpc, events: &mpsc::Sender<()>) -> Account {
        let mut account = Account {
            acked: Vec::new(),
            in_flight: None,
            refused: Vec::new(),
        };
        let Some(mut rpc) = rpc.handshake() else {
            let _ = events.send(());
            return account;
        };
        let _ = events.send(());
        let mut rng = Rng::new(self.seed);
        let mut serial = self.serial_start;
        let token = |serial: &mut u64| {
            *serial += 1;
            format!("zq{}x{}q", self.iteration, *serial)
        };
        for _ in 0..MAX_OPS_PER_ITERATION {
            let ids: Vec<i64> = self.model.keys().copied().collect();
            let pick = rng.below(10);
            let op = if pick < 5 || ids.is_empty() {
                Op::Store {
                    content: content(&mut rng, &token(&mut serial)),
                }
            } else if pick < 7 {
                let id = ids[rng.below(ids.len() as u64) as usize];
                Op::Update {
                    id,
                    old: self.model[&id].clone(),
                    new: content(&mut rng, &token(&mut serial)),
                }
            } else if pick < 9 {
                let id = ids[rng.below(ids.len() as u64) as usize];
                Op::Delete {
                    id,
                    content: self.model[&id].clone(),
                }
            } else {
                let n = 2 + rng.below(40) as usize;
                Op::Import {
                    contents: (0..n)
                        .map(|_| content(&mut rng, &token(&mut serial)))
                        .collect(),
                }
            };
            let (tool, args) = match &op {
                Op::Store { content } => ("store", json!({"agent_id": AGENT, "content": content})),
                Op::Update { id, new, .. } => (
                    "update_memory",
                    json!({"agent_id": AGENT, "memory_id": id, "content": new}),
                ),
                Op::Delete { id, .. } => {
                    ("delete_memory", json!({"agent_id": AGENT, "memory_id": id}))
                }
                Op::Import { contents } => {
                    let path = self.dir.join(format!("import-{serial}.jsonl"));
                    if write_import(&path, contents).is_err() {
                        account.refused.push("cannot write the import file".into());
                        return account;
                    }
                    (
                        "import_memories",
                        json!({"input_path": path.to_string_lossy()}),
                    )
                }
            };
            account.in_flight = Some(op.clone());
            match rpc.call(tool, args) {
                None => return account,
                Some(Err(body)) => {
                    account.refused.push(format!("{tool}: {body}"));
                    account.in_flight = None;
                    return account;
                }
                Some(Ok(body)) => {
                    account.in_flight = None;
                    if let Op::Import { contents } = &op
                        && body["imported_memories"].as_u64() != Some(contents.len() as u64)
                    {
                        account.refused.push(format!("import_memories: {body}"));
                        return account;
                    }
                    let id = body["id"].as_i64();
                    match &op {
                        Op::Store { content } => {
                            if let Some(id) = id {
                                self.model.insert(id, content.clone());
                            }
                        }
                        Op::Update { id, new, .. } => {
                            self.model.insert(*id, new.clone());
                        }
                        Op::Delete { id, .. } => {
                            self.model.remove(id);
                        }
                        Op::Import { .. } => {}
                    }
                    account.acked.push((op, id));
                }
            }
        }
        account
    }
}

fn write_import(path: &Path, contents: &[String]) -> std::io::Result<()> {
    let mut text = json!({"_type": "header", "version": "cpersona-export/1.0",
        "memory_count": contents.len()})
    .to_string();
    for content in contents {
        text.push('\n');
        text.push_str(
            &json!({"_type": "memory", "agent_id": AGENT, "content": content,
                "created_at": "2026-01-31T09:30:00Z", "timestamp": "2026-01-31T09:30:00Z"})
            .to_string(),
        );
    }
    text.push('\n');
    std::fs::write(path, text)
}
