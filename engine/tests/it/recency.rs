//! The recency prior end to end through `Engine::recall` (`RecallConfig::recency`, the server's
//! `CPERSONA_PRIOR_AGE_RATE`): off, the response carries no `recency` block; on, the counted
//! answer keeps its rows, the freshest row moves up at most the bound, and the block says so.

use cpersona_engine::recall::stages::recency::RecencyConfig;
use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, replay};
use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{Engine, EngineConfig, RecallQuery, RecallResult, StoreRequest};

use crate::common::{Fixture, fixture};

/// Six rows about the harbor dated a year apart; the newest matches the query least.
fn rows(f: &Fixture) {
    for (i, year) in (2020..2026).enumerate() {
        f.engine
            .store(&StoreRequest {
                agent_id: "a".into(),
                content: if year == 2025 {
                    "a short note that mentions the harbor once".to_owned()
                } else {
                    format!("harbor ferry lights: note {i} on the harbor ferry lights")
                },
                timestamp: Some(format!("{year}-03-01T00:00:00Z")),
                ..StoreRequest::default()
            })
            .unwrap();
    }
}

fn recall(engine: &Engine) -> RecallResult {
    recall_traced(engine, false)
}

fn recall_traced(engine: &Engine, trace: bool) -> RecallResult {
    engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: "harbor ferry lights".into(),
            limit: 4,
            trace,
            ..RecallQuery::default()
        })
        .unwrap()
}

fn with_recency(f: &Fixture) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.recall.recency = RecencyConfig {
        rate_per_h: 0.01,
        ..RecencyConfig::default()
    };
    Engine::open(config, f.embedder.clone()).unwrap()
}

fn best_first(r: &RecallResult) -> Vec<Ref> {
    r.response.messages.iter().rev().map(|m| m.r#ref).collect()
}

#[test]
fn recency_reorders_the_counted_answer_within_its_bound() {
    let f = fixture();
    rows(&f);
    let off = recall(&f.engine);
    assert!(off.response.recency.is_none());
    let json = serde_json::to_string(&off.response).unwrap();
    assert!(!json.contains("\"recency\""), "{json}");

    let on = recall(&with_recency(&f));
    let acted = on
        .response
        .recency
        .as_ref()
        .expect("recency block when set");
    assert_eq!(acted.order_before, best_first(&off));
    let (mut a, mut b) = (best_first(&off), best_first(&on));
    assert_eq!(a.len(), 4);
    a.sort();
    b.sort();
    assert_eq!(a, b, "recency must not change which rows the count admits");
    // The newest row of the answer (the anchor) moves up by at most the bound.
    let anchor = acted.anchor_ms.expect("dated rows");
    let newest = on
        .response
        .messages
        .iter()
        .find(|m| {
            m.timestamp
                .as_deref()
                .and_then(|t| cpersona_engine::time::parse_iso8601_ms(t).ok())
                == Some(anchor)
        })
        .map(|m| m.r#ref)
        .expect("anchor row in the answer");
    let was = acted
        .order_before
        .iter()
        .position(|r| *r == newest)
        .unwrap();
    let now = best_first(&on).iter().position(|r| *r == newest).unwrap();
    assert!(
        now <= was && was - now <= RecencyConfig::MAX_UP,
        "{was} -> {now}"
    );
    assert_eq!(now, was.saturating_sub(RecencyConfig::MAX_UP));
    assert!(
        was > 0,
        "the fixture's newest row must not already lead: {was}"
    );
    assert!(acted.moved > 0);
}

#[test]
fn a_recency_trace_replays_to_the_same_response() {
    let f = fixture();
    rows(&f);
    let with = recall_traced(&with_recency(&f), true);
    assert!(with.response.recency.as_ref().is_some_and(|r| r.moved > 0));
    let text = serde_json::to_string_pretty(&with.trace().unwrap()).unwrap();
    assert!(
        text.contains("\"recency\""),
        "the trace config holds the setting"
    );
    let trace = RecallTrace::from_json(&text).unwrap();
    let out = replay(&trace, &ReplayChanges::default()).unwrap();
    assert_eq!(
        cpersona_engine::trace::without_text(serde_json::to_value(&out.response).unwrap())
            .to_string(),
        cpersona_engine::trace::without_text(serde_json::to_value(&with.response).unwrap())
            .to_string()
    );
}
