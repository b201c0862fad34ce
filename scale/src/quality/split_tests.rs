//! Tests of the three sets and of the report's condition: the split is a partition (every
//! query in exactly one set), fixed by name (a `+dated` variant splits as its base), cut
//! 40/30/30, by candidate set where there are enough of them and by query within subtask
//! otherwise, with the held-out task in the holdout only; the 2-point rule at its edge; the
//! loss list; BEIR subtasks from query metadata; the embedding cache keeping roles apart.

use std::collections::HashSet;

use cpersona_engine::embed::HashEmbedder;

use super::cache::EmbeddingCache;
use super::metrics::QueryScore;
use super::report::{self, SubtaskScore, TaskResult};
use super::splits::{self, Split};
use super::{Dataset, Doc, Query, load};
use crate::Pct;

fn doc(group: &str, id: &str) -> Doc {
    Doc {
        id: id.into(),
        group: group.into(),
        text: format!("{group} {id}"),
        speaker: None,
        at_ms: None,
        said_at: None,
    }
}

fn query(group: &str, id: &str, subtask: &str) -> Query {
    Query {
        id: id.into(),
        group: group.into(),
        subtask: subtask.into(),
        text: format!("q {id}"),
        relevant: vec!["d0".into()],
    }
}

/// `groups` candidate sets of 3 rows and 2 queries each.
fn grouped(task: &str, groups: usize) -> Dataset {
    let mut ds = Dataset {
        task: task.into(),
        ..Dataset::default()
    };
    for g in 0..groups {
        let group = format!("conv-{g}");
        for d in 0..3 {
            ds.docs.push(doc(&group, &format!("d{d}")));
        }
        for q in 0..2 {
            ds.queries
                .push(query(&group, &format!("{group}/q{q}"), ["a", "b"][q]));
        }
    }
    ds
}

/// One corpus, `n` queries in each of two subtasks.
fn single(task: &str, n: usize) -> Dataset {
    let mut ds = Dataset {
        task: task.into(),
        ..Dataset::default()
    };
    ds.docs.push(doc("", "d0"));
    for sub in ["x", "y"] {
        for i in 0..n {
            ds.queries.push(query("", &format!("{sub}{i}"), sub));
        }
    }
    ds
}

fn ids(ds: &Dataset) -> HashSet<String> {
    ds.queries.iter().map(|q| q.id.clone()).collect()
}

const ALL: [Split; 3] = [Split::Dev, Split::Validation, Split::Holdout];

fn assert_partition(ds: &Dataset) -> Vec<Dataset> {
    let parts: Vec<Dataset> = ALL.iter().map(|&s| splits::select(ds, s)).collect();
    let mut seen = HashSet::new();
    for p in &parts {
        for id in ids(p) {
            assert!(seen.insert(id.clone()), "{id} is in two splits");
        }
    }
    assert_eq!(seen, ids(ds), "every query is in some split");
    parts
}

#[test]
fn the_cut_is_forty_thirty_thirty_rounded() {
    let count = |n: usize| -> Vec<usize> {
        let units: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
        let refs: Vec<&str> = units.iter().map(String::as_str).collect();
        let assigned = splits::assign("t", &refs);
        ALL.iter()
            .map(|s| assigned.iter().filter(|(_, x)| x == s).count())
            .collect()
    };
    assert_eq!(count(10), [4, 3, 3]);
    assert_eq!(count(12), [5, 3, 4]);
    assert_eq!(count(100), [40, 30, 30]);
    assert_eq!(count(1), [0, 1, 0]);
}

#[test]
fn conversations_split_whole_and_the_same_way_every_time() {
    let ds = grouped("LoCoMo", 10);
    let parts = assert_partition(&ds);
    for p in &parts {
        let groups: HashSet<&str> = p.docs.iter().map(|d| d.group.as_str()).collect();
        let asked: HashSet<&str> = p.queries.iter().map(|q| q.group.as_str()).collect();
        assert_eq!(
            groups, asked,
            "a split holds its conversations' rows and questions"
        );
    }
    assert_eq!(
        parts.iter().map(|p| p.docs.len() / 3).collect::<Vec<_>>(),
        [4, 3, 3]
    );
    assert_eq!(parts[0].task, "LoCoMo [dev]");
    assert_eq!(splits::rule(&ds), "by candidate set");
    // The same again, and for the dated variant of the same task.
    let again = splits::select(&grouped("LoCoMo", 10), Split::Dev);
    assert_eq!(ids(&again), ids(&parts[0]));
    let dated = splits::select(&grouped("LoCoMo+dated", 10), Split::Dev);
    assert_eq!(ids(&dated), ids(&parts[0]));
    // Another task's name orders its conversations otherwise.
    let other: Vec<HashSet<String>> = (0..8)
        .map(|t| ids(&splits::select(&grouped(&format!("T{t}"), 10), Split::Dev)))
        .collect();
    assert!(other.iter().any(|o| *o != ids(&parts[0])));
}

