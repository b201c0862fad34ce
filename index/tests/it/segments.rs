//! Segments answer like one fresh generation: random sequences of adds, updates, deletes,
//! flushes and merges through a real `SegmentStore`, checked after each step against a
//! generation freshly built from the rows a model says are live, byte for byte on the hits
//! (ids and score bits) and on the counts, for exact and prefiltered search, filters, excluded
//! ids and both windows; the same after reopening the directory (dead sets computed from
//! scratch instead of incrementally). And a merged segment has the bytes of a fresh build.

use std::collections::BTreeMap;

use cpersona_index::segment::{
    MergePolicy, SegmentStore, SetFilter, SetSearchResult, StoreHead, Window, WriteBatch,
};
use cpersona_index::{
    CodeSet, EmbedderIdentity, Generation, GenerationWriter, RowFilter, RowSet, ScanConfig,
    ScopeField, SearchMode, SearchResult,
};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::util::{TestRow, build_bytes, centroids, clustered, meta, sort_newest_first};

const DIM: usize = 70;
const K: usize = 5;
const AGENTS: [&str; 2] = ["alice", "bob"];
const PROJECTS: [&str; 3] = ["", "p1", "p2"];
const CHANNELS: [&str; 2] = ["", "dev"];
const SOURCES: [&str; 3] = ["", "chat", "tool"];

pub(crate) fn embedder() -> EmbedderIdentity {
    EmbedderIdentity {
        model_id: "test/model-v1".into(),
        dim: DIM,
    }
}

/// One step of a random write sequence.
#[derive(Clone, Debug)]
enum Op {
    Add(usize),
    Update(usize),
    Delete(usize),
    Flush,
    MergeByPolicy,
    MergeRun(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1usize..30).prop_map(Op::Add),
        2 => (1usize..8).prop_map(Op::Update),
        2 => (1usize..8).prop_map(Op::Delete),
        4 => Just(Op::Flush),
        1 => Just(Op::MergeByPolicy),
        1 => (0usize..8, 1usize..4).prop_map(|(a, b)| Op::MergeRun(a, b)),
    ]
}

/// The live rows as the model sees them, plus the writes not yet flushed.
pub(crate) struct Model {
    pub(crate) live: BTreeMap<i64, TestRow>,
    puts: BTreeMap<i64, TestRow>,
    deletes: Vec<i64>,
    next_id: i64,
    head: u64,
    rng: StdRng,
    cents: Vec<Vec<f32>>,
}

