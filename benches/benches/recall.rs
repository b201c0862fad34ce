//! Free recall per stage on a seeded store: `Engine::recall` end to end and each stage alone
//! (vector arm over a fresh generation, lexical arm with the lexical cap on and off, keyword
//! arm, fusion, gate, select + shape), on two text corpora: `zipf` (6,000-word Zipf vocabulary)
//! and `rep36` (the side-by-side driver's ~36-word sentences, where every OR term matches most
//! rows). The hash embedder embeds rows and queries. Besides criterion's timings it prints, per
//! corpus, p50/p95 of each stage of `Engine::recall` (its own `RecallTimings`) with the cap off
//! and on, in one run.
//!
//! Then issue 16's comparison: the last 10% of the rows (the tail) is written after the base's
//! rebuild into three copies of the store, which then hold the same rows three ways:
//! - `segments`: the tail imported in `CPERSONA_BENCH_RECALL_FLUSHES` (default 10) chunks, each
//!   followed by `Engine::maintain_index(false)` (the pass `serve` runs, with
//!   `CPERSONA_INDEX_AUTO_MERGE=false`): the base segment plus that many small flushed ones,
//!   never merged;
//! - `fresh`: the same chunks, then `rebuild_index` (one segment, as after
//!   `cpersona index rebuild`);
//! - `live tail`: the same chunks, never flushed (the tail scored exactly from SQLite, as
//!   before issue 16).
//!
//! One engine per copy answers the same queries, interleaved (each query goes to all three in a
//! rotating order, `CPERSONA_BENCH_RECALL_PASSES` passes, default 3), so load on a shared
//! machine falls on all alike; the table gives p50/p95 per state and segments / fresh.
//!
//! Before that, issue 23's cost: adaptive fusion against fixed weights over the same store,
//! interleaved the same way (`CPERSONA_BENCH_RECALL_STAGES_ONLY=true` stops there, before
//! criterion and issue 16's copies).
//!
//! Run: `cargo bench --workspace --profile=dev --bench recall` (the dev profile keeps the
//! engine at opt-level 0; absolute times are pessimistic, ratios within one run hold).
//! Knobs (read here, never by the library): `CPERSONA_BENCH_RECALL_ROWS=10000` (100000 for the
//! larger store), `CPERSONA_BENCH_RECALL_CORPORA=zipf,rep36`, `CPERSONA_BENCH_LEXICAL_CAP` (default: the engine's default cap)
//! (the cap of the "on" arm), `CPERSONA_BENCH_RECALL_FLUSHES`, `CPERSONA_BENCH_RECALL_PASSES`.
//! The stores are built in `$TMPDIR/cpersona-bench/recall-<pid>-<corpus>` and removed at the end.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cpersona_benches::text_corpus::{TextCorpus, TextKind};
use cpersona_engine::embed::{Embedder, HashEmbedder};
use cpersona_engine::recall::stages::fusion::fuse;
use cpersona_engine::recall::stages::fusion_weights::AdaptiveFusion;
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
/// corpus repeats some, as the side-by-side driver does). Row `i` is stamped `stamp_to - i`
/// minutes before a fixed instant. Returns the rows written.
fn write_import(
    path: &Path,
    corpus: &TextCorpus,
    embedder: &HashEmbedder,
    (from, to, stamp_to): (usize, usize, usize),
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
        let stamp = time::format_ms_python(newest - (stamp_to as i64 - i as i64) * 60_000);
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
    open_with(db, cap, None)
}

