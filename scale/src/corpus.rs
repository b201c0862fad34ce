//! The seeded synthetic corpus shared by the scale ladder and the benches: clustered,
//! embedding-like unit vectors with scope labels and timestamps spread over years. Every row is
//! a pure function of (seed, row index), so any slice can be generated alone or in parallel;
//! it must never draw from an unseeded RNG.
//!
//! # Shape of the vectors
//! Three levels, like sentence embeddings of a real memory store: a shared mean direction
//! (embedding models are anisotropic: unrelated texts still have a positive cosine), topics
//! around it, clusters around topics, and rows around clusters. With the defaults at 384
//! dimensions, unrelated rows sit near cosine 0.05–0.1, rows of one cluster near 0.55, and a
//! query's top-10 are rows of its own cluster separated by a few hundredths, so the ranking is
//! meaningful but not trivial (uniform noise, which no prefilter can rank, is not used).
//!
//! # Texts
//! `Corpus::text` and `Corpus::query_text` (module `text`) draw from a per-topic vocabulary
//! with the row's own RNG stream, so the lexical and vector arms agree on what is related.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

/// Knobs of the corpus; the defaults are the bench's.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusConfig {
    /// Seed of everything.
    pub seed: u64,
    /// Vector dimension.
    pub dim: usize,
    /// Number of topics (coarse groups of clusters).
    pub topics: usize,
    /// Number of clusters (fine groups of rows).
    pub clusters: usize,
    /// Weight of the shared mean direction in every centroid.
    pub anisotropy: f32,
    /// Norm of a cluster's offset from its topic (relative to the topic's unit norm).
    pub cluster_spread: f32,
    /// Norm of a row's noise relative to its unit centroid.
    pub row_noise: f32,
    /// Distinct agents, projects, channels and sources (label 0 of the last three is "" with
    /// the probability below).
    pub agents: usize,
    /// Distinct projects.
    pub projects: usize,
    /// Distinct channels.
    pub channels: usize,
    /// Share of rows with no project / no channel / no source.
    pub unscoped_share: f64,
    /// Newest timestamp, UTC ms.
    pub newest_ms: i64,
    /// Span of the timestamps, ms (rows spread evenly, newest first, with jitter).
    pub span_ms: i64,
}

impl Default for CorpusConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            dim: 384,
            topics: 64,
            clusters: 2048,
            anisotropy: 0.5,
            cluster_spread: 0.8,
            row_noise: 0.85,
            agents: 4,
            projects: 12,
            channels: 6,
            unscoped_share: 0.3,
            newest_ms: 1_764_633_600_000, // 2025-12-02T00:00:00Z
            span_ms: 3 * 365 * 24 * 3_600_000,
        }
    }
}

/// Sources a row can come from (index 0 is "none").
pub const SOURCES: [&str; 4] = ["", "chat", "import", "tool"];

/// One generated row.
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusRow {
    /// Unique id.
    pub id: i64,
    /// Creation time, UTC ms; non-increasing with the row index (newest first).
    pub created_at: i64,
    /// Index into [`Corpus::agents`].
    pub agent: usize,
    /// Index into [`Corpus::projects`] (0 is "").
    pub project: usize,
    /// Index into [`Corpus::channels`] (0 is "").
    pub channel: usize,
    /// Index into [`SOURCES`].
    pub source: usize,
    /// The row's cluster.
    pub cluster: u32,
    /// The cluster's topic.
    pub topic: u32,
    /// Unit vector.
    pub vector: Vec<f32>,
}

/// Independent random streams of the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Rows.
    Row = 1,
    /// Queries.
    Query = 2,
    /// Texts of rows (see the `text` module).
    Text = 3,
    /// Texts of queries.
    QueryText = 4,
}

/// A corpus: its config and centroids; rows and queries are generated on demand.
#[derive(Clone, Debug)]
pub struct Corpus {
    config: CorpusConfig,
    centroids: Vec<f32>,
    cluster_topic: Vec<u32>,
    agents: Vec<String>,
    projects: Vec<String>,
    channels: Vec<String>,
}

