//! The Deliberative loop: stages re-filter the one fetched pool, revise at most once, and say
//! which limit acted.

use crate::recall::stages::cue::{CueConfidence, DAY_MS, Period};
use crate::recall::stages::deliberate::{
    CueConfig, CueRow, LoopLimit, StageOutcome, StopRule, Sufficiency, SufficiencyRule,
    fetch_envelope, run,
};
use crate::refs::Ref;

fn row(id: i64, day: i64, cosine: f64) -> CueRow {
    CueRow {
        r#ref: Ref::mem(id),
        at_ms: day * DAY_MS,
        cosine: Some(cosine),
    }
}

fn period() -> Period {
    Period {
        start_ms: 10 * DAY_MS,
        end_ms: 12 * DAY_MS,
    }
}

#[test]
fn found_in_the_first_envelope_stops_at_one_stage() {
    let pool = [row(1, 11, 0.1), row(2, 10, 0.9), row(3, 30, 0.99)];
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stages.len(), 1);
    assert_eq!(out.report.stages[0].outcome, StageOutcome::Found);
    assert_eq!(
        out.found.iter().map(|r| r.r#ref.id).collect::<Vec<_>>(),
        vec![2, 1]
    );
    // The loop reads one envelope fetch and never asks for another.
    assert_eq!(out.report.fetches, 1);
}

#[test]
fn an_empty_period_is_widened_once_from_the_held_pool() {
    // Day 12.5 is outside sure [10, 12) and inside likely [9, 13) (one day each side).
    let pool = [CueRow {
        r#ref: Ref::mem(7),
        at_ms: 12 * DAY_MS + DAY_MS / 2,
        cosine: None,
    }];
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stages.len(), 2);
    assert_eq!(out.report.stages[0].outcome, StageOutcome::Widened);
    assert!(!out.report.stages[1].fetched);
    assert_eq!(out.confidence, CueConfidence::Likely);
    assert_eq!(out.found.len(), 1);
    // The fetch was aimed at the widest envelope the loop can reach.
    assert!(fetch_envelope(period(), CueConfidence::Sure).contains(pool[0].at_ms));
}

#[test]
fn vague_has_no_wider_period() {
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Vague,
        &[],
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stages.len(), 1);
    assert_eq!(out.report.stages[0].outcome, StageOutcome::NoWiderPeriod);
    assert!(out.report.limits.is_empty());
}

#[test]
fn hard_limits_come_first_and_are_reported() {
    let slow = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &[],
        true,
        &Sufficiency::default(),
        || 5_000.0,
    );
    assert_eq!(slow.report.stages.len(), 1);
    assert_eq!(
        slow.report.limits,
        vec![LoopLimit::Candidates, LoopLimit::Milliseconds]
    );
    let one = CueConfig {
        max_stages: 1,
        ..CueConfig::default()
    };
    let staged = run(
        &one,
        period(),
        CueConfidence::Sure,
        &[],
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(staged.report.limits, vec![LoopLimit::Stages]);
    assert_eq!(staged.report.stages[0].outcome, StageOutcome::LimitHit);
}

#[test]
fn depth_cuts_the_cue_list() {
    let pool: Vec<CueRow> = (0..10).map(|i| row(i, 11, i as f64 / 10.0)).collect();
    let config = CueConfig {
        depth: 3,
        ..CueConfig::default()
    };
    let out = run(
        &config,
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(
        out.found.iter().map(|r| r.r#ref.id).collect::<Vec<_>>(),
        vec![9, 8, 7]
    );
}

fn bare(id: i64, day: i64) -> CueRow {
    CueRow {
        r#ref: Ref::mem(id),
        at_ms: day * DAY_MS,
        cosine: None,
    }
}

#[test]
fn separation_makes_a_stage_sufficient() {
    // Two rows (sure holds 3 seats, so count alone would not do), 0.3 vs 0.2: a clear lead.
    let pool = [row(1, 11, 0.3), row(2, 10, 0.2)];
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stages.len(), 1);
    assert_eq!(
        out.report.stages[0].sufficient,
        Some(SufficiencyRule::Separation)
    );
    assert_eq!(out.report.stopped_by, StopRule::Separation);
}

#[test]
fn the_gate_outcome_makes_a_stage_sufficient() {
    // No lead (0.30 vs 0.29), but the best passes a 0.25 gate.
    let pool = [row(1, 11, 0.30), row(2, 10, 0.29)];
    let gate = Sufficiency {
        gate_threshold: Some(0.25),
    };
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &gate,
        || 0.0,
    );
    assert_eq!(out.report.stopped_by, StopRule::Gate);
    assert_eq!(out.report.stages.len(), 1);
    // The same rows against a higher gate are not sufficient: the loop widens once.
    let high = Sufficiency {
        gate_threshold: Some(0.5),
    };
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &high,
        || 0.0,
    );
    assert_eq!(out.report.stages[0].outcome, StageOutcome::Widened);
    assert_eq!(out.report.stages.len(), 2);
}

#[test]
fn the_candidate_count_makes_a_stage_sufficient() {
    // Three rows without cosines fill sure's three seats.
    let pool = [bare(1, 10), bare(2, 11), bare(3, 11)];
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stopped_by, StopRule::Count);
    assert_eq!(out.report.stages.len(), 1);
    // Two are too few: the stage is revised, and at the second (last) stage the stage limit
    // stops the loop and says so.
    let out = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool[..2],
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stages.len(), 2);
    assert_eq!(out.report.stages[0].sufficient, None);
    // Likely holds two seats: two rows suffice at the second stage.
    assert_eq!(out.report.stopped_by, StopRule::Count);
    assert!(out.report.limits.is_empty());
}

#[test]
fn a_limit_stops_an_insufficient_loop_and_is_named() {
    let pool = [bare(1, 11)];
    let one = CueConfig {
        max_stages: 1,
        ..CueConfig::default()
    };
    let out = run(
        &one,
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stopped_by, StopRule::Stages);
    assert_eq!(out.report.limits, vec![LoopLimit::Stages]);
    let slow = run(
        &CueConfig::default(),
        period(),
        CueConfidence::Sure,
        &pool,
        false,
        &Sufficiency::default(),
        || 5_000.0,
    );
    assert_eq!(slow.report.stopped_by, StopRule::Milliseconds);
    // A sufficient stage is not reported as cut by a limit that holds at the same time.
    let enough = [bare(1, 10), bare(2, 11), bare(3, 11)];
    let out = run(
        &one,
        period(),
        CueConfidence::Sure,
        &enough,
        false,
        &Sufficiency::default(),
        || 0.0,
    );
    assert_eq!(out.report.stopped_by, StopRule::Count);
    assert!(out.report.limits.is_empty());
}
