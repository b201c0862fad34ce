//! Adaptive fusion weights: the standout's arithmetic, the rule's outcomes (weighed down to
//! the powered ratio or the floor; kept when specific, as decisive, or unjudged), and the
//! pass: a lexical vote that fixed weights let outrank the embedder's decisive top row no
//! longer does once the rule weighs that arm down.

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::fusion::ArmWeights;
use crate::recall::stages::fusion_weights::{AdaptiveFusion, choose, standout};
use crate::refs::Ref;

fn list(arm: Arm, scores: &[Option<f64>], first_id: i64) -> ArmList {
    ArmList::ranked(
        arm,
        scores
            .iter()
            .enumerate()
            .map(|(i, s)| (Ref::mem(first_id + i as i64), *s)),
    )
}

/// A vector list of 50 rows, mem:1 at cosine 0.9 and mem:2..=50 at 0.5: standout 7.0.
fn sure_vector() -> ArmList {
    let mut scores = vec![Some(0.9)];
    scores.extend(std::iter::repeat_n(Some(0.5), 49));
    list(Arm::VectorNear, &scores, 1)
}

#[test]
fn standout_is_the_best_score_in_standard_deviations_above_the_mean() {
    // mean 0.6, population sd 0.2: (1.0 − 0.6) / 0.2 = 2.
    let l = list(
        Arm::VectorNear,
        &[Some(1.0), Some(0.5), Some(0.5), Some(0.5), Some(0.5)],
        1,
    );
    let z = standout(&l, 5).unwrap();
    assert!((z - 2.0).abs() < 1e-12, "{z}");
    // Order in the list does not matter, only the scores.
    let l = list(
        Arm::VectorNear,
        &[Some(0.5), Some(0.5), Some(1.0), Some(0.5), Some(0.5)],
        1,
    );
    assert!((standout(&l, 5).unwrap() - 2.0).abs() < 1e-12);
}

#[test]
fn standout_needs_enough_finite_scores_and_some_spread() {
    let short = list(Arm::EpisodeFts, &[Some(3.0), Some(1.0), Some(0.5)], 1);
    assert_eq!(standout(&short, 5), None);
    assert!(standout(&short, 3).is_some());
    let flat = list(Arm::EpisodeFts, &[Some(2.0); 6], 1);
    assert_eq!(standout(&flat, 5), None);
    // Keyword (LIKE) rows carry no score; NaN is not a score either.
    let unscored = list(
        Arm::MemoryKeyword,
        &[None, None, Some(f64::NAN), None, None, None],
        1,
    );
    assert_eq!(standout(&unscored, 5), None);
}

fn decisive_vector() -> ArmList {
    // standout 2.0 (see above)
    list(
        Arm::VectorNear,
        &[Some(1.0), Some(0.5), Some(0.5), Some(0.5), Some(0.5)],
        1,
    )
}