#[test]
fn one_corpus_splits_its_queries_within_each_subtask() {
    let ds = single("manpages", 10);
    let parts = assert_partition(&ds);
    for p in &parts {
        assert_eq!(p.docs.len(), 1, "every split ranks the whole corpus");
        for sub in ["x", "y"] {
            let n = p.queries.iter().filter(|q| q.subtask == sub).count();
            assert!(n >= 3, "subtask {sub} has {n} queries in {}", p.task);
        }
    }
    assert_eq!(splits::rule(&ds), "by query within subtask");
}

#[test]
fn the_held_out_task_is_in_the_holdout_only() {
    let ds = single("pyfaq", 5);
    let parts = assert_partition(&ds);
    assert!(parts[0].queries.is_empty() && parts[0].docs.is_empty());
    assert!(parts[1].queries.is_empty() && parts[1].docs.is_empty());
    assert_eq!(parts[2].queries.len(), 10);
    assert_eq!(splits::rule(&ds), "whole task holdout");
}

fn score(ndcg: f64) -> QueryScore {
    QueryScore {
        ndcg10: ndcg,
        recall5: 0.0,
        recall10: 0.0,
    }
}

fn result(task: &str, a: f64, b: f64, subtasks: &[(f64, f64)]) -> TaskResult {
    TaskResult {
        task: task.into(),
        split: "dev".into(),
        embedder: "hash".into(),
        model: "hash-ngram-v1".into(),
        rows: 1,
        groups: 1,
        queries: 2 * subtasks.len(),
        subtasks: subtasks
            .iter()
            .enumerate()
            .map(|(i, &(sa, sb))| SubtaskScore {
                subtask: format!("s{i}"),
                queries: 2,
                a: score(sa),
                b: score(sb),
            })
            .collect(),
        a: score(a),
        b: score(b),
        published_b_minilm: None,
        embed_s: 0.0,
        cached: (0, 0),
        a_ms: Pct::default(),
        b_ms: Pct::default(),
        b_setup_s: 0.0,
        notes: Vec::new(),
    }
}

#[test]
fn the_two_point_rule_holds_at_two_and_fails_past_it() {
    let at_edge = result("T", 0.30, 0.31, &[(0.50, 0.48), (0.10, 0.14)]);
    assert!(
        report::task_holds(&at_edge),
        "a loss of exactly 2.00 points holds"
    );
    let past = result("T", 0.30, 0.31, &[(0.50, 0.4799), (0.10, 0.14)]);
    assert!(!report::task_holds(&past));
    assert_eq!(report::failing_subtasks(&past).len(), 1);
    let level = result("T", 0.30, 0.30, &[(0.30, 0.30)]);
    assert!(!report::task_holds(&level), "B must beat A, not tie");
    let text = report::render_text(&[past.clone(), at_edge.clone()]);
    assert!(text.contains("NO: 1 subtask(s) < −2"), "{text}");
    assert!(text.contains("dev / hash: 1 of 2 tasks hold"), "{text}");
    assert!(report::render_markdown(&[at_edge]).contains("— HOLDS"));
}

#[test]
fn losses_list_every_line_under_track_a_worst_first() {
    let r = result("T", 0.40, 0.35, &[(0.50, 0.49), (0.10, 0.20), (0.30, 0.20)]);
    let lost = report::losses(&[r]);
    let lines: Vec<(Option<&str>, i64)> = lost
        .iter()
        .map(|l| (l.subtask.as_deref(), (l.delta * 100.0).round() as i64))
        .collect();
    assert_eq!(
        lines,
        [(Some("s2"), -1000), (None, -500), (Some("s0"), -100)]
    );
}