fn open_with(db: &Path, cap: Option<usize>, adaptive: Option<AdaptiveFusion>) -> BoxResult<Engine> {
    let mut config = EngineConfig::new(db);
    config.recall.adaptive = adaptive;
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
        (0, base, base),
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
    let passes: usize = env_or("CPERSONA_BENCH_RECALL_PASSES", "3").parse()?;
    // Issue 23's cost: adaptive fusion against fixed weights over the same store and
    // generation, interleaved; the x column is adaptive / fixed.
    println!("  adaptive fusion (issue 23) vs fixed weights:");
    let adaptive = open_with(&db, Some(cap), Some(AdaptiveFusion::default()))?;
    interleaved(
        &[("adaptive", adaptive), ("fixed", open(&db, Some(cap))?)],
        &queries,
        passes,
    )?;
    if env_or("CPERSONA_BENCH_RECALL_STAGES_ONLY", "false") == "true" {
        drop((on, off));
        let _ = std::fs::remove_dir_all(&work);
        return Ok(());
    }

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

    // Issue 16: the same rows as segments, freshly rebuilt and as a live tail (module doc).
    drop((on, off));
    let flushes: usize = env_or("CPERSONA_BENCH_RECALL_FLUSHES", "10").parse()?;
    let states = three_states(&work, &db, &corpus, (base, rows), &mut seen, cap, flushes)?;
    for (label, engine) in &states {
        g.bench_function(format!("vector_arm/{label}"), |b| {
            b.iter(|| on_err(engine.vector_arm(AGENT, None, &vectors[next()], depth)))
        });
    }
    for (label, engine) in &states {
        g.bench_function(
            BenchmarkId::new(format!("end_to_end_{label}"), "cap_on"),
            |b| b.iter(|| on_err(engine.recall(&recall_query(&queries[next()])))),
        );
    }
    g.finish();
    interleaved(&states, &queries, passes)?;
    drop(states);
    let _ = std::fs::remove_dir_all(&work);
    Ok(())
}

/// Issue 16's three stores over the base store at `db` (built and rebuilt, no engine open):
/// the tail `rows.0..rows.1` written in `flushes` chunks into each of three copies, then
/// flushed after each chunk (`segments`), rebuilt (`fresh`) or left alone (`live_tail`). Each
/// comes back with the engine that wrote it, lexical cap `cap`.
fn three_states(
    work: &Path,
    db: &Path,
    corpus: &TextCorpus,
    (base, rows): (usize, usize),
    seen: &mut HashSet<String>,
    cap: usize,
    flushes: usize,
) -> BoxResult<Vec<(&'static str, Engine)>> {
    let embedder = HashEmbedder::new();
    let flushes = flushes.max(1);
    let mut chunks = Vec::new();
    for j in 0..flushes {
        let (from, to) = (
            base + (rows - base) * j / flushes,
            base + (rows - base) * (j + 1) / flushes,
        );
        let path = work.join(format!("tail-{j}.jsonl"));
        let written = write_import(&path, corpus, &embedder, (from, to, rows), seen)?;
        chunks.push((path, written));
    }
    let tail: usize = chunks.iter().map(|(_, n)| n).sum();
    let fresh_db = copy_store(db, &work.join("fresh"))?;
    let tail_db = copy_store(db, &work.join("tail"))?;
    let started = Instant::now();
    let segments = open(db, Some(cap))?;
    for (path, written) in &chunks {
        import(&segments, path, *written)?;
        // `serve`'s background pass with CPERSONA_INDEX_AUTO_MERGE=false: flush, no merge.
        segments.maintain_index(false)?;
    }
    let took_segments = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let fresh = open(&fresh_db, Some(cap))?;
    for (path, written) in &chunks {
        import(&fresh, path, *written)?;
    }
    fresh.rebuild_index(IndexTable::Memories, &mut |_, _| {})?;
    fresh.rebuild_index(IndexTable::Episodes, &mut |_, _| {})?;
    let took_fresh = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let live_tail = open(&tail_db, Some(cap))?;
    for (path, written) in &chunks {
        import(&live_tail, path, *written)?;
    }
    let took_tail = started.elapsed().as_secs_f64();
    println!(
        "  issue 16: a {tail}-row tail in {flushes} chunks; import + flushes {took_segments:.1} s, \
         import + rebuild {took_fresh:.1} s, import alone {took_tail:.1} s"
    );
    let states = vec![
        ("segments", segments),
        ("fresh", fresh),
        ("live_tail", live_tail),
    ];
    for (label, engine) in &states {
        let status = engine.index_status()?;
        let memories = status
            .tables
            .iter()
            .find(|t| t.table == IndexTable::Memories)
            .ok_or("no memories status")?;
        let sizes: Vec<String> = memories
            .segments
            .iter()
            .map(|s| format!("{}:{}", s.origin, s.rows))
            .collect();
        println!(
            "  {label:<10} memories index: {} segments [{}], {} live rows, live tail {}",
            memories.segments.len(),
            sizes.join(" "),
            memories.rows,
            memories.live_tail
        );
    }
    Ok(states)
}

