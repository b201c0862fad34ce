//! Shared helpers for the criterion benches (the benches themselves live in `benches/`):
//! search fixtures built once per size and cached on disk, exact f32 ground truth, memory
//! bandwidth, recall. Measurement helpers only; nothing here is asserted as a test.
#![forbid(unsafe_code)]

pub mod segments;
pub mod text_corpus;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cpersona_index::{
    BestK, EmbedderIdentity, Generation, GenerationMeta, GenerationWriter, Hit, Ranked, Row, Scope,
    SourceFingerprint,
};
use cpersona_scale::corpus::{Corpus, CorpusConfig, SOURCES};

/// A generation and its queries with exact f32 ground truth.
#[derive(Debug)]
pub struct SearchFixture {
    /// The generation, mapped from the cache directory.
    pub generation: Generation,
    /// Unit query vectors (not rows of the generation).
    pub queries: Vec<Vec<f32>>,
    /// Per query, the ids of the exact f32 top-`k`, best first.
    pub truth: Vec<Vec<i64>>,
    /// Where the generation file lives.
    pub path: PathBuf,
}

/// Where fixtures are cached between runs: `$TMPDIR/cpersona-bench`.
pub fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("cpersona-bench")
}

/// A generation of `rows` rows of the synthetic corpus, `n_queries` corpus queries and their
/// exact f32 top-`k`; built once and reused from [`cache_dir`] (keyed by every knob).
pub fn corpus_fixture(
    config: &CorpusConfig,
    rows: usize,
    n_queries: usize,
    k: usize,
) -> std::io::Result<SearchFixture> {
    let corpus = Corpus::new(config.clone());
    let queries: Vec<Vec<f32>> = (0..n_queries).map(|i| corpus.query(i)).collect();
    let key = format!("{config:?}/{rows}/{n_queries}/{k}");
    build_cached(
        &key,
        "corpus",
        config.dim,
        rows,
        queries,
        k,
        |start, end| {
            (start..end)
                .map(|i| {
                    let r = corpus.row(i, rows);
                    (
                        r.id,
                        r.created_at,
                        [r.agent, r.project, r.channel, r.source],
                        r.vector,
                    )
                })
                .collect()
        },
        &corpus,
    )
}

/// A generation of real embeddings read from a raw little-endian f32 file of `dim`-long
/// vectors (for example MiniLM vectors of a public corpus). The last `n_queries` vectors are
/// the queries and are left out of the generation; timestamps and scopes are the corpus's.
pub fn file_fixture(
    path: &Path,
    dim: usize,
    n_queries: usize,
    k: usize,
) -> std::io::Result<SearchFixture> {
    let bytes = std::fs::read(path)?;
    let floats: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let total = floats.len() / dim;
    if total <= n_queries {
        return Err(std::io::Error::other(
            "embedding file holds fewer vectors than queries",
        ));
    }
    let unit = |i: usize| {
        let mut v = floats[i * dim..(i + 1) * dim].to_vec();
        cpersona_scale::corpus::normalise(&mut v);
        v
    };
    let rows = total - n_queries;
    let queries: Vec<Vec<f32>> = (rows..total).map(unit).collect();
    let corpus = Corpus::new(CorpusConfig {
        dim,
        clusters: 1,
        ..Default::default()
    });
    let key = format!("{}/{}/{dim}/{n_queries}/{k}", path.display(), bytes.len());
    build_cached(
        &key,
        "file",
        dim,
        rows,
        queries,
        k,
        |start, end| {
            (start..end)
                .map(|i| {
                    let r = corpus.row(i, rows);
                    (
                        r.id,
                        r.created_at,
                        [r.agent, r.project, r.channel, r.source],
                        unit(i),
                    )
                })
                .collect()
        },
        &corpus,
    )
}

type GeneratedRow = (i64, i64, [usize; 4], Vec<f32>);

