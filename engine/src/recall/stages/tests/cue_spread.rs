//! Cue propagation: a strong hit narrows the period inside the envelope (never below the
//! floor, never outside), its source and episode rows get a bounded context move, and the
//! answer keeps exactly its rows (only their order changes) however the inputs fall.

use std::collections::HashMap;

use serde_json::json;

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::cue::{DAY_MS, Period};
use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::cue_plan::PoolContext;
use crate::recall::stages::cue_spread::{ContextBy, NARROW_FLOOR_MS, narrow};
use crate::recall::stages::deliberate::CueRow;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::pipeline::RecallOutcome;
use crate::recall::stages::prior::{self, CuePrior, Prior, PriorRow};
use crate::recall::stages::shape::Hydrated;
use crate::recall::{RecallRequest, run_cued};
use crate::refs::Ref;

fn envelope() -> Period {
    Period {
        start_ms: 0,
        end_ms: 10 * DAY_MS,
    }
}

/// `(id, cosine, event time in ms, source id)`, best first: the vector arm's list.
type Row = (i64, f64, i64, &'static str);

fn plan(rows: &[Row]) -> CuePlan {
    let mut found: Vec<CueRow> = rows
        .iter()
        .filter(|r| envelope().contains(r.2))
        .map(|&(id, cosine, at_ms, _)| CueRow {
            r#ref: Ref::mem(id),
            at_ms,
            cosine: Some(cosine),
        })
        .collect();
    found.sort_by(|a, b| b.cosine.unwrap().total_cmp(&a.cosine.unwrap()));
    let mut prior_rows: HashMap<Ref, PriorRow> = rows
        .iter()
        .map(|r| {
            (
                Ref::mem(r.0),
                PriorRow {
                    at_ms: Some(r.2),
                    ..PriorRow::default()
                },
            )
        })
        .collect();
    for (rank, row) in found.iter().enumerate() {
        prior_rows.get_mut(&row.r#ref).unwrap().cue_rank = Some(rank);
    }
    CuePlan {
        prior: Prior::cued(CuePrior {
            envelope: envelope(),
            max_up: 3,
            depth: 50,
            context_up: 0,
        }),
        rows: prior_rows,
        found,
        seats: 3,
        context: PoolContext::default(),
        fetched: Vec::new(),
        fetch_envelope: None,
        fetch_cut: false,
        propagate: true,
    }
}

fn pass(rows: &[Row], limit: usize, cue: Option<&CuePlan>) -> RecallOutcome {
    let arms = vec![ArmList::ranked(
        Arm::VectorNear,
        rows.iter().map(|r| (Ref::mem(r.0), Some(r.1))),
    )];
    let sources: HashMap<Ref, &str> = rows.iter().map(|r| (Ref::mem(r.0), r.3)).collect();
    run_cued(
        &RecallConfig::default(),
        &RecallRequest {
            query: "q",
            limit,
            deep: false,
            full_content: false,
        },
        arms,
        &GateInput {
            calibrated: Some(0.1),
            pool: 600,
            deep: false,
        },
        cue,
        |r| {
            sources.get(&r).map(|s| Hydrated {
                content: format!("row {r}"),
                source: Some(json!({ "id": s })),
                ..Hydrated::default()
            })
        },
        |_| None,
    )
}

fn ids_best_first(outcome: &RecallOutcome) -> Vec<i64> {
    outcome
        .response
        .messages
        .iter()
        .rev()
        .map(|m| m.r#ref.id)
        .collect()
}

const DAY: i64 = DAY_MS;

/// mem:1 leads by 0.4 at day 5: strong. mem:6 shares its source outside the envelope.
fn strong_rows() -> Vec<Row> {
    vec![
        (1, 0.9, 5 * DAY, "s1"),
        (2, 0.5, DAY, "s2"),
        (3, 0.48, 5 * DAY + DAY / 5, "s3"),
        (4, 0.46, 9 * DAY, "s4"),
        (5, 0.44, 3 * DAY, "s5"),
        (6, 0.42, 20 * DAY, "s1"),
    ]
}

#[test]
fn a_strong_hit_narrows_the_period_and_reorders_around_it() {
    let rows = strong_rows();
    let out = pass(&rows, 6, Some(&plan(&rows)));
    let applied = out.stages.cue.as_ref().unwrap();
    let spread = applied
        .propagated
        .as_ref()
        .expect("a strong hit propagates");
    assert_eq!(spread.from, Ref::mem(1));
    assert!(spread.narrowed);
    // Half the 10-day envelope, centred on day 5: [2.5, 7.5) days.
    assert_eq!(
        spread.period,
        Period {
            start_ms: 5 * DAY / 2,
            end_ms: 15 * DAY / 2
        }
        .text()
    );
    assert_eq!(spread.context.len(), 1);
    assert_eq!(spread.context[0].r#ref, Ref::mem(6));
    assert_eq!(spread.context[0].by, ContextBy::Source);
    // Without propagation the cue ranks 1,2,3,4,5 keep the fused order; inside the narrowed
    // period mem:3 and mem:5 rank 2nd and 3rd and move up past mem:2 and mem:4.
    assert_eq!(ids_best_first(&out), vec![1, 3, 2, 5, 4, 6]);
}

#[test]
fn no_strong_hit_leaves_the_plan_alone() {
    let mut rows = strong_rows();
    rows[0].1 = 0.52; // leads mem:2 by 0.02 < 0.05
    let out = pass(&rows, 6, Some(&plan(&rows)));
    assert!(out.stages.cue.as_ref().unwrap().propagated.is_none());
    assert_eq!(ids_best_first(&out), vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn narrowing_is_bounded_by_the_floor_and_the_envelope() {
    let env = envelope();
    // At the envelope's edge the narrowed period is shifted inside it.
    let edge = narrow(env, 0);
    assert_eq!(edge.start_ms, 0);
    assert_eq!(edge.end_ms, 5 * DAY);
    let late = narrow(env, 10 * DAY - 1);
    assert_eq!(late.end_ms, env.end_ms);
    // Never below the floor: a 1.5-day envelope narrows to one day, a 1-day one stays whole.
    let short = Period {
        start_ms: 0,
        end_ms: 3 * DAY / 2,
    };
    let n = narrow(short, DAY);
    assert_eq!(n.end_ms - n.start_ms, NARROW_FLOOR_MS);
    let day = Period {
        start_ms: 0,
        end_ms: DAY,
    };
    assert_eq!(narrow(day, DAY / 2), day);
    let three = Period {
        start_ms: 0,
        end_ms: 3 * DAY,
    };
    let n = narrow(three, DAY);
    assert_eq!(n.end_ms - n.start_ms, (3 * DAY / 2).max(NARROW_FLOOR_MS));
    assert!(n.start_ms >= three.start_ms && n.end_ms <= three.end_ms);
}

#[test]
fn an_episode_holding_the_hit_is_a_context_cue() {
    let rows = strong_rows();
    let mut plan = plan(&rows);
    plan.context.episodes.push((
        Ref::ep(9),
        Period {
            start_ms: 4 * DAY,
            end_ms: 6 * DAY,
        },
    ));
    let out = pass(&rows, 6, Some(&plan));
    let spread = out.stages.cue.unwrap().propagated.unwrap();
    // mem:3 (day 5.2) lies inside the episode's span with the hit.
    assert!(
        spread
            .context
            .iter()
            .any(|c| c.r#ref == Ref::mem(3) && c.by == ContextBy::Episode)
    );
}

#[test]
fn a_row_related_to_the_hit_is_a_context_cue_and_moves() {
    // mem:5 (day 3) shares nothing with the hit but a declared relation (mem:5 → hit:
    // either direction counts); mem:2 is related to mem:3, not to the hit; ep:7 → hit names
    // a row the pool does not hold, so it moves nothing.
    let rows = strong_rows();
    let base = pass(&rows, 6, Some(&plan(&rows)));
    let mut related = plan(&rows);
    related.context.relations = vec![
        (Ref::mem(5), Ref::mem(1)),
        (Ref::mem(3), Ref::mem(2)),
        (Ref::ep(7), Ref::mem(1)),
    ];
    let out = pass(&rows, 6, Some(&related));
    let spread = out.stages.cue.as_ref().unwrap().propagated.clone().unwrap();
    let by = |id: i64| {
        spread
            .context
            .iter()
            .find(|c| c.r#ref == Ref::mem(id))
            .map(|c| c.by)
    };
    assert_eq!(by(5), Some(ContextBy::Relation));
    assert_eq!(by(2), None);
    assert_eq!(by(4), None);
    // mem:5 moves up one place past mem:2 (which nothing lifts); the same rows.
    let before = ids_best_first(&base);
    let after = ids_best_first(&out);
    assert_eq!(before, vec![1, 3, 2, 5, 4, 6]);
    assert_eq!(after, vec![1, 3, 5, 2, 4, 6]);
    // An empty registry is exactly the plan without relations.
    assert!(plan(&rows).context.relations.is_empty());
    assert_eq!(pass(&rows, 6, Some(&plan(&rows))), base);
}

#[test]
fn a_context_row_moves_up_at_most_context_up_places() {
    let cue = CuePrior {
        envelope: envelope(),
        max_up: 3,
        depth: 50,
        context_up: 1,
    };
    let mut rows = vec![PriorRow::default(); 5];
    rows[4].context = true;
    let order = prior::apply(&Prior::cued(cue), &rows, &[5.0, 4.0, 3.0, 2.0, 1.0]);
    assert_eq!(order, vec![0, 1, 2, 4, 3]);
}

/// A small deterministic generator (no dependency): the same cases every run.
fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

#[test]
fn propagation_never_drops_or_adds_a_row() {
    let mut seed = 7u64;
    let mut propagated = 0;
    for case in 0..300 {
        let n = 2 + (lcg(&mut seed) % 12) as usize;
        let mut rows: Vec<Row> = (0..n)
            .map(|i| {
                let cosine = (lcg(&mut seed) % 1000) as f64 / 1000.0;
                let at = (lcg(&mut seed) % (14 * DAY as u64)) as i64 - 2 * DAY;
                let source = ["a", "b", "c"][(lcg(&mut seed) % 3) as usize];
                (i as i64 + 1, cosine, at, source)
            })
            .collect();
        rows.sort_by(|a, b| b.1.total_cmp(&a.1));
        if case % 2 == 0 {
            rows[0].1 = 0.99; // often strong
        }
        let limit = 1 + (lcg(&mut seed) % 8) as usize;
        let plan = plan(&rows);
        let free = pass(&rows, limit, None);
        let cued = pass(&rows, limit, Some(&plan));
        let applied = cued.stages.cue.as_ref().unwrap();
        propagated += usize::from(applied.propagated.is_some());
        let mut a = ids_best_first(&free);
        let mut b: Vec<i64> = ids_best_first(&cued)
            .into_iter()
            .filter(|id| !applied.seated.contains(&Ref::mem(*id)))
            .collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "case {case}: the counted rows changed");
        // Seats: as many as the envelope offers beyond the answer (the gate, at 0.1, refuses
        // the rest), up to the plan's seats.
        let spare = plan
            .found
            .iter()
            .filter(|r| !a.contains(&r.r#ref.id) && r.cosine.unwrap() >= 0.1)
            .count();
        assert_eq!(applied.seated.len(), spare.min(plan.seats), "case {case}");
    }
    assert!(propagated > 50, "only {propagated} cases propagated");
}
