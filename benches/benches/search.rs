//! Search over a generation: 10K / 100K / 1M rows × 384 dims of the clustered corpus, exact and
//! prefiltered at several C, on 1 and 2 threads. Besides criterion's timings it prints, per
//! case, the p50 over the queries, the bytes streamed as a fraction of the measured memory
//! bandwidth, and recall@10 against exact f32.
//!
//! Segmented search (fixtures of 100K rows and more): the same rows as segment sets
//! (`cpersona_benches::segments`): one segment; the oldest 90% in one segment and the newest
//! 10% as the default merge policy leaves them after flushes of 100 rows, without and with 1%
//! of the big segment's rows updated (so dead); 100 equal segments. Per layout: p50 of plain
//! search and of the engine's near/far filter, and the ratio to the one-segment set, whose
//! hits every layout must equal (printed as `same hits`). Then the cost of a write: p50 of a
//! `SegmentStore::commit` of 1, 10 and 100 rows (segment file, manifest, four fsyncs) and of
//! merging eight 1,000-row segments, in a store under the fixture cache.
//!
//! Run: `cargo bench -p cpersona-benches --bench search`.
//! Knobs (read here, never by the library): `CPERSONA_BENCH_ROWS=10000,100000` picks the
//! sizes; `CPERSONA_BENCH_EMBEDDINGS=path.f32 CPERSONA_BENCH_DIM=384` scans real embeddings
//! (raw little-endian f32) instead of the corpus; `CPERSONA_BENCH_CANDIDATES=100,500` picks C;
//! `CPERSONA_BENCH_SEGMENTS=0` skips the segmented cases (`=1` runs them at any size).
//! Fixtures are cached in `$TMPDIR/cpersona-bench`.
#![forbid(unsafe_code)]

use std::time::{Duration, Instant};

use cpersona_benches::segments::{Layout, segment_set};
use cpersona_benches::{
    SearchFixture, corpus_fixture, file_fixture, median, memory_bandwidth, recall,
};
use cpersona_index::segment::{SegmentSet, SetFilter, SetSearchResult, Window};
use cpersona_index::{CodeSet, Generation, RowFilter, RowSet, ScanConfig, ScopeField, SearchMode};
use cpersona_scale::corpus::CorpusConfig;
use criterion::Criterion;

const K: usize = 10;
const QUERIES: usize = 50;

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|s| {
            s.split(',')
                .filter_map(|v| v.trim().replace('_', "").parse().ok())
                .collect()
        })
        .unwrap_or_else(|| default.to_vec())
}

fn main() {
    let mut criterion = Criterion::default()
        .configure_from_args()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let candidates = env_list("CPERSONA_BENCH_CANDIDATES", &[100, 250, 500, 1000, 2000]);
    let fixtures: Vec<(String, SearchFixture)> = match std::env::var("CPERSONA_BENCH_EMBEDDINGS") {
        Ok(path) => {
            let dim = env_list("CPERSONA_BENCH_DIM", &[384])[0];
            let fixture =
                file_fixture(path.as_ref(), dim, QUERIES, K).expect("embedding file fixture");
            vec![(format!("file{}", fixture.generation.len()), fixture)]
        }
        Err(_) => env_list("CPERSONA_BENCH_ROWS", &[10_000, 100_000, 1_000_000])
            .into_iter()
            .map(|rows| {
                let fixture = corpus_fixture(&CorpusConfig::default(), rows, QUERIES, K)
                    .expect("corpus fixture");
                (format!("{rows}"), fixture)
            })
            .collect(),
    };
    eprintln!(
        "kernels: {:?}",
        fixtures.first().map(|f| f.1.generation.kernels().isa())
    );
    let segmented = std::env::var("CPERSONA_BENCH_SEGMENTS").ok();
    for (name, fixture) in &fixtures {
        run_size(&mut criterion, name, fixture, &candidates);
        let wanted = match segmented.as_deref() {
            Some("0") => false,
            Some(_) => true,
            None => fixture.generation.len() >= 100_000,
        };
        if wanted {
            run_segmented(&mut criterion, name, fixture);
            run_commits(fixture);
        }
    }
    criterion.final_summary();
}

