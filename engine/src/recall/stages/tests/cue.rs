//! Parsing, resolution and widening of the time cue.

use serde_json::json;

use crate::error::Error;
use crate::recall::stages::cue::{
    AgoUnit, CueConfidence, CueWhen, DAY_MS, Period, Resolution, TimeCue,
};
use crate::time::parse_iso8601_ms;

fn ms(text: &str) -> i64 {
    parse_iso8601_ms(text).expect("valid")
}

fn err(value: serde_json::Value) -> String {
    match TimeCue::from_json(&value) {
        Err(Error::InvalidInput { field, reason }) => {
            assert!(field.starts_with("time_cue"), "{field}");
            reason
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn bare_dates_cover_whole_utc_days_and_offsets_are_read() {
    let cue = TimeCue::from_json(&json!({"after": "2023-05-08", "before": "2023-05-08",
                                          "confidence": "sure"}))
    .expect("valid");
    assert_eq!(
        cue.when,
        CueWhen::Absolute {
            after_ms: Some(ms("2023-05-08T00:00:00Z")),
            before_ms: Some(ms("2023-05-09T00:00:00Z")),
        }
    );
    let cue = TimeCue::from_json(&json!({"after": "2023-05-08T09:00:00+09:00",
                                          "confidence": "likely"}))
    .expect("valid");
    assert_eq!(
        cue.when,
        CueWhen::Absolute {
            after_ms: Some(ms("2023-05-08T00:00:00Z")),
            before_ms: None
        }
    );
    assert_eq!(cue.confidence, CueConfidence::Likely);
}

#[test]
fn invalid_cues_say_what_is_wrong() {
    assert!(
        err(json!({"after": "2024-02-01", "before": "2024-01-01", "confidence": "sure"}))
            .contains("must be earlier than before")
    );
    assert!(
        err(json!({"ago": {"unit": "years", "value": 2}, "confidence": "sure"}))
            .contains("ago.unit must be days, weeks or months")
    );
    assert!(
        err(json!({"ago": {"unit": "days", "value": 1.5}, "confidence": "sure"}))
            .contains("whole number")
    );
    assert!(
        err(json!({"ago": {"unit": "days", "value": -1}, "confidence": "sure"}))
            .contains("whole number")
    );
    assert!(err(json!({"after": "2023-02-30", "confidence": "sure"})).contains("does not exist"));
    assert!(err(json!({"after": "12023-01-01", "confidence": "sure"})).contains("ISO-8601"));
    assert!(
        err(json!({"ago": {"unit": "days", "value": 100_001}, "confidence": "sure"}))
            .contains("out of range")
    );
    assert!(err(json!({"after": "2023-01-01"})).contains("confidence is required"));
    assert!(err(json!({"after": "2023-01-01", "confidence": 0.7})).contains("sure, likely"));
    assert!(err(json!({"confidence": "sure"})).contains("give after"));
    assert!(
        err(json!({"after": "2023-01-01", "ago": "long_ago", "confidence": "sure"}))
            .contains("not both")
    );
    assert!(err(json!({"ago": "yesterday", "confidence": "sure"})).contains("long_ago"));
    assert!(err(json!({"when": 1, "confidence": "sure"})).contains("unknown field"));
}

#[test]
fn ago_resolves_against_the_injected_clock() {
    let now = ms("2023-10-22T12:00:00Z");
    let cue = TimeCue {
        when: CueWhen::Ago {
            unit: AgoUnit::Days,
            value: 167,
        },
        confidence: CueConfidence::Sure,
    };
    let Resolution::Period(p) = cue.resolve(now, None) else {
        panic!("expected a period");
    };
    let centre = now - 167 * DAY_MS;
    assert_eq!(
        p,
        Period {
            start_ms: centre - DAY_MS / 2,
            end_ms: centre + DAY_MS / 2
        }
    );
    assert!(p.contains(ms("2023-05-08T08:00:00Z")));
    // Another clock, another period: nothing reads the system clock.
    let Resolution::Period(q) = cue.resolve(now + DAY_MS, None) else {
        panic!("expected a period");
    };
    assert_eq!(q.start_ms - p.start_ms, DAY_MS);
}

#[test]
fn widening_is_zero_half_one_period_each_side() {
    let p = Period {
        start_ms: 1_000_000,
        end_ms: 1_000_000 + 4 * DAY_MS,
    };
    assert_eq!(p.widen(CueConfidence::Sure), p);
    let likely = p.widen(CueConfidence::Likely);
    assert_eq!(likely.start_ms, p.start_ms - 2 * DAY_MS);
    assert_eq!(likely.end_ms, p.end_ms + 2 * DAY_MS);
    let vague = p.widen(CueConfidence::Vague);
    assert_eq!(vague.end_ms - vague.start_ms, 12 * DAY_MS);
    assert_eq!(CueConfidence::Sure.wider(), Some(CueConfidence::Likely));
    assert_eq!(CueConfidence::Vague.wider(), None);
}

#[test]
fn long_ago_is_the_oldest_third_and_needs_a_span() {
    let cue = TimeCue {
        when: CueWhen::LongAgo,
        confidence: CueConfidence::Vague,
    };
    let now = 1_000 * DAY_MS;
    assert_eq!(cue.resolve(now, None), Resolution::EmptyScope);
    assert_eq!(
        cue.resolve(now, Some((0, 300 * DAY_MS))),
        Resolution::Period(Period {
            start_ms: 0,
            end_ms: 100 * DAY_MS
        })
    );
}

#[test]
fn a_period_starting_within_a_day_is_recent_only() {
    let now = 1_000 * DAY_MS;
    let cue = TimeCue {
        when: CueWhen::Ago {
            unit: AgoUnit::Days,
            value: 0,
        },
        confidence: CueConfidence::Sure,
    };
    assert!(matches!(cue.resolve(now, None), Resolution::RecentOnly(_)));
    let absolute = TimeCue {
        when: CueWhen::Absolute {
            after_ms: Some(now - 10 * DAY_MS),
            before_ms: Some(now - 10 * DAY_MS),
        },
        confidence: CueConfidence::Sure,
    };
    assert!(
        matches!(absolute.resolve(now, None), Resolution::Period(p) if p.end_ms - p.start_ms == 1_000)
    );
}

// See: issue 18. 100,000 months ago resolved to a period starting after it ended; an ago
// reaching past about 1,000 years is refused, naming the argument.
#[test]
fn r18_an_ago_past_a_thousand_years_is_refused_by_name() {
    let refused = |unit: &str, value: u64| match TimeCue::from_json(
        &json!({"ago": {"unit": unit, "value": value}, "confidence": "sure"}),
    ) {
        Err(Error::InvalidInput { field, reason }) => Some((field, reason)),
        Ok(_) => None,
        Err(other) => panic!("expected InvalidInput, got {other:?}"),
    };
    let (field, reason) = refused("months", 100_000).expect("refused");
    assert_eq!(field, "time_cue.ago.value");
    assert!(
        reason.contains("100000 months") && reason.contains("12166"),
        "{reason}"
    );
    assert!(refused("months", 12_166).is_none());
    assert!(refused("weeks", 52_142).is_none());
    assert!(refused("weeks", 52_143).is_some());
    assert!(refused("days", 100_000).is_none());
    // The furthest accepted cue resolves inside the representable range, start before end.
    let now = ms("2026-01-01T00:00:00Z");
    for cue in [
        json!({"ago": {"unit": "months", "value": 12_166}, "confidence": "vague"}),
        json!({"ago": {"unit": "weeks", "value": 52_142}, "confidence": "vague"}),
    ] {
        let cue = TimeCue::from_json(&cue).expect("valid");
        let Resolution::Period(p) = cue.resolve(now, None) else {
            panic!("expected a period");
        };
        let wide = p.widen(cue.confidence);
        assert!(
            p.start_ms < p.end_ms && wide.start_ms < wide.end_ms,
            "{p:?} {wide:?}"
        );
        assert!(wide.start_ms >= crate::recall::stages::cue::MIN_MS);
    }
}

/// A period goes on the wire as CPersona's `[start, end]` and is read back from that or from
/// the `{start, end}` object of traces saved by earlier builds.
#[test]
fn a_period_is_an_iso_pair_on_the_wire_and_reads_both_shapes() {
    let period = crate::recall::stages::cue::PeriodText {
        start: "2026-01-01T00:00:00.000Z".into(),
        end: "2026-02-01T00:00:00.000Z".into(),
    };
    let wire = serde_json::to_value(&period).unwrap();
    assert_eq!(
        wire,
        serde_json::json!(["2026-01-01T00:00:00.000Z", "2026-02-01T00:00:00.000Z"])
    );
    let from_pair: crate::recall::stages::cue::PeriodText = serde_json::from_value(wire).unwrap();
    let from_object: crate::recall::stages::cue::PeriodText =
        serde_json::from_value(serde_json::json!({"start": period.start, "end": period.end}))
            .unwrap();
    assert_eq!(from_pair, period);
    assert_eq!(from_object, period);
    assert!(
        serde_json::from_value::<crate::recall::stages::cue::PeriodText>(serde_json::json!([
            "only one"
        ]))
        .is_err()
    );
}
