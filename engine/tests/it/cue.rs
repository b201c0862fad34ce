//! Cued Recall end to end: a cue that moves nothing leaves free recall byte for byte, a cue
//! re-orders and holds places but never hides a row, every fetch a recall makes is counted
//! (the arms, the envelope once, the propagation seat's deeper pass), relative cues read the
//! injected clock, and bad cues are refused before anything runs.

use cpersona_engine::replay::{ReplayChanges, replay};
use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{Error, RecallQuery, StoreId, StoreRequest, TimeCue};
use serde_json::json;

use crate::common::{Fixture, fixture};

const DAY_MS: i64 = 86_400_000;

/// 60 rows over 60 days from 2023-03-01, one a day; rows 20..30 mention "garden", the rest
/// "harbor"; the "now" of every cue is 2023-05-01 (day 61).
fn corpus(f: &Fixture) -> Vec<i64> {
    (0..60)
        .map(|day| {
            let topic = if (20..30).contains(&day) {
                "garden"
            } else {
                "harbor"
            };
            let out = f
                .engine
                .store(&StoreRequest {
                    agent_id: "a".into(),
                    content: format!("{topic} note {day} about lanterns and stones"),
                    timestamp: Some(cpersona_engine::time::format_ms(start() + day * DAY_MS)),
                    ..StoreRequest::default()
                })
                .unwrap();
            match out.id {
                Some(StoreId::Row(id)) => id,
                other => panic!("not stored: {other:?}"),
            }
        })
        .collect()
}

fn start() -> i64 {
    cpersona_engine::time::parse_iso8601_ms("2023-03-01T12:00:00Z").unwrap()
}

fn now() -> i64 {
    start() + 61 * DAY_MS
}

/// The response as JSON text with every row's `confidence` object removed.
fn without_confidence(response: &impl serde::Serialize) -> String {
    let mut value = serde_json::to_value(response).unwrap();
    if let Some(rows) = value["messages"].as_array_mut() {
        for row in rows {
            if let Some(object) = row.as_object_mut() {
                object.remove("confidence");
            }
        }
    }
    value.to_string()
}

fn cued(query: &str, limit: usize, cue: Option<serde_json::Value>) -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: query.into(),
        limit,
        trace: true,
        time_cue: cue.map(|c| TimeCue::from_json(&c).unwrap()),
        now_ms: Some(now()),
        ..RecallQuery::default()
    }
}

