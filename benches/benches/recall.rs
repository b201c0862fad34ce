//! Free recall per stage on a seeded store: `Engine::recall` end to end and each stage alone
//! (vector arm over a fresh generation, vector arm with a live tail, lexical arm with the
//! lexical cap on and off, keyword arm, fusion, gate, select + shape), on two text corpora:
//! `zipf` (6,000-word Zipf vocabulary) and `rep36` (the side-by-side driver's ~36-word
//! sentences, where every OR term matches most rows). The hash embedder embeds rows and
//! queries. Besides criterion's timings it prints, per corpus, p50/p95 of each stage of
//! `Engine::recall` (its own `RecallTimings`) with the cap off and on, in one run.
//!
//! Run: `cargo bench --workspace --profile=dev --bench recall` (the dev profile keeps the
//! engine at opt-level 0; absolute times are pessimistic, ratios within one run hold).
//! Knobs (read here, never by the library): `CPERSONA_BENCH_RECALL_ROWS=10000` (100000 for the
//! larger store), `CPERSONA_BENCH_RECALL_CORPORA=zipf,rep36`, `CPERSONA_BENCH_LEXICAL_CAP` (default: the engine's default cap)
//! (the cap of the "on" arm). The store is built in `$TMPDIR/cpersona-bench/recall-<pid>`
//! and removed at the end.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpersona_benches::text_corpus::{TextCorpus, TextKind};
use cpersona_engine::embed::{Embedder, HashEmbedder};
use cpersona_engine::recall::stages::fusion::fuse;
use cpersona_engine::recall::stages::gate::{self, GateInput};
use cpersona_engine::recall::stages::shape::{Hydrated, ShapeInput, shape};
use cpersona_engine::recall::{ArmList, RecallConfig};
use cpersona_engine::refs::RefKind;
use cpersona_engine::{
    EmbeddingFormat, Engine, EngineConfig, ExportDir, ImportRequest, IndexTable, RecallQuery, time,
    vector,
};
use criterion::{BenchmarkId, Criterion};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const AGENT: &str = "bench";
const QUERIES: usize = 40;
const LIMIT: usize = 10;
/// Rows written after the generation: the live tail (share of the store).
const TAIL_SHARE: usize = 10;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// Writes rows `from..to` of `corpus` as an import file with hash-embedder vectors, leaving
/// out texts already in `seen` (the import would skip them as duplicates; the repetitive
/// corpus repeats some, as the side-by-side driver does). Returns the rows written.
fn write_import(
    path: &Path,
    corpus: &TextCorpus,
    embedder: &HashEmbedder,
    (from, to): (usize, usize),
    seen: &mut HashSet<String>,
) -> BoxResult<usize> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        out,
        "{}",
        serde_json::json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": ""})
    )?;
    let dim = embedder.identity().dim;
    let newest = 1_764_633_600_000_i64;
    let mut written = 0;
    for i in from..to {
        let text = corpus.text(i);
        if !seen.insert(text.clone()) {
            continue;
        }
        written += 1;
        let vec = embedder.embed_one(&text);
        let b64 = vector::base64_encode(&vector::encode(&vec, dim, EmbeddingFormat::F32)?);
        // Newer rows get later timestamps, one minute apart.
        let stamp = time::format_ms_python(newest - (to as i64 - i as i64) * 60_000);
        // Row 0 of every 10 belongs to another agent, so isolation filters real rows.
        let agent = if i % 10 == 0 { "other" } else { AGENT };
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "_type": "memory", "id": i + 1, "agent_id": agent, "msg_id": format!("m{i}"),
                "content": text, "source": {"type": "User", "id": "u"}, "timestamp": stamp,
                "metadata": {}, "created_at": stamp, "project_id": "", "channel": "",
                "locked": false, "recall_count": 0, "last_recalled_at": null, "embedding_b64": b64,
            })
        )?;
    }
    out.flush()?;
    Ok(written)
}

fn open(db: &Path, cap: Option<usize>) -> BoxResult<Engine> {
    let mut config = EngineConfig::new(db);
    config.max_import_bytes = 1 << 40;
    // The corpus file lives beside the bench's store, not in its export folder.
    config.export_dir = ExportDir::Operator;
    config.recall.lexical_cap = cap;
    Ok(Engine::open(config, Arc::new(HashEmbedder::new()))?)
}

