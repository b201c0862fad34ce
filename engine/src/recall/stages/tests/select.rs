//! Recall Depth's bounds and the count cut. The invariant that depth never follows `limit`
//! is tested through the recall entry, with its mutation, in `recall/tests/depth.rs`.

use crate::recall::RecallError;

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::fusion::{ArmWeights, FusionMode, fuse};
use crate::recall::stages::select::{RecallDepth, cut_to_limit};
use crate::refs::Ref;

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
    let arms = [
        ArmList::ranked(Arm::VectorNear, (1..=3).map(|i| (Ref::mem(i), Some(0.9)))),
        ArmList::ranked(Arm::EpisodeFts, (1..=3).map(|i| (Ref::ep(i), Some(-1.0)))),
    ];
    let fused = fuse(FusionMode::Rrf, &arms, &ArmWeights::default(), 60.0);
    let (kept, cut) = cut_to_limit(fused, 2);
    assert_eq!(kept.len(), 2);
    assert_eq!(cut.cut_by_count.len(), 4);
    assert_eq!(cut.limit, 2);
}
