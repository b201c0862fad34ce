//! Measures `Engine::recall` latency per stage (embedding excluded) at 10K and 100K rows with
//! a fresh generation, and prints p50/p95 per stage. Rows are written straight into SQLite
//! with pre-computed 384-dim hashed-word vectors (the store's triggers fill FTS and the change
//! log). Run: `cargo run --release -p cpersona-engine --example recall_rate [10000,100000]`
//! (or, reusing the dev build's optimised dependencies, `cargo run -p cpersona-engine --config
//! 'profile.dev.package.cpersona-index.opt-level=3' --config
//! 'profile.dev.package.cpersona-engine.opt-level=3' --example recall_rate`).
#![allow(clippy::print_stdout)]

use std::sync::Arc;

use cpersona_engine::embed::{EmbedError, Embedder, EmbedderIdentity};
use cpersona_engine::{Engine, EngineConfig, IndexTable, RecallQuery, RecallTimings};

const DIM: usize = 384;
const VOCAB: usize = 5_000;
const QUERIES: usize = 200;
const WARMUP: usize = 20;

/// Words hashed into signed buckets of a 384-dim unit vector: cheap and deterministic.
struct Hashed(EmbedderIdentity);

fn hash_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for word in text.split_whitespace() {
        let h = word.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        for k in 0..4 {
            let bits = h.rotate_left(k * 16);
            let sign = if bits & 1 == 0 { 1.0 } else { -1.0 };
            v[(bits >> 1) as usize % DIM] += sign;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
    v.iter().map(|x| x / norm).collect()
}

impl Embedder for Hashed {
    fn identity(&self) -> &EmbedderIdentity {
        &self.0
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| hash_vector(t)).collect())
    }
}

/// A deterministic pseudo-random word sequence (splitmix64).
fn words(seed: u64, n: usize) -> String {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9e3779b97f4a7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
            format!("w{}", (z ^ (z >> 31)) % VOCAB as u64)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Reads one stage's time from a recall's timings.
type Stage = fn(&RecallTimings) -> f64;

fn pct(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<usize> = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "10000,100000".into())
        .split(',')
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    for n in sizes {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("store.db");
        let embedder = Arc::new(Hashed(EmbedderIdentity {
            model_id: "hashed-384".into(),
            dim: DIM,
            window_tokens: 256,
        }));
        let engine = Engine::open(EngineConfig::new(&path), embedder)?;
        {
            let mut conn = rusqlite::Connection::open(&path)?;
            let tx = conn.transaction()?;
            {
                let mut stmt = tx.prepare(
                    "INSERT INTO memories(agent_id, project_id, channel, content, timestamp, \
                     timestamp_ms, created_at_ms, embedding, embedding_model, embedding_dim, \
                     embedding_format) VALUES (?1, ?2, '', ?3, '2026-01-01T00:00:00+00:00', ?4, ?4, \
                     ?5, 'hashed-384', ?6, 'f32')",
                )?;
                for i in 0..n {
                    let content = words(i as u64, 12);
                    let blob: Vec<u8> = hash_vector(&content)
                        .iter()
                        .flat_map(|x| x.to_le_bytes())
                        .collect();
                    let agent = if i % 10 == 9 { "b" } else { "a" };
                    let project = ["", "p1"][i % 2];
                    stmt.execute(rusqlite::params![
                        agent,
                        project,
                        content,
                        1_767_225_600_000i64 + i as i64,
                        blob,
                        DIM as i64
                    ])?;
                }
            }
            tx.commit()?;
        }
        for table in IndexTable::ALL {
            engine.rebuild_index(table, &mut |_, _| {})?;
        }
        let mut stages: Vec<RecallTimings> = Vec::new();
        for q in 0..QUERIES + WARMUP {
            let r = engine.recall(&RecallQuery {
                agent_id: "a".into(),
                project_id: Some("p1".into()),
                query: words(1_000_000 + q as u64, 4),
                limit: 10,
                ..RecallQuery::default()
            })?;
            if q >= WARMUP {
                stages.push(r.timings);
            }
        }
        println!("rows={n} queries={QUERIES} (ms, embedding excluded)");
        let columns: [(&str, Stage); 6] = [
            ("vector", |t| t.vector_ms),
            ("lexical", |t| t.lexical_ms),
            ("fusion", |t| t.fusion_ms),
            ("hydrate", |t| t.hydrate_ms),
            ("gate_in", |t| t.gate_input_ms),
            ("total", |t| {
                t.vector_ms + t.lexical_ms + t.fusion_ms + t.hydrate_ms + t.gate_input_ms
            }),
        ];
        for (name, get) in columns {
            let mut v: Vec<f64> = stages.iter().map(get).collect();
            println!(
                "  {name:<8} p50 {:8.3}  p95 {:8.3}",
                pct(&mut v, 0.5),
                pct(&mut v, 0.95)
            );
        }
    }
    Ok(())
}
