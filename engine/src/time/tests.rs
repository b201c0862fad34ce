//! Timestamp parsing across offsets and forms.

use super::*;

#[test]
fn offsets_normalise_to_the_same_instant() {
    let utc = parse_iso8601_ms("2026-01-31T00:30:00Z").unwrap();
    for text in [
        "2026-01-31T09:30:00+09:00",
        "2026-01-31T09:30:00+0900",
        "2026-01-30T19:30:00-05:00",
        "2026-01-31 00:30:00+00:00",
        "2026-01-31T00:30:00.000000+00:00",
        "2026-01-31T00:30:00",
        "2026-01-31 00:30:00",
        "2026-01-31T00:30Z",
    ] {
        assert_eq!(parse_iso8601_ms(text).unwrap(), utc, "{text}");
    }
    assert_eq!(format_ms(utc), "2026-01-31T00:30:00.000Z");
    assert_eq!(format_ms_python(utc), "2026-01-31T00:30:00.000000+00:00");
}

#[test]
fn fractions_and_dates() {
    assert_eq!(parse_iso8601_ms("1970-01-01T00:00:00.123Z").unwrap(), 123);
    assert_eq!(parse_iso8601_ms("1970-01-02").unwrap(), 86_400_000);
}

#[test]
fn garbage_is_a_user_error() {
    for text in [
        "",
        "yesterday",
        "2026-13-01T00:00:00Z",
        "2026-01-31T25:00:00Z",
        "31/01/2026",
    ] {
        let err = parse_iso8601_ms(text).unwrap_err();
        assert!(err.is_user_error(), "{text}");
        assert!(matches!(err, Error::InvalidTimestamp { .. }));
    }
}
