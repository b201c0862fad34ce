//! The 1K to 1M scale ladder: imports the seeded corpus through `import_memories`, builds the
//! memories generation, times recall per stage and checks the vector arm against exact f32,
//! then writes a table (stdout), `target/ladder/ladder.{json,csv,svg}`. Rungs:
//! `CPERSONA_LADDER_ROWS=1000,10000,100000,1000000` (default 1K,10K,100K). Run:
//! `cargo bench -p cpersona-scale --profile=dev`. It must never download anything or run
//! unseeded.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

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

fn run_rung(corpus: &Corpus, n: usize, work: &Path) -> BoxResult<Rung> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
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
    let jsonl = work.join("import.jsonl");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&jsonl)?);
    writeln!(
        out,
        "{}",
        serde_json::json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "",
            "memory_count": n, "episode_count": 0, "profile_count": 0})
    )?;
    for i in 0..n {
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
    drop(out);

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
    let engine = Engine::open(config, embedder)?;
    let started = Instant::now();
    let outcome = engine.import_memories(&ImportRequest {
        input_path: jsonl.clone(),
        ..Default::default()
    })?;
    let ingest_s = started.elapsed().as_secs_f64();
    let jsonl_bytes = file_len(&jsonl);
    // The import file is spent: free its disk before the store grows further.
    let _ = std::fs::remove_file(&jsonl);
    if outcome.imported_memories != n {
        return Err(format!("imported {} of {n} rows", outcome.imported_memories).into());
    }
    let started = Instant::now();
    let built = engine.rebuild_index(IndexTable::Memories, &mut |_, _| {})?;
    let generation_build_s = started.elapsed().as_secs_f64();

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
    let timed = per_stage[0].len();
    let db_bytes = file_len(&db) + file_len(&db.with_extension("db-wal"));
    let rung = Rung {
        rows: n,
        queries: timed,
        truth_queries: checked,
        ingest_rows_per_s: n as f64 / ingest_s,
        jsonl_bytes,
        generation_build_s,
        generation_bytes: built.bytes,
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
    Ok(rung)
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
    let out_dir = target_dir().join("ladder");
    std::fs::create_dir_all(&out_dir)?;
    let corpus = Corpus::new(CorpusConfig::default());
    let mut rungs = Vec::new();
    for &n in &rows {
        let started = Instant::now();
        let rung = run_rung(&corpus, n, &out_dir.join(format!("work-{n}")))?;
        println!(
            "rung {n} rows done in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        rungs.push(rung);
    }
    let header = Header {
        command: format!(
            "CPERSONA_LADDER_ROWS={} cargo bench -p cpersona-scale --profile=dev",
            rows.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        machine: machine(),
        commit: commit(),
        notes: vec![
            "query embedding excluded by design (a lookup table returns the corpus's query vector)"
                .into(),
            format!(
                "{} queries per rung after {WARMUP} warm-up, agent 0, one project + global pool, limit 10, trace on",
                QUERIES
            ),
            format!(
                "recall@10: vector arm (near + far merged by cosine) vs exact f32 over the same scope, first {TRUTH_QUERIES} queries"
            ),
            "reconstruct: n/a (not built)".into(),
        ],
    };
    println!("{}", report::render_text(&header, &rungs));
    std::fs::write(
        out_dir.join("ladder.json"),
        serde_json::to_string_pretty(&report::to_json(&header, &rungs))?,
    )?;
    std::fs::write(out_dir.join("ladder.csv"), report::to_csv(&rungs))?;
    report::plot_svg(&out_dir.join("ladder.svg"), &rungs)?;
    println!("wrote {}/ladder.{{json,csv,svg}}", out_dir.display());
    Ok(())
}
