//! Measures two write-path figures on this machine and prints them: `store` latency for one
//! row (p50/p90/p99 with a trivial, the hash and, when `CPERSONA_MODEL_DIR` is set, the builtin
//! embedder) and `import_memories` rows/s for 100,000
//! rows with pre-computed 384-dim embeddings, first with every batch on the per-row FTS path
//! (the triggers), then into a fresh store on the bulk path (`portability/bulk.rs`), so one run
//! gives both. Run: `cargo run --release --workspace --example import_rate [rows] [both|bulk|per-row]`.
//!
//! `CPERSONA_BENCH_MAINTAIN_MS=500` runs, beside every timed engine, the background index
//! upkeep `cpersona serve` runs (issue 16): every that many ms one `Engine::maintain_index`
//! pass (flush, then merge unless `CPERSONA_BENCH_MAINTAIN_MERGE=false`), followed at once by
//! the next while a pass finds work; the import line then also says how long after the import
//! the index held every row. Unset, nothing maintains the index (as before issue 16, and as
//! with an operator's schedule), so one binary gives both sides of the comparison.
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpersona_engine::embed::builtin::BuiltinEmbedder;
use cpersona_engine::embed::{EmbedError, Embedder, EmbedderIdentity, HashEmbedder};
use cpersona_engine::{
    Engine, EngineConfig, ExportDir, ImportRequest, IndexTable, StoreRequest, vector,
};

const DIM: usize = 384;

/// A trivial embedder: a fixed unit vector, so the figure is the store's cost alone.
struct Trivial(EmbedderIdentity);

impl Embedder for Trivial {
    fn identity(&self) -> &EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let value = 1.0 / (DIM as f32).sqrt();
        Ok(texts.iter().map(|_| vec![value; DIM]).collect())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n_import: usize = std::env::args().nth(1).map_or(Ok(100_000), |s| s.parse())?;
    // Which import paths to time: `both` (default), `bulk` or `per-row` (a profile of one).
    let paths = std::env::args().nth(2).unwrap_or_else(|| "both".into());
    if !["both", "bulk", "per-row"].contains(&paths.as_str()) {
        return Err(format!("paths must be both, bulk or per-row, not {paths}").into());
    }
    let dir = tempfile::tempdir()?;
    let embedder: Arc<dyn Embedder> = Arc::new(Trivial(EmbedderIdentity {
        model_id: "trivial".into(),
        dim: DIM,
        window_tokens: 256,
    }));

    // Store latency with each embedder this machine has: the trivial one isolates the store's
    // own cost; hash and builtin (when CPERSONA_MODEL_DIR names a model folder) add embedding.
    let mut embedders: Vec<(String, Arc<dyn Embedder>, usize)> = vec![
        (format!("trivial {DIM}-dim"), embedder.clone(), 2_000),
        ("hash".into(), Arc::new(HashEmbedder::new()), 2_000),
    ];
    if let Some(model) = std::env::var_os("CPERSONA_MODEL_DIR") {
        embedders.push((
            "builtin MiniLM".into(),
            Arc::new(BuiltinEmbedder::load(model.as_ref())?),
            200,
        ));
    }
    for (i, (label, store_embedder, rows)) in embedders.into_iter().enumerate() {
        time_stores(
            &dir.path().join(format!("store-{i}.db")),
            store_embedder,
            &label,
            rows,
        )?;
    }

