//! A reconstruct `mode` returns the shortened shape of reference cpersona-2.6.14 §4.2 step 11
//! (no `ranges`, `bounds`, `effective_budget`/`used_budget`; a lone head claim becomes the
//! item's `as_of`), says what it dropped and which bound cut, and changes no membership; the
//! trace keeps the full shape.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::refs::Ref;
use crate::{ReconstructMode, ReconstructRequest, ReconstructResult};

/// Twelve ~300-character notes, a month apart (no two bundle), so ten whole quotes overrun
/// lite's 2,800-character budget.
fn engine() -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine =
        crate::Engine::open(crate::EngineConfig::new(dir.path().join("m.db")), embedder).unwrap();
    for n in 0..12 {
        let filler = "The roses by the shed were pruned back hard and mulched. ".repeat(5);
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("Garden note {n}: {filler}"),
                source: Some(json!({"type": "user", "id": format!("u{n}")})),
                timestamp: Some(format!("2024-{:02}-10T09:00:00Z", n + 1)),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    (dir, engine)
}

fn ask(engine: &crate::Engine, mode: Option<ReconstructMode>, trace: bool) -> ReconstructResult {
    engine
        .reconstruct(&ReconstructRequest {
            agent_id: "a".into(),
            query: "roses pruned garden".into(),
            top_k: Some(40),
            mode,
            trace,
            ..ReconstructRequest::default()
        })
        .unwrap()
}

fn heads(r: &ReconstructResult) -> Vec<Option<Ref>> {
    r.response.items.iter().map(|i| i.head_ref).collect()
}

/// Every key at any depth of the serialized response.
fn keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

fn key_set(r: &ReconstructResult) -> Vec<String> {
    let mut out = Vec::new();
    keys(&serde_json::to_value(&r.response).unwrap(), &mut out);
    out
}

#[test]
fn lite_returns_the_short_shape_and_says_what_it_dropped() {
    let (_dir, engine) = engine();
    let lite = ask(&engine, Some(ReconstructMode::Lite), false);
    let full = ask(&engine, Some(ReconstructMode::Lite), true);
    // Same items, same quotes: the shape never changes membership.
    assert_eq!(heads(&lite), heads(&full));
    assert!(lite.response.returned_count > 0);
    for (short, long) in lite.response.items.iter().zip(&full.response.items) {
        assert_eq!(short.content, long.content);
    }
    let k = key_set(&lite);
    for dropped in [
        "ranges",
        "bounds",
        "effective_budget",
        "used_budget",
        "claims",
    ] {
        assert!(!k.iter().any(|key| key == dropped), "{dropped} in {k:?}");
    }
    // Each item here is a singleton: its lone head claim is given as the item's as_of.
    for (short, long) in lite.response.items.iter().zip(&full.response.items) {
        assert_eq!(long.claims.len(), 1);
        assert_eq!(short.as_of, long.claims[0].as_of);
        assert!(short.as_of.is_some());
    }
    // The full shape under trace has them all, and the budget did cut.
    let kf = key_set(&full);
    for kept in [
        "ranges",
        "bounds",
        "effective_budget",
        "used_budget",
        "claims",
    ] {
        assert!(
            kf.iter().any(|key| key == kept),
            "{kept} missing under trace"
        );
    }
    let report = lite.mode.expect("the mode is reported");
    assert_eq!(report.shape, "compact");
    assert_eq!(
        report.compacted.omitted_fields,
        ["ranges", "effective_budget", "used_budget", "claims"]
    );
    assert_eq!(report.compacted.cut_by, ["budget"]);
    assert_eq!(lite.response.shortfall_reason, Some("budget_exhausted"));
    let traced = full.mode.expect("the mode is reported");
    assert_eq!(traced.shape, "full");
    assert!(traced.compacted.omitted_fields.is_empty());
}

#[test]
fn pro_gets_the_same_short_shape_and_no_mode_keeps_the_full_one() {
    let (_dir, engine) = engine();
    let pro = ask(&engine, Some(ReconstructMode::Pro), false);
    assert_eq!(pro.response.returned_count, 12);
    let k = key_set(&pro);
    for dropped in [
        "ranges",
        "bounds",
        "effective_budget",
        "used_budget",
        "claims",
    ] {
        assert!(!k.iter().any(|key| key == dropped), "{dropped} in {k:?}");
    }
    let report = pro.mode.expect("the mode is reported");
    assert_eq!(report.compacted.omitted_fields, ["ranges", "claims"]);
    assert!(report.compacted.cut_by.is_empty());
    let plain = ask(&engine, None, false);
    assert!(plain.mode.is_none());
    let kp = key_set(&plain);
    assert!(kp.iter().any(|key| key == "ranges"));
    assert!(kp.iter().any(|key| key == "claims"));
    assert!(plain.response.items.iter().all(|i| i.as_of.is_none()));
}
