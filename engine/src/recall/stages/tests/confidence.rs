//! Confidence: CPersona's formula on worked values.

use crate::recall::stages::confidence::{ConfidenceInput, ConfidenceParams, confidence};

#[test]
fn fresh_strong_match_scores_high_and_old_weak_low() {
    let p = ConfidenceParams::default();
    let fresh = confidence(
        &p,
        &ConfidenceInput {
            cosine: Some(0.75),
            age_hours: Some(0.0),
            time_range_hours: 100.0,
            ..Default::default()
        },
    );
    assert_eq!(fresh.score, 1.0);
    // norm_cos = (0.475 − 0.2)/0.55 = 0.5; decay = max(0.3, 1/(1 + 200·0.005)) = 0.5.
    let old = confidence(
        &p,
        &ConfidenceInput {
            cosine: Some(0.475),
            age_hours: Some(200.0),
            time_range_hours: 100.0,
            ..Default::default()
        },
    );
    assert_eq!(old.score, 0.5);
    assert_eq!(old.cosine, Some(0.475));
    assert_eq!(old.age_hours, 200.0);
}

#[test]
fn unknown_age_deep_resolved_and_recent_recall() {
    let p = ConfidenceParams::default();
    let unknown = confidence(
        &p,
        &ConfidenceInput {
            age_hours: None,
            newest_age_hours: Some(10.0),
            time_range_hours: 40.0,
            ..Default::default()
        },
    );
    assert!(unknown.age_unknown);
    assert_eq!(unknown.age_hours, 30.0);
    let deep = confidence(
        &p,
        &ConfidenceInput {
            cosine: Some(0.75),
            age_hours: Some(10_000.0),
            resolved: Some(true),
            recently_recalled: true,
            deep: true,
            ..Default::default()
        },
    );
    assert_eq!(deep.score, 1.0);
    let resolved = confidence(
        &p,
        &ConfidenceInput {
            cosine: Some(0.75),
            age_hours: Some(0.0),
            resolved: Some(true),
            ..Default::default()
        },
    );
    assert_eq!(resolved.score, 0.3);
    let recent = confidence(
        &p,
        &ConfidenceInput {
            cosine: Some(0.75),
            age_hours: Some(0.0),
            recently_recalled: true,
            ..Default::default()
        },
    );
    assert_eq!(recent.score, 0.7);
}