/// Copies the store at `db` (the database, its WAL if any, its index directories: every entry
/// beside it whose name starts with the file's) into `dir`; returns the copy's database path.
fn copy_store(db: &Path, dir: &Path) -> BoxResult<PathBuf> {
    fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
        if from.is_dir() {
            std::fs::create_dir_all(to)?;
            for entry in std::fs::read_dir(from)? {
                let entry = entry?;
                copy_tree(&entry.path(), &to.join(entry.file_name()))?;
            }
            Ok(())
        } else {
            std::fs::copy(from, to).map(|_| ())
        }
    }
    std::fs::create_dir_all(dir)?;
    let name = db.file_name().ok_or("no file name")?.to_string_lossy();
    let parent = db.parent().ok_or("no parent")?;
    for entry in std::fs::read_dir(parent)? {
        let entry = entry?;
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with(name.as_ref())
        {
            copy_tree(&entry.path(), &dir.join(entry.file_name()))?;
        }
    }
    Ok(dir.join(name.as_ref()))
}

/// Each query to every engine in turn (the order rotating per query and pass), `passes` times
/// after one warm-up query each; prints p50/p95 per engine of the vector arm, the lexical arms,
/// the stage total and the wall time of `Engine::recall`, the ratio of each engine to the
/// second (`fresh`), and how many answers (ordered refs) equal the second's.
fn interleaved(states: &[(&str, Engine)], queries: &[String], passes: usize) -> BoxResult<()> {
    let n = states.len();
    for (_, engine) in states {
        engine.recall(&recall_query(&queries[0]))?;
    }
    // Per engine: vector, lexical, stage total, wall.
    let mut samples: Vec<[Vec<f64>; 4]> = vec![Default::default(); n];
    let mut same = vec![0usize; n];
    let mut shape = vec![(0usize, 0usize); n];
    for pass in 0..passes {
        for (i, q) in queries.iter().enumerate() {
            let mut answers = vec![None; n];
            for k in 0..n {
                let s = (i + pass + k) % n;
                let started = Instant::now();
                let r = states[s].1.recall(&recall_query(q))?;
                let wall = started.elapsed().as_secs_f64() * 1e3;
                let t = r.timings;
                let total = t.vector_ms
                    + t.lexical_ms
                    + t.fusion_ms
                    + t.hydrate_ms
                    + t.gate_input_ms
                    + t.embed_ms;
                for (v, x) in samples[s]
                    .iter_mut()
                    .zip([t.vector_ms, t.lexical_ms, total, wall])
                {
                    v.push(x);
                }
                if let Some(m) = r.vector.tables.first() {
                    shape[s] = (m.segments, m.tail_rows);
                }
                // The ordered refs: a message's confidence reads the recall credits and the
                // clock, which differ between the copies (criterion ran them unequally).
                let refs: Vec<String> = r
                    .response
                    .messages
                    .iter()
                    .map(|m| m.r#ref.to_string())
                    .collect();
                answers[s] = Some(refs);
            }
            for s in 0..n {
                same[s] += usize::from(answers[s] == answers[1.min(n - 1)]);
            }
        }
    }
    let reference = 1.min(n - 1);
    let p = |s: usize, m: usize, q: f64| pct(&mut samples[s][m].clone(), q);
    println!(
        "  interleaved, {passes} passes x {} queries, cap on; p50 / p95 ms (x {} p50 / p95)",
        queries.len(),
        states[reference].0
    );
    for (s, (label, _)) in states.iter().enumerate() {
        let cells: Vec<String> = ["vector", "lexical", "total", "wall"]
            .iter()
            .enumerate()
            .map(|(m, name)| {
                format!(
                    "{name} {:.2} / {:.2} (x{:.2} / x{:.2})",
                    p(s, m, 0.5),
                    p(s, m, 0.95),
                    p(s, m, 0.5) / p(reference, m, 0.5),
                    p(s, m, 0.95) / p(reference, m, 0.95)
                )
            })
            .collect();
        println!(
            "  {label:<10} {} segments, {} tail rows | {} | ordered refs equal to {}: {}/{}",
            shape[s].0,
            shape[s].1,
            cells.join(" | "),
            states[reference].0,
            same[s],
            passes * queries.len()
        );
    }
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