fn import(engine: &Engine, path: &Path, expect: usize) -> BoxResult<()> {
    let outcome = engine.import_memories(&ImportRequest {
        input_path: path.to_path_buf(),
        ..Default::default()
    })?;
    if outcome.imported_memories != expect {
        return Err(format!("imported {} of {expect} rows", outcome.imported_memories).into());
    }
    Ok(())
}

fn recall_query(text: &str) -> RecallQuery {
    RecallQuery {
        agent_id: AGENT.into(),
        query: text.to_owned(),
        limit: LIMIT,
        ..RecallQuery::default()
    }
}

fn pct(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// p50/p95 of each `RecallTimings` stage over the queries, for one engine.
fn timing_table(label: &str, engine: &Engine, queries: &[String]) -> BoxResult<()> {
    let mut stages: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut capped = 0;
    for q in queries {
        let r = engine.recall(&recall_query(q))?;
        capped += usize::from(!r.lexical_capped.is_empty());
        let t = r.timings;
        let total =
            t.vector_ms + t.lexical_ms + t.fusion_ms + t.hydrate_ms + t.gate_input_ms + t.embed_ms;
        for (s, v) in stages.iter_mut().zip([
            t.embed_ms,
            t.vector_ms,
            t.lexical_ms,
            t.gate_input_ms,
            t.fusion_ms,
            t.hydrate_ms,
            total,
        ]) {
            s.push(v);
        }
    }
    let names = [
        "embed", "vector", "lexical", "gate_in", "fusion", "hydrate", "total",
    ];
    let cells: Vec<String> = names
        .iter()
        .zip(stages.iter_mut())
        .map(|(n, s)| format!("{n} {:.2}/{:.2}", pct(s, 0.5), pct(s, 0.95)))
        .collect();
    println!(
        "  {label:<14} p50/p95 ms: {} | cap acted on {capped}/{} queries",
        cells.join(" | "),
        queries.len()
    );
    Ok(())
}

fn bench_corpus(c: &mut Criterion, kind: TextKind, rows: usize, cap: usize) -> BoxResult<()> {
    let corpus = TextCorpus::new(kind, 42);
    let work = std::env::temp_dir().join("cpersona-bench").join(format!(
        "recall-{}-{}",
        std::process::id(),
        kind.name()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work)?;
    let embedder = HashEmbedder::new();
    let db = work.join("store.db");
    let base = rows - rows / TAIL_SHARE;
    let started = Instant::now();
    let mut seen = HashSet::new();
    let written = write_import(
        &work.join("base.jsonl"),
        &corpus,
        &embedder,
        (0, base),
        &mut seen,
    )?;
    let builder = open(&db, None)?;
    import(&builder, &work.join("base.jsonl"), written)?;
    builder.rebuild_index(IndexTable::Memories, &mut |_, _| {})?;
    builder.rebuild_index(IndexTable::Episodes, &mut |_, _| {})?;
    drop(builder);
    // Two engines over one store: the same rows and generation, the cap on and off.
    let (on, off) = (open(&db, Some(cap))?, open(&db, None)?);
    let queries: Vec<String> = (0..QUERIES).map(|i| corpus.query(i, base)).collect();
    let vectors: Vec<Vec<f32>> = queries.iter().map(|q| embedder.embed_one(q)).collect();
    println!(
        "\n== {} corpus: {written} distinct rows (of {base} drawn) + a tail, 90% agent {AGENT}, built in {:.1} s",
        kind.name(),
        started.elapsed().as_secs_f64()
    );
    let depth = RecallConfig::default().depth.per_arm();

    // One run, both arms: the per-stage split of `Engine::recall`, cap off then on.
    timing_table("cap off", &off, &queries)?;
    timing_table(&format!("cap {cap}"), &on, &queries)?;

    let name = kind.name();
    let mut g = c.benchmark_group(format!("recall/{name}"));
    let mut k = 0usize;
    let mut next = || {
        k = (k + 1) % QUERIES;
        k
    };
    for (label, engine) in [("cap_off", &off), ("cap_on", &on)] {
        g.bench_function(BenchmarkId::new("end_to_end", label), |b| {
            b.iter(|| on_err(engine.recall(&recall_query(&queries[next()]))))
        });
    }
    g.bench_function("vector_arm/generation", |b| {
        b.iter(|| on_err(on.vector_arm(AGENT, None, &vectors[next()], depth)))
    });
    for (label, lexical_cap) in [("cap_off", None), ("cap_on", Some(cap))] {
        g.bench_function(BenchmarkId::new("lexical_arm", label), |b| {
            b.iter(|| on_err(on.lexical_arm(AGENT, None, &queries[next()], depth, lexical_cap)))
        });
    }
    g.bench_function("keyword_arm", |b| {
        b.iter(|| on_err(on.keyword_arm(AGENT, None, &queries[next()], depth)))
    });

    // The pure stages over one query's real lists.
    let config = RecallConfig::default();
    let mut arms: Vec<ArmList> = on.vector_arm(AGENT, None, &vectors[0], depth)?;
    arms.extend(
        on.lexical_arm(AGENT, None, &queries[0], depth, Some(cap))?
            .lists,
    );
    let gate_input = GateInput {
        calibrated: None,
        pool: rows as u64,
        deep: false,
    };
    g.bench_function("fusion", |b| {
        b.iter(|| fuse(config.fusion, &arms, &config.weights, config.rrf_k))
    });
    let fused = fuse(config.fusion, &arms, &config.weights, config.rrf_k);
    g.bench_function("gate", |b| {
        b.iter(|| gate::apply(&config.gate, &gate_input, fused.clone()))
    });
    let (gated, report) = gate::apply(&config.gate, &gate_input, fused.clone());
    let inputs: Vec<ShapeInput> = gated
        .into_iter()
        .zip(report.decisions.iter().filter(|d| d.passed))
        .take(LIMIT)
        .map(|(candidate, decision)| {
            let index = (candidate.r#ref.id - 1).max(0) as usize;
            let content = match candidate.r#ref.kind {
                RefKind::Mem => corpus.text(index),
                _ => String::new(),
            };
            ShapeInput {
                candidate,
                decision: *decision,
                row: Hydrated {
                    content,
                    source: None,
                    timestamp: None,
                    msg_id: None,
                },
                confidence: None,
            }
        })
        .collect();
    g.bench_function("select_shape", |b| {
        b.iter(|| {
            shape(
                &config.shape,
                config.fusion,
                &queries[0],
                false,
                inputs.clone(),
            )
        })
    });

    // The live tail: rows written after the generation, scored exactly from SQLite.
    let tail = write_import(
        &work.join("tail.jsonl"),
        &corpus,
        &embedder,
        (base, rows),
        &mut seen,
    )?;
    import(&on, &work.join("tail.jsonl"), tail)?;
    g.bench_function("vector_arm/live_tail", |b| {
        b.iter(|| on_err(on.vector_arm(AGENT, None, &vectors[next()], depth)))
    });
    g.bench_function(BenchmarkId::new("end_to_end_tail", "cap_on"), |b| {
        b.iter(|| on_err(on.recall(&recall_query(&queries[next()]))))
    });
    g.finish();
    println!("  with a {tail}-row live tail:");
    timing_table(&format!("cap {cap}"), &on, &queries)?;
    drop((on, off));
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// A bench iteration's result: an error ends the run loudly (a bench, not a test).
fn on_err<T>(result: cpersona_engine::Result<T>) -> T {
    match result {
        Ok(v) => v,
        Err(err) => panic!("recall bench: {err}"),
    }
}

fn main() -> BoxResult<()> {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: then run nothing.
    if !std::env::args().any(|a| a == "--bench") {
        return Ok(());
    }
    let rows: usize = env_or("CPERSONA_BENCH_RECALL_ROWS", "10000")
        .replace('_', "")
        .parse()?;
    let cap: usize = env_or(
        "CPERSONA_BENCH_LEXICAL_CAP",
        &RecallConfig::LEXICAL_CAP.to_string(),
    )
    .parse()?;
    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for name in env_or("CPERSONA_BENCH_RECALL_CORPORA", "zipf,rep36").split(',') {
        let kind = match name.trim() {
            "zipf" => TextKind::Realistic,
            "rep36" => TextKind::Repetitive,
            other => return Err(format!("unknown corpus {other} (zipf, rep36)").into()),
        };
        bench_corpus(&mut c, kind, rows, cap)?;
    }
    c.final_summary();
    Ok(())
}