    let path = dir.path().join("import.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    writeln!(
        out,
        "{}",
        serde_json::json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "", "memory_count": n_import, "episode_count": 0, "profile_count": 0})
    )?;
    for i in 0..n_import {
        let mut v: Vec<f32> = (0..DIM)
            .map(|d| ((i * 31 + d * 17) % 97) as f32 - 48.0)
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= norm);
        let b64 = vector::base64_encode(&vector::encode(
            &v,
            DIM,
            cpersona_engine::EmbeddingFormat::F32,
        )?);
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "_type": "memory", "id": i, "agent_id": format!("agent-{}", i % 4), "msg_id": format!("m{i}"),
                "content": format!("imported memory {i} about topic {} with some ordinary words", i % 1000),
                "source": {"type": "User", "id": "u"}, "timestamp": "2025-05-01T12:00:00+09:00", "metadata": {},
                "created_at": "2025-05-01 03:00:00", "project_id": "", "channel": "", "locked": false,
                "recall_count": 0, "last_recalled_at": null, "embedding_b64": b64,
            })
        )?;
    }
    drop(out);
    let size = std::fs::metadata(&path)?.len();
    // 100K rows with 384-dim base64 vectors are ~240 MB, past CPersona's 100 MiB default cap.
    for (label, bulk_min_rows) in [("per-row FTS", usize::MAX), ("bulk FTS", 256)] {
        if paths != "both" && !label.starts_with(&paths) {
            continue;
        }
        let mut config = EngineConfig::new(dir.path().join(format!("import-{bulk_min_rows}.db")));
        config.max_import_bytes = 1 << 30;
        config.import_bulk_min_rows = bulk_min_rows;
        // The import file lies beside the stores, not in their export folder.
        config.export_dir = ExportDir::Operator;
        let engine = Arc::new(Engine::open(config, embedder.clone())?);
        let upkeep = Upkeep::start(&engine);
        let start = Instant::now();
        let cpu_start = cpu_seconds();
        let outcome = engine.import_memories(&ImportRequest {
            input_path: path.clone(),
            ..Default::default()
        })?;
        let secs = start.elapsed().as_secs_f64();
        // On a shared machine the wall clock counts time spent waiting for a core; the
        // process's own CPU time does not, so both are printed.
        let cpu = match (cpu_start, cpu_seconds()) {
            (Some(a), Some(b)) if b > a => {
                format!(
                    ", {:.2} CPU s = {:.0} rows per CPU second",
                    b - a,
                    n_import as f64 / (b - a)
                )
            }
            _ => String::new(),
        };
        let caught_up = match &upkeep {
            Some(_) => format!(
                ", index holding every row {}",
                index_caught_up(&engine, n_import as u64, start)?
            ),
            None => String::new(),
        };
        let passes = upkeep.map(Upkeep::stop).transpose()?;
        println!(
            "import, {label} ({n_import} rows, {DIM}-dim pre-computed embeddings, {:.0} MiB file): {:.2} s, {:.0} rows/s{cpu} (imported {}, embedded {}, queued {}){caught_up}{}",
            size as f64 / 1048576.0,
            secs,
            n_import as f64 / secs,
            outcome.imported_memories,
            outcome.embedded_rows,
            outcome.queued_embeddings,
            passes.map_or(String::new(), |p| format!(", {p} upkeep passes"))
        );
    }
    Ok(())
}

/// Stores `rows` short rows one at a time and prints the latency percentiles.
fn time_stores(
    db: &std::path::Path,
    embedder: Arc<dyn Embedder>,
    label: &str,
    rows: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let engine = Arc::new(Engine::open(EngineConfig::new(db.to_path_buf()), embedder)?);
    let upkeep = Upkeep::start(&engine);
    let mut micros = Vec::with_capacity(rows);
    for i in 0..rows {
        let req = StoreRequest {
            agent_id: "bench".into(),
            content: format!("memory number {i}: the quick brown fox jumps over the lazy dog"),
            ..Default::default()
        };
        let start = Instant::now();
        engine.store(&req)?;
        micros.push(start.elapsed().as_micros());
    }
    let passes = upkeep.map(Upkeep::stop).transpose()?;
    micros.sort_unstable();
    println!(
        "store (1 row, {label} embedder, {rows} rows): p50 {} us, p90 {} us, p99 {} us{}",
        micros[rows / 2],
        micros[rows * 9 / 10],
        micros[rows * 99 / 100],
        passes.map_or(String::new(), |p| format!(" ({p} upkeep passes beside)"))
    );
    Ok(())
}

/// `serve`'s background index upkeep on a thread, when `CPERSONA_BENCH_MAINTAIN_MS` is set.
struct Upkeep {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64, String>>,
}

impl Upkeep {
    fn start(engine: &Arc<Engine>) -> Option<Upkeep> {
        let every: u64 = std::env::var("CPERSONA_BENCH_MAINTAIN_MS")
            .ok()?
            .parse()
            .ok()?;
        let merge = std::env::var("CPERSONA_BENCH_MAINTAIN_MERGE").map_or(true, |v| v != "false");
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, flag) = (Arc::clone(engine), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut passes = 0u64;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(every));
                // As `serve`: a pass that found work is followed at once by the next.
                passes += engine
                    .maintain_index_until_idle(merge)
                    .map_err(|err| err.to_string())?;
            }
            Ok(passes)
        });
        Some(Upkeep { stop, thread })
    }

    /// Stops the thread after its current pass; the passes it ran.
    fn stop(self) -> Result<u64, Box<dyn std::error::Error>> {
        self.stop.store(true, Ordering::Relaxed);
        let passes = self.thread.join().map_err(|_| "upkeep thread panicked")??;
        Ok(passes)
    }
}

/// Waits (at most 10 minutes) until the memories index holds `rows` rows and no live tail;
/// says how long after `start` that was.
fn index_caught_up(
    engine: &Engine,
    rows: u64,
    start: Instant,
) -> Result<String, Box<dyn std::error::Error>> {
    while start.elapsed() < Duration::from_secs(600) {
        let status = engine.index_status()?;
        let memories = status
            .tables
            .iter()
            .find(|t| t.table == IndexTable::Memories);
        if let Some(m) = memories
            && m.rows >= rows
            && m.live_tail == 0
        {
            return Ok(format!(
                "{:.2} s after the import began ({} segments)",
                start.elapsed().as_secs_f64(),
                m.segments.len()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok("not within 600 s".into())
}

/// User + system CPU seconds of this process so far (Linux `/proc/self/stat`, 100 ticks/s);
/// `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start at state (field 3).
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