impl Model {
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let cents = centroids(&mut rng, 6, DIM);
        Self {
            live: BTreeMap::new(),
            puts: BTreeMap::new(),
            deletes: Vec::new(),
            next_id: 1,
            head: 0,
            rng,
            cents,
        }
    }

    fn row(&mut self, id: i64, created_at: i64) -> TestRow {
        let rng = &mut self.rng;
        let labels = [
            AGENTS[rng.random_range(0..AGENTS.len())],
            PROJECTS[rng.random_range(0..PROJECTS.len())],
            CHANNELS[rng.random_range(0..CHANNELS.len())],
            SOURCES[rng.random_range(0..SOURCES.len())],
        ];
        TestRow {
            id,
            created_at,
            labels: labels.map(String::from),
            vector: clustered(rng, &self.cents, 0.7),
        }
    }

    pub(crate) fn add(&mut self, n: usize) {
        for _ in 0..n {
            let id = self.next_id;
            // Ids are not in created_at order, and created_at values repeat.
            self.next_id += 1 + (id * 7919) % 3;
            let created = self.rng.random_range(0..40) * 1000;
            let row = self.row(id, created);
            self.live.insert(id, row.clone());
            self.puts.insert(id, row);
        }
    }

    fn pick(&mut self) -> Option<i64> {
        let ids: Vec<i64> = self.live.keys().copied().collect();
        (!ids.is_empty()).then(|| ids[self.rng.random_range(0..ids.len())])
    }

    pub(crate) fn update(&mut self, n: usize) {
        for _ in 0..n {
            let Some(id) = self.pick() else { return };
            // An update keeps created_at mostly (an edit), sometimes moves it.
            let created = if self.rng.random_bool(0.7) {
                self.live[&id].created_at
            } else {
                self.rng.random_range(0..40) * 1000
            };
            let row = self.row(id, created);
            self.live.insert(id, row.clone());
            self.puts.insert(id, row);
        }
    }

    pub(crate) fn delete(&mut self, n: usize) {
        for _ in 0..n {
            let Some(id) = self.pick() else { return };
            self.live.remove(&id);
            self.puts.remove(&id);
            self.deletes.push(id);
        }
    }

    /// Commits the pending writes as one batch.
    pub(crate) fn flush(&mut self, store: &SegmentStore) {
        let based_on = self.head;
        self.head += 1;
        let puts = std::mem::take(&mut self.puts);
        let deletes = std::mem::take(&mut self.deletes);
        store
            .commit(WriteBatch {
                based_on: Some(based_on),
                head: StoreHead {
                    changelog_head: self.head,
                    schema_version: 2,
                },
                rows: puts.values().map(TestRow::as_row).collect(),
                deletes,
            })
            .expect("commit");
    }

    /// What a flush does to the model without a store (replaying a sequence another process
    /// committed).
    pub(crate) fn flush_discarding(&mut self) {
        self.head += 1;
        self.puts.clear();
        self.deletes.clear();
    }

    /// The head the model's flushes reached.
    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    /// The live rows in file order.
    pub(crate) fn rows(&self) -> Vec<TestRow> {
        let mut rows: Vec<TestRow> = self.live.values().cloned().collect();
        sort_newest_first(&mut rows);
        rows
    }
}

/// A random filter over the model's label pools, excluded ids and a window.
fn filters(rng: &mut StdRng, model: &Model) -> Vec<SetFilter> {
    let ids: Vec<i64> = model.live.keys().copied().collect();
    let names = |pool: &[&str], rng: &mut StdRng| -> Vec<String> {
        let absent = rng.random_bool(0.2).then(|| "absent".to_string());
        pool.iter()
            .filter(|_| rng.random_bool(0.5))
            .map(|s| s.to_string())
            .chain(absent)
            .collect()
    };
    let mut out = vec![SetFilter::default()];
    for _ in 0..4 {
        let n = rng.random_range(0..ids.len().max(1) + 5);
        let window = match rng.random_range(0..4) {
            0 => None,
            1 => Some(Window::Newest(n)),
            2 => Some(Window::NewestInScope(n)),
            // A key between rows or on one, dead rows' keys included.
            _ => Some(Window::Through {
                created_at: rng.random_range(0..41) * 1000,
                id: rng.random_range(0..model.next_id + 2),
            }),
        };
        out.push(SetFilter {
            agent: rng
                .random_bool(0.5)
                .then(|| AGENTS[rng.random_range(0..2)].to_string()),
            projects: rng.random_bool(0.5).then(|| names(&PROJECTS, rng)),
            channels: rng.random_bool(0.3).then(|| names(&CHANNELS, rng)),
            sources: rng.random_bool(0.3).then(|| names(&SOURCES, rng)),
            created_from: rng.random_bool(0.3).then(|| rng.random_range(0..20) * 1000),
            created_until: rng
                .random_bool(0.3)
                .then(|| rng.random_range(10..40) * 1000),
            exclude_ids: (0..rng.random_range(0..4))
                .filter(|_| !ids.is_empty())
                .map(|_| ids[rng.random_range(0..ids.len())])
                .collect(),
            window,
        });
    }
    out
}

/// Whether `row`'s labels and id pass `filter`'s isolation names and exclusions.
fn in_scope(filter: &SetFilter, row: &TestRow) -> bool {
    let one_of = |names: &Option<Vec<String>>, label: &String| {
        names.as_ref().is_none_or(|n| n.contains(label))
    };
    filter.agent.as_ref().is_none_or(|a| *a == row.labels[0])
        && one_of(&filter.projects, &row.labels[1])
        && one_of(&filter.channels, &row.labels[2])
        && one_of(&filter.sources, &row.labels[3])
        && !filter.exclude_ids.contains(&row.id)
}

