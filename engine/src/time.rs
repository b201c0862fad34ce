//! Timestamps: any ISO-8601 text with any offset read into integer UTC milliseconds, and
//! milliseconds written back as RFC 3339 text. It must never guess: unreadable text is a
//! user error, and text without an offset is read as UTC (CPersona's naive `created_at`).

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};

use crate::error::{Error, Result};

/// Reads ISO-8601 text (`2026-01-31T09:30:00+09:00`, `…Z`, `…+0900`, fractional seconds, a
/// space instead of `T`, no offset = UTC, or a bare date = UTC midnight) into UTC ms.
pub fn parse_iso8601_ms(text: &str) -> Result<i64> {
    let trimmed = text.trim();
    let invalid = || Error::InvalidTimestamp {
        value: text.to_owned(),
    };
    if trimmed.is_empty() {
        return Err(invalid());
    }
    // ISO-8601 allows a space separator; RFC 3339 parsers in chrono accept both, the
    // strftime-style ones need one form.
    let mut normalised = match trimmed.as_bytes().get(10) {
        Some(b' ') => format!("{}T{}", &trimmed[..10], &trimmed[11..]),
        _ => trimmed.to_owned(),
    };
    // `%z` below does not read `Z`.
    if normalised.ends_with(['Z', 'z']) && normalised.len() > 10 {
        normalised.pop();
        normalised.push_str("+00:00");
    }
    if let Ok(instant) = DateTime::parse_from_rfc3339(&normalised) {
        return Ok(instant.timestamp_millis());
    }
    for pattern in ["%Y-%m-%dT%H:%M:%S%.f%z", "%Y-%m-%dT%H:%M%z"] {
        if let Ok(instant) = DateTime::parse_from_str(&normalised, pattern) {
            return Ok(instant.timestamp_millis());
        }
    }
    for pattern in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M"] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(&normalised, pattern) {
            return Ok(naive.and_utc().timestamp_millis());
        }
    }
    if let Ok(date) = NaiveDate::parse_from_str(&normalised, "%Y-%m-%d") {
        return date
            .and_hms_opt(0, 0, 0)
            .map(|d| d.and_utc().timestamp_millis())
            .ok_or_else(invalid);
    }
    Err(invalid())
}

/// UTC ms as RFC 3339 with milliseconds and `Z`, e.g. `2026-01-31T00:30:00.000Z`.
pub fn format_ms(ms: i64) -> String {
    match DateTime::<Utc>::from_timestamp_millis(ms) {
        Some(instant) => instant.to_rfc3339_opts(SecondsFormat::Millis, true),
        // Only reachable for instants beyond year 262143, which parse never produces.
        None => ms.to_string(),
    }
}

/// UTC ms as Python's `datetime.now(UTC).isoformat()` writes it (`+00:00`, microseconds),
/// the text CPersona stores as a message's default timestamp.
pub fn format_ms_python(ms: i64) -> String {
    match DateTime::<Utc>::from_timestamp_millis(ms) {
        Some(instant) => instant.to_rfc3339_opts(SecondsFormat::Micros, false),
        None => ms.to_string(),
    }
}

/// Now, in UTC ms.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests;
