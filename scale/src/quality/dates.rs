//! Parses the conversation timestamps LoCoMo and TMD write (`1:56 pm on 8 May, 2023`,
//! `01:56:04 AM on Monday 08 May, 2023`) to UTC milliseconds. It must never guess: a text it
//! cannot read is `None`, and the row is stored without an event time.

/// Month names, lower case, January first.
pub const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Days from 1970-01-01 to the civil date (proleptic Gregorian; Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `h:mm[:ss] am|pm on [Weekday] D Month, YYYY` as UTC ms.
pub fn parse_conversation_time(text: &str) -> Option<i64> {
    let (clock, date) = text.split_once(" on ")?;
    let mut clock_parts = clock.split_whitespace();
    let hms = clock_parts.next()?;
    let meridiem = clock_parts.next()?.to_ascii_lowercase();
    let mut fields = hms.split(':').map(|f| f.parse::<i64>().ok());
    let hour = fields.next()??;
    let minute = fields.next()??;
    let second = fields.next().unwrap_or(Some(0))?;
    if !(1..=12).contains(&hour) || !(0..60).contains(&minute) || !(0..60).contains(&second) {
        return None;
    }
    let hour = match meridiem.as_str() {
        "am" => hour % 12,
        "pm" => hour % 12 + 12,
        _ => return None,
    };
    let tokens: Vec<String> = date
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    // The last three tokens are day, month, year; a weekday may come first.
    let [day, month, year] = tokens.get(tokens.len().checked_sub(3)?..)? else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let year: i64 = year.parse().ok()?;
    if !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}
