//! The time cue of Cued Recall (design §2, shipped policy `cued-v0.3`, reference 2.6.14 §3.8):
//! parsing the caller's cue into a typed [`TimeCue`], resolving it against an injected clock
//! and the scope's time span into a [`Period`], and widening that period by confidence.
//!
//! A cue is a prior, never a filter: nothing here removes a row; it only says where the
//! envelope starts. Isolation is not a cue and is never widened here. This module must never
//! read the clock itself: `now_ms` is always handed in, so tests and the TMD harness can fix it.

use chrono::{Days, NaiveDate};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::time::{format_ms, parse_iso8601_ms};

/// The policy version the response and trace name.
pub const POLICY: &str = "cued-v0.3";

/// One day in ms.
pub const DAY_MS: i64 = 86_400_000;

/// The earliest instant a cue may name: 0001-01-01T00:00:00Z.
pub const MIN_MS: i64 = -62_135_596_800_000;
/// The latest instant a cue may name: 9999-12-31T23:59:59.999Z.
pub const MAX_MS: i64 = 253_402_300_799_999;

/// The largest `ago.value` accepted in any unit (the wire schema's bound).
pub const MAX_AGO_VALUE: u64 = 100_000;

/// The furthest back an `ago` cue may reach, in days (about 1,000 years): far past anything
/// a memory store holds, and near enough that the period stays inside [`MIN_MS`, `MAX_MS`]
/// for any clock this side of year 1000. 100,000 months (about 8,200 years) once gave a
/// period before year 1 that resolved to a start after its end (issue 18).
pub const MAX_AGO_DAYS: u64 = 365_000;

/// How sure the caller is. An enumeration on purpose (design §2): never a number.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum CueConfidence {
    /// The period as said.
    Sure,
    /// The period widened by half its length each side.
    Likely,
    /// The period widened by its whole length each side.
    Vague,
}

impl CueConfidence {
    /// Widening per side as a fraction of the period's length (shipped `MARGIN`).
    pub fn margin(self) -> f64 {
        match self {
            CueConfidence::Sure => 0.0,
            CueConfidence::Likely => 0.5,
            CueConfidence::Vague => 1.0,
        }
    }

    /// The one revision step (shipped `WIDER`): sure → likely → vague → none.
    pub fn wider(self) -> Option<CueConfidence> {
        match self {
            CueConfidence::Sure => Some(CueConfidence::Likely),
            CueConfidence::Likely => Some(CueConfidence::Vague),
            CueConfidence::Vague => None,
        }
    }

    /// Most places a cued row may move up in the answer (shipped `LIFT`).
    pub fn lift(self) -> usize {
        match self {
            CueConfidence::Sure => 3,
            CueConfidence::Likely => 2,
            CueConfidence::Vague => 1,
        }
    }

    /// Held places for the best cued rows not in the answer (shipped `SEATS`).
    pub fn seats(self) -> usize {
        self.lift()
    }

    fn parse(text: &str) -> Result<CueConfidence> {
        match text {
            "sure" => Ok(CueConfidence::Sure),
            "likely" => Ok(CueConfidence::Likely),
            "vague" => Ok(CueConfidence::Vague),
            other => Err(invalid(format!(
                "confidence must be sure, likely or vague, got {other:?}"
            ))),
        }
    }
}

/// The unit of an `ago` cue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgoUnit {
    /// One day.
    Days,
    /// Seven days.
    Weeks,
    /// Thirty days (as shipped; a calendar month is not a fixed width).
    Months,
}

impl AgoUnit {
    /// The unit's width in ms.
    pub fn width_ms(self) -> i64 {
        match self {
            AgoUnit::Days => DAY_MS,
            AgoUnit::Weeks => 7 * DAY_MS,
            AgoUnit::Months => 30 * DAY_MS,
        }
    }
}

/// When the sought memory happened, as the caller said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CueWhen {
    /// `{after, before}`, either may be absent (not both), UTC ms, `[after, before)`.
    Absolute {
        /// Start (inclusive).
        after_ms: Option<i64>,
        /// End (exclusive).
        before_ms: Option<i64>,
    },
    /// `{ago: {unit, value}}`.
    Ago {
        /// The unit.
        unit: AgoUnit,
        /// How many units ago.
        value: u64,
    },
    /// `"long_ago"`: the oldest third of the scope's span.
    LongAgo,
}

/// A parsed, validated time cue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeCue {
    /// The period as said.
    pub when: CueWhen,
    /// How sure.
    pub confidence: CueConfidence,
}

/// A half-open period `[start_ms, end_ms)` in UTC ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Period {
    /// Start (inclusive).
    pub start_ms: i64,
    /// End (exclusive).
    pub end_ms: i64,
}