fn run_size(criterion: &mut Criterion, name: &str, fixture: &SearchFixture, candidates: &[usize]) {
    let g = &fixture.generation;
    let dim = g.dim();
    let code_bytes = g.len() * dim.code_stride();
    let sign_bytes = g.len() * dim.sign_words() * 8;
    let bandwidth = [
        memory_bandwidth(code_bytes.max(1 << 20), 1),
        memory_bandwidth(code_bytes.max(1 << 20), 2),
    ];
    eprintln!(
        "\n== {name}: {} rows x {} dims; read bandwidth over {:.0} MB: {:.1} GB/s (1 thread), {:.1} GB/s (2 threads)",
        g.len(),
        dim.get(),
        code_bytes as f64 / 1e6,
        bandwidth[0] / 1e9,
        bandwidth[1] / 1e9
    );
    let queries: Vec<_> = fixture
        .queries
        .iter()
        .map(|q| g.query(q).expect("query"))
        .collect();
    let filter = RowFilter::default();
    let mut modes = vec![SearchMode::Exact];
    modes.extend(
        candidates
            .iter()
            .map(|&c| SearchMode::Prefiltered { candidates: c }),
    );
    run_filtered(criterion, name, g, &queries, &modes);
    for threads in [1usize, 2] {
        for &mode in &modes {
            let config = ScanConfig::new(K)
                .with_mode(mode)
                .with_threads(threads)
                .expect("pool");
            let label = match mode {
                SearchMode::Exact => "exact".to_string(),
                SearchMode::Prefiltered { candidates } => format!("prefiltered-c{candidates}"),
            };
            // One timed pass over the queries for the p50, bandwidth share and recall.
            let mut times = Vec::with_capacity(queries.len());
            let mut found = 0.0;
            for (q, truth) in queries.iter().zip(&fixture.truth) {
                let started = Instant::now();
                let res = g.search(q, &filter, &config).expect("search");
                times.push(started.elapsed().as_secs_f64());
                found += recall(truth, &res.hits);
            }
            let p50 = median(&mut times);
            let streamed = match mode {
                SearchMode::Exact => code_bytes,
                SearchMode::Prefiltered { candidates } => {
                    sign_bytes + candidates.min(g.len()) * dim.code_stride()
                }
            };
            let rate = streamed as f64 / p50;
            eprintln!(
                "{name:>8} {label:<18} {threads}t  p50 {:>8.3} ms  {:>6.2} GB/s = {:>5.1}% of bandwidth  recall@10 {:.3}",
                p50 * 1e3,
                rate / 1e9,
                100.0 * rate / bandwidth[threads - 1],
                found / queries.len() as f64
            );
            let mut next = 0usize;
            criterion.bench_function(&format!("search/{name}/{label}/{threads}t"), |b| {
                b.iter(|| {
                    next = (next + 1) % queries.len();
                    g.search(&queries[next], &filter, &config).expect("search")
                })
            });
        }
    }
}

/// The engine's filter: the most frequent project codes (plus code 0, the global pool) until
/// about half the rows are admitted, 100 excluded rows, and a window of 10K rows.
fn engine_filter(g: &Generation) -> (RowFilter, f64) {
    let projects = g.scope_codes(ScopeField::Project);
    let mut counts = vec![0usize; projects.iter().copied().max().map_or(0, |m| m as usize + 1)];
    for &p in projects {
        counts[p as usize] += 1;
    }
    let mut chosen = vec![0u32];
    let mut admitted = counts.first().copied().unwrap_or(0);
    let mut order: Vec<u32> = (1..counts.len() as u32).collect();
    order.sort_by_key(|&c| std::cmp::Reverse(counts[c as usize]));
    for code in order {
        if admitted * 2 >= projects.len() {
            break;
        }
        chosen.push(code);
        admitted += counts[code as usize];
    }
    let step = (g.len() / 100).max(1);
    let filter = RowFilter {
        projects: Some(CodeSet::new(chosen)),
        exclude: Some(RowSet::new((0..g.len()).step_by(step).map(|r| r as u32))),
        window: Some(10_000),
        ..RowFilter::default()
    };
    (filter, admitted as f64 / projects.len().max(1) as f64)
}

