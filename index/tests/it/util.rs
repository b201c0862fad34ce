//! Seeded test data and brute-force references shared by the integration tests.

use std::path::{Path, PathBuf};

use cpersona_index::quantize::score;
use cpersona_index::{
    EmbedderIdentity, Generation, GenerationMeta, GenerationWriter, Hit, Row, Scope,
    SourceFingerprint,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One test row with owned labels.
#[derive(Clone, Debug)]
pub(crate) struct TestRow {
    pub(crate) id: i64,
    pub(crate) created_at: i64,
    pub(crate) labels: [String; 4],
    pub(crate) vector: Vec<f32>,
}

impl TestRow {
    pub(crate) fn as_row(&self) -> Row<'_> {
        Row {
            id: self.id,
            created_at: self.created_at,
            scope: Scope {
                agent: &self.labels[0],
                project: &self.labels[1],
                channel: &self.labels[2],
                source: &self.labels[3],
            },
            vector: &self.vector,
        }
    }
}

pub(crate) fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

/// A clustered unit vector: one of `centroids` plus noise.
pub(crate) fn clustered(rng: &mut StdRng, centroids: &[Vec<f32>], noise: f32) -> Vec<f32> {
    let c = &centroids[rng.random_range(0..centroids.len())];
    let mut v: Vec<f32> = c
        .iter()
        .map(|x| x + noise * rng.random_range(-1.0f32..1.0))
        .collect();
    normalise(&mut v);
    v
}

pub(crate) fn centroids(rng: &mut StdRng, n: usize, dim: usize) -> Vec<Vec<f32>> {
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            normalise(&mut v);
            v
        })
        .collect()
}

/// `n` rows sorted newest first, labels from small pools ("" included), ties in created_at.
pub(crate) fn random_rows(seed: u64, n: usize, dim: usize) -> Vec<TestRow> {
    let mut rng = StdRng::seed_from_u64(seed);
    let cents = centroids(&mut rng, 8, dim);
    let pools: [&[&str]; 4] = [
        &["alice", "bob", "carol"],
        &["", "p1", "p2", "p3"],
        &["", "general", "dev"],
        &["", "chat", "import", "tool"],
    ];
    let mut rows: Vec<TestRow> = (0..n)
        .map(|i| TestRow {
            id: 1000 + i as i64 * 7 % 9973,
            created_at: rng.random_range(0..(n as i64 / 2).max(1)) * 1000,
            labels: std::array::from_fn(|f| {
                pools[f][rng.random_range(0..pools[f].len())].to_string()
            }),
            vector: clustered(&mut rng, &cents, 0.6),
        })
        .collect();
    sort_newest_first(&mut rows);
    rows
}

pub(crate) fn sort_newest_first(rows: &mut [TestRow]) {
    rows.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
}

pub(crate) fn meta(dim: usize) -> GenerationMeta {
    GenerationMeta {
        generation: 3,
        source: SourceFingerprint {
            changelog_head: 0xdead_beef,
            schema_version: 2,
        },
        embedder: EmbedderIdentity {
            model_id: "test/model-v1".into(),
            dim,
        },
    }
}

pub(crate) fn write_file(dir: &Path, name: &str, rows: &[TestRow], dim: usize) -> PathBuf {
    let path = dir.join(name);
    GenerationWriter::write(&path, meta(dim), rows.iter().map(TestRow::as_row))
        .expect("write generation");
    path
}

pub(crate) fn build_bytes(rows: &[TestRow], dim: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_file(dir.path(), "gen.bin", rows, dim);
    std::fs::read(path).expect("read back")
}

/// Int8 scores of every row a predicate admits, ranked: the brute-force reference of exact mode.
pub(crate) fn brute_force_int8(
    g: &Generation,
    query: &[f32],
    k: usize,
    admit: impl Fn(usize) -> bool,
) -> Vec<Hit> {
    let q = g.query(query).expect("query");
    let stride = g.dim().code_stride();
    let mut hits: Vec<Hit> = (0..g.len())
        .filter(|&r| admit(r))
        .map(|r| {
            let row = &g.codes()[r * stride..(r + 1) * stride];
            let dot: i32 = q
                .codes()
                .iter()
                .zip(row)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
            Hit {
                id: g.ids()[r],
                row: r as u32,
                score: score(dot, q.scale(), g.scales()[r]),
            }
        })
        .collect();
    hits.sort_by(Hit::rank_cmp);
    hits.truncate(k);
    hits
}
