//! The 1K to 1M scale ladder: imports the seeded corpus through `import_memories`, times recall
//! per stage and checks the vector arm against exact f32, then writes a table (stdout),
//! `target/ladder/ladder.{json,csv,svg}`. Rungs: `CPERSONA_LADDER_ROWS=1000,10000,100000,1000000`
//! (default 1K,10K,100K). Run: `cargo bench -p cpersona-scale --profile=dev`. It must never
//! download anything or run unseeded.
//!
//! Two fills, `CPERSONA_LADDER_FILL=operator|no-operator|both` (default both), each its own
//! table and files:
//! - **operator**: one import, then `rebuild_index` (what an operator's `cpersona index
//!   rebuild` does), the lab figure;
//! - **no operator** (`ladder-no-operator.*`, issue 16): the rows arrive in ten imports while a
//!   thread runs `serve`'s index upkeep (`Engine::maintain_index` with merging on, every 500 ms
//!   and at once again while a pass finds work), nothing else; recall starts once the upkeep
//!   holds every row (the wait is the "generation build s" column) and runs with the upkeep
//!   still going. That is the store a user gets from `cpersona serve`.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpersona_engine::embed::EmbedderIdentity;
use cpersona_engine::recall::Arm;
use cpersona_engine::{
    EmbeddingFormat, Engine, EngineConfig, ExportDir, ImportRequest, IndexTable, RecallQuery, time,
    vector,
};
use cpersona_scale::corpus::SOURCES;
use cpersona_scale::report::{self, Header, Pct, Rung, STAGES};
use cpersona_scale::{Corpus, CorpusConfig, LookupEmbedder};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const QUERIES: usize = 200;
const WARMUP: usize = 20;
/// Queries whose vector arm is checked against exact f32 (the brute force runs unoptimised).
const TRUTH_QUERIES: usize = 50;
/// Imports a no-operator rung arrives in.
const IMPORTS: usize = 10;
/// `serve`'s default upkeep interval (`CPERSONA_INDEX_FLUSH_MS`).
const UPKEEP_EVERY: Duration = Duration::from_millis(500);
/// How long a no-operator rung waits for the upkeep to hold every row before it gives up.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(600);

/// How a rung's store is filled and its index built.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// One import, then an operator's `rebuild_index`.
    Operator,
    /// Ten imports with `serve`'s background upkeep running; no rebuild.
    NoOperator,
}

impl Fill {
    fn name(self) -> &'static str {
        match self {
            Fill::Operator => "operator",
            Fill::NoOperator => "no-operator",
        }
    }
}

/// `serve`'s background index upkeep on a thread: a `maintain_index(true)` pass every
/// [`UPKEEP_EVERY`], followed at once by the next while a pass finds work.
struct Upkeep {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64, String>>,
}

impl Upkeep {
    fn start(engine: &Arc<Engine>) -> Upkeep {
        let stop = Arc::new(AtomicBool::new(false));
        let (engine, flag) = (Arc::clone(engine), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut passes = 0u64;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(UPKEEP_EVERY);
                passes += engine
                    .maintain_index_until_idle(true)
                    .map_err(|err| err.to_string())?;
            }
            Ok(passes)
        });
        Upkeep { stop, thread }
    }

    /// Stops the thread; an upkeep pass that failed fails the rung.
    fn stop(self) -> BoxResult<u64> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.join() {
            Ok(result) => Ok(result?),
            Err(_) => Err("the upkeep thread panicked".into()),
        }
    }
}

/// One query: its text, vector and scope.
struct Query {
    text: String,
    vector: Vec<f32>,
    agent: usize,
    project: usize,
}