impl Period {
    /// Whether `at_ms` lies inside.
    pub fn contains(&self, at_ms: i64) -> bool {
        self.start_ms <= at_ms && at_ms < self.end_ms
    }

    /// The period widened by `margin × length` each side, clipped to the representable range.
    pub fn widen(&self, confidence: CueConfidence) -> Period {
        let len = (self.end_ms - self.start_ms) as f64;
        let pad = (len * confidence.margin()).round() as i64;
        Period {
            start_ms: self.start_ms.saturating_sub(pad).max(MIN_MS),
            end_ms: self.end_ms.saturating_add(pad).min(MAX_MS),
        }
    }

    /// As RFC 3339 text, for responses.
    pub fn text(&self) -> PeriodText {
        PeriodText {
            start: format_ms(self.start_ms),
            end: format_ms(self.end_ms),
        }
    }
}

/// A period as text, `[start, end)`: on the wire `[start, end]`, CPersona's shape; read back
/// from that or from the `{start, end}` object traces of earlier builds hold.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "PeriodWire")]
pub struct PeriodText {
    /// Start (inclusive), RFC 3339.
    pub start: String,
    /// End (exclusive), RFC 3339.
    pub end: String,
}

impl Serialize for PeriodText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        [&self.start, &self.end].serialize(serializer)
    }
}

/// On the wire `[start, end]`, as it is serialised.
impl schemars::JsonSchema for PeriodText {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PeriodText".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <[String; 2]>::json_schema(generator)
    }
}

/// The two shapes a period is read from.
#[derive(Deserialize)]
#[serde(untagged)]
enum PeriodWire {
    Pair([String; 2]),
    Object { start: String, end: String },
}

impl From<PeriodWire> for PeriodText {
    fn from(wire: PeriodWire) -> PeriodText {
        match wire {
            PeriodWire::Pair([start, end]) | PeriodWire::Object { start, end } => {
                PeriodText { start, end }
            }
        }
    }
}

/// What resolving a cue gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// The period as said (not yet widened).
    Period(Period),
    /// Nothing to aim at: the scope holds no dated rows and the cue needs its span.
    EmptyScope,
    /// The shipped recent-only rule: a period starting within the last 24 h is what an
    /// uncued recall already favours, so the cue is ignored and reported.
    RecentOnly(Period),
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::invalid("time_cue", reason)
}

/// Reads one bound: a bare `YYYY-MM-DD` is that whole UTC day (`after` → its 00:00, `before`
/// → the next day's 00:00); anything else is ISO-8601 with any offset (naive = UTC).
fn parse_bound(name: &str, text: &str, is_before: bool) -> Result<i64> {
    let trimmed = text.trim();
    let ms = if trimmed.len() == 10
        && let Ok(date) = NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
    {
        let day = if is_before {
            date.checked_add_days(Days::new(1))
                .ok_or_else(|| invalid(format!("{name} {text:?} is out of range")))?
        } else {
            date
        };
        day.and_hms_opt(0, 0, 0)
            .map(|d| d.and_utc().timestamp_millis())
            .ok_or_else(|| invalid(format!("{name} {text:?} is out of range")))?
    } else {
        parse_iso8601_ms(trimmed).map_err(|_| {
            invalid(format!(
                "{name} {text:?} is not an ISO-8601 date or time (e.g. 2026-01-31 or \
                 2026-01-31T09:30:00+09:00), or names a day that does not exist"
            ))
        })?
    };
    if !(MIN_MS..=MAX_MS).contains(&ms) {
        return Err(invalid(format!(
            "{name} {text:?} is out of range (years 0001-9999)"
        )));
    }
    Ok(ms)
}

