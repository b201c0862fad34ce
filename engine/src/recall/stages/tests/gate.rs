//! The gate: cosine against an absolute threshold, lexical-only rows never dropped by it,
//! and the fallback when the gate empties a result the lexical arms had.

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::fusion::{ArmWeights, rrf};
use crate::recall::stages::gate::profile_passes;
use crate::recall::stages::gate::{
    GateConfig, GateInput, GateReason, ThresholdOrigin, apply, heuristic_min_score,
};
use crate::refs::Ref;

fn input(calibrated: Option<f64>, pool: u64, deep: bool) -> GateInput {
    GateInput {
        calibrated,
        pool,
        deep,
    }
}

#[test]
fn heuristic_follows_cpersona_curve() {
    let config = GateConfig::default();
    assert_eq!(heuristic_min_score(&config, 0), 0.5);
    assert_eq!(heuristic_min_score(&config, 499), 0.2);
    assert_eq!(heuristic_min_score(&config, 100_000), 0.2);
    // round(0.5 − 0.3·ln(51)/ln(500), 4)
    assert_eq!(heuristic_min_score(&config, 50), 0.3102);
}

#[test]
fn cosine_rows_are_judged_and_lexical_only_rows_pass() {
    let lists = [
        ArmList::ranked(
            Arm::VectorNear,
            [(Ref::mem(1), Some(0.61)), (Ref::mem(2), Some(0.15))],
        ),
        ArmList::ranked(
            Arm::MemoryKeyword,
            [(Ref::mem(3), None), (Ref::mem(2), None)],
        ),
    ];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let (kept, report) = apply(
        &GateConfig::default(),
        &input(Some(0.4), 1000, false),
        fused,
    );
    let refs: Vec<Ref> = kept.iter().map(|c| c.r#ref).collect();
    assert_eq!(refs, vec![Ref::mem(1), Ref::mem(3)]);
    assert_eq!(report.origin, ThresholdOrigin::Calibrated);
    assert_eq!(report.threshold, 0.4);
    assert!(!report.gate_fallback);
    let reason = |r: Ref| {
        report
            .decisions
            .iter()
            .find(|d| d.r#ref == r)
            .expect("decided")
            .reason
    };
    assert_eq!(reason(Ref::mem(2)), GateReason::BelowGate);
    assert_eq!(reason(Ref::mem(3)), GateReason::LexicalNoCosine);
}

/// See: CPersona 2.5 §5.7 "verified by probe": a calibrated floor of 0.05 above the largest
/// RRF score 3/61 dropped every lexical-only row. The fused score is never compared here.
#[test]
fn cpersona_floor_defect_is_not_copied() {
    let lists = [
        ArmList::ranked(Arm::EpisodeFts, [(Ref::ep(4), Some(1.0))]),
        ArmList::ranked(Arm::MemoryKeyword, [(Ref::mem(9), None)]),
    ];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    assert!(fused.iter().all(|c| c.score < 0.05));
    let (kept, report) = apply(
        &GateConfig::default(),
        &input(Some(0.05), 10_000, false),
        fused,
    );
    assert_eq!(kept.len(), 2);
    assert!(!report.gate_fallback);
}

#[test]
fn emptied_result_returns_lexical_rows_marked_fallback() {
    // Every row carries a (backfilled) cosine below the gate; the lexical arms had two rows.
    let lists = [
        ArmList::ranked(Arm::VectorNear, [(Ref::mem(1), Some(0.1))]),
        ArmList::ranked(
            Arm::MemoryKeyword,
            [(Ref::mem(2), None), (Ref::mem(3), None)],
        ),
    ];
    let mut fused = rrf(&lists, &ArmWeights::default(), 60.0);
    for candidate in &mut fused {
        candidate.set_cosine(0.05);
    }
    let (kept, report) = apply(&GateConfig::default(), &input(None, 1000, false), fused);
    let refs: Vec<Ref> = kept.iter().map(|c| c.r#ref).collect();
    assert_eq!(refs, vec![Ref::mem(2), Ref::mem(3)]);
    assert!(report.gate_fallback);
    assert_eq!(report.origin, ThresholdOrigin::Heuristic);
    assert!(
        report
            .decisions
            .iter()
            .filter(|d| d.passed)
            .all(|d| d.reason == GateReason::Fallback)
    );
}

#[test]
fn emptied_vector_only_result_stays_empty() {
    let lists = [ArmList::ranked(Arm::VectorNear, [(Ref::mem(1), Some(0.1))])];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let (kept, report) = apply(&GateConfig::default(), &input(None, 1000, false), fused);
    assert!(kept.is_empty());
    assert!(!report.gate_fallback);
}

#[test]
fn deep_halves_and_disabled_passes_everything() {
    let lists = [ArmList::ranked(
        Arm::VectorNear,
        [(Ref::mem(1), Some(0.12))],
    )];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let (kept, report) = apply(
        &GateConfig::default(),
        &input(None, 1000, true),
        fused.clone(),
    );
    assert_eq!((kept.len(), report.threshold), (1, 0.1));
    let off = GateConfig {
        enabled: false,
        ..GateConfig::default()
    };
    let (kept, report) = apply(&off, &input(Some(0.9), 0, false), fused);
    assert_eq!((kept.len(), report.origin), (1, ThresholdOrigin::Disabled));
}

#[test]
fn a_vector_vote_without_a_cosine_is_not_admitted() {
    let lists = [
        ArmList::ranked(
            Arm::VectorNear,
            [(Ref::mem(1), None), (Ref::mem(2), Some(f64::NAN))],
        ),
        ArmList::ranked(Arm::EpisodeFts, [(Ref::ep(1), Some(2.0))]),
    ];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let (kept, report) = apply(&GateConfig::default(), &input(None, 10, false), fused);
    assert_eq!(
        kept.iter().map(|c| c.r#ref).collect::<Vec<_>>(),
        vec![Ref::ep(1)]
    );
    assert!(!report.gate_fallback);
}

#[test]
fn profiles_need_a_pool_of_fifty() {
    assert!(!profile_passes(49));
    assert!(profile_passes(50));
}