fn run_filtered(
    criterion: &mut Criterion,
    name: &str,
    g: &Generation,
    queries: &[cpersona_index::QueryCodes],
    modes: &[SearchMode],
) {
    let (filter, share) = engine_filter(g);
    let wanted = [SearchMode::Exact, SearchMode::default()];
    for threads in [1usize, 2] {
        for &mode in modes.iter().filter(|m| wanted.contains(m)) {
            let config = ScanConfig::new(K)
                .with_mode(mode)
                .with_threads(threads)
                .expect("pool");
            let label = match mode {
                SearchMode::Exact => "nearfar-exact".to_string(),
                SearchMode::Prefiltered { candidates } => format!("nearfar-c{candidates}"),
            };
            let mut times = Vec::with_capacity(queries.len());
            for q in queries {
                let started = Instant::now();
                let res = g.search_near_far(q, &filter, &config).expect("search");
                times.push(started.elapsed().as_secs_f64());
                std::hint::black_box(res);
            }
            eprintln!(
                "{name:>8} {label:<18} {threads}t  p50 {:>8.3} ms  (filter admits {:.0}% of rows, window 10K, 100 excluded)",
                median(&mut times) * 1e3,
                share * 100.0
            );
            let mut next = 0usize;
            criterion.bench_function(&format!("search/{name}/{label}/{threads}t"), |b| {
                b.iter(|| {
                    next = (next + 1) % queries.len();
                    g.search_near_far(&queries[next], &filter, &config)
                        .expect("search")
                })
            });
        }
    }
}

/// The engine's filter by names: the most frequent projects (plus the global pool) until about
/// half the rows are admitted, and a scan window of the newest 10K rows in scope.
fn engine_set_filter(g: &Generation) -> SetFilter {
    let (filter, _) = engine_filter(g);
    let projects = filter.projects.as_ref();
    let names: Vec<String> = g
        .dictionary(ScopeField::Project)
        .iter()
        .enumerate()
        .filter(|(code, _)| projects.is_some_and(|set| set.contains(*code as u32)))
        .map(|(_, name)| name.to_string())
        .collect();
    SetFilter {
        projects: Some(names),
        window: Some(Window::NewestInScope(10_000)),
        ..SetFilter::default()
    }
}

fn same_hits(a: &SetSearchResult, b: &SetSearchResult) -> bool {
    a.hits.len() == b.hits.len()
        && a.hits
            .iter()
            .zip(&b.hits)
            .all(|(x, y)| x.id == y.id && x.score.to_bits() == y.score.to_bits())
}

