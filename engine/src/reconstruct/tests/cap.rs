//! A mode's token cap (reference cpersona-2.6.14 §4.2 step 11): `used_tokens` is the
//! `cl100k_base` count of the very body returned and never above the cap; a cut keeps a
//! prefix of what the budget alone kept; the trace is never cut; a first item that cannot
//! fit refuses the call.

use std::sync::Arc;

use serde_json::json;

use crate::reconstruct::tokens::cl100k_tokens;
use crate::refs::Ref;
use crate::{ReconstructMode, ReconstructRequest, ReconstructResult};

/// Three-character words of scattered CJK ideographs, which cost cl100k more than one token
/// per character (so a few thousand characters of quotes overrun a few thousand tokens).
fn noisy(seed: usize, words: usize) -> String {
    (0..words)
        .map(|i| {
            (0..3)
                .map(|k| {
                    let code = 0x4E00 + (seed * 7_919 + i * 104_729 + k * 611) % 20_000;
                    char::from_u32(code as u32).unwrap_or('字')
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `notes` records of about `words` noisy words each around one shared phrase, a month apart
/// with their own sources (no two bundle).
fn engine(
    notes: usize,
    words: usize,
    quote_chars: Option<usize>,
) -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let mut config = crate::EngineConfig::new(dir.path().join("m.db"));
    if let Some(chars) = quote_chars {
        config.reconstruct.quote_chars = chars;
    }
    let engine = crate::Engine::open(config, embedder).unwrap();
    for n in 0..notes {
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!(
                    "Orchard ledger {n}: {} the pear trees were grafted. {}",
                    noisy(n, words / 2),
                    noisy(n + 1_000, words / 2)
                ),
                source: Some(json!({"type": "user", "id": format!("u{n}")})),
                timestamp: Some(format!(
                    "20{:02}-{:02}-10T09:00:00Z",
                    10 + n / 12,
                    n % 12 + 1
                )),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    (dir, engine)
}

fn ask(
    engine: &crate::Engine,
    mode: ReconstructMode,
    trace: bool,
) -> crate::Result<ReconstructResult> {
    engine.reconstruct(&ReconstructRequest {
        agent_id: "a".into(),
        query: "pear trees grafted orchard ledger".into(),
        top_k: Some(40),
        mode: Some(mode),
        trace,
        wire_advisory: Some(json!({"degraded": true, "reason": "a test advisory is counted too"})),
        ..ReconstructRequest::default()
    })
}

fn heads(r: &ReconstructResult) -> Vec<Option<Ref>> {
    r.response.items.iter().map(|i| i.head_ref).collect()
}

#[test]
fn used_tokens_is_the_count_of_the_returned_body() {
    let (_dir, engine) = engine(3, 10, None);
    let lite = ask(&engine, ReconstructMode::Lite, false).unwrap();
    let report = lite.mode.clone().expect("the mode is reported");
    assert!(report.token_cap_applied);
    assert_eq!(report.token_cap_cut, None, "three short notes fit");
    let used = report.used_tokens.expect("counted");
    let body = lite.wire_body();
    assert_eq!(
        body["advisory"]["degraded"], true,
        "the advisory is in the body"
    );
    assert_eq!(used, cl100k_tokens(&body.to_string()));
    assert!(used <= 3_000);
}

#[test]
fn pro_overrunning_its_cap_keeps_a_prefix_and_says_so() {
    // 20 notes of ~1,200 characters: pro's 15 head quotes alone (5 x 800 + 10 x 400
    // characters) run past 5,000 tokens.
    let (_dir, engine) = engine(20, 300, None);
    let cut = ask(&engine, ReconstructMode::Pro, false).unwrap();
    let full = ask(&engine, ReconstructMode::Pro, true).unwrap();
    let report = cut.mode.clone().expect("the mode is reported");
    let used = report.used_tokens.expect("counted");
    assert_eq!(used, cl100k_tokens(&cut.wire_body().to_string()));
    assert!(used <= 5_000, "{used}");
    let how = report.token_cap_cut.expect("the cap cut");
    assert!(how.pieces_kept < how.pieces_before_cap, "{how:?}");
    assert!(report.compacted.cut_by.contains(&"token_cap"));
    // The trace is never cut, and says why the cap was not applied.
    let traced = full.mode.clone().unwrap();
    assert_eq!(
        (traced.token_cap_applied, traced.token_cap_skipped),
        (false, Some("trace"))
    );
    assert!(
        cl100k_tokens(&full.wire_body().to_string()) > 5_000,
        "the uncut response overruns the cap"
    );
    // What the cap kept is a prefix of what the budget kept: the same heads in the same
    // order, each kept quote unchanged.
    let (kept, all) = (heads(&cut), heads(&full));
    assert!(!kept.is_empty());
    assert_eq!(kept[..], all[..kept.len()]);
    for (short, long) in cut.response.items.iter().zip(&full.response.items) {
        assert_eq!(short.content, long.content);
        for (e, f) in short.excerpts.iter().zip(&long.excerpts) {
            assert_eq!(e.content, f.content);
        }
    }
    if kept.len() < all.len() {
        assert_eq!(cut.response.shortfall_reason, Some("budget_exhausted"));
    }
}

#[test]
fn a_first_item_larger_than_the_cap_refuses_the_call() {
    // Quotes of up to 20,000 characters: the first head alone is past lite's 3,000 tokens.
    let (_dir, engine) = engine(2, 2_000, Some(20_000));
    let err = ask(&engine, ReconstructMode::Lite, false).unwrap_err();
    match err {
        crate::Error::CapBelowMinimum { mode, cap, minimum } => {
            assert_eq!((mode, cap), ("lite", 3_000));
            assert!(minimum > cap, "{minimum}");
        }
        other => panic!("expected cap_below_minimum, got {other}"),
    }
    assert!(err_is_user_error(&engine));
    // Under trace the same call answers (the audit is never cut).
    assert!(ask(&engine, ReconstructMode::Lite, true).is_ok());
}

fn err_is_user_error(engine: &crate::Engine) -> bool {
    ask(engine, ReconstructMode::Lite, false)
        .err()
        .is_some_and(|e| e.is_user_error())
}
