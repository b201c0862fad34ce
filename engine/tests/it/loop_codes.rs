//! The recall loop's last four failure codes (`taxonomy::loop_codes`): each built case must
//! get its code, and loses it when the replay the rule rests on is taken away (no store
//! re-fetch, no intended cue). Also the claim that `cue=off` can never return a missed row.

use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, replay, trace_refs_best_first};
use cpersona_engine::taxonomy::{
    FailureCode, LoopInputs, RowFacts, attribute, attribute_with, loop_codes::EnvelopeFetch,
};
use cpersona_engine::time::{format_ms, parse_iso8601_ms};
use cpersona_engine::trace::RecallTrace;
use cpersona_engine::{RecallQuery, RecallResult, StoreRequest, TimeCue};
use serde_json::{Value, json};

use crate::common::{Fixture, fixture, fixture_with, store_request};

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

fn t0() -> i64 {
    parse_iso8601_ms("2024-06-01T12:00:00Z").unwrap()
}

fn put(f: &Fixture, content: &str, at_ms: i64) -> Ref {
    Ref::mem(store_request(
        f,
        &StoreRequest {
            agent_id: "a".into(),
            content: content.into(),
            timestamp: Some(format_ms(at_ms)),
            ..StoreRequest::default()
        },
    ))
}

/// 15 rows "amber stone dN" 30..44 days before `t0`: they fill the vector arm's depth of 10
/// and the count, so a row sharing no word with the query is never a candidate.
fn decoys(f: &Fixture) {
    for n in 0..15 {
        put(f, &format!("amber stone d{n}"), t0() - (30 + n) * DAY_MS);
    }
}

fn recall(f: &Fixture, query: &str, limit: usize, cue: Value, now: i64) -> RecallResult {
    f.engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: query.into(),
            limit,
            depth: Some(10),
            trace: true,
            time_cue: Some(TimeCue::from_json(&cue).unwrap()),
            now_ms: Some(now),
            ..RecallQuery::default()
        })
        .unwrap()
}

fn saved(result: &RecallResult) -> RecallTrace {
    let text = serde_json::to_string_pretty(&result.trace().unwrap()).unwrap();
    RecallTrace::from_json(&text).unwrap()
}

fn facts(f: &Fixture, r: Ref) -> RowFacts {
    f.engine.row_facts("a", None, None, r).unwrap()
}

fn day(at_ms: i64) -> String {
    format_ms(at_ms)[..10].to_owned()
}

#[test]
fn an_ignored_recent_cue_that_would_seat_the_row_is_prior_ignored() {
    let f = fixture();
    decoys(&f);
    let now = t0();
    let expected = put(&f, "violet lantern", now - 6 * HOUR_MS);
    // A period starting 12 h before the clock: ignored as recent-only.
    let cue = json!({"after": format_ms(now - 12 * HOUR_MS), "confidence": "sure"});
    let with = recall(&f, "amber stone", 3, cue, now);
    let trace = saved(&with);
    assert_eq!(trace.response["time_cue"]["ignored"], "recent_only");
    assert!(!trace_refs_best_first(&trace).contains(&expected));
    let row = facts(&f, expected);
    assert_eq!(row.at_ms, Some(now - 6 * HOUR_MS));
    let refetch = |p| f.engine.refetch_envelope(&trace, p);
    let inputs = LoopInputs {
        refetch: Some(&refetch),
        ..LoopInputs::default()
    };
    let att = attribute_with(&trace, expected, Some(row), &inputs).unwrap();
    assert_eq!(att.code, Some(FailureCode::PriorIgnored), "{att:?}");
    assert_eq!(att.stage, "cue");
    // Without the store the applied cue's rows are unknown: no code rests on it.
    let offline = attribute(&trace, expected, Some(row)).unwrap();
    assert_eq!(
        offline.code,
        Some(FailureCode::CandidateMiss),
        "{offline:?}"
    );
}

/// Decoys, a row "violet lantern" 3 days before the newest row, and the newest row.
fn dated_corpus(f: &Fixture) -> (Ref, i64) {
    decoys(f);
    let newest = t0();
    let expected = put(f, "violet lantern", newest - 3 * DAY_MS);
    put(f, "amber tail", newest);
    (expected, newest)
}

