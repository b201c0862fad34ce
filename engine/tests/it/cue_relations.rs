//! Cue propagation follows declared relations: a row related to the strong hit (either
//! direction) gets the context move, an unrelated row does not, and with no relations
//! declared the response is byte for byte what it was with the associations off.

use cpersona_engine::recall::stages::cue_spread::ContextBy;
use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, replay};
use cpersona_engine::time::{format_ms, parse_iso8601_ms};
use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{
    DeclareRequest, RecallQuery, RecallResult, RelationInput, StoreRequest, TimeCue,
};
use serde_json::json;

use crate::common::{Fixture, fixture_with, store_request};

const DAY_MS: i64 = 86_400_000;

/// The cue's 10 days start at S; the strong hit is at S + 1 d, `related` and `other` (the
/// same closeness to the query) at S + 9.5 d and S + 9.4 d, outside the narrowed period.
struct Corpus {
    hit: Ref,
    related: Ref,
    other: Ref,
}

fn s() -> i64 {
    parse_iso8601_ms("2024-05-01T00:00:00Z").unwrap()
}

fn put(f: &Fixture, content: &str, at_ms: i64) -> Ref {
    Ref::mem(store_request(
        f,
        &StoreRequest {
            agent_id: "a".into(),
            content: content.into(),
            // Each row its own source, so only a declared relation can join two rows.
            source: Some(json!({"type": "User", "id": content})),
            timestamp: Some(format_ms(at_ms)),
            ..StoreRequest::default()
        },
    ))
}

fn corpus(f: &Fixture) -> Corpus {
    for n in 0..3 {
        put(
            f,
            &format!("amber falcon ridge d{n}"),
            s() - (100 + n) * DAY_MS,
        );
    }
    let hit = put(f, "amber falcon ridge", s() + DAY_MS);
    let related = put(f, "amber falcon meadow", s() + 9 * DAY_MS + DAY_MS / 2);
    let other = put(f, "amber falcon brook", s() + 9 * DAY_MS + 2 * DAY_MS / 5);
    for n in 1..3 {
        put(
            f,
            &format!("pebble lantern f{n}"),
            s() + n * DAY_MS + DAY_MS / 2,
        );
    }
    Corpus {
        hit,
        related,
        other,
    }
}

fn engine(associations: bool) -> Fixture {
    fixture_with(|c| {
        c.recall.gate.enabled = false;
        c.associations_enabled = associations;
    })
}

fn recall(f: &Fixture) -> RecallResult {
    let cue = json!({"after": "2024-05-01", "before": "2024-05-10", "confidence": "sure"});
    f.engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: "amber falcon ridge".into(),
            limit: 7,
            trace: true,
            time_cue: Some(TimeCue::from_json(&cue).unwrap()),
            now_ms: Some(s() + 40 * DAY_MS),
            ..RecallQuery::default()
        })
        .unwrap()
}

fn best_first(r: &RecallResult) -> Vec<Ref> {
    r.response.messages.iter().rev().map(|m| m.r#ref).collect()
}

#[test]
fn a_row_related_to_the_strong_hit_moves_and_an_unrelated_one_does_not() {
    let plain = engine(true);
    let c = corpus(&plain);
    let before = recall(&plain);
    let spread = before
        .response
        .time_cue
        .as_ref()
        .unwrap()
        .propagated
        .clone();
    let spread = spread.expect("the hit is strong");
    assert_eq!(spread.from, c.hit);
    assert!(spread.context.is_empty(), "{spread:?}");

    let declared = engine(true);
    let c2 = corpus(&declared);
    assert_eq!((c2.hit, c2.related), (c.hit, c.related));
    // Declared object → subject: the relation counts in either direction.
    let out = declared
        .engine
        .declare_associations(&DeclareRequest {
            agent_id: "a".into(),
            relations: vec![RelationInput {
                subject: c.related.to_string(),
                predicate: "continues".into(),
                object: c.hit.to_string(),
            }],
            ..DeclareRequest::default()
        })
        .unwrap();
    assert_eq!(out.relations.len(), 1, "{out:?}");
    let after = recall(&declared);
    let spread = after.response.time_cue.as_ref().unwrap().propagated.clone();
    let context = spread.unwrap().context;
    assert!(
        context
            .iter()
            .any(|x| x.r#ref == c.related && x.by == ContextBy::Relation),
        "{context:?}"
    );
    assert!(context.iter().all(|x| x.r#ref != c.other), "{context:?}");
    let (b, a) = (best_first(&before), best_first(&after));
    let pos = |v: &[Ref], r: Ref| v.iter().position(|x| *x == r);
    assert!(
        pos(&a, c.related).unwrap() < pos(&b, c.related).unwrap(),
        "{b:?} → {a:?}"
    );
    assert!(
        pos(&a, c.other).unwrap() >= pos(&b, c.other).unwrap(),
        "{b:?} → {a:?}"
    );
    // The trace holds the relation, so a replay re-applies it exactly.
    let text = serde_json::to_string(&after.trace().unwrap()).unwrap();
    let trace = RecallTrace::from_json(&text).unwrap();
    let same = replay(&trace, &ReplayChanges::default()).unwrap();
    assert!(same.unchanged, "{same:?}");
}

#[test]
fn no_relations_declared_is_byte_identical_to_associations_off() {
    let on = engine(true);
    corpus(&on);
    let off = engine(false);
    corpus(&off);
    let a = serde_json::to_string(&recall(&on).response).unwrap();
    let b = serde_json::to_string(&recall(&off).response).unwrap();
    assert_eq!(a, b);
}