#[test]
fn a_less_decisive_lexical_arm_is_weighed_down_to_its_ratio_but_never_below_the_floor() {
    // standout 1.0: mean 2, sd 1 over [3, 1, 3, 1, 3, 1].
    let lexical = list(
        Arm::MemoryKeyword,
        &[
            Some(3.0),
            Some(1.0),
            Some(3.0),
            Some(1.0),
            Some(3.0),
            Some(1.0),
        ],
        10,
    );
    let base = ArmWeights::default();
    let rule = AdaptiveFusion {
        floor: 0.1,
        power: 1.0,
        min_scores: 5,
        reserve_standout: f64::INFINITY,
    };
    // The lexical list (6 hits) fills a depth of 6.
    let chosen = choose(&[decisive_vector(), lexical.clone()], &base, &rule, 6);
    assert!((chosen.vector_standout.unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(chosen.lexical.len(), 1);
    let c = &chosen.lexical[0];
    assert_eq!(c.arm, Arm::MemoryKeyword);
    assert!((c.factor - 0.5).abs() < 1e-12, "{c:?}");
    assert!((chosen.applied_to(&base).memory_keyword - 0.5).abs() < 1e-12);
    assert!(c.reason.contains("less decisive"), "{}", c.reason);
    // Squared: 0.25.
    let squared = AdaptiveFusion { power: 2.0, ..rule };
    let chosen = choose(&[decisive_vector(), lexical.clone()], &base, &squared, 6);
    assert!((chosen.lexical[0].factor - 0.25).abs() < 1e-12);
    // Under the depth the same list is specific: kept.
    let chosen = choose(&[decisive_vector(), lexical.clone()], &base, &rule, 7);
    assert_eq!(chosen.lexical[0].factor, 1.0);
    assert!(
        chosen.lexical[0].reason.contains("specific"),
        "{:?}",
        chosen.lexical[0]
    );
    assert_eq!(chosen.applied_to(&base), base);
    // The vector weights are the configured ones.
    assert_eq!(chosen.applied_to(&base).vector_near, base.vector_near);
    // A floor above the ratio holds the weight at the floor, times the configured weight.
    let base = ArmWeights {
        memory_keyword: 2.0,
        ..ArmWeights::default()
    };
    let rule = AdaptiveFusion {
        floor: 0.75,
        power: 1.0,
        min_scores: 5,
        reserve_standout: f64::INFINITY,
    };
    let chosen = choose(&[decisive_vector(), lexical], &base, &rule, 6);
    assert!((chosen.lexical[0].factor - 0.75).abs() < 1e-12);
    assert!((chosen.applied_to(&base).memory_keyword - 1.5).abs() < 1e-12);
}

#[test]
fn a_decisive_or_unjudged_lexical_arm_keeps_its_weight() {
    // standout 2.0 on FTS, equal to the vector's: kept (never raised).
    let fts = list(
        Arm::EpisodeFts,
        &[Some(5.0), Some(2.5), Some(2.5), Some(2.5), Some(2.5)],
        10,
    );
    // Keyword rows without scores: too few to judge.
    let keyword = list(Arm::MemoryKeyword, &[None; 8], 20);
    let chosen = choose(
        &[decisive_vector(), fts, keyword],
        &ArmWeights::default(),
        &AdaptiveFusion::default(),
        5,
    );
    assert_eq!(chosen.lexical.len(), 2);
    assert_eq!(chosen.lexical[0].arm, Arm::EpisodeFts);
    assert_eq!(chosen.lexical[0].factor, 1.0);
    assert!(chosen.lexical[0].reason.contains("as decisive"));
    assert_eq!(chosen.lexical[1].factor, 1.0);
    assert!(chosen.lexical[1].reason.contains("too few scores"));
    assert_eq!(
        chosen.applied_to(&ArmWeights::default()),
        ArmWeights::default()
    );
    // Without a judgeable vector list nothing moves either.
    let chosen = choose(
        &[
            list(Arm::VectorNear, &[Some(0.9), Some(0.8)], 1),
            list(
                Arm::EpisodeFts,
                &[Some(5.0), Some(1.0), Some(1.0), Some(1.0), Some(1.0)],
                10,
            ),
        ],
        &ArmWeights::default(),
        &AdaptiveFusion::default(),
        5,
    );
    assert_eq!(chosen.vector_standout, None);
    assert!(
        chosen.lexical[0]
            .reason
            .contains("vector arm could not be judged")
    );
    assert_eq!(
        chosen.applied_to(&ArmWeights::default()),
        ArmWeights::default()
    );
}

#[test]
fn the_rule_lets_the_embedders_decisive_top_row_keep_first_place() {
    use crate::recall::stages::gate::GateInput;
    use crate::recall::stages::shape::Hydrated;
    use crate::recall::stages::{RecallConfig, RecallRequest, run};
    // The vector arm is sure of mem:1 (standout 7.0 over 50 rows); the lexical arm fills the
    // depth of 50 without being sure of anything (standout 1.7, evenly spaced scores) and
    // ranks mem:41, the vector arm's 41st row, first. Fixed RRF puts mem:41 first
    // (1/101 + 1/61 > 1/61); with the lexical vote at (1.7 / 7.0)^2 = 0.06 of its weight it
    // falls below mem:1.
    let vector = sure_vector();
    let lexical = ArmList::ranked(
        Arm::MemoryKeyword,
        std::iter::once(41i64)
            .chain(100..149)
            .enumerate()
            .map(|(i, id)| (Ref::mem(id), Some(10.0 - i as f64 * 0.1))),
    );
    let arms = vec![vector, lexical];
    let request = RecallRequest {
        query: "q",
        limit: 3,
        deep: false,
        full_content: false,
    };
    let mut config = RecallConfig::default();
    config.gate.enabled = false;
    let hydrate = |r: Ref| {
        Some(Hydrated {
            content: r.to_string(),
            ..Hydrated::default()
        })
    };
    let gate = GateInput {
        calibrated: None,
        pool: 100,
        deep: false,
    };
    let top = |config: &RecallConfig| {
        let out = run(config, &request, arms.clone(), &gate, hydrate, |_| None);
        (out.stages.fusion[0].r#ref, out.stages.weights)
    };
    let (fixed_top, fixed_weights) = top(&config);
    assert_eq!(fixed_top, Ref::mem(41));
    assert_eq!(fixed_weights, None);
    // The weights alone (no reservation) already restore mem:1.
    config.adaptive = Some(AdaptiveFusion {
        reserve_standout: f64::INFINITY,
        ..AdaptiveFusion::default()
    });
    let (adaptive_top, chosen) = top(&config);
    assert_eq!(adaptive_top, Ref::mem(1));
    let chosen = chosen.unwrap();
    let factor = chosen.lexical[0].factor;
    assert!(factor > 0.05 && factor < 0.07, "{chosen:?}");
}

#[test]
fn a_decisive_vector_arm_reserves_first_place_for_its_first_row() {
    use crate::recall::stages::fusion::{ArmWeights as W, rrf};
    use crate::recall::stages::fusion_weights::reserve;
    // Vector standout 7.0 (one outlier over 50 rows); a second arm lists mem:2 and mem:60..
    // in both lists, so fixed RRF puts mem:2 (both arms) above mem:1 (one arm).
    let vector = sure_vector();
    let lexical = ArmList::ranked(
        Arm::MemoryKeyword,
        [(Ref::mem(2), Some(9.0)), (Ref::mem(3), Some(1.0))],
    );
    let lists = [vector, lexical];
    let mut fused = rrf(&lists, &W::default(), 60.0);
    assert_eq!(fused[0].r#ref, Ref::mem(2));
    let score_of_1 = fused.iter().find(|c| c.r#ref == Ref::mem(1)).unwrap().score;
    let rule = AdaptiveFusion::default();
    let chosen = choose(&lists, &W::default(), &rule, 50);
    assert_eq!(chosen.reserved, Some(Ref::mem(1)));
    reserve(&mut fused, &chosen);
    let order: Vec<Ref> = fused.iter().take(3).map(|c| c.r#ref).collect();
    assert_eq!(order, [Ref::mem(1), Ref::mem(2), Ref::mem(3)]);
    assert_eq!(
        fused[0].score, score_of_1,
        "the reserved row keeps its score"
    );
    // Below the standout nothing is reserved and nothing moves.
    let strict = AdaptiveFusion {
        reserve_standout: 7.5,
        ..rule
    };
    let chosen = choose(&lists, &W::default(), &strict, 50);
    assert_eq!(chosen.reserved, None);
    let mut again = rrf(&lists, &W::default(), 60.0);
    reserve(&mut again, &chosen);
    assert_eq!(again[0].r#ref, Ref::mem(2));
}
