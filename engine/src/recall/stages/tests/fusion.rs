//! Fusion: CPersona's formulas, the written tie-break, and determinism under permutation.

use proptest::prelude::*;

use crate::recall::stages::candidate::{Arm, ArmHit, ArmList};
use crate::recall::stages::fusion::{ArmWeights, FusionMode, fuse, fused_order, rrf, rsf};
use crate::refs::Ref;

fn list(arm: Arm, refs: &[(Ref, Option<f64>)]) -> ArmList {
    ArmList::ranked(arm, refs.iter().copied())
}

fn scores(fused: &[crate::recall::FusedCandidate]) -> Vec<(String, f64)> {
    fused
        .iter()
        .map(|c| (c.r#ref.to_string(), (c.score * 1e9).round() / 1e9))
        .collect()
}

#[test]
fn rrf_sums_one_over_k_plus_rank_plus_one() {
    let lists = [
        list(
            Arm::VectorNear,
            &[(Ref::mem(1), Some(0.9)), (Ref::mem(2), Some(0.8))],
        ),
        list(
            Arm::MemoryKeyword,
            &[(Ref::mem(2), None), (Ref::mem(3), None)],
        ),
    ];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let expect = [
        ("mem:2", 1.0 / 62.0 + 1.0 / 61.0),
        ("mem:1", 1.0 / 61.0),
        ("mem:3", 1.0 / 62.0),
    ];
    let got = scores(&fused);
    for ((r, s), (er, es)) in got.iter().zip(expect) {
        assert_eq!(r, er);
        assert!((s - es).abs() < 1e-9);
    }
    assert_eq!(fused[0].votes.len(), 2);
    assert_eq!(fused[0].cosine, Some(0.8));
    assert_eq!(fused[2].cosine, None);
    assert!(fused[2].lexical_only());
}

#[test]
fn rrf_ranks_keep_gaps_and_weights_scale_votes() {
    let lists = [ArmList {
        arm: Arm::VectorFar,
        hits: vec![ArmHit {
            r#ref: Ref::mem(7),
            rank: 3,
            raw: Some(0.5),
        }],
    }];
    let weights = ArmWeights {
        vector_far: 0.5,
        ..ArmWeights::default()
    };
    let fused = rrf(&lists, &weights, 60.0);
    assert!((fused[0].score - 0.5 / 64.0).abs() < 1e-12);
}

#[test]
fn equal_scores_keep_first_insertion_order_then_ref() {
    // Each row is rank 0 of one arm: equal scores. CPersona's stable sort keeps the visiting
    // order near → far → episodes → keyword, whatever order the lists are passed in.
    let lists = [
        list(Arm::MemoryKeyword, &[(Ref::mem(1), None)]),
        list(Arm::EpisodeFts, &[(Ref::ep(9), Some(-1.0))]),
        list(Arm::VectorNear, &[(Ref::mem(5), Some(0.4))]),
    ];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    let refs: Vec<String> = fused.iter().map(|c| c.r#ref.to_string()).collect();
    assert_eq!(refs, ["mem:5", "ep:9", "mem:1"]);
}

#[test]
fn rsf_normalises_per_arm_and_divides_by_active_arms() {
    let lists = [
        list(
            Arm::VectorNear,
            &[
                (Ref::mem(1), Some(0.9)),
                (Ref::mem(2), Some(0.7)),
                (Ref::mem(3), Some(0.5)),
            ],
        ),
        list(
            Arm::EpisodeFts,
            &[(Ref::ep(1), Some(4.0)), (Ref::mem(2), Some(2.0))],
        ),
        list(Arm::VectorFar, &[]),
    ];
    let fused = rsf(&lists, &ArmWeights::default());
    let got = scores(&fused);
    // Two active arms. mem:2: 0.5 (vector) + 0.0 (bottom of fts) over 2.
    assert_eq!(
        got,
        vec![
            ("mem:1".into(), 0.5),
            ("ep:1".into(), 0.5),
            ("mem:2".into(), 0.25),
            ("mem:3".into(), 0.0)
        ]
    );
}

#[test]
fn rsf_all_none_or_single_value_scores_one_and_none_among_values_zero() {
    let lists = [
        list(
            Arm::MemoryKeyword,
            &[(Ref::mem(1), None), (Ref::mem(2), None)],
        ),
        list(Arm::EpisodeFts, &[(Ref::ep(1), Some(3.0))]),
        list(
            Arm::VectorNear,
            &[
                (Ref::mem(8), Some(0.8)),
                (Ref::mem(9), None),
                (Ref::mem(10), Some(0.2)),
            ],
        ),
    ];
    let fused = rsf(&lists, &ArmWeights::default());
    let by_ref = |r: Ref| fused.iter().find(|c| c.r#ref == r).expect("present").score;
    assert!((by_ref(Ref::mem(1)) - 1.0 / 3.0).abs() < 1e-12);
    assert!((by_ref(Ref::ep(1)) - 1.0 / 3.0).abs() < 1e-12);
    assert!((by_ref(Ref::mem(8)) - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(by_ref(Ref::mem(9)), 0.0);
}

#[test]
fn a_row_an_arm_lists_twice_keeps_its_best_rank() {
    let lists = [list(
        Arm::VectorNear,
        &[(Ref::mem(1), Some(0.9)), (Ref::mem(1), Some(0.1))],
    )];
    let fused = rrf(&lists, &ArmWeights::default(), 60.0);
    assert_eq!(fused.len(), 1);
    assert_eq!(fused[0].votes[0].rank, 0);
}

fn arb_lists() -> impl Strategy<Value = Vec<ArmList>> {
    let hit = (0i64..12, prop::option::of(-2.0f64..2.0));
    let arm_list = |arm| {
        prop::collection::vec(hit.clone(), 0..10).prop_map(move |rows| {
            let mut seen = std::collections::HashSet::new();
            let rows: Vec<(Ref, Option<f64>)> = rows
                .into_iter()
                .map(|(id, raw)| {
                    (
                        if id % 3 == 0 {
                            Ref::ep(id + 1)
                        } else {
                            Ref::mem(id + 1)
                        },
                        raw,
                    )
                })
                .filter(|(r, _)| seen.insert(*r))
                .collect();
            ArmList::ranked(arm, rows)
        })
    };
    (
        arm_list(Arm::VectorNear),
        arm_list(Arm::VectorFar),
        arm_list(Arm::EpisodeFts),
        arm_list(Arm::MemoryKeyword),
    )
        .prop_map(|(a, b, c, d)| vec![a, b, c, d])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Fusion depends on the lists, not on the order they are passed in; its output is
    /// sorted by the written total order, and no two candidates compare equal.
    #[test]
    fn fusion_is_deterministic_and_totally_ordered(lists in arb_lists(), rsf_mode in any::<bool>(), rotate in 0usize..4) {
        let mode = if rsf_mode { FusionMode::Rsf } else { FusionMode::Rrf };
        let a = fuse(mode, &lists, &ArmWeights::default(), 60.0);
        let mut shuffled = lists.clone();
        shuffled.rotate_left(rotate);
        let b = fuse(mode, &shuffled, &ArmWeights::default(), 60.0);
        prop_assert_eq!(&a, &b);
        for pair in a.windows(2) {
            prop_assert_eq!(fused_order(&pair[0], &pair[1]), std::cmp::Ordering::Less);
        }
        let distinct: std::collections::BTreeSet<Ref> = lists.iter().flat_map(|l| l.hits.iter().map(|h| h.r#ref)).collect();
        prop_assert_eq!(a.len(), distinct.len());
    }
}
