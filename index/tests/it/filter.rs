//! Filter semantics against a brute-force model: every field of `RowFilter`, both modes, and
//! near/far, on random filters over one generation.

use std::sync::LazyLock;

use cpersona_index::{CodeSet, Generation, RowFilter, RowSet, ScanConfig, ScopeField, SearchMode};
use proptest::prelude::*;

use crate::util::{TestRow, brute_force_int8, build_bytes, random_rows};

const DIM: usize = 24;
const N: usize = 600;

static FIXTURE: LazyLock<(Vec<TestRow>, Generation)> = LazyLock::new(|| {
    let rows = random_rows(77, N, DIM);
    let g = Generation::from_bytes(build_bytes(&rows, DIM)).expect("fixture opens");
    (rows, g)
});

#[derive(Clone, Debug)]
struct Case {
    agent: Option<u32>,
    sets: [Option<Vec<u32>>; 3],
    created_from: Option<i64>,
    created_until: Option<i64>,
    exclude: Option<Vec<u32>>,
    window: Option<usize>,
}

fn case() -> impl Strategy<Value = Case> {
    let set = || proptest::option::of(proptest::collection::vec(0u32..6, 0..4));
    (
        proptest::option::of(0u32..5),
        [set(), set(), set()],
        proptest::option::of(-1000i64..310_000),
        proptest::option::of(-1000i64..310_000),
        proptest::option::of(proptest::collection::vec(0u32..N as u32 + 5, 0..80)),
        proptest::option::of(0usize..N + 50),
    )
        .prop_map(
            |(agent, sets, created_from, created_until, exclude, window)| Case {
                agent,
                sets,
                created_from,
                created_until,
                exclude,
                window,
            },
        )
}

impl Case {
    fn filter(&self) -> RowFilter {
        let set =
            |s: &Option<Vec<u32>>| s.as_ref().map(|codes| CodeSet::new(codes.iter().copied()));
        RowFilter {
            agent: self.agent,
            projects: set(&self.sets[0]),
            channels: set(&self.sets[1]),
            sources: set(&self.sets[2]),
            created_from: self.created_from,
            created_until: self.created_until,
            exclude: self
                .exclude
                .as_ref()
                .map(|rows| RowSet::new(rows.iter().copied())),
            window: self.window,
        }
    }

    /// The model: every condition checked row by row, the window excluded.
    fn admits_ignoring_window(&self, g: &Generation, r: usize) -> bool {
        let fields = [ScopeField::Project, ScopeField::Channel, ScopeField::Source];
        self.agent
            .is_none_or(|a| g.scope_codes(ScopeField::Agent)[r] == a)
            && fields
                .iter()
                .zip(&self.sets)
                .all(|(f, s)| s.as_ref().is_none_or(|s| s.contains(&g.scope_codes(*f)[r])))
            && self.created_from.is_none_or(|t| g.created_at()[r] >= t)
            && self.created_until.is_none_or(|t| g.created_at()[r] <= t)
            && self
                .exclude
                .as_ref()
                .is_none_or(|e| !e.contains(&(r as u32)))
    }

    fn admits(&self, g: &Generation, r: usize) -> bool {
        self.admits_ignoring_window(g, r) && self.window.is_none_or(|w| r < w)
    }
}

fn naive_hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn exact_search_admits_exactly_what_the_model_admits(c in case(), k in 0usize..15, q in 0usize..N) {
        let (rows, g) = &*FIXTURE;
        let query = &rows[q].vector;
        let res = g.search(&g.query(query).unwrap(), &c.filter(), &ScanConfig::new(k).with_mode(SearchMode::Exact)).unwrap();
        let model_admitted = (0..N).filter(|&r| c.admits(g, r)).count() as u64;
        prop_assert_eq!(res.admitted, model_admitted);
        prop_assert_eq!(res.hits, brute_force_int8(g, query, k, |r| c.admits(g, r)));
        let beyond = (0..N).any(|r| c.admits_ignoring_window(g, r) && !c.admits(g, r));
        prop_assert!(!beyond || res.bounds.window, "a window that cut admitted rows must say so");
    }

    #[test]
    fn prefiltered_search_reranks_the_model_candidates(c in case(), k in 1usize..12, cands in 1usize..60, q in 0usize..N) {
        let (rows, g) = &*FIXTURE;
        let query = &rows[q].vector;
        let qc = g.query(query).unwrap();
        let mode = SearchMode::Prefiltered { candidates: cands };
        let res = g.search(&qc, &c.filter(), &ScanConfig::new(k).with_mode(mode)).unwrap();
        let words = g.dim().sign_words();
        let mut candidates: Vec<(u32, i64, usize)> = (0..N)
            .filter(|&r| c.admits(g, r))
            .map(|r| (naive_hamming(qc.signs(), &g.signs()[r * words..(r + 1) * words]), g.ids()[r], r))
            .collect();
        let admitted = candidates.len();
        candidates.sort();
        candidates.truncate(cands.max(k));
        let keep: Vec<usize> = candidates.iter().map(|c| c.2).collect();
        prop_assert_eq!(res.admitted, admitted as u64);
        prop_assert_eq!(res.reranked, keep.len() as u64);
        prop_assert_eq!(res.bounds.candidates, admitted > keep.len());
        prop_assert_eq!(res.hits, brute_force_int8(g, query, k, |r| keep.contains(&r)));
    }

    #[test]
    fn near_far_lists_match_the_model_on_each_side(c in case(), k in 0usize..9, q in 0usize..N) {
        let (rows, g) = &*FIXTURE;
        let query = &rows[q].vector;
        let both = g.search_near_far(&g.query(query).unwrap(), &c.filter(), &ScanConfig::new(k).with_mode(SearchMode::Exact)).unwrap();
        let w = c.window.unwrap_or(usize::MAX);
        prop_assert_eq!(both.near.hits, brute_force_int8(g, query, k, |r| r < w && c.admits_ignoring_window(g, r)));
        prop_assert_eq!(both.far.hits, brute_force_int8(g, query, k, |r| r >= w && c.admits_ignoring_window(g, r)));
    }
}
