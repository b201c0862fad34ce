//! The MATCH builder: CPersona's cases, and a real FTS5 trigram table that must accept every
//! expression the builder makes from any string.

use proptest::prelude::*;
use rusqlite::Connection;

use crate::recall::stages::fts_query::{MAX_FTS_PHRASES, build_match, fts_terms};

fn expr(query: &str) -> Option<String> {
    build_match(query).map(|m| m.expression)
}

/// A scratch trigram table shaped like `memories_fts`.
fn trigram_table() -> Connection {
    let conn = Connection::open_in_memory().expect("open");
    conn.execute_batch(
        "CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram');
         INSERT INTO t(rowid, content) VALUES
           (1, 'deploy the cloudflared tunnel on friday'),
           (2, 'CVE-2024-3094 was in xz-utils; see bug-183'),
           (3, 'パンを焼いたのは誰だった'),
           (4, 'he said \"hello\" AND left (quietly)'),
           (5, 'col:value NEAR(x y) a*b ^start');",
    )
    .expect("schema");
    conn
}

fn matching_ids(conn: &Connection, expression: &str) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare("SELECT rowid FROM t WHERE t MATCH ?1 ORDER BY rank, rowid")?;
    let rows = stmt.query_map([expression], |row| row.get(0))?;
    rows.collect()
}

#[test]
fn cpersona_cases_build_the_same_expression() {
    // The cases CPersona pins in tests/test_rare_phrases.py and test_query_segmenter.py.
    assert_eq!(
        expr("What did we decide about the pilot budget?").as_deref(),
        Some(r#""What" OR "did" OR "decide" OR "about" OR "the" OR "pilot" OR "budget""#)
    );
    assert_eq!(expr("the the the").as_deref(), Some(r#""the""#));
    assert_eq!(
        expr("CVE-2024-3094 and bug-183").as_deref(),
        Some(r#""CVE-2024-3094" OR "and" OR "bug-183""#)
    );
    assert_eq!(
        expr(r#"a "quoted" word"#).as_deref(),
        Some(r#""quoted" OR "word""#)
    );
    assert_eq!(
        expr("bug-191 について教えて").as_deref(),
        Some(r#""bug-191" OR "につい" OR "ついて" OR "いて教" OR "て教え" OR "教えて""#)
    );
    assert_eq!(
        expr(r#"The zeb パン屋 a"b"#).as_deref(),
        Some(r#""The" OR "zeb" OR "パン屋" OR "a""b""#)
    );
    assert_eq!(expr("ab cd"), None);
    assert_eq!(expr(""), None);
}

#[test]
fn operators_and_syntax_are_literal_phrases() {
    let got =
        expr(r#"foo AND bar OR NOT NEAR(x, y) col:val pre* ^head ((unbalanced"#).expect("terms");
    assert_eq!(
        got,
        r#""foo" OR "AND" OR "bar" OR "NOT" OR "NEAR(x" OR "col:val" OR "pre*" OR "^head" OR "unbalanced""#
    );
    let conn = trigram_table();
    matching_ids(&conn, &got).expect("the expression is accepted");
}

#[test]
fn short_terms_and_cjk_runs_under_three_are_dropped() {
    assert_eq!(fts_terms("Go to 東京 now"), vec!["now".to_owned()]);
    assert_eq!(
        fts_terms("東京都庁"),
        vec!["東京都".to_owned(), "京都庁".to_owned()]
    );
    assert_eq!(fts_terms("(x) [y] {z}"), Vec::<String>::new());
}

#[test]
fn nul_splits_terms_instead_of_ending_the_expression() {
    assert_eq!(
        fts_terms("abc\0def"),
        vec!["abc".to_owned(), "def".to_owned()]
    );
}

#[test]
fn emoji_and_mixed_scripts_are_ordinary_characters() {
    assert_eq!(fts_terms("🚀🚀🚀 ok"), vec!["🚀🚀🚀".to_owned()]);
    let got = expr("mixed パン屋さん text").expect("terms");
    assert_eq!(
        got,
        r#""mixed" OR "パン屋" OR "ン屋さ" OR "屋さん" OR "text""#
    );
}

#[test]
fn real_table_finds_the_rows_the_terms_name() {
    let conn = trigram_table();
    let ids = |q: &str| matching_ids(&conn, &expr(q).expect("terms")).expect("match");
    assert_eq!(ids("cloudflared"), vec![1]);
    assert_eq!(ids("cve-2024-3094"), vec![2]);
    assert_eq!(ids("誰だった"), vec![3]);
    assert_eq!(ids(r#"said "hello""#), vec![4]);
    assert_eq!(ids("col:value"), vec![5]);
}

#[test]
fn a_long_query_is_cut_and_says_so() {
    let query: String = (0..400).map(|i| format!("w{i:03} ")).collect();
    let built = build_match(&query).expect("terms");
    assert_eq!(built.terms.len(), MAX_FTS_PHRASES);
    assert_eq!(built.dropped_terms, 400 - MAX_FTS_PHRASES);
    matching_ids(&trigram_table(), &built.expression).expect("the longest expression is accepted");
}

#[test]
fn a_long_cjk_query_stays_within_fts5_limits() {
    let query: String = "東京都庁舎の展望台から富士山が見えた日".repeat(40);
    let built = build_match(&query).expect("terms");
    matching_ids(&trigram_table(), &built.expression).expect("accepted");
}

fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(vec![
            '"', '\'', '(', ')', '*', '^', ':', '-', '+', '\0', '\t', '\n', '\u{1f}', ' ', '{',
            '}', ',', '.'
        ]),
        prop::char::range('\u{0}', '\u{7f}'),
        prop::char::range('\u{3040}', '\u{30ff}'),
        prop::char::range('\u{4e00}', '\u{4e80}'),
        prop::char::range('\u{1f600}', '\u{1f64f}'),
        any::<char>(),
    ]
}

fn any_query() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(any_char(), 0..80).prop_map(|c| c.into_iter().collect()),
        prop::collection::vec(
            prop::sample::select(vec![
                "AND",
                "OR",
                "NOT",
                "NEAR",
                "NEAR(",
                "col:",
                "*",
                "^",
                "\"",
                "(",
                ")",
                "abc",
                "東京都",
                "x\"y"
            ]),
            0..12
        )
        .prop_map(|words| words.join(" ")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn generated_match_never_errors(query in any_query()) {
        let conn = trigram_table();
        if let Some(built) = build_match(&query) {
            prop_assert!(matching_ids(&conn, &built.expression).is_ok(), "refused: {:?}", built.expression);
            prop_assert!(!built.terms.is_empty());
            prop_assert!(built.terms.iter().all(|t| t.chars().count() >= 3 && !t.contains('\0')));
        } else {
            prop_assert!(fts_terms(&query).is_empty());
        }
    }

    #[test]
    fn every_term_finds_its_own_text(word in "[a-zA-Z0-9\"'()*^:-]{3,12}") {
        // A row holding a term is found by the expression built from that term.
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='trigram');").expect("schema");
        let built = build_match(&word);
        if let Some(built) = built {
            for term in &built.terms {
                conn.execute("INSERT INTO t(content) VALUES (?1)", [format!("x {term} y")]).expect("insert");
            }
            let found = matching_ids(&conn, &built.expression).expect("match");
            prop_assert_eq!(found.len(), built.terms.len());
        }
    }
}