/// The reference: `filter` in one generation's codes, the window as its row count, found by
/// walking the rows (the in-scope window counts rows whose labels match by name).
fn row_filter(g: &Generation, rows: &[TestRow], filter: &SetFilter) -> Option<RowFilter> {
    let codes = |field: ScopeField, names: &Option<Vec<String>>| {
        names
            .as_ref()
            .map(|n| CodeSet::new(n.iter().filter_map(|name| g.code(field, name))))
    };
    let matches = |row: &TestRow| in_scope(filter, row);
    let window = filter.window.map(|w| match w {
        Window::Newest(n) => n,
        Window::Through { created_at, id } => rows
            .iter()
            .take_while(|r| r.created_at > created_at || (r.created_at == created_at && r.id <= id))
            .count(),
        Window::NewestInScope(n) => {
            let mut seen = 0;
            rows.iter()
                .position(|r| {
                    seen += usize::from(matches(r));
                    n > 0 && seen == n
                })
                .map_or(rows.len(), |p| p + 1)
                .min(if n == 0 { 0 } else { rows.len() })
        }
    });
    let agent = match &filter.agent {
        Some(a) => Some(g.code(ScopeField::Agent, a)?),
        None => None,
    };
    Some(RowFilter {
        agent,
        projects: codes(ScopeField::Project, &filter.projects),
        channels: codes(ScopeField::Channel, &filter.channels),
        sources: codes(ScopeField::Source, &filter.sources),
        created_from: filter.created_from,
        created_until: filter.created_until,
        exclude: Some(RowSet::new(
            filter
                .exclude_ids
                .iter()
                .filter_map(|&id| g.position_of(id)),
        )),
        window,
    })
}

type Summary = (Vec<(i64, u32)>, u64, u64, [bool; 3]);

fn of_set(r: &SetSearchResult) -> Summary {
    (
        r.hits.iter().map(|h| (h.id, h.score.to_bits())).collect(),
        r.admitted,
        r.reranked,
        [r.bounds.window, r.bounds.candidates, r.bounds.limit],
    )
}

fn of_generation(r: &SearchResult) -> Summary {
    (
        r.hits.iter().map(|h| (h.id, h.score.to_bits())).collect(),
        r.admitted,
        r.reranked,
        [r.bounds.window, r.bounds.candidates, r.bounds.limit],
    )
}

/// Every query × filter × mode on the store's snapshot equals the fresh generation.
pub(crate) fn check_against_fresh(store: &SegmentStore, model: &Model, seed: u64) {
    let rows = model.rows();
    let fresh = Generation::from_bytes(build_bytes(&rows, DIM)).expect("fresh opens");
    let set = store.snapshot();
    let order: Vec<(i64, i64)> = set
        .live_in_order()
        .map(|(s, r)| {
            let g = set.segments()[s].generation();
            (g.ids()[r as usize], g.created_at()[r as usize])
        })
        .collect();
    let want: Vec<(i64, i64)> = rows.iter().map(|r| (r.id, r.created_at)).collect();
    assert_eq!(order, want, "live rows in file order");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut cents_rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let cents = centroids(&mut cents_rng, 6, DIM);
    for _ in 0..3 {
        let vector = clustered(&mut rng, &cents, 0.7);
        let q = set.query(&vector).expect("query");
        for filter in filters(&mut rng, model) {
            let scoped: Vec<(i64, i64)> = set.in_scope_newest_first(&filter).collect();
            let want_scoped: Vec<(i64, i64)> = rows
                .iter()
                .filter(|r| in_scope(&filter, r))
                .map(|r| (r.created_at, r.id))
                .collect();
            assert_eq!(scoped, want_scoped, "in scope, newest first: {filter:?}");
            for mode in [SearchMode::Exact, SearchMode::Prefiltered { candidates: 7 }] {
                let config = ScanConfig::new(K).with_mode(mode);
                let got = set.search(&q, &filter, &config).expect("set search");
                let pair = set.search_near_far(&q, &filter, &config).expect("near far");
                let Some(rf) = row_filter(&fresh, &rows, &filter) else {
                    // The agent is in no row: nothing is admitted anywhere.
                    assert!(got.hits.is_empty() && got.admitted == 0, "{filter:?}");
                    continue;
                };
                let want = fresh.search(&q, &rf, &config).expect("fresh search");
                assert_eq!(of_set(&got), of_generation(&want), "{filter:?} {mode:?}");
                let want_pair = fresh.search_near_far(&q, &rf, &config).expect("fresh nf");
                assert_eq!(
                    of_set(&pair.near),
                    of_generation(&want_pair.near),
                    "near {filter:?}"
                );
                assert_eq!(
                    of_set(&pair.far),
                    of_generation(&want_pair.far),
                    "far {filter:?}"
                );
            }
        }
    }
}

