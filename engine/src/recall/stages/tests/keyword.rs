//! The keyword pass: patterns, escaping, SQLite-equal matching and its recency order.

use proptest::prelude::*;
use rusqlite::Connection;

use crate::recall::stages::candidate::Arm;
use crate::recall::stages::keyword::{
    KeywordRow, MAX_LIKE_PATTERN_BYTES, escape_like, matched_needles, plan, rank,
};
use crate::refs::Ref;

#[test]
fn plan_is_whole_query_then_fts_terms() {
    let p = plan("  deploy 50%_off tunnel ").expect("plan");
    assert_eq!(
        p.needles,
        vec!["deploy 50%_off tunnel", "deploy", "50%_off", "tunnel"]
    );
    assert_eq!(
        p.patterns,
        vec![
            r"%deploy 50\%\_off tunnel%",
            "%deploy%",
            r"%50\%\_off%",
            "%tunnel%"
        ]
    );
    assert_eq!(p.dropped_patterns, 0);
}

#[test]
fn a_query_shorter_than_a_trigram_is_still_searched_whole() {
    let p = plan("Go").expect("plan");
    assert_eq!(p.needles, vec!["Go"]);
    assert!(plan(" \t\n").is_none());
}

#[test]
fn escape_covers_the_three_like_metacharacters() {
    assert_eq!(escape_like(r"a\b%c_d"), r"a\\b\%c\_d");
}

#[test]
fn patterns_are_bounded_and_the_cut_is_counted() {
    let query: String = (0..20_000).map(|i| format!("t{i:05} ")).collect();
    let p = plan(&query).expect("plan");
    let bytes: usize = p.patterns.iter().map(String::len).sum();
    assert!(bytes <= MAX_LIKE_PATTERN_BYTES, "{bytes}");
    assert!(p.dropped_patterns > 0);
    assert_eq!(p.needles.len() + p.dropped_patterns, 20_001);
}

#[test]
fn rank_is_newest_first_and_skips_non_matching_rows() {
    let p = plan("tunnel").expect("plan");
    let rows = [
        KeywordRow {
            r#ref: Ref::mem(1),
            content: "the Tunnel is up",
            created_at_ms: 10,
        },
        KeywordRow {
            r#ref: Ref::mem(2),
            content: "nothing here",
            created_at_ms: 30,
        },
        KeywordRow {
            r#ref: Ref::mem(3),
            content: "TUNNEL again",
            created_at_ms: 20,
        },
        KeywordRow {
            r#ref: Ref::mem(4),
            content: "tunnel tie",
            created_at_ms: 20,
        },
    ];
    let list = rank(&p, &rows, 10);
    assert_eq!(list.arm, Arm::MemoryKeyword);
    let got: Vec<(String, usize)> = list
        .hits
        .iter()
        .map(|h| (h.r#ref.to_string(), h.rank))
        .collect();
    assert_eq!(
        got,
        vec![
            ("mem:4".into(), 0),
            ("mem:3".into(), 1),
            ("mem:1".into(), 2)
        ]
    );
    assert!(list.hits.iter().all(|h| h.raw.is_none()));
    assert_eq!(rank(&p, &rows, 2).hits.len(), 2);
}

fn sqlite_like(content: &str, patterns: &[String]) -> bool {
    let conn = Connection::open_in_memory().expect("open");
    patterns.iter().any(|pattern| {
        conn.query_row(
            "SELECT ?1 LIKE ?2 ESCAPE '\\'",
            [content, pattern.as_str()],
            |row| row.get::<_, bool>(0),
        )
        .expect("like")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The pure matcher decides exactly what SQLite's LIKE with the plan's patterns decides.
    #[test]
    fn matcher_equals_sqlite_like(
        query in "[a-zA-Z%_\\\\ éÉ東京]{1,12}",
        content in "[a-zA-Z%_\\\\ éÉ東京]{0,30}",
    ) {
        if let Some(p) = plan(&query) {
            let pure = !matched_needles(&p, &content).is_empty();
            prop_assert_eq!(pure, sqlite_like(&content, &p.patterns));
        }
    }
}

#[test]
fn an_oversized_whole_query_is_left_out_but_its_terms_stay() {
    let query = format!("{} tunnel", "x".repeat(MAX_LIKE_PATTERN_BYTES));
    let p = plan(&query).expect("plan");
    assert_eq!(p.dropped_patterns, 2);
    assert_eq!(p.needles, vec!["tunnel"]);
}