fn refs(r: &cpersona_engine::RecallResult) -> Vec<String> {
    r.response
        .messages
        .iter()
        .map(|m| m.r#ref.to_string())
        .collect()
}

/// The response as JSON text without the rows' `confidence` and the `time_cue` block.
fn rows_only(response: &impl serde::Serialize) -> String {
    let mut value: serde_json::Value = serde_json::from_str(&without_confidence(response)).unwrap();
    if let Some(object) = value.as_object_mut() {
        object.remove("time_cue");
    }
    value.to_string()
}

#[test]
fn a_cue_that_moves_nothing_is_free_recall_byte_for_byte() {
    let f = fixture();
    corpus(&f);
    // One cue the loop ignores (it starts within the last day) and one aimed at a period that
    // holds no row: the cue code runs (the second fetches and plans), and must leave every
    // row, its order and its fields as free recall has them.
    let ignored = json!({"ago": {"unit": "days", "value": 0}, "confidence": "sure"});
    let empty = json!({"after": "2001-01-01", "before": "2001-01-02", "confidence": "sure"});
    for q in ["lanterns", "garden note", "harbor 42"] {
        let free = f.engine.recall(&cued(q, 10, None)).unwrap();
        assert!(!rows_only(&free.response).is_empty());
        for cue in [&ignored, &empty] {
            let with = f.engine.recall(&cued(q, 10, Some(cue.clone()))).unwrap();
            let block = with.response.time_cue.as_ref().expect("the cue block");
            assert_eq!(block.moved + block.seated, 0, "{q}: {cue}");
            assert_eq!(
                rows_only(&with.response),
                rows_only(&free.response),
                "{q}: {cue}"
            );
        }
        let stages = serde_json::to_string(&free.stages).unwrap();
        assert!(!stages.contains("deliberation"));
    }
}

#[test]
fn a_cue_reorders_and_seats_but_never_hides_a_row() {
    let f = fixture();
    let ids = corpus(&f);
    let free = f.engine.recall(&cued("lanterns stones", 3, None)).unwrap();
    // 55 days before "now" is day 6 alone (sure: [day 5.5, day 6.5)), not in the top 3.
    let cue = json!({"ago": {"unit": "days", "value": 55}, "confidence": "sure"});
    let with = f
        .engine
        .recall(&cued("lanterns stones", 3, Some(cue)))
        .unwrap();
    let block = with.response.time_cue.as_ref().expect("time_cue block");
    assert_eq!(block.policy, "cued-v0.3");
    assert!(block.ignored.is_none());
    // Membership of the counted answer is unchanged: every free row is still returned.
    let free_refs = refs(&free);
    let with_refs = refs(&with);
    for r in &free_refs {
        assert!(with_refs.contains(r), "{r} became unreachable");
    }
    // The rows added are the cue's seats, at most 3 for `sure`, listed first.
    assert_eq!(with_refs.len(), free_refs.len() + block.seated);
    let day6 = format!("mem:{}", ids[6]);
    assert!(!free_refs.contains(&day6));
    assert_eq!(block.seated, 1);
    assert_eq!(with_refs[0], day6);
    // CPersona's shape of a cue seat: `{signal: "cue", admission: "reservation", cue_rank}`.
    let seat = serde_json::to_value(&with.response.messages[0].match_reason).unwrap();
    assert_eq!(seat["signal"], "cue", "{seat}");
    assert_eq!(seat["admission"], "reservation", "{seat}");
    assert!(seat["cue_rank"].is_u64(), "{seat}");
    // The arms and the envelope: two fetches, as the loop reports.
    let loop_report = with
        .stages
        .as_ref()
        .and_then(|s| s.deliberation.as_ref())
        .expect("loop");
    assert_eq!(with.fetches, 2);
    assert_eq!(loop_report.fetches, 2);
    assert_eq!(free.fetches, 1);
    assert!(!loop_report.stages.is_empty());
}

#[test]
fn a_wrong_cue_keeps_every_row_of_the_free_answer() {
    let f = fixture();
    corpus(&f);
    let free = f.engine.recall(&cued("garden", 10, None)).unwrap();
    let wrong = json!({"after": "2023-04-20", "before": "2023-04-25", "confidence": "sure"});
    let with = f.engine.recall(&cued("garden", 10, Some(wrong))).unwrap();
    let with_refs = refs(&with);
    for r in refs(&free) {
        assert!(
            with_refs.contains(&r),
            "{r} became unreachable under a wrong cue"
        );
    }
}

#[test]
fn an_empty_period_is_revised_once() {
    let f = fixture();
    corpus(&f);
    // 2023-02-20..2023-02-28 holds nothing (the corpus starts 2023-03-01 12:00); likely
    // widens it by 4 days each side, which reaches day 0.
    let cue = json!({"after": "2023-02-20", "before": "2023-02-27", "confidence": "sure"});
    let r = f.engine.recall(&cued("lanterns", 5, Some(cue))).unwrap();
    let block = r.response.time_cue.as_ref().unwrap();
    assert!(block.revised);
    let report = r
        .stages
        .as_ref()
        .and_then(|s| s.deliberation.as_ref())
        .unwrap();
    assert_eq!(report.stages.len(), 2);
    // A revision re-filters the one envelope fetch: still two fetches.
    assert_eq!(report.fetches, 2);
}

#[test]
fn a_recent_cue_is_ignored_and_says_so() {
    let f = fixture();
    corpus(&f);
    let cue = json!({"ago": {"unit": "days", "value": 0}, "confidence": "sure"});
    let r = f.engine.recall(&cued("lanterns", 5, Some(cue))).unwrap();
    let free = f.engine.recall(&cued("lanterns", 5, None)).unwrap();
    assert_eq!(
        r.response.time_cue.as_ref().unwrap().ignored.as_deref(),
        Some("recent_only")
    );
    assert_eq!(refs(&r), refs(&free));
}

#[test]
fn invalid_cues_are_user_errors() {
    let bad = TimeCue::from_json(&json!({"after": "2024-02-01", "before": "2024-01-01",
                                          "confidence": "sure"}));
    match bad {
        Err(err @ Error::InvalidInput { .. }) => assert!(err.is_user_error()),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// The trace through its JSON text, as `--trace-out` and `replay` see it.
fn saved(result: &cpersona_engine::RecallResult) -> RecallTrace {
    let text = serde_json::to_string_pretty(&result.trace().unwrap()).unwrap();
    RecallTrace::from_json(&text).unwrap()
}

#[test]
fn a_cued_trace_replays_to_the_same_response_and_cue_off_to_free_recall() {
    let f = fixture();
    corpus(&f);
    let cues = [
        json!({"ago": {"unit": "days", "value": 55}, "confidence": "sure"}),
        json!({"after": "2023-03-21", "before": "2023-03-31", "confidence": "likely"}),
        json!({"after": "2023-02-20", "before": "2023-02-27", "confidence": "sure"}),
        json!({"ago": {"unit": "days", "value": 0}, "confidence": "sure"}),
    ];
    // The free recall below is compared with a replay of the cued one's trace: both run in a
    // paused session, which gives no recall credit, so neither reads the other's credit in its
    // confidence objects.
    f.engine.pause_persistence(Some(3_600), "compare");
    let in_session = |mut rq: RecallQuery| {
        rq.session_key = "compare".into();
        rq
    };
    for (i, cue) in cues.into_iter().enumerate() {
        for (q, limit) in [("lanterns stones", 3), ("garden note", 5)] {
            let with = f
                .engine
                .recall(&in_session(cued(q, limit, Some(cue.clone()))))
                .unwrap();
            let trace = saved(&with);
            let out = replay(&trace, &ReplayChanges::default()).unwrap();
            assert_eq!(
                cpersona_engine::trace::without_text(serde_json::to_value(&out.response).unwrap())
                    .to_string(),
                cpersona_engine::trace::without_text(serde_json::to_value(&with.response).unwrap())
                    .to_string(),
                "cue {i}, {q:?}"
            );
            assert!(out.unchanged && out.exact, "cue {i}, {q:?}: {out:?}");
            if i < 3 {
                assert!(trace.cue.is_some(), "cue {i}: the plan is saved");
            }
            // cue=off replays the free recall of the same query.
            let free = f.engine.recall(&in_session(cued(q, limit, None))).unwrap();
            let off = replay(&trace, &ReplayChanges::parse_all(["cue=off"]).unwrap()).unwrap();
            assert_eq!(
                cpersona_engine::trace::without_text(serde_json::to_value(&off.response).unwrap())
                    .to_string(),
                cpersona_engine::trace::without_text(serde_json::to_value(&free.response).unwrap())
                    .to_string(),
                "cue {i}, {q:?}: cue=off"
            );
        }
    }
}

#[test]
fn a_cue_too_wide_for_the_expected_row_is_window_too_wide() {
    use cpersona_engine::taxonomy::{FailureCode, attribute};
    let f = fixture();
    let ids = corpus(&f);
    // Days 7..9 (2023-03-08..10); likely widens by 1.5 days each side (days 5..10 at noon),
    // holds 2 seats; sure holds 3 seats for exactly days 7..9.
    let cue = json!({"after": "2023-03-08", "before": "2023-03-11", "confidence": "likely"});
    let with = f
        .engine
        .recall(&cued("lanterns stones", 3, Some(cue)))
        .unwrap();
    let returned = refs(&with);
    let missed: Vec<String> = (7..10)
        .map(|d| format!("mem:{}", ids[d]))
        .filter(|r| !returned.contains(r))
        .collect();
    assert!(
        !missed.is_empty(),
        "likely seats at most 2 of 3: {returned:?}"
    );
    let trace = saved(&with);
    let expected = missed[0].parse().unwrap();
    // Narrowing the cue to sure is exact (the saved envelope rows suffice) and returns it.
    let sure = replay(
        &trace,
        &ReplayChanges::parse_all(["cue.confidence=sure"]).unwrap(),
    )
    .unwrap();
    assert!(sure.exact, "{sure:?}");
    assert!(sure.refs_best_first().contains(&expected));
    // The replayed block states the cue it applied, and claims no loop it did not run.
    let block = sure.response.time_cue.as_ref().expect("the cue block");
    let saved_block = with.response.time_cue.as_ref().unwrap();
    assert_eq!(
        block.confidence,
        cpersona_engine::recall::stages::cue::CueConfidence::Sure
    );
    assert_ne!(
        block.period, saved_block.period,
        "sure's period is narrower"
    );
    assert!(!block.revised && block.stopped_by.is_none() && block.limits.is_empty());
    assert!(
        sure.notes.iter().any(|n| n.contains("not re-run")),
        "{:?}",
        sure.notes
    );
    let att = attribute(&trace, expected, None).unwrap();
    assert_eq!(att.code, Some(FailureCode::WindowTooWide), "{att:?}");
    assert_eq!(att.stage, "cue");
}

#[test]
fn a_cue_too_narrow_for_the_expected_row_is_window_too_narrow() {
    use cpersona_engine::taxonomy::{FailureCode, attribute};
    let f = fixture();
    corpus(&f);
    // Days 7..9, sure: three rows fill its three seats, so the loop stops at once (count);
    // likely (days 5..10 at noon) is inside the fetch (aimed at likely), so it replays exactly.
    let cue = json!({"after": "2023-03-08", "before": "2023-03-11", "confidence": "sure"});
    let mut cases = 0;
    for q in ["lanterns stones", "garden note", "harbor", "note about"] {
        let with = f.engine.recall(&cued(q, 3, Some(cue.clone()))).unwrap();
        assert!(!with.response.time_cue.as_ref().unwrap().revised, "{q:?}");
        let trace = saved(&with);
        let likely = replay(
            &trace,
            &ReplayChanges::parse_all(["cue.confidence=likely"]).unwrap(),
        )
        .unwrap();
        assert!(likely.exact, "{q:?}: {likely:?}");
        let before = cpersona_engine::replay::trace_refs_best_first(&trace);
        for expected in likely.refs_best_first() {
            if before.contains(&expected) {
                continue;
            }
            let att = attribute(&trace, expected, None).unwrap();
            assert_eq!(
                att.code,
                Some(FailureCode::WindowTooNarrow),
                "{q:?}: {att:?}"
            );
            cases += 1;
        }
    }
    assert!(cases > 0, "no query had a row only the wider cue returns");
}

#[test]
fn the_propagation_seat_counts_its_deeper_pass_and_reuses_the_envelope() {
    let f = crate::common::fixture_with(|config| config.propagation_seat = true);
    corpus(&f);
    let free = f.engine.recall(&cued("lanterns stones", 3, None)).unwrap();
    // The window's arms and the deeper pass's arms.
    assert_eq!(free.fetches, 2);
    let cue = json!({"ago": {"unit": "days", "value": 55}, "confidence": "sure"});
    let with = f
        .engine
        .recall(&cued("lanterns stones", 3, Some(cue)))
        .unwrap();
    // The window's arms, its envelope, the deeper pass's arms: the deeper pass applies the
    // window's cue plan again instead of fetching the envelope a second time.
    assert_eq!(with.fetches, 3);
    let report = with
        .stages
        .as_ref()
        .and_then(|s| s.deliberation.as_ref())
        .unwrap();
    assert_eq!(report.fetches, 3);
}
