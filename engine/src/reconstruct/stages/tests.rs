//! The invariants of design §7 / reference §4.4, each with the mutation of design §9 that
//! must turn it red, plus the two property tests ("raise the budget alone and no item or
//! excerpt disappears", "change count alone and the candidate id set is unchanged").

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;

use super::Mutation;
use super::assemble::{Request, assemble_with};
use super::budget::{self, Slot};
use super::bundle::{self, Candidate, DeclaredLink, EntityGraph, Why};
use super::items::{excerpt_quote, head_quote};
use super::window::{CountSource, candidate_limit_with, resolve_with};
use crate::reconstruct::stages::ReconstructResponse;
use crate::reconstruct::stages::config::ReconstructConfig;
use crate::refs::Ref;

const WORDS: &[&str] = &[
    "apple", "river", "stone", "cloud", "engine", "garden", "winter", "copper", "signal",
];

fn mem(id: i64, text: &str) -> Candidate {
    Candidate {
        r#ref: Some(Ref::mem(id)),
        text: text.to_owned(),
        ts_ms: Some(id * 1_000_000),
        as_of: Some(format!("t{id}")),
        ..Candidate::default()
    }
}

/// A pool of `n` independent memories, each a few sentences long so excerpts get cut.
fn pool(n: i64, long: bool) -> Vec<Candidate> {
    (1..=n)
        .map(|id| {
            let sentence = format!(
                "The {} near the {} was noted {id}. ",
                WORDS[id as usize % 9],
                WORDS[(id as usize * 5) % 9]
            );
            mem(id, &sentence.repeat(if long { 40 } else { 1 }))
        })
        .collect()
}

fn run_with(
    config: &ReconstructConfig,
    candidates: Vec<Candidate>,
    links: &[DeclaredLink],
    count: Option<usize>,
    budget: Option<usize>,
    mutation: Mutation,
) -> ReconstructResponse {
    let request = Request {
        query: "apple river",
        count,
        budget,
        top_k: 20,
        max_hops: 2,
        max_evidence: 40,
        trace: false,
        gate_fallback: false,
        mode_budget: None,
        piece_limit: None,
    };
    assemble_with(
        config,
        &request,
        candidates,
        links,
        &EntityGraph::default(),
        &mut |_| None,
        mutation,
    )
}

/// Five bundles of two rows each (same message id), long enough that the budget binds.
fn bundled_pool() -> Vec<Candidate> {
    let mut out = pool(10, true);
    for (n, c) in out.iter_mut().enumerate() {
        c.msg_id = format!("m{}", n / 2);
        c.ts_ms = Some(n as i64);
    }
    out
}

// ---- The Reconstruction Window ----

fn window_default_holds(m: Mutation) -> bool {
    // A default below the maximum, so the clamp cannot hide a moved default.
    let config = ReconstructConfig {
        default_count: 1,
        ..ReconstructConfig::default()
    };
    let w = resolve_with(&config, None, m);
    w.effective == config.default_count
        && w.policy.source == CountSource::ServerDefault
        && !w.differs_from_request()
}

#[test]
fn omitted_count_is_the_default_and_moving_the_default_is_caught() {
    assert!(window_default_holds(Mutation::None));
    assert!(!window_default_holds(Mutation::DefaultPlusOne));
    // The shipped default (reference §4.1), not the design page's 1.
    assert_eq!(ReconstructConfig::default().default_count, 10);
}

fn max_caps(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let w = resolve_with(&config, Some(50), m);
    w.effective == config.max_count && w.policy.clamped && w.differs_from_request()
}

#[test]
fn the_maximum_caps_the_count_and_removing_it_is_caught() {
    assert!(max_caps(Mutation::None));
    assert!(!max_caps(Mutation::MaxRemoved));
}

fn forced_wins(m: Mutation) -> bool {
    let config = ReconstructConfig {
        forced_count: Some(3),
        ..ReconstructConfig::default()
    };
    let w = resolve_with(&config, Some(5), m);
    w.effective == 3 && w.policy.source == CountSource::OperatorForced && w.differs_from_request()
}

#[test]
fn a_forced_count_wins_over_the_request_and_swapping_them_is_caught() {
    assert!(forced_wins(Mutation::None));
    assert!(!forced_wins(Mutation::ForcedRequestedSwapped));
}