/// Exact f32 top-10 (score, id) over rows in the query's scope, kept sorted descending.
fn offer(top: &mut Vec<(f32, i64)>, score: f32, id: i64) {
    if top.len() == 10 && top[9].0 >= score {
        return;
    }
    let at = top.partition_point(|&(s, _)| s >= score);
    top.insert(at, (score, id));
    top.truncate(10);
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Resets the process's peak RSS (VmHWM) so the next reading is this rung's own; Linux ≥ 4.0.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// A no-operator rung's index state once its upkeep caught up.
struct CaughtUp {
    segments: usize,
    live_tail_at_first_query: u64,
    upkeep_passes: u64,
}

fn run_rung(
    corpus: &Corpus,
    n: usize,
    work: &Path,
    fill: Fill,
) -> BoxResult<(Rung, Option<CaughtUp>)> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    reset_peak_rss();
    let dim = corpus.config().dim;
    // Queries: agent 0 (about half the rows), one project plus the global pool.
    let queries: Vec<Query> = (0..QUERIES + WARMUP)
        .map(|q| Query {
            text: corpus.query_text(q),
            vector: corpus.query(q),
            agent: 0,
            project: 1 + q % (corpus.projects().len() - 1),
        })
        .collect();
    let mut truth: Vec<Vec<(f32, i64)>> = vec![Vec::new(); TRUTH_QUERIES];
    // One file (operator) or one per import (no operator), rows in id order.
    let files = if fill == Fill::Operator { 1 } else { IMPORTS };
    let per_file = n.div_ceil(files);
    let mut jsonls = Vec::new();
    let mut out = None;
    for i in 0..n {
        if i % per_file == 0 {
            let path = work.join(format!("import-{}.jsonl", jsonls.len()));
            let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
            writeln!(
                file,
                "{}",
                serde_json::json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "",
                    "memory_count": per_file.min(n - i), "episode_count": 0, "profile_count": 0})
            )?;
            if let Some(mut done) = out.replace(file) {
                done.flush()?;
            }
            jsonls.push(path);
        }
        let Some(out) = out.as_mut() else {
            unreachable!("the first row opens a file");
        };
        let row = corpus.row(i, n);
        for (q, top) in queries[WARMUP..WARMUP + TRUTH_QUERIES]
            .iter()
            .zip(truth.iter_mut())
        {
            if row.agent == q.agent && (row.project == q.project || row.project == 0) {
                offer(top, dot(&q.vector, &row.vector), row.id);
            }
        }
        let b64 = vector::base64_encode(&vector::encode(&row.vector, dim, EmbeddingFormat::F32)?);
        let stamp = time::format_ms_python(row.created_at);
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "_type": "memory", "id": row.id, "agent_id": corpus.agents()[row.agent],
                "msg_id": format!("m{}", row.id), "content": corpus.text(&row),
                "source": {"type": if SOURCES[row.source].is_empty() { "User" } else { SOURCES[row.source] }, "id": "u"},
                "timestamp": stamp, "metadata": {}, "created_at": stamp,
                "project_id": corpus.projects()[row.project], "channel": corpus.channels()[row.channel],
                "locked": false, "recall_count": 0, "last_recalled_at": null, "embedding_b64": b64,
            })
        )?;
    }
    if let Some(mut done) = out {
        done.flush()?;
    }

    let embedder = Arc::new(LookupEmbedder {
        identity: EmbedderIdentity {
            model_id: "ladder-lookup".into(),
            dim,
            window_tokens: 256,
        },
        table: queries
            .iter()
            .map(|q| (q.text.clone(), q.vector.clone()))
            .collect(),
    });
    let db = work.join("store.db");
    let mut config = EngineConfig::new(&db);
    config.max_import_bytes = 1 << 40;
    // The seeded corpus lives in the work folder, not in the store's export folder.
    config.export_dir = ExportDir::Operator;
    let engine = Arc::new(Engine::open(config, embedder)?);
    let upkeep = (fill == Fill::NoOperator).then(|| Upkeep::start(&engine));
    let started = Instant::now();
    let (mut imported, mut jsonl_bytes) = (0, 0);
    for jsonl in &jsonls {
        let outcome = engine.import_memories(&ImportRequest {
            input_path: jsonl.clone(),
            ..Default::default()
        })?;
        imported += outcome.imported_memories;
        jsonl_bytes += file_len(jsonl);
        // The import file is spent: free its disk before the store grows further.
        let _ = std::fs::remove_file(jsonl);
    }
    let ingest_s = started.elapsed().as_secs_f64();
    if imported != n {
        return Err(format!("imported {imported} of {n} rows").into());
    }
    let started = Instant::now();
    let (generation_build_s, generation_bytes) = if fill == Fill::Operator {
        let built = engine.rebuild_index(IndexTable::Memories, &mut |_, _| {})?;
        (started.elapsed().as_secs_f64(), built.bytes)
    } else {
        // Nothing is run: wait for the upkeep to hold every row.
        loop {
            let status = memories_index(&engine)?;
            if status.live_tail == 0 && status.rows >= n as u64 {
                break (
                    started.elapsed().as_secs_f64(),
                    status.file_bytes.unwrap_or(0),
                );
            }
            if started.elapsed() > CATCH_UP_LIMIT {
                return Err(format!(
                    "the upkeep did not catch up in {CATCH_UP_LIMIT:?}: {} rows indexed, live tail {}",
                    status.rows, status.live_tail
                )
                .into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let live_tail_at_first_query = memories_index(&engine)?.live_tail;

    let mut per_stage: Vec<Vec<f64>> = vec![Vec::new(); STAGES.len()];
    let (mut recall_sum, mut checked, mut prefiltered, mut cut) = (0.0, 0usize, 0usize, 0usize);
    for (k, q) in queries.iter().enumerate() {
        let result = engine.recall(&RecallQuery {
            agent_id: corpus.agents()[q.agent].clone(),
            project_id: Some(corpus.projects()[q.project].clone()),
            query: q.text.clone(),
            limit: 10,
            trace: true,
            ..RecallQuery::default()
        })?;
        if k < WARMUP {
            continue;
        }
        let t = result.timings;
        let total =
            t.embed_ms + t.vector_ms + t.lexical_ms + t.fusion_ms + t.hydrate_ms + t.gate_input_ms;
        let values = [
            t.embed_ms,
            t.vector_ms,
            t.lexical_ms,
            t.fusion_ms,
            t.hydrate_ms,
            t.gate_input_ms,
            total,
        ];
        for (series, v) in per_stage.iter_mut().zip(values) {
            series.push(v);
        }
        if let Some(mem) = result.vector.tables.first() {
            prefiltered += usize::from(mem.prefiltered);
            cut += usize::from(mem.window_cut);
        }
        if let (Some(exact), Some(stages)) = (truth.get(k - WARMUP), &result.stages) {
            let mut got: Vec<(f64, i64)> = stages
                .arms
                .iter()
                .filter(|a| matches!(a.arm, Arm::VectorNear | Arm::VectorFar))
                .flat_map(|a| a.hits.iter())
                .filter(|h| h.r#ref.kind == cpersona_engine::refs::RefKind::Mem)
                .map(|h| (h.raw.unwrap_or(f64::MIN), h.r#ref.id))
                .collect();
            got.sort_by(|a, b| b.0.total_cmp(&a.0));
            got.truncate(10);
            let hit = exact
                .iter()
                .filter(|(_, id)| got.iter().any(|(_, g)| g == id))
                .count();
            if !exact.is_empty() {
                recall_sum += hit as f64 / exact.len() as f64;
                checked += 1;
            }
        }
    }
    let caught_up = match upkeep {
        Some(upkeep) => Some(CaughtUp {
            segments: memories_index(&engine)?.segments.len(),
            live_tail_at_first_query,
            upkeep_passes: upkeep.stop()?,
        }),
        None => None,
    };
    let timed = per_stage[0].len();
    let db_bytes = file_len(&db) + file_len(&db.with_extension("db-wal"));
    let rung = Rung {
        rows: n,
        queries: timed,
        truth_queries: checked,
        ingest_rows_per_s: n as f64 / ingest_s,
        jsonl_bytes,
        generation_build_s,
        generation_bytes,
        vector: Pct::of(&per_stage[1]),
        vector_recall_at_10: if checked > 0 {
            recall_sum / checked as f64
        } else {
            0.0
        },
        prefiltered_share: prefiltered as f64 / timed.max(1) as f64,
        window_cut_share: cut as f64 / timed.max(1) as f64,
        stages: per_stage.iter().map(|s| Pct::of(s)).collect(),
        peak_rss_bytes: peak_rss_bytes(),
        db_bytes,
    };
    drop(engine);
    let _ = std::fs::remove_dir_all(work);
    Ok((rung, caught_up))
}

/// The memories table's index state.
fn memories_index(engine: &Engine) -> BoxResult<cpersona_engine::TableIndexStatus> {
    engine
        .index_status()?
        .tables
        .into_iter()
        .find(|t| t.table == IndexTable::Memories)
        .ok_or_else(|| "no memories index status".into())
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{cores} cores (nproc), {model}")
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            manifest.parent().unwrap_or(manifest).join("target")
        },
        PathBuf::from,
    )
}

fn main() -> BoxResult<()> {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then run nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let rows: Vec<usize> = std::env::var("CPERSONA_LADDER_ROWS")
        .unwrap_or_else(|_| "1000,10000,100000".into())
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()?;
    let fills = match std::env::var("CPERSONA_LADDER_FILL").as_deref() {
        Ok("operator") => vec![Fill::Operator],
        Ok("no-operator") => vec![Fill::NoOperator],
        Ok("both") | Err(_) => vec![Fill::Operator, Fill::NoOperator],
        Ok(other) => {
            return Err(format!(
                "CPERSONA_LADDER_FILL={other}: expected operator, no-operator or both"
            )
            .into());
        }
    };
    let out_dir = target_dir().join("ladder");
    std::fs::create_dir_all(&out_dir)?;
    let corpus = Corpus::new(CorpusConfig::default());
    let rows_list = rows
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    for fill in fills {
        let mut rungs = Vec::new();
        let mut notes = vec![
            "query embedding excluded by design (a lookup table returns the corpus's query vector)"
                .into(),
            format!(
                "{QUERIES} queries per rung after {WARMUP} warm-up, agent 0, one project + global pool, limit 10, trace on"
            ),
            format!(
                "recall@10: vector arm (near + far merged by cosine) vs exact f32 over the same scope, first {TRUTH_QUERIES} queries"
            ),
            "peak RSS: each rung's own (VmHWM reset at its start)".into(),
            "reconstruct: n/a (not built)".into(),
        ];
        if fill == Fill::NoOperator {
            notes.push(format!(
                "no operator: {IMPORTS} imports per rung with serve's index upkeep running (every {} ms, merging on), no rebuild; \"generation build s\" is the wait after the last import until the upkeep held every row, \"generation bytes\" the segments' files",
                UPKEEP_EVERY.as_millis()
            ));
        }
        for &n in &rows {
            let started = Instant::now();
            let (rung, caught_up) = run_rung(
                &corpus,
                n,
                &out_dir.join(format!("work-{}-{n}", fill.name())),
                fill,
            )?;
            println!(
                "rung {n} rows ({}) done in {:.1} s",
                fill.name(),
                started.elapsed().as_secs_f64()
            );
            if let Some(c) = caught_up {
                notes.push(format!(
                    "{n} rows: {} segments after the queries, live tail {} at the first query, {} upkeep passes",
                    c.segments, c.live_tail_at_first_query, c.upkeep_passes
                ));
            }
            rungs.push(rung);
        }
        let header = Header {
            command: format!(
                "CPERSONA_LADDER_ROWS={rows_list} CPERSONA_LADDER_FILL={} cargo bench -p cpersona-scale --profile=dev",
                fill.name()
            ),
            machine: machine(),
            commit: commit(),
            notes,
        };
        println!("{}", report::render_text(&header, &rungs));
        let stem = match fill {
            Fill::Operator => "ladder".to_owned(),
            Fill::NoOperator => "ladder-no-operator".to_owned(),
        };
        std::fs::write(
            out_dir.join(format!("{stem}.json")),
            serde_json::to_string_pretty(&report::to_json(&header, &rungs))?,
        )?;
        std::fs::write(out_dir.join(format!("{stem}.csv")), report::to_csv(&rungs))?;
        report::plot_svg(&out_dir.join(format!("{stem}.svg")), &rungs)?;
        println!("wrote {}/{stem}.{{json,csv,svg}}", out_dir.display());
    }
    Ok(())
}