fn run_segmented(criterion: &mut Criterion, name: &str, fixture: &SearchFixture) {
    let layouts = [
        Layout::Single,
        Layout::BigPlusTail {
            flush_rows: 100,
            updates: false,
        },
        Layout::BigPlusTail {
            flush_rows: 100,
            updates: true,
        },
        Layout::Equal { count: 100 },
    ];
    let sets: Vec<(Layout, SegmentSet)> = layouts
        .iter()
        .map(|&l| (l, segment_set(fixture, l).expect("segment layout")))
        .collect();
    let g = &fixture.generation;
    let plain = SetFilter::default();
    let engine = engine_set_filter(g);
    eprintln!("\n== {name}: segmented search (ratio: p50 over the one-segment set's)");
    for threads in [1usize, 2] {
        for mode in [SearchMode::Exact, SearchMode::default()] {
            let config = ScanConfig::new(K)
                .with_mode(mode)
                .with_threads(threads)
                .expect("pool");
            let label = match mode {
                SearchMode::Exact => "exact".to_string(),
                SearchMode::Prefiltered { candidates } => format!("c{candidates}"),
            };
            for (filter_name, filter) in [("plain", &plain), ("nearfar", &engine)] {
                let mut single_p50 = 0.0;
                let mut reference: Vec<SetSearchResult> = Vec::new();
                for (index, (layout, set)) in sets.iter().enumerate() {
                    let queries: Vec<_> = fixture
                        .queries
                        .iter()
                        .map(|q| set.query(q).expect("query"))
                        .collect();
                    let mut times = Vec::with_capacity(queries.len());
                    let mut same = true;
                    for (i, q) in queries.iter().enumerate() {
                        let started = Instant::now();
                        let found = if filter_name == "plain" {
                            set.search(q, filter, &config).expect("search")
                        } else {
                            set.search_near_far(q, filter, &config)
                                .expect("search")
                                .near
                        };
                        times.push(started.elapsed().as_secs_f64());
                        match reference.get(i) {
                            Some(r) => same &= same_hits(r, &found),
                            None => reference.push(found),
                        }
                    }
                    let p50 = median(&mut times);
                    if *layout == Layout::Single {
                        single_p50 = p50;
                    }
                    eprintln!(
                        "{name:>8} {label:<6} {filter_name:<8} {threads}t  {:>3} segments  p50 {:>8.3} ms  {:>5.2}x  same hits: {}  ({})",
                        set.segments().len(),
                        p50 * 1e3,
                        p50 / single_p50.max(1e-12),
                        if same { "yes" } else { "NO" },
                        layout.label()
                    );
                    if threads == 2 && filter_name == "plain" {
                        let mut next = 0usize;
                        let id = format!(
                            "search/{name}/layout{index}-{}seg/{label}/{threads}t",
                            set.segments().len()
                        );
                        criterion.bench_function(&id, |b| {
                            b.iter(|| {
                                next = (next + 1) % queries.len();
                                set.search(&queries[next], filter, &config).expect("search")
                            })
                        });
                    }
                }
            }
        }
    }
}

/// p50 of commits of a few rows and of one merge, into a scratch store beside the fixtures.
fn run_commits(fixture: &SearchFixture) {
    use cpersona_index::segment::{MergePlan, MergeReason, SegmentStore, StoreHead, WriteBatch};
    use cpersona_index::{Row, Scope};
    let g = &fixture.generation;
    let dir = cpersona_benches::cache_dir().join("commit-bench");
    let _ = std::fs::remove_dir_all(&dir);
    let store = SegmentStore::open(&dir, g.embedder()).expect("store");
    let vectors: Vec<Vec<f32>> = fixture.queries.clone();
    let mut head = 0u64;
    let mut next_id = 0i64;
    let mut commit = |rows: usize| {
        let batch: Vec<Row<'_>> = (0..rows)
            .map(|i| {
                next_id += 1;
                Row {
                    id: next_id,
                    created_at: next_id,
                    scope: Scope {
                        agent: "bench",
                        ..Scope::default()
                    },
                    vector: &vectors[i % vectors.len()],
                }
            })
            .collect();
        head += 1;
        let started = Instant::now();
        store
            .commit(WriteBatch {
                based_on: Some(head - 1),
                head: StoreHead {
                    changelog_head: head,
                    schema_version: 1,
                },
                rows: batch,
                deletes: Vec::new(),
            })
            .expect("commit");
        started.elapsed().as_secs_f64()
    };
    eprintln!("\n== segment writes (store in {})", dir.display());
    for rows in [1usize, 10, 100] {
        let mut times: Vec<f64> = (0..30).map(|_| commit(rows)).collect();
        eprintln!(
            "  commit of {rows:>3} rows   p50 {:>7.3} ms",
            median(&mut times) * 1e3
        );
    }
    let start = store.manifest().segments.len();
    for _ in 0..8 {
        commit(1000);
    }
    let seqs: Vec<u64> = store.manifest().segments[start..]
        .iter()
        .map(|s| s.seq)
        .collect();
    let started = Instant::now();
    let outcome = store
        .merge(&MergePlan {
            seqs,
            reason: MergeReason::Level(3),
            live_rows: 8000,
        })
        .expect("merge");
    eprintln!(
        "  merge of 8 x 1000 rows     {:>7.3} ms ({} rows, {} bytes written)",
        started.elapsed().as_secs_f64() * 1e3,
        outcome.rows,
        outcome.bytes
    );
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