#[test]
fn a_request_honoured_as_asked_is_not_restated() {
    let config = ReconstructConfig::default();
    let r = run_with(&config, pool(3, false), &[], Some(2), None, Mutation::None);
    assert_eq!((r.effective_count, r.returned_count), (2, 2));
    assert!(r.count_policy.is_none() && r.requested_count.is_none());
    let r = run_with(&config, pool(3, false), &[], Some(50), None, Mutation::None);
    assert_eq!(r.requested_count, Some(50));
    assert!(r.count_policy.is_some_and(|p| p.clamped));
}

fn limit_ignores_count(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let limits: BTreeSet<usize> = (0..=config.max_count)
        .map(|count| candidate_limit_with(&config, None, count, m))
        .collect();
    limits.len() == 1 && limits.contains(&config.top_k)
}

#[test]
fn the_candidate_limit_never_follows_the_count_and_recoupling_is_caught() {
    assert!(limit_ignores_count(Mutation::None));
    assert!(!limit_ignores_count(Mutation::CandidateLimitFromCount));
}

// ---- No padding, no duplicates ----

fn no_row_twice(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let mut candidates = pool(4, false);
    // The same row handed in twice (two arms): one item, never two.
    candidates.insert(2, candidates[0].clone());
    let r = run_with(&config, candidates, &[], Some(10), None, m);
    let refs: Vec<Ref> = r
        .items
        .iter()
        .flat_map(|i| i.claims.iter().map(|c| c.r#ref))
        .collect();
    let distinct: BTreeSet<Ref> = refs.iter().copied().collect();
    refs.len() == distinct.len() && r.items.len() == 4
}

#[test]
fn no_row_is_in_two_items_and_disabling_dedup_is_caught() {
    assert!(no_row_twice(Mutation::None));
    assert!(!no_row_twice(Mutation::DedupDisabled));
}

fn returned_counts_items(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let r = run_with(&config, pool(3, false), &[], Some(8), None, m);
    r.returned_count == r.items.len()
        && r.effective_count == 8
        && r.shortfall_reason == Some("exhausted_candidates")
}

#[test]
fn a_short_window_is_reported_and_returned_as_effective_is_caught() {
    assert!(returned_counts_items(Mutation::None));
    assert!(!returned_counts_items(Mutation::ReturnedIsEffective));
}

#[test]
fn zero_count_and_empty_pool_state_their_reason() {
    let config = ReconstructConfig::default();
    let r = run_with(&config, pool(3, false), &[], Some(0), None, Mutation::None);
    assert!(r.items.is_empty());
    assert_eq!(r.shortfall_reason, Some("count_zero"));
    let r = run_with(&config, Vec::new(), &[], None, None, Mutation::None);
    assert_eq!(r.shortfall_reason, Some("no_relevant_evidence"));
    assert_eq!(r.returned_count, 0);
}

// ---- Provenance ----

fn provenance_holds(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let r = run_with(&config, bundled_pool(), &[], Some(5), Some(20_000), m);
    !r.items.is_empty()
        && r.items.iter().all(|item| {
            let claims: BTreeSet<Ref> = item.claims.iter().map(|c| c.r#ref).collect();
            item.head_ref.is_some_and(|h| claims.contains(&h))
                && item.excerpts.iter().all(|e| claims.contains(&e.r#ref))
        })
}

#[test]
fn every_quote_traces_to_a_claim_and_dropping_provenance_is_caught() {
    assert!(provenance_holds(Mutation::None));
    assert!(!provenance_holds(Mutation::ProvenanceDropped));
}

#[test]
fn rows_without_a_ref_are_excluded_and_counted() {
    let config = ReconstructConfig::default();
    let mut candidates = pool(2, false);
    candidates.push(Candidate {
        text: "no ref".into(),
        ..Candidate::default()
    });
    let r = run_with(&config, candidates, &[], None, None, Mutation::None);
    assert_eq!(
        r.reconstruction.map(|x| x.excluded_without_provenance),
        Some(1)
    );
    assert!(r.items.iter().all(|i| i.content != "no ref"));
}

fn excerpts_from_own_item(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    let r = run_with(&config, bundled_pool(), &[], Some(3), Some(20_000), m);
    r.items.iter().all(|item| {
        let claims: BTreeSet<Ref> = item.claims.iter().map(|c| c.r#ref).collect();
        item.excerpts.iter().all(|e| claims.contains(&e.r#ref))
    }) && r.items.iter().any(|i| !i.excerpts.is_empty())
}

#[test]
fn excerpts_come_only_from_the_items_claims_and_borrowing_is_caught() {
    assert!(excerpts_from_own_item(Mutation::None));
    assert!(!excerpts_from_own_item(Mutation::ExcerptOutsideItem));
}

// ---- Breadth before depth ----

fn heads_first(m: Mutation) -> bool {
    let config = ReconstructConfig::default();
    // Every head is 800 chars (5 items); 4,400 fits the five heads and not every excerpt.
    let r = run_with(&config, bundled_pool(), &[], Some(5), Some(4_400), m);
    r.items.len() == 5 && r.used_budget.is_some_and(|u| u <= 4_400)
}

#[test]
fn every_head_is_placed_before_any_excerpt_and_the_reverse_is_caught() {
    assert!(heads_first(Mutation::None));
    assert!(!heads_first(Mutation::ExcerptsBeforeHeads));
}

fn budget_monotone(
    m: Mutation,
    candidates: &[Candidate],
    count: usize,
    low: usize,
    high: usize,
) -> bool {
    let config = ReconstructConfig::default();
    let a = run_with(&config, candidates.to_vec(), &[], Some(count), Some(low), m);
    let b = run_with(
        &config,
        candidates.to_vec(),
        &[],
        Some(count),
        Some(high),
        m,
    );
    let pieces = |r: &ReconstructResponse| -> BTreeSet<(Option<Ref>, Option<Ref>)> {
        r.items
            .iter()
            .flat_map(|i| {
                std::iter::once((i.head_ref, None))
                    .chain(i.excerpts.iter().map(move |e| (i.head_ref, Some(e.r#ref))))
            })
            .collect()
    };
    pieces(&a).is_subset(&pieces(&b))
}

fn budget_grid_monotone(m: Mutation) -> bool {
    // Five bundles of four versions: each item a head and three excerpts.
    let mut candidates = pool(20, true);
    for (n, c) in candidates.iter_mut().enumerate() {
        c.msg_id = format!("m{}", n / 4);
        c.ts_ms = Some(n as i64);
    }
    let budgets: Vec<usize> = [1_000, 4_000, 6_000, 8_000, 9_000, 12_000].to_vec();
    budgets.iter().all(|&low| {
        budgets
            .iter()
            .filter(|&&high| high > low)
            .all(|&high| budget_monotone(m, &candidates, 5, low, high))
    })
}

#[test]
fn raising_the_budget_never_removes_a_piece_and_budget_ordering_is_caught() {
    assert!(budget_grid_monotone(Mutation::None));
    assert!(!budget_grid_monotone(Mutation::AllocationByBudget));
}

#[test]
fn the_budget_resolves_as_shipped() {
    let config = ReconstructConfig::default();
    // Ten heads: 5 * 800 + 5 * 400 = 6,000 > 4,000: the default widens to fit the window.
    let b = budget::resolve(&config, None, 10);
    assert_eq!(
        (b.effective, b.policy.reason),
        (6_000, "default_fits_the_window")
    );
    assert_eq!(budget::resolve(&config, None, 1).effective, 4_000);
    assert!(!budget::resolve(&config, None, 1).differs_from_request);
    let b = budget::resolve(&config, Some(50_000), 1);
    assert!(b.policy.clamped && b.effective == 20_000);
    let b = budget::resolve(&config, Some(10), 1);
    assert_eq!(
        (b.effective, b.policy.reason),
        (800, "raised_to_one_excerpt")
    );
    assert_eq!(budget::head_cap(&config, 4), 800);
    assert_eq!(budget::head_cap(&config, 5), 400);
}

#[test]
fn allocation_is_heads_then_excerpt_rounds_and_a_prefix() {
    let seq = budget::sequence(&[(5, vec![3, 3]), (4, vec![2])]);
    let order: Vec<(usize, Slot)> = seq.iter().map(|p| (p.item, p.slot)).collect();
    assert_eq!(
        order,
        vec![
            (0, Slot::Head),
            (1, Slot::Head),
            (0, Slot::Excerpt(0)),
            (1, Slot::Excerpt(0)),
            (0, Slot::Excerpt(1)),
        ]
    );
    assert_eq!(budget::allocate(&seq, 12), (3, 12));
    // A prefix: a later smaller piece is not taken past one that did not fit.
    assert_eq!(budget::allocate(&seq, 13), (3, 12));
    // The first head always fits.
    assert_eq!(budget::allocate(&seq, 1), (1, 5));
}

// ---- Bundling by deterministic keys ----

#[test]
fn message_ids_bundle_within_a_project_only() {
    let mut c = pool(3, false);
    c[0].msg_id = "x".into();
    c[1].msg_id = "x".into();
    c[2].msg_id = "x".into();
    c[2].project = "other".into();
    let (clusters, whys) = bundle::bundle(&c, &[], 60_000);
    assert_eq!(clusters.len(), 2);
    assert_eq!(clusters[0].members, vec![0, 1]);
    assert_eq!(whys[1], Why::MsgId);
}

#[test]
fn episodes_contain_memories_of_their_context_only() {
    let mut c = pool(3, false);
    c.push(Candidate {
        r#ref: Some(Ref::ep(9)),
        span: Some((0, 2_500_000)),
        ts_ms: Some(0),
        text: "episode".into(),
        ..Candidate::default()
    });
    c[1].channel = "elsewhere".into();
    let (clusters, whys) = bundle::bundle(&c, &[], 0);
    // mem:1 (1,000,000) and mem:2 (2,000,000) fall in the span; mem:2 is in another channel.
    assert!(clusters.iter().any(|k| k.members == vec![0, 3]));
    assert_eq!(whys[3], Why::Episode);
    assert!(clusters.iter().any(|k| k.members == vec![1]));
}

#[test]
fn an_adjacency_burst_must_fit_the_interval_whole() {
    let mut c = pool(4, false);
    for (n, row) in c.iter_mut().enumerate() {
        row.source = Some(("User".into(), "u1".into()));
        row.ts_ms = Some(n as i64 * 40_000); // gaps of 40 s, interval 60 s
    }
    let (clusters, whys) = bundle::bundle(&c, &[], 60_000);
    // 0 and 1 fit (40 s); 2 is 80 s from the anchor: a new burst with 3.
    assert_eq!(clusters.len(), 2);
    assert_eq!(clusters[0].members, vec![0, 1]);
    assert_eq!(whys[1], Why::Adjacent);
    c[3].source = Some(("User".into(), "u2".into()));
    assert_eq!(bundle::bundle(&c, &[], 60_000).0.len(), 3);
}

#[test]
fn a_declared_relation_bundles_and_gives_a_role() {
    let c = pool(3, false);
    let links = [DeclaredLink {
        from: Ref::mem(3),
        to: Ref::mem(1),
        predicate: "corrects".into(),
    }];
    let config = ReconstructConfig::default();
    let r = run_with(&config, c, &links, None, None, Mutation::None);
    assert_eq!(r.items.len(), 2);
    let item = &r.items[0];
    assert_eq!(
        item.independence_reason.as_deref(),
        Some("cluster:relation")
    );
    let claim = item.claims.iter().find(|c| c.r#ref == Ref::mem(1)).unwrap();
    assert_eq!(claim.roles[0].role, "corrects");
    assert_eq!(claim.roles[0].r#ref, Ref::mem(3));
}

#[test]
fn versions_supersede_conflicts_are_kept_and_the_head_is_the_newest_version() {
    let mut c = pool(3, false);
    for row in c.iter_mut() {
        row.msg_id = "x".into();
    }
    c[2].ts_ms = c[1].ts_ms; // same id, same time: a conflict, both kept
    let config = ReconstructConfig::default();
    let r = run_with(&config, c, &[], None, None, Mutation::None);
    assert_eq!(r.items.len(), 1);
    let item = &r.items[0];
    assert_eq!(item.head_ref, Some(Ref::mem(2)));
    assert_eq!(item.claims.len(), 3);
    assert_eq!(item.conflicts.len(), 1);
    let oldest = item.claims.iter().find(|c| c.r#ref == Ref::mem(1)).unwrap();
    assert!(oldest.roles.iter().any(|r| r.role == "supersedes"));
}

#[test]
fn the_walk_follows_declared_entities_to_max_hops() {
    let mut graph = EntityGraph::default();
    graph.mentions.insert(Ref::mem(1), vec![10]);
    graph.edges = vec![(10, 11, "knows".into(), 0), (11, 12, "knows".into(), 1)];
    graph.mentioned_by.insert(11, vec![Ref::mem(7)]);
    graph.mentioned_by.insert(12, vec![Ref::mem(8)]);
    let (w, cut) = bundle::walk(&[Ref::mem(1)], &graph, 1, &BTreeSet::new());
    assert_eq!(
        w.iter().map(|x| x.r#ref).collect::<Vec<_>>(),
        vec![Ref::mem(7)]
    );
    assert!(cut);
    let (w, cut) = bundle::walk(&[Ref::mem(1)], &graph, 2, &BTreeSet::new());
    assert_eq!(w.len(), 2);
    assert!(!cut);
    let (w, _) = bundle::walk(&[Ref::mem(1)], &graph, 0, &BTreeSet::new());
    assert!(w.is_empty());
}

// ---- Quotes are verbatim and bounded ----

#[test]
fn head_quotes_are_verbatim_passages_within_the_cap() {
    let text = "Intro line about nothing.\nThe apple fell.\nMore filler here.\nA river ran by.\n"
        .repeat(20);
    let q = head_quote(&text, "apple river", 200, None);
    let chars: Vec<char> = text.chars().collect();
    assert!(q.text.chars().count() <= 200);
    let parts: Vec<String> = q
        .ranges
        .iter()
        .map(|r| chars[r[0]..r[1]].iter().collect())
        .collect();
    assert_eq!(q.text, parts.join(super::items::ELLIPSIS));
    assert!(q.text.contains("apple") && q.text.contains("river"));
    assert_eq!(head_quote("short", "x", 200, None).text, "short");
    let e = excerpt_quote(&text, "river", 100, None);
    assert!(e.text.chars().count() <= 100 && text.contains(&e.text));
}

#[test]
fn same_pool_same_bytes() {
    let config = ReconstructConfig::default();
    let a = run_with(&config, bundled_pool(), &[], None, None, Mutation::None);
    let b = run_with(&config, bundled_pool(), &[], None, None, Mutation::None);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

// ---- Property tests ----

fn arb_pool() -> impl Strategy<Value = Vec<Candidate>> {
    prop::collection::vec((0usize..4, 1usize..60, 0i64..5), 1..16).prop_map(|rows| {
        rows.into_iter()
            .enumerate()
            .map(|(n, (msg, len, ts))| {
                let text = (0..len)
                    .map(|i| format!("{} {}.", WORDS[(n + i) % 9], WORDS[(n * 3 + i) % 9]))
                    .collect::<Vec<_>>()
                    .join(" ");
                Candidate {
                    r#ref: Some(Ref::mem(n as i64 + 1)),
                    msg_id: if msg == 0 {
                        String::new()
                    } else {
                        format!("m{msg}")
                    },
                    ts_ms: Some(ts),
                    text,
                    ..Candidate::default()
                }
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn raise_the_budget_alone_and_no_item_or_excerpt_disappears(
        candidates in arb_pool(),
        count in 0usize..11,
        low in 1usize..8_000,
        extra in 0usize..12_000,
    ) {
        prop_assert!(budget_monotone(Mutation::None, &candidates, count, low, low + extra));
    }

    #[test]
    fn change_count_alone_and_the_clusters_and_their_order_are_unchanged(
        candidates in arb_pool(),
        a in 0usize..11,
        b in 0usize..11,
    ) {
        // Clusters never see the count; the window is a prefix of one order.
        let config = ReconstructConfig::default();
        let ra = run_with(&config, candidates.clone(), &[], Some(a), Some(20_000), Mutation::None);
        let rb = run_with(&config, candidates, &[], Some(b), Some(20_000), Mutation::None);
        let (short, long) = if a <= b { (ra, rb) } else { (rb, ra) };
        let heads = |r: &ReconstructResponse| r.items.iter().map(|i| i.head_ref).collect::<Vec<_>>();
        prop_assert!(heads(&long).starts_with(&heads(&short)));
    }
}

// ---- Engine level: the candidate pool never moves with the count ----

fn engine() -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine =
        crate::Engine::open(crate::EngineConfig::new(dir.path().join("r.db")), embedder).unwrap();
    for n in 0..30 {
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!(
                    "{} {} {} entry {n}",
                    WORDS[n % 9],
                    WORDS[(n * 2) % 9],
                    WORDS[(n * 5) % 9]
                ),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    (dir, engine)
}

fn candidate_set(engine: &crate::Engine, count: usize, m: Mutation) -> Vec<Ref> {
    let r = crate::reconstruct::reconstruct_with(
        engine.store_handle(),
        engine.config(),
        &crate::ReconstructRequest {
            agent_id: "a".into(),
            query: "apple river stone".into(),
            count: Some(count),
            trace: true,
            ..crate::ReconstructRequest::default()
        },
        m,
    )
    .unwrap();
    let mut refs = r.response.trace.unwrap().candidate_refs;
    refs.sort();
    refs
}

fn pool_fixed(engine: &crate::Engine, m: Mutation) -> bool {
    let base = candidate_set(engine, 1, m);
    (0..=10).all(|count| candidate_set(engine, count, m) == base)
}

#[test]
fn change_count_alone_and_the_candidate_id_set_is_unchanged() {
    let (_dir, engine) = engine();
    assert!(pool_fixed(&engine, Mutation::None));
    assert!(!pool_fixed(&engine, Mutation::CandidateLimitFromCount));
}