#[test]
fn a_beir_query_takes_its_subtask_from_its_metadata() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "corpus.jsonl",
        "{\"_id\":\"d1\",\"title\":\"\",\"text\":\"one\"}\n{\"_id\":\"d2\",\"text\":\"two\"}\n",
    );
    write(
        "queries.jsonl",
        "{\"_id\":\"q1\",\"text\":\"a\",\"metadata\":{\"subtask\":\"syscalls\"}}\n{\"_id\":\"q2\",\"text\":\"b\"}\n",
    );
    write(
        "qrels/test.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n",
    );
    let ds = load::beir(dir.path()).expect("loads");
    let folder = dir
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let subtasks: Vec<&str> = ds.queries.iter().map(|q| q.subtask.as_str()).collect();
    assert_eq!(subtasks, ["syscalls", folder.as_str()]);
}

#[test]
fn the_cache_keeps_a_models_roles_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let embedder = HashEmbedder::new();
    let mut progress = |_: usize, _: usize| {};
    let mut as_query =
        EmbeddingCache::open_role(dir.path(), &embedder, Some("query")).expect("opens");
    as_query
        .embed_all(&embedder, &["same text"], 8, &mut progress)
        .expect("embeds");
    assert_eq!(as_query.computed, 1);
    let mut as_passage =
        EmbeddingCache::open_role(dir.path(), &embedder, Some("passage")).expect("opens");
    assert_eq!(as_passage.loaded, 0, "a query's vector is not a passage's");
    as_passage
        .embed_all(&embedder, &["same text"], 8, &mut progress)
        .expect("embeds");
    assert_eq!(as_passage.computed, 1);
    let plain = EmbeddingCache::open(dir.path(), &embedder).expect("opens");
    assert_eq!(plain.loaded, 0, "nor is either the role-less model's");
    let reopened = EmbeddingCache::open_role(dir.path(), &embedder, Some("query")).expect("opens");
    assert_eq!(reopened.loaded, 1, "each role reads its own back");
}

#[test]
fn the_fusion_table_pairs_runs_and_decides_by_the_condition_and_the_half_point_rule() {
    use super::fusion_table;
    let fixed = vec![
        result("LoCoMo [dev]", 0.20, 0.35, &[(0.20, 0.35)]),
        result("manpages [dev]", 0.80, 0.78, &[(0.80, 0.78)]),
    ];
    // Adaptive repairs man pages and gives back 0.4 points on LoCoMo: may ship.
    let good = vec![
        result("LoCoMo [dev]", 0.20, 0.346, &[(0.20, 0.346)]),
        result("manpages [dev]", 0.80, 0.81, &[(0.80, 0.81)]),
    ];
    let pairs = fusion_table::pair(&fixed, &good).expect("pairs");
    assert!(fusion_table::may_ship(&pairs));
    let md = fusion_table::render_markdown(&pairs);
    assert!(md.contains("| **manpages [dev]** | hash | 2 | 80.00 | 78.00 | 81.00 | -2.00 | +1.00 | +3.00 | **NO** | yes |"), "{md}");
    assert!(
        md.contains("dev / hash: fixed 1 of 2, adaptive 2 of 2"),
        "{md}"
    );
    assert!(
        md.contains("may ship as the default on these lines: yes"),
        "{md}"
    );
    // 0.6 points under fixed on LoCoMo breaks the rule even though the condition holds.
    let costly = vec![
        result("LoCoMo [dev]", 0.20, 0.344, &[(0.20, 0.344)]),
        result("manpages [dev]", 0.80, 0.81, &[(0.80, 0.81)]),
    ];
    let pairs = fusion_table::pair(&fixed, &costly).expect("pairs");
    assert!(!fusion_table::keeps_fixed(&pairs[0]));
    assert!(
        fusion_table::keeps_fixed(&pairs[1]),
        "man pages are not guarded"
    );
    assert!(!fusion_table::may_ship(&pairs));
    assert!(
        fusion_table::render_markdown(&pairs).contains("LoCoMo [dev] / hash: -0.60"),
        "the breaking line is named"
    );
    // A run without its twin is refused, not silently dropped.
    let lonely = vec![result("TMD [dev]", 0.1, 0.2, &[(0.1, 0.2)])];
    assert!(fusion_table::pair(&fixed, &lonely).is_err());
}
