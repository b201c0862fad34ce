//! The one prior function: each row of design §3's table is a configuration of `Prior`, and
//! the identity at each end changes nothing.

use crate::recall::stages::cue::Period;
use crate::recall::stages::prior::{CuePrior, Prior, PriorRow, apply};

fn at(pos: usize) -> PriorRow {
    PriorRow {
        scan_pos: Some(pos),
        ..PriorRow::default()
    }
}

#[test]
fn identity_is_one_everywhere_and_moves_nothing() {
    for pos in [0, 5, 10_000, 1_000_000] {
        let row = PriorRow {
            scan_pos: Some(pos),
            far_rank: Some(3),
            age_h: Some(9e3),
            at_ms: Some(7),
            cue_rank: Some(0),
            context: true,
        };
        assert_eq!(Prior::IDENTITY.p(&row), 1.0);
    }
    let rows = vec![PriorRow::default(); 5];
    assert_eq!(
        apply(&Prior::IDENTITY, &rows, &[5.0, 4.0, 3.0, 2.0, 1.0]),
        vec![0, 1, 2, 3, 4]
    );
    // An unbounded window, a zero rate and no cue are the identity too.
    assert!(Prior::recency(0.0, 0.3).is_identity());
}

#[test]
fn window_alone_is_one_inside_zero_beyond() {
    let p = Prior::window(10);
    assert_eq!(p.p(&at(9)), 1.0);
    assert_eq!(p.p(&at(10)), 0.0);
}

#[test]
fn reach_extends_the_full_vote() {
    let p = Prior::reach(10, 20);
    assert_eq!((p.p(&at(9)), p.p(&at(15)), p.p(&at(20))), (1.0, 1.0, 0.0));
    // Reach at the window is the window alone.
    let same = Prior::reach(10, 10);
    assert_eq!(same.p(&at(10)), Prior::window(10).p(&at(10)));
}

#[test]
fn far_list_length_counts_the_first_n_far_rows() {
    let p = Prior::far_list(10, 2);
    let far = |k| PriorRow {
        scan_pos: Some(50),
        far_rank: Some(k),
        ..PriorRow::default()
    };
    assert_eq!((p.p(&far(0)), p.p(&far(1)), p.p(&far(2))), (1.0, 1.0, 0.0));
    assert_eq!(Prior::far_list(10, 0).p(&far(0)), 0.0);
}

#[test]
fn priced_far_vote_weighs_the_reach() {
    let p = Prior::priced_far(10, 20, 0.25);
    assert_eq!((p.p(&at(0)), p.p(&at(12)), p.p(&at(25))), (1.0, 0.25, 0.0));
    // weight 1 is the reach setting.
    assert_eq!(Prior::priced_far(10, 20, 1.0), Prior::reach(10, 20));
}

#[test]
fn priced_far_vote_equals_fusion_far_weight() {
    use crate::recall::stages::candidate::{Arm, ArmList};
    use crate::recall::stages::fusion::{ArmWeights, FusionMode, fuse};
    use crate::refs::Ref;
    let lists = vec![
        ArmList::ranked(
            Arm::VectorNear,
            [(Ref::mem(1), Some(0.9)), (Ref::mem(2), Some(0.5))],
        ),
        ArmList::ranked(Arm::VectorFar, [(Ref::mem(3), Some(0.8))]),
    ];
    let w = 0.4;
    let weights = ArmWeights {
        vector_far: w,
        ..ArmWeights::default()
    };
    let priced = fuse(FusionMode::Rrf, &lists, &weights, 60.0);
    let full = fuse(FusionMode::Rrf, &lists, &ArmWeights::default(), 60.0);
    let prior = Prior::priced_far(2, 100, w);
    let score = |fused: &[crate::recall::FusedCandidate], id| {
        fused
            .iter()
            .find(|c| c.r#ref == Ref::mem(id))
            .map(|c| c.score)
            .expect("present")
    };
    // The far row sits past the window (scan position 50): its vote times p equals fusion's
    // priced vote; near rows keep theirs.
    let far_row = PriorRow {
        scan_pos: Some(50),
        ..PriorRow::default()
    };
    assert!((score(&full, 3) * prior.p(&far_row) - score(&priced, 3)).abs() < 1e-12);
    assert_eq!(score(&full, 1) * prior.p(&at(0)), score(&priced, 1));
}

#[test]
fn recency_is_smooth_with_a_floor() {
    let p = Prior::recency(0.01, 0.3);
    let aged = |h| PriorRow {
        age_h: Some(h),
        ..PriorRow::default()
    };
    assert_eq!(p.p(&aged(0.0)), 1.0);
    assert!((p.p(&aged(100.0)) - 0.5).abs() < 1e-12);
    assert_eq!(p.p(&aged(1e6)), 0.3);
    // Undated rows are never lowered.
    assert_eq!(p.p(&PriorRow::default()), 1.0);
    // Re-orders by score × p.
    let rows = [aged(1e6), aged(0.0)];
    assert_eq!(apply(&p, &rows, &[1.0, 0.9]), vec![1, 0]);
}

#[test]
fn bounded_recency_lifts_at_most_max_up_places() {
    let aged = |h| PriorRow {
        age_h: Some(h),
        ..PriorRow::default()
    };
    let p = Prior::recency_bounded(0.01, 0.3, 3);
    assert_eq!(p.age_strength(&aged(0.0)), 1.0);
    assert_eq!(p.age_strength(&aged(1e6)), 0.0);
    assert_eq!(p.age_strength(&PriorRow::default()), 1.0);
    // Ten old rows ahead of a fresh one: it passes exactly three of them, whatever the
    // score gap, and no old row moves up.
    let mut rows = vec![aged(1e6); 10];
    rows.push(aged(0.0));
    let scores: Vec<f64> = (0..11).map(|i| 100.0 - i as f64 * 10.0).collect();
    let order = apply(&p, &rows, &scores);
    assert_eq!(order.iter().position(|&i| i == 10), Some(7));
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, (0..11).collect::<Vec<_>>());
    // The unbounded (weighted) form would take it to the top; the bound is what acts.
    let weighted = apply(
        &Prior::recency(0.01, 0.3),
        &[aged(1e6), aged(0.0)],
        &[1.0, 0.9],
    );
    assert_eq!(weighted, vec![1, 0]);
    let far = apply(
        &p,
        &[aged(1e6), aged(1e6), aged(1e6), aged(1e6), aged(0.0)],
        &[1.0; 5],
    );
    assert_eq!(far, vec![0, 4, 1, 2, 3]);
    // Rate 0 is the identity whatever the bound.
    assert!(Prior::recency_bounded(0.0, 0.3, 3).is_identity());
}

#[test]
fn cue_lifts_envelope_rows_at_most_max_up_places() {
    let cue = CuePrior {
        envelope: Period {
            start_ms: 100,
            end_ms: 200,
        },
        max_up: 2,
        depth: 50,
        context_up: 0,
    };
    let p = Prior::cued(cue);
    let out = PriorRow {
        at_ms: Some(50),
        ..PriorRow::default()
    };
    let best = PriorRow {
        at_ms: Some(150),
        cue_rank: Some(0),
        ..PriorRow::default()
    };
    assert_eq!(p.p(&out), 1.0);
    assert_eq!(p.p(&best), 2.0);
    let rows = [out, out, out, out, best];
    let order = apply(&p, &rows, &[5.0, 4.0, 3.0, 2.0, 1.0]);
    // The cue's best row moves exactly max_up places, every other row keeps its order.
    assert_eq!(order, vec![0, 1, 4, 2, 3]);
    // A permutation: nothing admitted, nothing removed.
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
}
