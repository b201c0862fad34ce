//! Bounded, proptest-driven fuzzing of the engine's input parsers (runs in CI, seconds):
//! the FTS5 MATCH builder against a real FTS5 trigram table, the timestamp parser
//! (`time.rs`) and the time-cue parser (`TimeCue::from_json`, then resolution against any
//! clock). Each proptest runs `FUZZ_CASES` executions.

use cpersona_engine::TimeCue;
use cpersona_engine::recall::stages::fts_query::{MAX_FTS_PHRASES, build_match};
use cpersona_engine::time::{format_ms, parse_iso8601_ms};
use proptest::prelude::*;
use rusqlite::Connection;

/// Executions per target in CI.
const FUZZ_CASES: u32 = 3000;

/// Characters that stress a MATCH expression: FTS5 syntax, quotes, NUL and controls, CJK,
/// combining marks, emoji, odd whitespace.
fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec![
            '"', '\'', '`', '*', '^', '+', '-', ':', '(', ')', '{', '}', '[', ']', '.', ',', ';',
            '!', '?', '\\', '\0', '\u{1}', '\n', '\t', '\r', ' ', '\u{3000}', '\u{a0}', '\u{200b}',
            '\u{301}', 'é', '日', '本', '語', 'ア', 'ｱ', '한', '😀', '\u{fffd}', '\u{10ffff}', 'N',
            'E', 'A', 'R', 'O', 'D', 'T',
        ]),
        3 => prop::char::range('a', 'z'),
        1 => any::<char>(),
    ]
}

fn hostile_query() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(hostile_char(), 0..80).prop_map(|cs| cs.into_iter().collect()),
        1 => prop::collection::vec(
                prop::sample::select(vec!["AND", "OR", "NOT", "NEAR(", "NEAR/2", "content:", "\"\"",
                    "*", "^x", "a\"b", "col:abc", "(abc OR", "'''", "\0\0\0", "日本語テキスト"]),
                0..20,
            ).prop_map(|ws| ws.join(" ")),
        1 => any::<String>(),
    ]
}

fn fts_table() -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE memories(id INTEGER PRIMARY KEY, content TEXT);
         CREATE VIRTUAL TABLE memories_fts USING fts5(
             content, content = memories, content_rowid = id, tokenize = 'trigram');
         INSERT INTO memories(id, content) VALUES
             (1, 'the user likes green tea'), (2, 'CVE-2024-3094 in xz'),
             (3, '日本語のテキストです'), (4, 'quote \" and star * and NEAR(a b)');
         INSERT INTO memories_fts(memories_fts) VALUES('rebuild');",
    )
    .unwrap();
    conn
}

proptest! {
    #![proptest_config(ProptestConfig { cases: FUZZ_CASES, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whatever the query, the expression either is absent or runs without an SQL error,
    /// and it never carries more than the phrase bound.
    #[test]
    fn fts_match_never_fails_in_sqlite(query in hostile_query()) {
        thread_local!(static CONN: Connection = fts_table());
        if let Some(m) = build_match(&query) {
            prop_assert!(!m.terms.is_empty());
            prop_assert!(m.terms.len() <= MAX_FTS_PHRASES);
            prop_assert!(!m.expression.contains('\0'));
            let result: rusqlite::Result<i64> = CONN.with(|conn| conn.query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
                [&m.expression],
                |r| r.get(0),
            ));
            prop_assert!(result.is_ok(), "{:?} -> {:?}: {:?}", query, m.expression, result);
        }
    }

    /// Random text: an error or a timestamp, never a panic; a parsed instant written back
    /// by `format_ms` reads as the same instant.
    #[test]
    fn timestamp_parser_never_panics_and_round_trips(text in prop_oneof![
        any::<String>(),
        prop::collection::vec(prop::sample::select(vec![
            "2026", "-", "01", "31", "T", " ", "09", ":", "30", "00", ".", "123456789", "Z", "z",
            "+09:00", "-0530", "+", "99", "0000", "é", "日", "\0",
        ]), 0..14).prop_map(|parts| parts.concat()),
    ]) {
        if let Ok(ms) = parse_iso8601_ms(&text) {
            let written = format_ms(ms);
            prop_assert_eq!(parse_iso8601_ms(&written).ok(), Some(ms), "{:?} -> {}", text, written);
        }
    }

    /// A valid instant mutated at one byte: still never a panic.
    #[test]
    fn mutated_timestamps_never_panic(
        ms in -62_135_596_800_000i64..253_402_300_799_000,
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b" T:-+Z.0959\xc3\xa9".to_vec()),
    ) {
        let mut bytes = format_ms(ms).into_bytes();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let text = String::from_utf8_lossy(&bytes);
        let _ = parse_iso8601_ms(&text);
        prop_assert_eq!(parse_iso8601_ms(&format_ms(ms)).ok(), Some(ms));
    }

    /// Any JSON a caller may send as `time_cue`: an error or a cue, never a panic; a cue
    /// resolves against any clock and scope span, and its period runs forwards.
    #[test]
    fn time_cue_parser_never_panics(
        value in cue_json(),
        now in any::<i64>(),
        span in prop::option::of((any::<i64>(), any::<i64>())),
    ) {
        if let Ok(cue) = TimeCue::from_json(&value) {
            let now = now.clamp(0, 32_503_680_000_000);
            let span = span.map(|(a, b)| {
                let (a, b) = (a.clamp(0, now), b.clamp(0, now));
                (a.min(b), a.max(b))
            });
            let _ = cue.resolve(now, span);
        }
    }
}