#[allow(clippy::too_many_arguments)]
fn build_cached(
    key: &str,
    kind: &str,
    dim: usize,
    rows: usize,
    queries: Vec<Vec<f32>>,
    k: usize,
    generate: impl Fn(usize, usize) -> Vec<GeneratedRow> + Sync,
    corpus: &Corpus,
) -> std::io::Result<SearchFixture> {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    let dir = cache_dir();
    std::fs::create_dir_all(&dir)?;
    let stem = format!("{kind}-{rows}-{:016x}", hasher.finish());
    let path = dir.join(format!("{stem}.gen"));
    let truth_path = dir.join(format!("{stem}.truth"));
    if let (Ok(generation), Ok(truth)) = (
        Generation::open(&path),
        read_truth(&truth_path, queries.len(), k),
    ) {
        return Ok(SearchFixture {
            generation,
            queries,
            truth,
            path,
        });
    }
    let started = Instant::now();
    let meta = GenerationMeta {
        generation: 1,
        source: SourceFingerprint {
            changelog_head: rows as u64,
            schema_version: 1,
        },
        embedder: EmbedderIdentity {
            model_id: format!("bench/{kind}"),
            dim,
        },
    };
    let mut writer = GenerationWriter::create(&path, meta).map_err(std::io::Error::other)?;
    let mut best: Vec<BestK<Ranked>> = queries.iter().map(|_| BestK::new(k)).collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let batch = 65_536;
    let sources = SOURCES;
    for start in (0..rows).step_by(batch) {
        let end = (start + batch).min(rows);
        let per = (end - start).div_ceil(threads);
        // Rows and their f32 dot products with every query are made in parallel, then written
        // in order; each thread keeps its own best-k, merged deterministically.
        let parts: Vec<(Vec<GeneratedRow>, Vec<BestK<Ranked>>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (a, b) = ((start + t * per).min(end), (start + (t + 1) * per).min(end));
                    let generate = &generate;
                    let queries = &queries;
                    s.spawn(move || {
                        let generated = generate(a, b);
                        let mut local: Vec<BestK<Ranked>> =
                            queries.iter().map(|_| BestK::new(k)).collect();
                        for (offset, row) in generated.iter().enumerate() {
                            for (q, top) in queries.iter().zip(&mut local) {
                                let score = dot_f32(q, &row.3);
                                top.push(Ranked(Hit {
                                    id: row.0,
                                    row: (a + offset) as u32,
                                    score,
                                }));
                            }
                        }
                        (generated, local)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("generator thread"))
                .collect()
        });
        for (generated, local) in parts {
            for (top, l) in best.iter_mut().zip(local) {
                top.merge(l);
            }
            for (id, created_at, labels, vector) in &generated {
                let scope = Scope {
                    agent: &corpus.agents()[labels[0]],
                    project: &corpus.projects()[labels[1]],
                    channel: &corpus.channels()[labels[2]],
                    source: sources[labels[3]],
                };
                writer
                    .push(&Row {
                        id: *id,
                        created_at: *created_at,
                        scope,
                        vector,
                    })
                    .map_err(std::io::Error::other)?;
            }
        }
    }
    writer.finish().map_err(std::io::Error::other)?;
    let truth: Vec<Vec<i64>> = best
        .into_iter()
        .map(|b| b.into_hits().iter().map(|h| h.id).collect())
        .collect();
    let flat: Vec<u8> = truth
        .iter()
        .flatten()
        .flat_map(|id| id.to_le_bytes())
        .collect();
    std::fs::write(&truth_path, flat)?;
    eprintln!(
        "built {} ({rows} rows) in {:.1} s",
        path.display(),
        started.elapsed().as_secs_f64()
    );
    let generation = Generation::open(&path).map_err(std::io::Error::other)?;
    Ok(SearchFixture {
        generation,
        queries,
        truth,
        path,
    })
}

fn read_truth(path: &Path, n_queries: usize, k: usize) -> std::io::Result<Vec<Vec<i64>>> {
    let bytes = std::fs::read(path)?;
    if bytes.len() != n_queries * k * 8 {
        return Err(std::io::Error::other("truth file of another shape"));
    }
    let ids: Vec<i64> = bytes
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        .collect();
    Ok(ids.chunks(k).map(<[i64]>::to_vec).collect())
}

/// f32 dot product with eight partial sums, so it vectorises.
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Share of `truth` ids found in `hits`.
pub fn recall(truth: &[i64], hits: &[Hit]) -> f64 {
    if truth.is_empty() {
        return 1.0;
    }
    truth
        .iter()
        .filter(|id| hits.iter().any(|h| h.id == **id))
        .count() as f64
        / truth.len() as f64
}

/// Read bandwidth in bytes per second: `threads` threads each summing their share of a
/// `bytes`-long buffer (best of five passes, after one warm pass).
pub fn memory_bandwidth(bytes: usize, threads: usize) -> f64 {
    let words = vec![1u64; bytes / 8];
    let per = words.len().div_ceil(threads.max(1));
    let mut best = f64::INFINITY;
    for pass in 0..6 {
        let started = Instant::now();
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = words
                .chunks(per.max(1))
                .map(|chunk| {
                    s.spawn(move || {
                        // Eight independent sums so the loop is bound by loads, not by one add chain.
                        let mut acc = [0u64; 8];
                        for block in chunk.chunks_exact(8) {
                            for i in 0..8 {
                                acc[i] = acc[i].wrapping_add(block[i]);
                            }
                        }
                        acc.iter().fold(0u64, |a, b| a.wrapping_add(*b))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or(0))
                .fold(0, u64::wrapping_add)
        });
        std::hint::black_box(total);
        if pass > 0 {
            best = best.min(started.elapsed().as_secs_f64());
        }
    }
    bytes as f64 / best
}

/// Median of `samples` (sorted in place).
pub fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(0.0)
}
