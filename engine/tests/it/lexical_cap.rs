//! The lexical candidate cap (`RecallConfig::lexical_cap`, `arms::lexical`): when more rows in
//! scope match than the cap, bm25 ranks only a bounded subset (the rarest terms' rows, else
//! rows holding every term, else the newest) and the recall says so; under the cap the arm is exactly the uncapped one; odd queries still never reach SQLite
//! as an error and degrade to the keyword pass.

use cpersona_engine::CapPolicy;
use cpersona_engine::recall::ArmList;
use cpersona_engine::refs::RefKind;
use cpersona_engine::{Engine, EngineConfig, RecallQuery};

use crate::common::{Fixture, fixture, store};

const DEPTH: usize = 100;
/// Rows of agent `a` that hold "harbor" (the dense term); agent `b` holds `B_ROWS` more.
const A_ROWS: usize = 300;
const B_ROWS: usize = 60;

const FILLER: [&str; 8] = [
    "lantern", "meadow", "copper", "signal", "winter", "garden", "stone", "river",
];

/// Agent `a`'s and `b`'s rows interleaved, every one holding "harbor" a varying number of
/// times (so bm25 scores differ); "beacon" on even rows, "comet" on rows not divisible by
/// 3, "quartz" on a few.
fn dense(f: &Fixture) {
    let (mut a, mut b) = (0, 0);
    while a < A_ROWS || b < B_ROWS {
        let i = a + b;
        let harbor = vec!["harbor"; 1 + i % 3].join(" ");
        let rare = if i % 17 == 0 { " quartz" } else { "" };
        let beacon = if i % 2 == 0 { " beacon" } else { "" };
        let comet = if i % 3 == 0 { "" } else { " comet" };
        let text = format!(
            "{harbor}{beacon}{comet} {} {}{rare} row{i}",
            FILLER[i % 8],
            FILLER[(i / 8) % 8]
        );
        if b < B_ROWS && i % 4 == 3 {
            store(f, "b", &text);
            b += 1;
        } else {
            store(f, "a", &text);
            a += 1;
        }
    }
}

fn engine_with_cap(f: &Fixture, cap: Option<usize>) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.recall.lexical_cap = cap;
    Engine::open(config, f.embedder.clone()).unwrap()
}

fn ids(list: &ArmList) -> Vec<i64> {
    list.hits.iter().map(|h| h.r#ref.id).collect()
}

fn query(text: &str) -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: text.into(),
        limit: 10,
        trace: true,
        ..RecallQuery::default()
    }
}

/// Every row of `a` matching `q`, in uncapped bm25 order.
fn uncapped(f: &Fixture, q: &str) -> Vec<i64> {
    let all = f
        .engine
        .lexical_arm("a", None, q, 10 * A_ROWS, None)
        .unwrap();
    assert!(all.capped.is_empty());
    ids(&all.lists[1])
}

#[test]
fn over_the_cap_the_rarer_terms_are_ranked_and_the_common_one_left_out() {
    let f = fixture();
    dense(&f);
    let cap = 120;
    let quartz = uncapped(&f, "quartz");
    assert!(!quartz.is_empty() && quartz.len() <= cap);
    assert!(uncapped(&f, "harbor").len() > cap);
    let capped = f
        .engine
        .lexical_arm("a", None, "harbor quartz", DEPTH, Some(cap))
        .unwrap();
    assert_eq!(capped.capped.len(), 1, "{:?}", capped.capped);
    let acted = &capped.capped[0];
    assert_eq!((acted.table, acted.cap), ("memories", cap));
    assert_eq!(acted.policy, CapPolicy::SelectiveTerms);
    assert_eq!(acted.left_out, vec!["harbor".to_owned()]);
    assert!(
        capped.notes.iter().any(|n| n.contains("lexical cap acted")),
        "{:?}",
        capped.notes
    );
    // The ranked rows are exactly the rows holding the rare term, in its bm25 order.
    assert_eq!(ids(&capped.lists[1]), quartz);
}

#[test]
fn when_every_term_is_common_the_rows_holding_all_of_them_are_ranked() {
    let f = fixture();
    dense(&f);
    let cap = 120;
    let both = uncapped(&f, "beacon comet");
    assert!(uncapped(&f, "beacon").len() > cap && uncapped(&f, "comet").len() > cap);
    let capped = f
        .engine
        .lexical_arm("a", None, "beacon comet", DEPTH, Some(cap))
        .unwrap();
    let acted = &capped.capped[0];
    assert_eq!(acted.policy, CapPolicy::AllTerms, "{acted:?}");
    let rows = ids(&capped.lists[1]);
    assert!(!rows.is_empty() && rows.len() <= DEPTH);
    // Rows holding both terms, in the uncapped order (bm25 of AND scores every term).
    let expected: Vec<i64> = both.into_iter().filter(|id| rows.contains(id)).collect();
    assert_eq!(rows, expected);
}

