//! `reconstruct` applies `source_id`, `time_cue` and `mode` (reference cpersona-2.6.14 §4):
//! source_id as recall's source filter, the time cue as recall's prior (never a filter),
//! a mode's window, default budget and skipped walk; and `archive_episode` builds the derived
//! sets so episodes get block quotes too.

use std::sync::Arc;

use serde_json::json;

use crate::recall::stages::cue::TimeCue;
use crate::reconstruct::stages::items::QuoteBasis;
use crate::refs::Ref;
use crate::{ReconstructMode, ReconstructRequest, ReconstructResult};

fn engine() -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine =
        crate::Engine::open(crate::EngineConfig::new(dir.path().join("q.db")), embedder).unwrap();
    (dir, engine)
}

/// Twenty memories about the garden, alternating sources u1/u2, one a month in 2024 and
/// 2025, each in its own burst (no two items merge).
fn corpus(engine: &crate::Engine) {
    for n in 0..20 {
        let month = n % 12 + 1;
        let year = 2024 + n / 12;
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("Garden note {n}: the roses by the shed were pruned."),
                source: Some(json!({"type": "user", "id": format!("u{}", n % 2 + 1)})),
                timestamp: Some(format!("{year}-{month:02}-10T09:00:00Z")),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
}

fn ask(engine: &crate::Engine, f: impl FnOnce(&mut ReconstructRequest)) -> ReconstructResult {
    let mut req = ReconstructRequest {
        agent_id: "a".into(),
        query: "roses pruned garden".into(),
        top_k: Some(40),
        budget: Some(100_000),
        ..ReconstructRequest::default()
    };
    f(&mut req);
    engine.reconstruct(&req).unwrap()
}

fn refs(r: &ReconstructResult) -> Vec<Ref> {
    r.response
        .items
        .iter()
        .flat_map(|i| i.claims.iter().map(|c| c.r#ref))
        .collect()
}

#[test]
fn source_id_filters_the_candidates_as_recall_does() {
    let (_dir, engine) = engine();
    corpus(&engine);
    let all = refs(&ask(&engine, |_| {}));
    assert!(all.iter().any(|r| r.id % 2 == 1) && all.iter().any(|r| r.id % 2 == 0));
    // Ids 1, 3, 5, … were stored with source u1 (n even).
    let only = refs(&ask(&engine, |r| r.source_id = "u1".into()));
    assert!(!only.is_empty());
    assert!(only.iter().all(|r| r.id % 2 == 1), "{only:?}");
}

#[test]
fn a_time_cue_is_a_prior_never_a_filter_and_is_reported() {
    let (_dir, engine) = engine();
    corpus(&engine);
    let cue = TimeCue::from_json(&json!({
        "after": "2024-03-01", "before": "2024-03-31", "confidence": "sure"
    }))
    .unwrap();
    let now = Some(1_767_225_600_000); // 2026-01-01
    let ask_cued = |cue: Option<TimeCue>| {
        ask(&engine, |r| {
            r.count = Some(10);
            r.top_k = Some(10);
            r.time_cue = cue;
            r.now_ms = now;
        })
    };
    let plain = ask_cued(None);
    let cued = ask_cued(Some(cue));
    let block = cued.time_cue.as_ref().expect("the cue block is reported");
    assert!(
        block.period.is_some() && block.ignored.is_none(),
        "{block:?}"
    );
    assert!(plain.time_cue.is_none());
    // The items follow the cued recall's order (singleton items, best first).
    let recall = engine
        .recall(&crate::RecallQuery {
            agent_id: "a".into(),
            query: "roses pruned garden".into(),
            limit: 10,
            time_cue: Some(cue),
            now_ms: now,
            ..crate::RecallQuery::default()
        })
        .unwrap();
    let order: Vec<Ref> = recall
        .response
        .messages
        .iter()
        .rev()
        .map(|m| m.r#ref)
        .collect();
    let heads = |r: &ReconstructResult| -> Vec<Ref> {
        r.response.items.iter().filter_map(|i| i.head_ref).collect()
    };
    assert_eq!(heads(&cued), order);
    // The March 2024 row (id 3) moves up; no row leaves (a prior, not a filter).
    let at = |r: &ReconstructResult| heads(r).iter().position(|h| *h == Ref::mem(3));
    assert!(
        at(&cued) < at(&plain),
        "{:?} vs {:?}",
        heads(&cued),
        heads(&plain)
    );
    let mut a = heads(&cued);
    let mut b = heads(&plain);
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

/// The head refs of the window's items (`held` false) or of the held items (`held` true).
fn heads_of(r: &ReconstructResult, held: bool) -> Vec<Ref> {
    r.response
        .items
        .iter()
        .filter(|i| i.admission.is_some() == held)
        .filter_map(|i| i.head_ref)
        .collect()
}

#[test]
fn rows_a_time_cue_seats_become_held_items_after_the_window() {
    let (_dir, engine) = engine();
    corpus(&engine);
    let cue = TimeCue::from_json(&json!({
        "after": "2025-06-01", "before": "2025-06-30", "confidence": "sure"
    }))
    .unwrap();
    let now = Some(1_767_225_600_000); // 2026-01-01
    let recall = engine
        .recall(&crate::RecallQuery {
            agent_id: "a".into(),
            query: "roses pruned garden".into(),
            limit: 3,
            time_cue: Some(cue),
            now_ms: now,
            ..crate::RecallQuery::default()
        })
        .unwrap();
    let seated: Vec<Ref> = recall
        .response
        .messages
        .iter()
        .filter(|m| m.match_reason.cue_rank.is_some())
        .map(|m| m.r#ref)
        .collect();
    assert!(!seated.is_empty(), "the cue seats a row past the top 3");
    let r = ask(&engine, |r| {
        r.count = Some(3);
        r.top_k = Some(3);
        r.time_cue = Some(cue);
        r.now_ms = now;
    });
    let items = &r.response.items;
    let window = heads_of(&r, false);
    let mut held = heads_of(&r, true);
    assert!(
        items
            .iter()
            .all(|i| matches!(i.admission, None | Some("reservation")))
    );
    let mut seated = seated;
    held.sort();
    seated.sort();
    assert_eq!(window.len(), 3);
    assert_eq!(held, seated, "each seated row is a held item");
    assert!(
        items[..3].iter().all(|i| i.admission.is_none()),
        "held items follow the window"
    );
    assert_eq!(r.response.reserved_count, Some(seated.len()));
    assert_eq!(r.response.returned_count, 3 + seated.len());
}

#[test]
fn pro_adds_depth_places_from_a_deeper_ranking_as_held_items() {
    let (_dir, engine) = engine();
    corpus(&engine);
    let pro = ask(&engine, |r| {
        r.top_k = Some(5);
        r.mode = Some(ReconstructMode::Pro);
    });
    let (window, held) = (heads_of(&pro, false), heads_of(&pro, true));
    // The five candidates fill the window; eight of the other fifteen rows take the places.
    assert_eq!(window.len(), 5);
    assert_eq!(held.len(), 8);
    assert!(held.iter().all(|r| !window.contains(r)));
    assert_eq!(pro.response.reserved_count, Some(8));
    let places = pro.mode.as_ref().and_then(|m| m.places).expect("reported");
    let depth = places.depth;
    assert_eq!((depth.depth, depth.beyond_pool, depth.taken), (100, 15, 8));
    // Every row matches the question's words: no lexical-only refusal, no keyword place.
    assert_eq!(places.keyword.taken, 0);
    // Lite and no mode ask no deeper ranking.
    let lite = ask(&engine, |r| {
        r.top_k = Some(5);
        r.mode = Some(ReconstructMode::Lite);
    });
    assert_eq!(lite.response.reserved_count, None);
    assert!(lite.mode.and_then(|m| m.places).is_none());
}

#[test]
fn pro_gives_a_keyword_place_to_a_row_only_a_lexical_arm_found() {
    let (_dir, engine) = engine();
    // 150 notes close to the question, then ten that share only a rare word with it: only
    // the keyword arm finds those, and the depth places prefer rows holding more parts.
    for n in 0..150 {
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("Roses pruned in the garden bed number {n}, mulched and watered."),
                timestamp: Some(format!("2024-01-01T{:02}:{:02}:00Z", n / 60, n % 60)),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    let mut rare = Vec::new();
    for n in 0..10 {
        let out = engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("Invoice zyxqvw {n} for the quarterly tax filing of the bakery."),
                timestamp: Some(format!("2024-02-{:02}T00:00:00Z", n + 1)),
                ..crate::StoreRequest::default()
            })
            .unwrap();
        let Some(crate::StoreId::Row(id)) = out.id else {
            panic!("stored: {out:?}")
        };
        rare.push(Ref::mem(id));
    }
    let pro = ask(&engine, |r| {
        r.query = "roses pruned garden zyxqvw".into();
        r.top_k = Some(5);
        r.mode = Some(ReconstructMode::Pro);
    });
    let places = pro.mode.as_ref().and_then(|m| m.places).expect("reported");
    let held = heads_of(&pro, true);
    assert!(places.keyword.taken > 0, "{places:?}");
    // Keyword places come first among the held items, and hold only the keyword's rows.
    let keyword = &held[..places.keyword.taken];
    assert!(keyword.iter().all(|r| rare.contains(r)), "{held:?}");
}

#[test]
fn lite_sets_its_budget_and_skips_the_walk_and_pro_widens_the_window() {
    let (_dir, engine) = engine();
    corpus(&engine);
    let lite = engine
        .reconstruct(&ReconstructRequest {
            agent_id: "a".into(),
            query: "roses pruned garden".into(),
            mode: Some(ReconstructMode::Lite),
            trace: true,
            ..ReconstructRequest::default()
        })
        .unwrap();
    let policy = lite.response.budget_policy.expect("under trace");
    assert_eq!(policy.reason, "mode_default");
    let used: usize = lite
        .response
        .items
        .iter()
        .map(|i| i.content.chars().count())
        .sum();
    assert!(used <= ReconstructMode::LITE_BUDGET);
    assert_eq!(lite.response.bounds.map(|b| b.max_hops), Some(0));
    let report = lite.mode.expect("the mode is reported");
    assert_eq!((report.mode, report.token_cap_applied), ("lite", false));

    let pro = engine
        .reconstruct(&ReconstructRequest {
            agent_id: "a".into(),
            query: "roses pruned garden".into(),
            mode: Some(ReconstructMode::Pro),
            top_k: Some(40),
            ..ReconstructRequest::default()
        })
        .unwrap();
    assert_eq!(pro.response.effective_count, ReconstructMode::PRO_COUNT);
    assert_eq!(pro.response.returned_count, ReconstructMode::PRO_COUNT);
    let plain = ask(&engine, |_| {});
    assert_eq!(plain.response.effective_count, 10);
}

#[test]
fn archive_episode_builds_blocks_and_episodes_get_block_quotes() {
    let (_dir, engine) = engine();
    let filler = |n: usize| {
        (0..n)
            .map(|i| format!("The harbour crane number {i} was painted green."))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let summary = format!(
        "{} The violin lesson moved to Tuesday. {}",
        filler(12),
        filler(12)
    );
    let out = engine
        .archive_episode(&crate::ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: summary.clone(),
            ..crate::ArchiveEpisodeRequest::default()
        })
        .unwrap();
    assert!(out.derived.blocks > 1, "{:?}", out.derived);
    let id = out.episode_id.unwrap();
    let blocks = engine.stored_blocks(Ref::ep(id)).unwrap();
    assert_eq!(blocks.len(), out.derived.blocks);
    assert!(blocks.iter().all(|b| b.int8.is_some()));
    let r = engine
        .reconstruct(&ReconstructRequest {
            agent_id: "a".into(),
            query: "violin lesson tuesday".into(),
            ..ReconstructRequest::default()
        })
        .unwrap();
    let item = r
        .response
        .items
        .iter()
        .find(|i| i.head_ref == Some(Ref::ep(id)))
        .unwrap();
    assert_eq!(item.quote_basis, QuoteBasis::Blocks);
    assert!(item.content.contains("The violin lesson moved to Tuesday."));
    let chars: Vec<char> = summary.chars().collect();
    for r in &item.ranges {
        assert!(r[1] <= chars.len());
    }
}