impl Corpus {
    /// Draws the centroids for `config`.
    pub fn new(config: CorpusConfig) -> Self {
        let dim = config.dim;
        let mut rng = StdRng::seed_from_u64(config.seed);
        let mean = unit_gaussian(&mut rng, dim);
        let topics: Vec<Vec<f32>> = (0..config.topics.max(1))
            .map(|_| unit_gaussian(&mut rng, dim))
            .collect();
        let mut centroids = Vec::with_capacity(config.clusters * dim);
        let mut cluster_topic = Vec::with_capacity(config.clusters);
        for _ in 0..config.clusters.max(1) {
            let topic = rng.random_range(0..topics.len());
            let offset = unit_gaussian(&mut rng, dim);
            let mut c: Vec<f32> = (0..dim)
                .map(|i| {
                    config.anisotropy * mean[i]
                        + topics[topic][i]
                        + config.cluster_spread * offset[i]
                })
                .collect();
            normalise(&mut c);
            centroids.extend_from_slice(&c);
            cluster_topic.push(topic as u32);
        }
        let names = |prefix: &str, n: usize, blank_first: bool| -> Vec<String> {
            (0..n.max(1))
                .map(|i| {
                    if blank_first && i == 0 {
                        String::new()
                    } else {
                        format!("{prefix}-{i}")
                    }
                })
                .collect()
        };
        Self {
            agents: names("agent", config.agents, false),
            projects: names("project", config.projects + 1, true),
            channels: names("channel", config.channels + 1, true),
            config,
            centroids,
            cluster_topic,
        }
    }

    /// The config.
    pub fn config(&self) -> &CorpusConfig {
        &self.config
    }

    /// Agent names.
    pub fn agents(&self) -> &[String] {
        &self.agents
    }

    /// Project names; index 0 is "" (the global pool).
    pub fn projects(&self) -> &[String] {
        &self.projects
    }

    /// Channel names; index 0 is "" (no channel).
    pub fn channels(&self) -> &[String] {
        &self.channels
    }

    /// Row `index` of a corpus of `n_rows` rows (the timestamps depend on the corpus size).
    pub fn row(&self, index: usize, n_rows: usize) -> CorpusRow {
        let cfg = &self.config;
        let mut rng = self.row_rng(Stream::Row, index as u64);
        let cluster = self.pick_cluster(&mut rng);
        let vector = self.around(cluster, &mut rng);
        // Agents are skewed: agent 0 writes about half the rows.
        let agent = (0..self.agents.len())
            .find(|_| rng.random_bool(0.5))
            .unwrap_or(self.agents.len() - 1);
        let scoped = |n: usize, rng: &mut StdRng| {
            if n <= 1 || rng.random_bool(cfg.unscoped_share) {
                0
            } else {
                rng.random_range(1..n)
            }
        };
        let project = scoped(self.projects.len(), &mut rng);
        let channel = scoped(self.channels.len(), &mut rng);
        let source = scoped(SOURCES.len(), &mut rng);
        let step = cfg.span_ms / n_rows.max(1) as i64;
        // Strictly newest first: slot `index` of the span, jittered inside its own slot.
        let jitter = if step > 1 {
            rng.random_range(0..step)
        } else {
            0
        };
        let created_at = cfg.newest_ms - index as i64 * step.max(1) - jitter;
        CorpusRow {
            id: index as i64 + 1,
            created_at,
            agent,
            project,
            channel,
            source,
            cluster: cluster as u32,
            topic: self.cluster_topic[cluster],
            vector,
        }
    }

    /// Query `index`: a unit vector drawn like a row (around a random cluster), from its own
    /// stream so queries are not rows.
    pub fn query(&self, index: usize) -> Vec<f32> {
        let mut rng = self.row_rng(Stream::Query, index as u64);
        let cluster = self.pick_cluster(&mut rng);
        self.around(cluster, &mut rng)
    }

    /// The RNG of one row of one stream: a pure function of (seed, stream, index).
    pub fn row_rng(&self, stream: Stream, index: u64) -> StdRng {
        let mixed = splitmix(self.config.seed ^ splitmix((stream as u64) << 56 ^ index));
        StdRng::seed_from_u64(mixed)
    }

    fn pick_cluster(&self, rng: &mut StdRng) -> usize {
        rng.random_range(0..self.cluster_topic.len())
    }

    fn around(&self, cluster: usize, rng: &mut StdRng) -> Vec<f32> {
        let dim = self.config.dim;
        let centroid = &self.centroids[cluster * dim..(cluster + 1) * dim];
        let scale = self.config.row_noise / (dim as f32).sqrt();
        let mut v: Vec<f32> = centroid
            .iter()
            .map(|c| {
                let g: f32 = StandardNormal.sample(rng);
                c + scale * g
            })
            .collect();
        normalise(&mut v);
        v
    }
}

/// Scales `v` to unit norm (a zero vector stays zero).
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

fn unit_gaussian(rng: &mut StdRng, dim: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dim).map(|_| StandardNormal.sample(rng)).collect();
    normalise(&mut v);
    v
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

mod text;
pub use text::{CLUSTER_WORDS, QUERY_WORDS, TOPIC_WORDS};

#[cfg(test)]
mod tests;
