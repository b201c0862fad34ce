//! Build → open → read back and search, against brute-force references.

use cpersona_index::{
    Dim, Error, Generation, Kernels, QueryCodes, RowFilter, ScanConfig, ScopeField, SearchMode,
    TailRows, search_f32,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::util::{brute_force_int8, build_bytes, centroids, clustered, random_rows};

#[test]
fn file_round_trips_every_field() {
    let dim = 70;
    let rows = random_rows(11, 300, dim);
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    assert_eq!(g.len(), rows.len());
    assert_eq!(g.dim().get(), dim);
    assert_eq!(g.generation(), 3);
    assert_eq!(g.source().changelog_head, 0xdead_beef);
    assert_eq!(g.source().schema_version, 2);
    assert_eq!(g.embedder().model_id, "test/model-v1");
    let fields = ScopeField::ALL;
    for (r, row) in rows.iter().enumerate() {
        assert_eq!(g.ids()[r], row.id);
        assert_eq!(g.created_at()[r], row.created_at);
        for (f, field) in fields.iter().enumerate() {
            let code = g.scope_codes(*field)[r];
            assert_eq!(g.name(*field, code), Some(row.labels[f].as_str()));
            assert_eq!(g.code(*field, &row.labels[f]), Some(code));
        }
        let q = QueryCodes::new(&row.vector, g.dim()).unwrap();
        let stride = g.dim().code_stride();
        assert_eq!(&g.codes()[r * stride..(r + 1) * stride], q.codes());
        assert_eq!(g.scales()[r], q.scale());
        let words = g.dim().sign_words();
        assert_eq!(&g.signs()[r * words..(r + 1) * words], q.signs());
    }
    assert_eq!(g.code(ScopeField::Agent, "nobody"), None);
    assert_eq!(g.name(ScopeField::Project, 0), Some(""));
}

#[test]
fn exact_search_equals_brute_force_over_int8_on_any_thread_count() {
    let dim = 48;
    let rows = random_rows(5, 3000, dim);
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    let queries = random_rows(99, 5, dim);
    for threads in [1, 3] {
        for k in [1, 10, 57] {
            let config = ScanConfig::new(k)
                .with_mode(SearchMode::Exact)
                .with_threads(threads)
                .unwrap();
            for q in &queries {
                let res = g
                    .search(&g.query(&q.vector).unwrap(), &RowFilter::default(), &config)
                    .unwrap();
                assert_eq!(
                    res.hits,
                    brute_force_int8(&g, &q.vector, k, |_| true),
                    "threads {threads} k {k}"
                );
                assert_eq!(
                    (res.admitted, res.scanned, res.reranked),
                    (3000, 3000, 3000)
                );
                assert!(res.bounds.limit && !res.bounds.candidates && !res.bounds.window);
            }
        }
    }
}

/// The prefiltered mode by brute force: every admitted row's Hamming distance, the best `c`
/// by (distance, id, row), int8-scored, the best `k` by the result order.
fn brute_force_prefilter(
    g: &Generation,
    query: &[f32],
    c: usize,
    k: usize,
    admit: impl Fn(usize) -> bool,
) -> Vec<cpersona_index::Hit> {
    let q = g.query(query).expect("query");
    let words = g.dim().sign_words();
    let mut ranked: Vec<(u32, i64, usize)> = (0..g.len())
        .filter(|&r| admit(r))
        .map(|r| {
            let row = &g.signs()[r * words..(r + 1) * words];
            let d: u32 = row
                .iter()
                .zip(q.signs())
                .map(|(a, b)| (a ^ b).count_ones())
                .sum();
            (d, g.ids()[r], r)
        })
        .collect();
    ranked.sort_unstable();
    ranked.truncate(c);
    let chosen: std::collections::HashSet<usize> = ranked.iter().map(|t| t.2).collect();
    brute_force_int8(g, query, k, |r| chosen.contains(&r))
}

#[test]
fn prefiltered_search_over_many_tasks_equals_brute_force_on_any_thread_count() {
    // 70K rows of 64 dimensions: one sign word, so distances tie heavily, and more rows than
    // one scan task takes, so tasks share their thresholds.
    let dim = 64;
    let mut rows = random_rows(17, 70_000, dim);
    // random_rows repeats ids past 9973 rows; give each its own.
    for (i, row) in rows.iter_mut().enumerate() {
        row.id = (i as i64 * 7919) % 1_000_003;
    }
    crate::util::sort_newest_first(&mut rows);
    // The same rows with only three distinct vectors: every distance is one of three values,
    // so the c-th best ties with thousands of rows in every task and only ids decide.
    let mut rng = StdRng::seed_from_u64(19);
    let three = centroids(&mut rng, 3, dim);
    let mut tied = rows.clone();
    for (i, row) in tied.iter_mut().enumerate() {
        row.vector = three[i % 3].clone();
    }
    for rows in [rows, tied] {
        check_prefilter_over_tasks(&rows, dim);
    }
}

fn check_prefilter_over_tasks(rows: &[crate::util::TestRow], dim: usize) {
    let g = Generation::from_bytes(build_bytes(rows, dim)).expect("prefilter check");
    let alice = g.code(ScopeField::Agent, "alice").expect("prefilter check");
    for threads in [1, 2, 3] {
        for c in [10, 300] {
            let config = ScanConfig::new(10)
                .with_mode(SearchMode::Prefiltered { candidates: c })
                .with_threads(threads)
                .expect("prefilter check");
            for q in random_rows(18, 3, dim) {
                let res = g
                    .search(
                        &g.query(&q.vector).expect("prefilter check"),
                        &RowFilter::default(),
                        &config,
                    )
                    .expect("prefilter check");
                let want = brute_force_prefilter(&g, &q.vector, c, 10, |_| true);
                assert_eq!(res.hits, want, "threads {threads} c {c}");
                assert_eq!(res.reranked, c as u64);
                let filter = RowFilter {
                    agent: Some(alice),
                    window: Some(30_000),
                    ..RowFilter::default()
                };
                let pair = g
                    .search_near_far(
                        &g.query(&q.vector).expect("prefilter check"),
                        &filter,
                        &config,
                    )
                    .expect("prefilter check");
                let agents = g.scope_codes(ScopeField::Agent);
                let near = brute_force_prefilter(&g, &q.vector, c, 10, |r| {
                    r < 30_000 && agents[r] == alice
                });
                let far = brute_force_prefilter(&g, &q.vector, c, 10, |r| {
                    r >= 30_000 && agents[r] == alice
                });
                assert_eq!(pair.near.hits, near, "near: threads {threads} c {c}");
                assert_eq!(pair.far.hits, far, "far: threads {threads} c {c}");
            }
        }
    }
}

#[test]
fn scalar_and_detected_kernels_give_identical_results() {
    let dim = 384;
    let rows = random_rows(8, 600, dim);
    let bytes = build_bytes(&rows, dim);
    let detected = Generation::from_bytes(&bytes)
        .unwrap()
        .with_kernels(Kernels::detect());
    let scalar = Generation::from_bytes(&bytes)
        .unwrap()
        .with_kernels(Kernels::scalar());
    for mode in [
        SearchMode::Exact,
        SearchMode::Prefiltered { candidates: 40 },
    ] {
        let config = ScanConfig::new(10).with_mode(mode);
        for q in random_rows(3, 4, dim) {
            let a = detected
                .search(
                    &detected.query(&q.vector).unwrap(),
                    &RowFilter::default(),
                    &config,
                )
                .unwrap();
            let b = scalar
                .search(
                    &scalar.query(&q.vector).unwrap(),
                    &RowFilter::default(),
                    &config,
                )
                .unwrap();
            assert_eq!(a, b);
        }
    }
}

#[test]
fn exact_int8_recall_against_f32_is_high_on_clustered_data() {
    let dim = 64;
    let mut rng = StdRng::seed_from_u64(21);
    let cents = centroids(&mut rng, 40, dim);
    let mut rows = random_rows(21, 4000, dim);
    for row in &mut rows {
        row.vector = clustered(&mut rng, &cents, 0.5);
    }
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    let config = ScanConfig::new(10).with_mode(SearchMode::Exact);
    let mut found = 0;
    let n_queries = 30;
    for _ in 0..n_queries {
        let q = clustered(&mut rng, &cents, 0.5);
        let res = g
            .search(&g.query(&q).unwrap(), &RowFilter::default(), &config)
            .unwrap();
        let truth = search_f32(&q, rows.iter().map(|r| (r.id, r.vector.as_slice())), 10);
        found += truth
            .iter()
            .filter(|t| res.hits.iter().any(|h| h.id == t.id))
            .count();
        // Scores estimate cosine within the documented error bound's typical size.
        for h in &res.hits {
            let exact: f32 = q
                .iter()
                .zip(&rows[h.row as usize].vector)
                .map(|(a, b)| a * b)
                .sum();
            assert!(
                (exact - h.score).abs() < 0.02,
                "score {} vs cosine {exact}",
                h.score
            );
        }
    }
    let recall = found as f64 / (10 * n_queries) as f64;
    assert!(recall >= 0.95, "recall@10 of exact int8 vs f32: {recall}");
}

#[test]
fn prefiltered_with_enough_candidates_equals_exact_and_reports_its_cut() {
    let dim = 96;
    let rows = random_rows(12, 1500, dim);
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    let q = g.query(&random_rows(4, 1, dim)[0].vector).unwrap();
    let filter = RowFilter::default();
    let exact = g
        .search(
            &q,
            &filter,
            &ScanConfig::new(10).with_mode(SearchMode::Exact),
        )
        .unwrap();
    let all = g
        .search(
            &q,
            &filter,
            &ScanConfig::new(10).with_mode(SearchMode::Prefiltered { candidates: 5000 }),
        )
        .unwrap();
    assert_eq!(all.hits, exact.hits);
    assert!(!all.bounds.candidates);
    let cut = g
        .search(
            &q,
            &filter,
            &ScanConfig::new(10).with_mode(SearchMode::Prefiltered { candidates: 50 }),
        )
        .unwrap();
    assert_eq!((cut.admitted, cut.reranked), (1500, 50));
    assert!(cut.bounds.candidates);
    // Fewer candidates than k are raised to k.
    let few = g
        .search(
            &q,
            &filter,
            &ScanConfig::new(10).with_mode(SearchMode::Prefiltered { candidates: 3 }),
        )
        .unwrap();
    assert_eq!((few.reranked, few.hits.len()), (10, 10));
}

#[test]
fn near_and_far_lists_split_at_the_window_in_one_call() {
    let dim = 32;
    let rows = random_rows(31, 2500, dim);
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    let qv = random_rows(32, 1, dim).remove(0).vector;
    let q = g.query(&qv).unwrap();
    let window = 700;
    let filter = RowFilter {
        window: Some(window),
        ..Default::default()
    };
    let config = ScanConfig::new(7)
        .with_mode(SearchMode::Exact)
        .with_threads(2)
        .unwrap();
    let both = g.search_near_far(&q, &filter, &config).unwrap();
    assert_eq!(both.near.hits, brute_force_int8(&g, &qv, 7, |r| r < window));
    assert_eq!(both.far.hits, brute_force_int8(&g, &qv, 7, |r| r >= window));
    assert_eq!((both.near.scanned, both.far.scanned), (700, 1800));
    let near_only = g.search(&q, &filter, &config).unwrap();
    assert_eq!(near_only.hits, both.near.hits);
    assert!(near_only.bounds.window);
}

#[test]
fn tail_rows_score_exactly_like_the_generation() {
    let dim = 40;
    let rows = random_rows(41, 700, dim);
    let g = Generation::from_bytes(build_bytes(&rows, dim)).unwrap();
    let mut tail = TailRows::new(g.dim());
    for row in &rows {
        tail.push(row.id, &row.vector).unwrap();
    }
    let q = g.query(&random_rows(42, 1, dim)[0].vector).unwrap();
    let from_file = g
        .search(
            &q,
            &RowFilter::default(),
            &ScanConfig::new(12).with_mode(SearchMode::Exact),
        )
        .unwrap();
    let from_tail = tail.search(&q, 12, &Kernels::detect(), |_| true).unwrap();
    assert_eq!(from_tail.hits, from_file.hits);
    let odd = tail
        .search(&q, 12, &Kernels::scalar(), |r| r % 2 == 1)
        .unwrap();
    assert_eq!(odd.admitted, 350);
    assert!(odd.hits.iter().all(|h| h.row % 2 == 1));
    assert!(matches!(
        tail.push(1, &[0.0; 3]),
        Err(Error::Dim {
            expected: 40,
            found: 3
        })
    ));
}

#[test]
fn a_query_of_another_dimension_is_refused() {
    let rows = random_rows(1, 10, 16);
    let g = Generation::from_bytes(build_bytes(&rows, 16)).unwrap();
    let q = QueryCodes::new(&[0.5; 17], Dim::new(17).unwrap()).unwrap();
    let err = g
        .search(&q, &RowFilter::default(), &ScanConfig::new(3))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Dim {
            expected: 16,
            found: 17
        }
    ));
    assert!(matches!(g.query(&[0.1; 15]), Err(Error::Dim { .. })));
}

#[test]
fn a_generation_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Generation>();
    assert_send_sync::<TailRows>();
    let rows = random_rows(2, 300, 8);
    let g = std::sync::Arc::new(Generation::from_bytes(build_bytes(&rows, 8)).unwrap());
    let q = g.query(&rows[0].vector).unwrap();
    let config = ScanConfig::new(1).with_mode(SearchMode::Exact);
    let first = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| s.spawn(|| g.search(&q, &RowFilter::default(), &config).unwrap()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap().hits[0].id)
            .collect::<Vec<_>>()
    });
    assert_eq!(first, vec![rows[0].id; 2]);
}
