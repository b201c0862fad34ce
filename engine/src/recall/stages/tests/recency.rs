//! The recency prior wired into free recall: it re-orders the counted answer by a bounded
//! move only when set, reports that it acted, and never changes which rows the count admits.

use std::collections::HashMap;

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::recency::RecencyConfig;
use crate::recall::stages::shape::Hydrated;
use crate::recall::{RecallOutcome, RecallRequest, run};
use crate::refs::Ref;

/// mem1 (old) and mem2 (new) tie on the fused score (each is rank 0 of one vector arm);
/// mem3 is old and ranked below; mem4, the newest of all, falls past the count.
fn pass(recency: RecencyConfig, limit: usize) -> RecallOutcome {
    let dates = HashMap::from([
        (Ref::mem(1), "2020-01-01T00:00:00Z"),
        (Ref::mem(2), "2026-06-01T00:00:00Z"),
        (Ref::mem(3), "2021-01-01T00:00:00Z"),
        (Ref::mem(4), "2026-12-01T00:00:00Z"),
    ]);
    let arms = vec![
        ArmList::ranked(
            Arm::VectorNear,
            [
                (Ref::mem(1), Some(0.8)),
                (Ref::mem(3), Some(0.7)),
                (Ref::mem(4), Some(0.6)),
            ],
        ),
        ArmList::ranked(Arm::VectorFar, [(Ref::mem(2), Some(0.8))]),
    ];
    let config = RecallConfig {
        recency,
        ..RecallConfig::default()
    };
    let request = RecallRequest {
        query: "q",
        limit,
        deep: false,
        full_content: false,
    };
    let gate = GateInput {
        calibrated: Some(0.3),
        pool: 10,
        deep: false,
    };
    run(
        &config,
        &request,
        arms,
        &gate,
        |r| {
            dates.get(&r).map(|at| Hydrated {
                content: format!("row {r}"),
                timestamp: Some((*at).to_owned()),
                ..Hydrated::default()
            })
        },
        |_| None,
    )
}

/// The answer best first (the response lists it last-is-best).
fn best_first(outcome: &RecallOutcome) -> Vec<Ref> {
    outcome
        .response
        .messages
        .iter()
        .rev()
        .map(|m| m.r#ref)
        .collect()
}

fn on() -> RecencyConfig {
    RecencyConfig {
        rate_per_h: 0.01,
        ..RecencyConfig::default()
    }
}

#[test]
fn equal_scores_swap_only_with_the_setting() {
    let off = pass(RecencyConfig::default(), 3);
    let set = pass(on(), 3);
    let scores: Vec<f64> = off.stages.fusion.iter().map(|c| c.score).collect();
    assert_eq!(
        scores[0], scores[1],
        "the fixture's old and new rows must tie"
    );
    assert_eq!(
        best_first(&off),
        vec![Ref::mem(1), Ref::mem(2), Ref::mem(3)]
    );
    assert_eq!(
        best_first(&set),
        vec![Ref::mem(2), Ref::mem(1), Ref::mem(3)]
    );
    let applied = set
        .response
        .recency
        .as_ref()
        .expect("recency reports when set");
    assert_eq!(applied.moved, 1);
    assert_eq!(applied.max_up, RecencyConfig::MAX_UP);
    assert_eq!(
        applied.anchor_ms,
        Some(crate::time::parse_iso8601_ms("2026-06-01T00:00:00Z").expect("date"))
    );
    assert_eq!(applied.order_before, best_first(&off));
    assert_eq!(set.stages.recency, set.response.recency);
}

#[test]
fn identity_changes_nothing_and_says_nothing() {
    let default = pass(RecencyConfig::default(), 3);
    assert!(default.response.recency.is_none());
    assert!(default.stages.recency.is_none());
    let json = serde_json::to_string(&default.response).expect("json");
    assert!(!json.contains("recency"), "{json}");
    // A zero bound is the identity too.
    let bound0 = pass(RecencyConfig { max_up: 0, ..on() }, 3);
    assert_eq!(bound0.response, default.response);
}

#[test]
fn the_count_admits_the_same_rows() {
    for limit in [1, 2, 3, 4] {
        let off = pass(RecencyConfig::default(), limit);
        let set = pass(on(), limit);
        let mut a = best_first(&off);
        let mut b = best_first(&set);
        a.sort();
        b.sort();
        assert_eq!(a, b, "limit {limit}");
        assert_eq!(off.stages.order.cut_by_count, set.stages.order.cut_by_count);
    }
    // mem4, the newest row, stays past a count of 3 however strong recency is.
    let set = pass(on(), 3);
    assert!(!best_first(&set).contains(&Ref::mem(4)));
    assert_eq!(set.stages.order.cut_by_count, vec![Ref::mem(4)]);
}