/// Regression cases the fuzz targets care about, pinned so a future change cannot lose them.
#[test]
fn fts_and_time_regressions() {
    let conn = fts_table();
    for query in [
        "\0\0\0abc",
        "\"\"\"",
        "NEAR(abc def",
        "a\u{0}b\u{0}c",
        "日本語",
        "col:abc*",
    ] {
        if let Some(m) = build_match(query) {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
                    [&m.expression],
                    |r| r.get(0),
                )
                .unwrap_or_else(|e| panic!("{query:?} -> {}: {e}", m.expression));
            assert!(n >= 0);
        }
    }
    assert_eq!(build_match("\0"), None);
    // A space at byte 10 behind a multi-byte character must not split it.
    assert!(parse_iso8601_ms("é2026-01-3 09:30").is_err());
    assert!(parse_iso8601_ms("2026-01-31 09:30Z").is_ok());
}

/// Cue-shaped JSON: the right keys with wrong, extreme or odd values, plus arbitrary values.
fn cue_json() -> impl Strategy<Value = serde_json::Value> {
    let text = prop_oneof![
        prop::sample::select(vec![
            "2024-01-01",
            "2024-02-30",
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00+14:00",
            "9999-12-31T23:59:59Z",
            "0000-01-01",
            "-1",
            "",
            "yesterday",
            "2024-13-01",
            "\0",
        ])
        .prop_map(str::to_owned),
        any::<String>(),
    ];
    let number = prop_oneof![
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f)
            .map_or(serde_json::Value::Null, serde_json::Value::Number)),
        Just(serde_json::Value::from(u64::MAX)),
    ];
    let unit = prop::sample::select(vec!["days", "weeks", "months", "years", "", "DAYS"]);
    let confidence = prop::sample::select(vec!["sure", "likely", "vague", "certain", ""]);
    prop_oneof![
        (
            prop::option::of(text.clone()),
            prop::option::of(text),
            confidence.clone()
        )
            .prop_map(|(after, before, c)| {
                let mut m = serde_json::Map::new();
                if let Some(a) = after {
                    m.insert("after".into(), a.into());
                }
                if let Some(b) = before {
                    m.insert("before".into(), b.into());
                }
                m.insert("confidence".into(), c.into());
                serde_json::Value::Object(m)
            }),
        (unit, number, confidence.clone()).prop_map(|(u, v, c)| serde_json::json!({
            "ago": {"unit": u, "value": v}, "confidence": c
        })),
        confidence.prop_map(|c| serde_json::json!({"ago": "long_ago", "confidence": c})),
        any::<String>().prop_map(serde_json::Value::from),
        Just(serde_json::Value::Null),
    ]
}
