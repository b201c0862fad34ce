//! Re-embedding after a model change, measured (issue 17): a store written with the hashed
//! fallback is opened with the builtin MiniLM, as after `cpersona model install` and a
//! restart, and re-embedded by the same steps `serve` runs in the background (64 rows each,
//! a 20 ms pause between steps). Prints rows/s for short texts and for texts that fill the
//! 256-token window, and recall p50/p95 (MiniLM query embedding included) before the
//! re-embedding, while it runs (a second thread recalls without pause) and after it. A third
//! thread runs `serve`'s index upkeep throughout (`maintain_index` with merging, every 500 ms
//! and at once again while a pass finds work), so the index follows the re-embedding as it
//! does for a user; "after" starts once the index holds every row again, and says how long
//! after the last step that was.
//!
//! Run: `cargo build --workspace --example reembed_rate && CPERSONA_MODEL_DIR=$PWD/target/test-deps/all-MiniLM-L6-v2 target/debug/examples/reembed_rate [short_rows] [long_rows]`
//! (defaults 2,000 and 200). The dev profile builds gemm and the index crate optimised.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use cpersona_engine::embed::builtin::BuiltinEmbedder;
use cpersona_engine::embed::{Embedder, HashEmbedder};
use cpersona_engine::{Engine, EngineConfig, IndexTable, RecallQuery, StoreRequest};

/// Rows per step and the pause between steps: `serve`'s background task's pace.
const STEP_ROWS: usize = 64;
const PAUSE: Duration = Duration::from_millis(20);

const WORDS: [&str; 24] = [
    "harbour", "market", "river", "garden", "morning", "letter", "station", "kitchen", "festival",
    "mountain", "library", "bicycle", "concert", "winter", "island", "recipe", "meeting", "doctor",
    "holiday", "painting", "forest", "train", "coffee", "museum",
];

/// Deterministic text of about `words` words.
fn text(i: usize, words: usize) -> String {
    let mut out = format!("note {i}:");
    let mut state = i as u64 * 2_654_435_761 + 1;
    for _ in 0..words {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        out.push(' ');
        out.push_str(WORDS[(state >> 33) as usize % WORDS.len()]);
    }
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn recall_ms(engine: &Engine, i: usize) -> f64 {
    let started = Instant::now();
    engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: format!("the {} near the {}", WORDS[i % 24], WORDS[(i * 7) % 24]),
            limit: 10,
            ..RecallQuery::default()
        })
        .expect("recall");
    started.elapsed().as_secs_f64() * 1e3
}

fn summary(label: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    println!(
        "  recall {label:<8} n={:>4}  p50 {:>7.1} ms  p95 {:>7.1} ms",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95)
    );
}

fn run(
    label: &str,
    rows: usize,
    words: usize,
    model: &Arc<dyn Embedder>,
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("store.db");
    {
        let fallback = Engine::open(EngineConfig::new(&path), Arc::new(HashEmbedder::new()))?;
        for i in 0..rows {
            fallback.store(&StoreRequest {
                agent_id: "a".into(),
                content: text(i, words),
                ..StoreRequest::default()
            })?;
        }
    }
    let engine = Arc::new(Engine::open(EngineConfig::new(&path), model.clone())?);
    let upkeep = Upkeep::start(&engine);
    let start = engine.reembed_progress()?;
    println!(
        "{label}: {rows} rows of ~{words} words, {} to re-embed from {}",
        start.remaining,
        start.from_model.as_deref().unwrap_or("?")
    );
    summary("before", (0..20).map(|i| recall_ms(&engine, i)).collect());
    let running = Arc::new(AtomicBool::new(true));
    let recaller = {
        let engine = Arc::clone(&engine);
        let running = Arc::clone(&running);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut i = 0;
            while running.load(Ordering::Relaxed) {
                samples.push(recall_ms(&engine, i));
                i += 1;
            }
            samples
        })
    };
    let started = Instant::now();
    let mut embedded = 0;
    let mut steps = 0;
    loop {
        let step = engine.reembed_step(STEP_ROWS)?;
        embedded += step.embedded;
        steps += 1;
        if step.finished {
            break;
        }
        if let Some(reason) = step.failed {
            return Err(reason.into());
        }
        std::thread::sleep(PAUSE);
    }
    let seconds = started.elapsed().as_secs_f64();
    running.store(false, Ordering::Relaxed);
    let during = recaller.join().map_err(|_| "recall thread panicked")?;
    println!(
        "  re-embedded {embedded} rows in {steps} steps, {seconds:.1} s: {:.1} rows/s (pauses included)",
        embedded as f64 / seconds
    );
    summary("during", during);
    let waited = Instant::now();
    loop {
        let status = engine.index_status()?;
        if status.tables.iter().any(|t| {
            t.table == IndexTable::Memories
                && t.live_tail == 0
                && t.note.is_none()
                && t.rows == rows as u64
        }) {
            break;
        }
        if waited.elapsed() > Duration::from_secs(120) {
            return Err("the index upkeep did not catch up in 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "  index holds every row {:.2} s after the last step",
        waited.elapsed().as_secs_f64()
    );
    summary("after", (0..20).map(|i| recall_ms(&engine, i)).collect());
    upkeep.stop()?;
    Ok(())
}

/// `serve`'s background index upkeep on a thread.
struct Upkeep {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Result<(), String>>,
}

impl Upkeep {
    fn start(engine: &Arc<Engine>) -> Upkeep {
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, flag) = (Arc::clone(engine), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(500));
                engine
                    .maintain_index_until_idle(true)
                    .map_err(|err| err.to_string())?;
            }
            Ok(())
        });
        Upkeep { stop, thread }
    }

    fn stop(self) -> Result<(), Box<dyn std::error::Error>> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(result) => Ok(result?),
            Err(_) => Err("the upkeep thread panicked".into()),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let short_rows: usize = std::env::args().nth(1).map_or(Ok(2_000), |s| s.parse())?;
    let long_rows: usize = std::env::args().nth(2).map_or(Ok(200), |s| s.parse())?;
    let Some(dir) = std::env::var_os("CPERSONA_MODEL_DIR") else {
        return Err("set CPERSONA_MODEL_DIR to the all-MiniLM-L6-v2 folder".into());
    };
    let model: Arc<dyn Embedder> = Arc::new(BuiltinEmbedder::load(dir.as_ref())?);
    run("short", short_rows, 12, &model)?;
    // ~200 words: past the 256-token window, so every text is embedded at full width.
    run("256-token", long_rows, 200, &model)?;
    Ok(())
}
