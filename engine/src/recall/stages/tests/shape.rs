//! Shaping: last-is-best, the preview tier, excerpts, the full-content budget.

use crate::recall::stages::candidate::{Arm, ArmList};
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::excerpt::ExcerptBasis;
use crate::recall::stages::fusion::{ArmWeights, FusionMode, rrf};
use crate::recall::stages::gate::{GateConfig, GateInput, apply};
use crate::recall::stages::shape::{Hydrated, ShapeInput, Signal, shape};
use crate::refs::Ref;

fn inputs(contents: &[String]) -> Vec<ShapeInput> {
    let list = ArmList::ranked(
        Arm::VectorNear,
        (1..=contents.len() as i64).map(|i| (Ref::mem(i), Some(0.9))),
    );
    let fused = rrf(&[list], &ArmWeights::default(), 60.0);
    let (kept, report) = apply(
        &GateConfig::default(),
        &GateInput {
            calibrated: None,
            pool: 10,
            deep: false,
        },
        fused,
    );
    kept.into_iter()
        .zip(report.decisions)
        .zip(contents)
        .map(|((candidate, decision), content)| ShapeInput {
            candidate,
            decision,
            row: Hydrated {
                content: content.clone(),
                ..Hydrated::default()
            },
            confidence: None,
        })
        .collect()
}

#[test]
fn rows_come_back_last_is_best_with_match_reason() {
    let config = RecallConfig::default().shape;
    let (messages, budget) = shape(
        &config,
        FusionMode::Rrf,
        "q",
        false,
        inputs(&["best".into(), "second".into()]),
    );
    let refs: Vec<String> = messages.iter().map(|m| m.r#ref.to_string()).collect();
    assert_eq!(refs, ["mem:2", "mem:1"]);
    assert_eq!(budget, None);
    let reason = &messages[1].match_reason;
    assert_eq!(
        (reason.signal, reason.cosine, reason.arms.len()),
        (Signal::Cosine, Some(0.9), 1)
    );
    assert!(messages[0].score < messages[1].score);
}

#[test]
fn preview_cuts_to_a_prefix_and_adds_the_excerpt() {
    let long = format!(
        "{} the needle is here. {}",
        "a ".repeat(400),
        "b ".repeat(100)
    );
    let config = RecallConfig::default().shape;
    let (messages, _) = shape(
        &config,
        FusionMode::Rrf,
        "needle",
        false,
        inputs(&[long.clone(), "short".into()]),
    );
    let cut = &messages[1];
    assert!(cut.content_truncated);
    assert_eq!(cut.content.chars().count(), 500);
    assert!(long.starts_with(&cut.content));
    assert_eq!(cut.content_len, Some(long.chars().count()));
    assert_eq!(cut.excerpt_basis, Some(ExcerptBasis::Lexical));
    assert!(
        cut.excerpt
            .as_deref()
            .is_some_and(|e| e.contains("the needle is here."))
    );
    assert!(!messages[0].content_truncated && messages[0].excerpt.is_none());
    let off = crate::recall::stages::shape::ShapeConfig {
        preview_chars: 0,
        ..config
    };
    let (messages, _) = shape(
        &off,
        FusionMode::Rrf,
        "needle",
        false,
        inputs(std::slice::from_ref(&long)),
    );
    assert_eq!(messages[0].content, long);
}

#[test]
fn full_content_budget_spends_from_the_best_row() {
    let config = crate::recall::stages::shape::ShapeConfig {
        full_content_budget_chars: 1_000,
        ..RecallConfig::default().shape
    };
    let rows = vec!["x".repeat(900), "y".repeat(600), "z".repeat(50)];
    let (messages, budget) = shape(&config, FusionMode::Rrf, "x", true, inputs(&rows));
    // Best (last) row whole; the second does not fit, so it and every worse row fall back.
    assert_eq!(budget, Some(1_000));
    assert_eq!(messages[2].content.len(), 900);
    assert!(messages[1].content_truncated);
    assert_eq!(messages[0].content.len(), 50);
}