fn small_policy() -> MergePolicy {
    MergePolicy {
        merge_factor: 3,
        floor_rows: 4,
        max_dead_share: 0.3,
        dead_min_rows: 4,
        max_merge_segments: 5,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn segments_answer_like_a_fresh_generation(seed in any::<u64>(), ops in proptest::collection::vec(op(), 1..14)) {
        let dir = tempfile::tempdir().unwrap();
        let store = SegmentStore::open(dir.path(), embedder()).unwrap();
        let mut model = Model::new(seed);
        for (step, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(n) => model.add(n),
                Op::Update(n) => model.update(n),
                Op::Delete(n) => model.delete(n),
                Op::Flush => model.flush(&store),
                Op::MergeByPolicy => {
                    for _ in 0..20 {
                        let Some(plan) = store.plan_merge(&small_policy()) else { break };
                        store.merge(&plan).unwrap();
                    }
                }
                Op::MergeRun(start, len) => {
                    let seqs: Vec<u64> = store.manifest().segments.iter().map(|s| s.seq).collect();
                    if start < seqs.len() {
                        let end = (start + len).min(seqs.len());
                        let plan = cpersona_index::segment::MergePlan {
                            seqs: seqs[start..end].to_vec(),
                            reason: cpersona_index::segment::MergeReason::Level(0),
                            live_rows: 0,
                        };
                        store.merge(&plan).unwrap();
                    }
                }
            }
            if matches!(op, Op::Flush | Op::MergeByPolicy | Op::MergeRun(..)) {
                // Unflushed writes are not in the store yet: compare only at a clean point.
                if model.puts.is_empty() && model.deletes.is_empty() {
                    check_against_fresh(&store, &model, seed ^ step as u64);
                }
            }
        }
        model.flush(&store);
        check_against_fresh(&store, &model, seed);
        drop(store);
        let reopened = SegmentStore::open(dir.path(), embedder()).unwrap();
        check_against_fresh(&reopened, &model, seed.wrapping_add(1));
    }
}