#[test]
fn one_common_term_ranks_the_newest_matches_in_uncapped_order() {
    let f = fixture();
    dense(&f);
    let cap = 120;
    let capped = f
        .engine
        .lexical_arm("a", None, "harbor", DEPTH, Some(cap))
        .unwrap();
    let acted = &capped.capped[0];
    assert_eq!(acted.policy, CapPolicy::Newest);
    let from = acted.from_id.unwrap();
    let full = uncapped(&f, "harbor");
    assert_eq!(full.len(), A_ROWS, "every row of a matches");
    // Exactly `cap` of a's matching rows lie in the ranked range: the newest ones.
    assert_eq!(full.iter().filter(|id| **id >= from).count(), cap);
    // The order is the uncapped order restricted to the range (idf is the table's).
    let expected: Vec<i64> = full
        .into_iter()
        .filter(|id| *id >= from)
        .take(DEPTH)
        .collect();
    assert_eq!(ids(&capped.lists[1]), expected);
}

#[test]
fn recall_reports_the_cap_in_its_advisories_and_trace() {
    let f = fixture();
    dense(&f);
    let capped = engine_with_cap(&f, Some(100));
    let result = capped.recall(&query("harbor")).unwrap();
    assert_eq!(result.lexical_capped.len(), 1);
    assert!(
        result
            .advisories
            .iter()
            .any(|a| a.starts_with("lexical cap acted on memories")),
        "{:?}",
        result.advisories
    );
    let trace = result.trace().unwrap();
    assert!(
        trace
            .advisories
            .iter()
            .any(|a| a.contains("lexical cap acted")),
        "{:?}",
        trace.advisories
    );
    let body = serde_json::to_value(&result).unwrap();
    assert_eq!(body["lexical_capped"][0]["cap"], 100);
    // Off: no cap, no note.
    let off = engine_with_cap(&f, None).recall(&query("harbor")).unwrap();
    assert!(off.lexical_capped.is_empty());
    assert!(!off.advisories.iter().any(|a| a.contains("lexical cap")));
}

#[test]
fn under_the_cap_results_are_identical_to_uncapped() {
    let f = fixture();
    dense(&f);
    // a has A_ROWS matches; b's rows match too but are out of scope, so a cap of exactly
    // A_ROWS must not act even though the table holds more matches.
    for q in ["harbor", "harbor quartz", "quartz", "lantern meadow row1"] {
        let under = f
            .engine
            .lexical_arm("a", None, q, DEPTH, Some(A_ROWS))
            .unwrap();
        let uncapped = f.engine.lexical_arm("a", None, q, DEPTH, None).unwrap();
        assert!(under.capped.is_empty(), "{q}: {:?}", under.capped);
        assert_eq!(under.lists, uncapped.lists, "{q}");
    }
    let on = engine_with_cap(&f, Some(A_ROWS));
    let off = engine_with_cap(&f, None);
    // Both recalls run in a paused session, which gives no recall credit, so the second does
    // not read the first one's credit in its confidence objects.
    on.pause_persistence(Some(3_600), "compare");
    off.pause_persistence(Some(3_600), "compare");
    let in_session = |text: &str| RecallQuery {
        session_key: "compare".into(),
        ..query(text)
    };
    for q in ["harbor", "quartz harbor", "copper"] {
        let a = on.recall(&in_session(q)).unwrap();
        let b = off.recall(&in_session(q)).unwrap();
        assert!(a.lexical_capped.is_empty());
        assert_eq!(
            serde_json::to_value(&a.response).unwrap(),
            serde_json::to_value(&b.response).unwrap(),
            "{q}"
        );
    }
    // One row over: now it acts.
    let over = f
        .engine
        .lexical_arm("a", None, "harbor", DEPTH, Some(A_ROWS - 1))
        .unwrap();
    assert_eq!(over.capped.len(), 1);
}

#[test]
fn no_match_and_odd_queries_degrade_to_keyword_never_an_error() {
    let f = fixture();
    dense(&f);
    // Nothing in FTS: the keyword pass answers (here with nothing, without error).
    let none = f
        .engine
        .lexical_arm("a", None, "zyxwvut", DEPTH, Some(100))
        .unwrap();
    assert!(none.keyword_fallback);
    assert!(none.capped.is_empty());
    // Shorter than a trigram: no FTS expression, the keyword pass finds the rows.
    let short = f
        .engine
        .lexical_arm("a", None, "ha", DEPTH, Some(100))
        .unwrap();
    assert!(short.keyword_fallback);
    assert!(!short.lists[1].hits.is_empty());
    assert!(
        short.lists[1]
            .hits
            .iter()
            .all(|h| h.r#ref.kind == RefKind::Mem)
    );
    for q in [
        "\"",
        "harbor\"",
        "NEAR(harbor lantern, 2)",
        "content: harbor",
        "harbor*",
        "(((harbor",
        "harbor OR",
        "-harbor ^lantern",
        "'; DROP TABLE memories; --",
        "100%_\\",
        "日本語の記憶",
        "AND OR NOT",
        "harbor\0lantern",
    ] {
        let r = f
            .engine
            .lexical_arm("a", None, q, DEPTH, Some(100))
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        assert!(
            !r.notes.iter().any(|n| n.contains("unavailable")),
            "{q:?}: {:?}",
            r.notes
        );
        engine_with_cap(&f, Some(100))
            .recall(&query(q))
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
    }
}

#[test]
fn a_cap_below_the_depth_maximum_is_refused_at_open() {
    let f = fixture();
    let mut config = EngineConfig::new(f.dir.path().join("other.db"));
    config.recall.lexical_cap = Some(99);
    assert!(Engine::open(config, f.embedder.clone()).is_err());
}