#[test]
fn a_relative_cue_read_against_the_clock_not_the_conversation_is_intent_normalization_error() {
    let f = fixture();
    let (expected, newest) = dated_corpus(&f);
    // The clock is 10 days past the conversation: "3 days ago" by the clock holds nothing.
    let now = newest + 10 * DAY_MS;
    let cue = json!({"ago": {"unit": "days", "value": 3}, "confidence": "sure"});
    let trace = saved(&recall(&f, "amber stone", 3, cue, now));
    assert!(!trace_refs_best_first(&trace).contains(&expected));
    let row = facts(&f, expected);
    let refetch = |p| f.engine.refetch_envelope(&trace, p);
    let inputs = LoopInputs {
        refetch: Some(&refetch),
        ..LoopInputs::default()
    };
    let att = attribute_with(&trace, expected, Some(row), &inputs).unwrap();
    assert_eq!(
        att.code,
        Some(FailureCode::IntentNormalizationError),
        "{att:?}"
    );
    assert!(
        att.counterfactuals
            .iter()
            .any(|c| c.returned && c.exact && c.change.contains("newest row")),
        "{att:?}"
    );
    // The same cue with the clock at the conversation's date returns the row: the
    // re-normalisation is what fixes it, nothing else.
    let fixed = recall(
        &f,
        "amber stone",
        3,
        json!({"ago": {"unit": "days", "value": 3}, "confidence": "sure"}),
        newest,
    );
    assert!(trace_refs_best_first(&saved(&fixed)).contains(&expected));
    // Without the row's time the rule is not tried.
    let blind = attribute_with(&trace, expected, None, &inputs).unwrap();
    assert_ne!(blind.code, Some(FailureCode::IntentNormalizationError));
}

#[test]
fn a_wrong_absolute_cue_when_the_caller_meant_the_right_day_is_intent_misleading() {
    let f = fixture();
    let (expected, _) = dated_corpus(&f);
    let at = facts(&f, expected).at_ms.unwrap();
    let wrong = at - 60 * DAY_MS;
    let cue = json!({"after": day(wrong), "before": day(wrong), "confidence": "sure"});
    let trace = saved(&recall(&f, "amber stone", 3, cue, t0()));
    assert!(!trace_refs_best_first(&trace).contains(&expected));
    let row = facts(&f, expected);
    let refetch = |p| f.engine.refetch_envelope(&trace, p);
    let intended =
        TimeCue::from_json(&json!({"after": day(at), "before": day(at), "confidence": "sure"}))
            .unwrap();
    let inputs = LoopInputs {
        intended: Some(intended),
        refetch: Some(&refetch),
    };
    let att = attribute_with(&trace, expected, Some(row), &inputs).unwrap();
    assert_eq!(att.code, Some(FailureCode::IntentMisleading), "{att:?}");
    // No intended cue: nothing says what was meant, so the code is not assigned.
    let without = LoopInputs {
        refetch: Some(&refetch),
        ..LoopInputs::default()
    };
    let att = attribute_with(&trace, expected, Some(row), &without).unwrap();
    assert_ne!(att.code, Some(FailureCode::IntentMisleading), "{att:?}");
}