impl TimeCue {
    /// Parses the wire form: `{after?, before?, confidence}` or `{ago: {unit, value} |
    /// "long_ago", confidence}`. Every fault is `Error::InvalidInput` on `time_cue`, with a
    /// message that names the part at fault.
    pub fn from_json(value: &Value) -> Result<TimeCue> {
        let Some(object) = value.as_object() else {
            return Err(invalid("must be an object"));
        };
        for key in object.keys() {
            if !matches!(key.as_str(), "after" | "before" | "ago" | "confidence") {
                return Err(invalid(format!(
                    "unknown field {key:?}; expected after, before, ago and confidence"
                )));
            }
        }
        let confidence = match object.get("confidence") {
            Some(Value::String(text)) => CueConfidence::parse(text)?,
            Some(_) => return Err(invalid("confidence must be sure, likely or vague")),
            None => return Err(invalid("confidence is required (sure, likely or vague)")),
        };
        let text_of = |name: &str| -> Result<Option<&str>> {
            match object.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(_) => Err(invalid(format!("{name} must be an ISO-8601 string"))),
            }
        };
        let after = text_of("after")?;
        let before = text_of("before")?;
        let ago = object.get("ago").filter(|v| !v.is_null());
        let when = match (after.is_some() || before.is_some(), ago) {
            (true, Some(_)) => {
                return Err(invalid("give either after/before or ago, not both"));
            }
            (false, None) => {
                return Err(invalid("give after and/or before, or ago"));
            }
            (true, None) => {
                let after_ms = after.map(|t| parse_bound("after", t, false)).transpose()?;
                let before_ms = before.map(|t| parse_bound("before", t, true)).transpose()?;
                if let (Some(a), Some(b)) = (after_ms, before_ms)
                    && a >= b
                {
                    return Err(invalid(format!(
                        "after ({}) must be earlier than before ({})",
                        format_ms(a),
                        format_ms(b)
                    )));
                }
                CueWhen::Absolute {
                    after_ms,
                    before_ms,
                }
            }
            (false, Some(ago)) => parse_ago(ago)?,
        };
        Ok(TimeCue { when, confidence })
    }

    /// Resolves the cue at `now_ms` within a scope whose dated rows span `span` (oldest,
    /// newest; `None` when it holds none). The period is not widened here.
    pub fn resolve(&self, now_ms: i64, span: Option<(i64, i64)>) -> Resolution {
        let period = match self.when {
            CueWhen::LongAgo => match span {
                Some((oldest, newest)) => Period {
                    start_ms: oldest,
                    end_ms: oldest + (newest - oldest) / 3,
                },
                None => return Resolution::EmptyScope,
            },
            CueWhen::Ago { unit, value } => {
                let width = unit.width_ms();
                let centre = now_ms.saturating_sub(width.saturating_mul(value as i64));
                Period {
                    start_ms: centre.saturating_sub(width / 2),
                    end_ms: centre.saturating_add(width / 2).min(now_ms),
                }
            }
            CueWhen::Absolute {
                after_ms,
                before_ms,
            } => {
                let Some(start_ms) = after_ms.or(span.map(|s| s.0)) else {
                    return Resolution::EmptyScope;
                };
                Period {
                    start_ms,
                    end_ms: before_ms.unwrap_or(now_ms),
                }
            }
        };
        let period = Period {
            start_ms: period.start_ms.max(MIN_MS),
            end_ms: if period.end_ms <= period.start_ms {
                period.start_ms.saturating_add(1_000)
            } else {
                period.end_ms
            }
            .min(MAX_MS),
        };
        if period.start_ms >= now_ms.saturating_sub(DAY_MS) {
            Resolution::RecentOnly(period)
        } else {
            Resolution::Period(period)
        }
    }
}

fn parse_ago(ago: &Value) -> Result<CueWhen> {
    match ago {
        Value::String(text) if text == "long_ago" => Ok(CueWhen::LongAgo),
        Value::String(text) => Err(invalid(format!(
            "ago must be {{unit, value}} or \"long_ago\", got {text:?}"
        ))),
        Value::Object(amount) => {
            for key in amount.keys() {
                if !matches!(key.as_str(), "unit" | "value") {
                    return Err(invalid(format!(
                        "unknown field ago.{key}; expected unit and value"
                    )));
                }
            }
            let unit = match amount.get("unit").and_then(Value::as_str) {
                Some("days") => AgoUnit::Days,
                Some("weeks") => AgoUnit::Weeks,
                Some("months") => AgoUnit::Months,
                Some(other) => {
                    return Err(invalid(format!(
                        "ago.unit must be days, weeks or months, got {other:?}"
                    )));
                }
                None => return Err(invalid("ago.unit is required (days, weeks or months)")),
            };
            let value = match amount.get("value") {
                Some(Value::Number(n)) => n.as_u64().ok_or_else(|| {
                    invalid(format!("ago.value must be a whole number >= 0, got {n}"))
                })?,
                Some(other) => {
                    return Err(invalid(format!(
                        "ago.value must be a whole number >= 0, got {other}"
                    )));
                }
                None => return Err(invalid("ago.value is required")),
            };
            let unit_days = (unit.width_ms() / DAY_MS) as u64;
            let most = (MAX_AGO_DAYS / unit_days).min(MAX_AGO_VALUE);
            if value > most {
                let unit_name = match unit {
                    AgoUnit::Days => "days",
                    AgoUnit::Weeks => "weeks",
                    AgoUnit::Months => "months",
                };
                return Err(Error::invalid(
                    "time_cue.ago.value",
                    format!(
                        "{value} {unit_name} is out of range (at most {most} {unit_name}, \
                         about 1,000 years)"
                    ),
                ));
            }
            Ok(CueWhen::Ago { unit, value })
        }
        _ => Err(invalid("ago must be {unit, value} or \"long_ago\"")),
    }
}
