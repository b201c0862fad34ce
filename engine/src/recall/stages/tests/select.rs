//! Recall Depth vs count: the invariant, and the mutation that must break it.

use std::collections::BTreeSet;

use proptest::prelude::*;

use crate::recall::RecallError;
use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::fusion::{ArmWeights, FusionMode, fuse};
use crate::recall::stages::select::{RecallDepth, cut_to_limit};
use crate::refs::Ref;

/// A depth policy: how many candidates each arm hands to fusion, given the configuration
/// and the caller's `limit`.
type DepthPolicy = fn(&RecallDepth, usize) -> usize;

/// The shipped policy: the server's depth; `limit` is ignored.
fn decoupled(depth: &RecallDepth, _limit: usize) -> usize {
    depth.per_arm()
}

/// The mutation the design names: `candidate_limit = limit`.
fn recoupled(_depth: &RecallDepth, limit: usize) -> usize {
    limit
}

/// Every arm's full ranking (what the store would return with no LIMIT).
fn full_arms(n: i64) -> Vec<ArmList> {
    vec![
        ArmList::ranked(
            Arm::VectorNear,
            (1..=n).map(|i| (Ref::mem(i), Some(1.0 - i as f64 / 1000.0))),
        ),
        ArmList::ranked(
            Arm::EpisodeFts,
            (1..=n).map(|i| (Ref::ep(i), Some(-(i as f64)))),
        ),
        ArmList::ranked(
            Arm::MemoryKeyword,
            (1..=n).rev().map(|i| (Ref::mem(i), None)),
        ),
    ]
}

/// The candidate ids fusion considers when each arm is cut by `policy`.
fn considered(
    arms: &[ArmList],
    policy: DepthPolicy,
    depth: &RecallDepth,
    limit: usize,
) -> BTreeSet<Ref> {
    let per_arm = policy(depth, limit);
    let cut: Vec<ArmList> = arms
        .iter()
        .map(|l| ArmList {
            arm: l.arm,
            hits: l.hits.iter().take(per_arm).copied().collect(),
        })
        .collect();
    fuse(FusionMode::Rrf, &cut, &ArmWeights::default(), 60.0)
        .into_iter()
        .map(|c| c.r#ref)
        .collect()
}

/// The invariant: over every `limit` in 0..=100, the considered set never changes. Returns
/// the first pair of limits that disagree.
fn invariant(
    arms: &[ArmList],
    policy: DepthPolicy,
    depth: &RecallDepth,
) -> Result<(), (usize, usize)> {
    let base = considered(arms, policy, depth, 0);
    for limit in 1..=100 {
        if considered(arms, policy, depth, limit) != base {
            return Err((0, limit));
        }
    }
    Ok(())
}

#[test]
fn changing_limit_alone_keeps_the_candidate_set() {
    assert_eq!(
        invariant(&full_arms(150), decoupled, &RecallDepth::default()),
        Ok(())
    );
}

#[test]
fn the_recoupling_mutation_is_caught() {
    assert_eq!(
        invariant(&full_arms(150), recoupled, &RecallDepth::default()),
        Err((0, 1))
    );
}

#[test]
fn depth_bounds_are_checked() {
    assert_eq!(RecallDepth::new(10, 50, 100).map(|d| d.per_arm()), Ok(50));
    assert!(matches!(
        RecallDepth::new(0, 5, 10),
        Err(RecallError::InvalidDepth { .. })
    ));
    assert!(matches!(
        RecallDepth::new(20, 10, 100),
        Err(RecallError::InvalidDepth { .. })
    ));
    assert!(matches!(
        RecallDepth::new(10, 200, 100),
        Err(RecallError::InvalidDepth { .. })
    ));
    assert_eq!(
        RecallDepth {
            floor: 30,
            default: 5,
            max: 100
        }
        .per_arm(),
        30
    );
}

#[test]
fn count_cut_names_what_it_cut() {
    let fused = fuse(FusionMode::Rrf, &full_arms(3), &ArmWeights::default(), 60.0);
    let (kept, cut) = cut_to_limit(fused, 2);
    assert_eq!(kept.len(), 2);
    assert_eq!(cut.cut_by_count.len(), 4);
    assert_eq!(cut.limit, 2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// For any depth configuration, corpus size and two limits, the considered set is the same.
    #[test]
    fn depth_never_reads_limit(
        floor in 1usize..20, extra in 0usize..60, head in 0usize..40, n in 0i64..120,
        a in 0usize..=100, b in 0usize..=100,
    ) {
        let depth = RecallDepth::new(floor, floor + extra, floor + extra + head).expect("valid");
        let arms = full_arms(n);
        prop_assert_eq!(considered(&arms, decoupled, &depth, a), considered(&arms, decoupled, &depth, b));
    }
}