#[test]
fn a_strong_hit_whose_narrowed_period_takes_the_rows_seat_is_prior_dominance() {
    let f = fixture_with(|c| c.recall.gate.enabled = false);
    // The cue is the 10 UTC days from `p`'s midnight (S); the strong hit is at S + 1 d, the
    // expected row at S + 9.5 d, four rows far from the query at S + 1.5 .. 4.5 d. Narrowed
    // around the hit (sure: [S, S + 5 d); likely and vague end before S + 9 d) the four
    // fill the seats; without propagation the expected row, closer to the query, takes one.
    let p = t0() - 20 * DAY_MS;
    // Far from the period: rows closer to the query than the expected one (they fill the
    // vector depth), never in any envelope the replays reach.
    for n in 0..12 {
        put(
            &f,
            &format!("amber falcon ridge d{n}"),
            p - (100 + n) * DAY_MS,
        );
    }
    put(&f, "amber falcon ridge", p + 12 * HOUR_MS);
    let expected = put(&f, "amber falcon meadow", p + 9 * DAY_MS);
    for n in 1..5 {
        put(&f, &format!("pebble lantern f{n}"), p + n * DAY_MS);
    }
    let cue = json!({"after": day(p), "before": day(p + 9 * DAY_MS), "confidence": "sure"});
    let with = recall(&f, "amber falcon ridge", 1, cue, t0());
    let block = with.response.time_cue.as_ref().unwrap();
    assert!(block.propagated.is_some(), "no strong hit: {block:?}");
    let trace = saved(&with);
    assert!(!trace_refs_best_first(&trace).contains(&expected));
    // The plain replay cannot show the seated row's text (never a fused candidate, so not in
    // the saved pool) and says so; it names it among the rows to re-hydrate.
    let off = replay(
        &trace,
        &ReplayChanges::parse_all(["cue.propagation=off"]).unwrap(),
    )
    .unwrap();
    assert!(
        off.refs_best_first().contains(&expected)
            || off
                .rerun
                .iter()
                .any(|r| r.reason.contains(&expected.to_string())),
        "{off:?}"
    );
    let att = attribute(&trace, expected, Some(facts(&f, expected))).unwrap();
    assert_eq!(att.code, Some(FailureCode::PriorDominance), "{att:?}");
}

#[test]
fn cue_off_never_returns_a_row_the_cue_missed() {
    let f = fixture();
    let mut all = Vec::new();
    for d in 0..40 {
        let topic = ["amber", "violet", "harbor", "garden"][d as usize % 4];
        all.push(put(
            &f,
            &format!("{topic} note {d} stones"),
            t0() - d * DAY_MS,
        ));
    }
    let cues = [
        json!({"ago": {"unit": "days", "value": 10}, "confidence": "sure"}),
        json!({"ago": {"unit": "weeks", "value": 3}, "confidence": "likely"}),
        json!({"ago": "long_ago", "confidence": "vague"}),
        json!({"after": day(t0() - 30 * DAY_MS), "before": day(t0() - 25 * DAY_MS),
               "confidence": "sure"}),
    ];
    let mut checked = 0;
    for q in ["amber stones", "violet note", "harbor 12", "note"] {
        for cue in &cues {
            let trace = saved(&recall(&f, q, 3, cue.clone(), t0()));
            let with = trace_refs_best_first(&trace);
            let off = replay(&trace, &ReplayChanges::parse_all(["cue=off"]).unwrap()).unwrap();
            for r in off.refs_best_first() {
                assert!(with.contains(&r), "{q:?} {cue}: cue=off returned {r}");
            }
            for r in all.iter().filter(|r| !with.contains(r)) {
                let att = attribute(&trace, *r, Some(facts(&f, *r))).unwrap();
                assert!(
                    !att.counterfactuals
                        .iter()
                        .any(|c| c.change == "cue=off" && c.returned),
                    "{att:?}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn envelope_refetch_reads_the_traces_scope_only() {
    let f = fixture();
    let (expected, newest) = dated_corpus(&f);
    f.engine
        .store(&StoreRequest {
            agent_id: "b".into(),
            content: "violet lantern".into(),
            timestamp: Some(format_ms(newest - 3 * DAY_MS)),
            ..StoreRequest::default()
        })
        .unwrap();
    let cue = json!({"ago": {"unit": "days", "value": 3}, "confidence": "sure"});
    let trace = saved(&recall(&f, "violet lantern", 3, cue, newest));
    let period = cpersona_engine::recall::stages::cue::Period {
        start_ms: newest - 4 * DAY_MS,
        end_ms: newest - 2 * DAY_MS,
    };
    let EnvelopeFetch { rows, cut, .. } = f.engine.refetch_envelope(&trace, period).unwrap();
    assert!(!cut);
    let refs: Vec<Ref> = rows.iter().map(|r| r.r#ref).collect();
    assert_eq!(refs, vec![expected]);
    assert!(rows[0].cosine.unwrap() > 0.99);
}