#[test]
fn a_merged_segment_has_the_bytes_of_a_fresh_build() {
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentStore::open(dir.path(), embedder()).unwrap();
    let mut model = Model::new(11);
    for _ in 0..4 {
        model.add(25);
        model.update(5);
        model.delete(3);
        model.flush(&store);
    }
    let seqs: Vec<u64> = store.manifest().segments.iter().map(|s| s.seq).collect();
    // Merge the newest three: what the oldest holds keeps some tombstones alive.
    let plan = cpersona_index::segment::MergePlan {
        seqs: seqs[1..].to_vec(),
        reason: cpersona_index::segment::MergeReason::Level(0),
        live_rows: 0,
    };
    let outcome = store.merge(&plan).unwrap();
    assert!(
        outcome.dropped_rows > 0 && outcome.tombstones > 0,
        "{outcome:?}"
    );
    let set = store.snapshot();
    let merged = set.segments()[1].generation();
    let oldest = set.segments()[0].generation();
    // The merged rows: every live row not held by the oldest segment's live rows.
    let mut rows: Vec<TestRow> = model
        .rows()
        .into_iter()
        .filter(|r| merged.position_of(r.id).is_some())
        .collect();
    sort_newest_first(&mut rows);
    let path = dir.path().join("fresh.gen");
    let mut m = meta(DIM);
    m.generation = merged.generation();
    m.source = merged.source();
    let mut writer = GenerationWriter::create(&path, m).unwrap();
    writer
        .set_tombstones(merged.tombstones().iter().copied())
        .unwrap();
    for r in &rows {
        writer.push(&r.as_row()).unwrap();
    }
    writer.finish().unwrap();
    let file = set.segments()[1].path().unwrap().to_path_buf();
    assert_eq!(std::fs::read(file).unwrap(), std::fs::read(&path).unwrap());
    // Every carried tombstone names a row the oldest segment holds.
    assert!(
        merged
            .tombstones()
            .iter()
            .all(|&id| oldest.position_of(id).is_some())
    );
    check_against_fresh(&store, &model, 3);
}

#[test]
fn many_segments_over_many_scan_tasks_answer_like_a_fresh_generation() {
    // More rows than one scan task takes (16K), in segments of uneven sizes, with updates and
    // deletes: tasks hold pieces of several segments and share their thresholds.
    let dir = tempfile::tempdir().unwrap();
    let store = SegmentStore::open(dir.path(), embedder()).unwrap();
    let mut model = Model::new(23);
    for size in [9000, 7000, 5000, 3000, 1000, 300, 20] {
        model.add(size);
        model.update(size / 50);
        model.delete(size / 100);
        model.flush(&store);
    }
    assert_eq!(store.snapshot().segments().len(), 7);
    check_against_fresh(&store, &model, 21);
}

#[test]
fn a_version_1_generation_serves_as_the_oldest_segment() {
    use std::sync::Arc;

    use cpersona_index::segment::{Segment, SegmentSet};
    let v1 = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/data/gen_v1.bin");
    let old = Generation::open(&v1).unwrap();
    assert_eq!(old.format_version(), 1);
    let ids: Vec<i64> = old.ids().to_vec();
    // A newer segment updates id 9 (a new vector) and deletes id 3.
    let dir = tempfile::tempdir().unwrap();
    let mut updated = crate::util::TestRow {
        id: 9,
        created_at: old.created_at()[2],
        labels: old.labels(2).map(String::from),
        vector: vec![0.0; 8],
    };
    updated.vector[2] = 1.0;
    let newer = dir.path().join("newer.gen");
    let mut writer = GenerationWriter::create(&newer, meta(8)).unwrap();
    writer.set_tombstones([3]).unwrap();
    writer.push(&updated.as_row()).unwrap();
    writer.finish().unwrap();
    let identity = old.embedder();
    let set = SegmentSet::new(
        &identity,
        vec![
            Arc::new(Segment::open(1, &v1).unwrap()),
            Arc::new(Segment::open(2, &newer).unwrap()),
        ],
    )
    .unwrap();
    assert_eq!(set.live_rows(), 4);
    assert_eq!(set.find(9), Some((1, 0)));
    assert_eq!(set.find(3), None);
    assert_eq!(set.find(42), Some((0, 0)));
    let q = set.query(&updated.vector).unwrap();
    let found = set
        .search(
            &q,
            &SetFilter::default(),
            &ScanConfig::new(10).with_mode(SearchMode::Exact),
        )
        .unwrap();
    let got: Vec<i64> = found.hits.iter().map(|h| h.id).collect();
    assert_eq!(got[0], 9, "the updated copy wins");
    assert!(!got.contains(&3) && got.len() == 4, "{got:?} of {ids:?}");
}

#[test]
fn stores_and_sets_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SegmentStore>();
    assert_send_sync::<cpersona_index::segment::SegmentSet>();
}
