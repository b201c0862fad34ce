//! Tests of the quality harness: the metrics on hand-computed cases, the date parser, the BEIR
//! loader on the tiny fixture, and both tracks end to end on it with the hash embedder.

use std::collections::HashSet;
use std::path::Path;

use cpersona_engine::embed::{Embedder, HashEmbedder};

use super::dates::parse_conversation_time;
use super::metrics::{QueryScore, ndcg_at_k, recall_at_k};
use super::{load, report, tracks};

fn rel<'a>(ids: &[&'a str]) -> HashSet<&'a str> {
    ids.iter().copied().collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn ndcg_matches_hand_computed_cases() {
    // One relevant row at rank 1: perfect.
    assert!(close(ndcg_at_k(&["a", "b", "c"], &rel(&["a"]), 10), 1.0));
    // At rank 2: 1/log2(3).
    assert!(close(
        ndcg_at_k(&["x", "a"], &rel(&["a"]), 10),
        0.630_929_753_571_457_5
    ));
    // Ranks 2 and 4 of two relevant: (1/log2 3 + 1/log2 5) / (1 + 1/log2 3).
    assert!(close(
        ndcg_at_k(&["x", "a", "y", "b"], &rel(&["a", "b"]), 10),
        0.650_920_929_807_132_6
    ));
    // A repeated id counts once.
    assert!(close(
        ndcg_at_k(&["a", "a"], &rel(&["a", "b"]), 10),
        0.613_147_192_765_458_4
    ));
    // The ideal is capped at k: 12 relevant, the first 10 ranks all relevant = 1.
    let many: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    let many_ref: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(close(ndcg_at_k(&many_ref, &rel(&many_ref), 10), 1.0));
    // A relevant row past k earns nothing.
    let mut late = vec!["x"; 10];
    late.push("a");
    assert!(close(ndcg_at_k(&late, &rel(&["a"]), 10), 0.0));
    assert!(close(ndcg_at_k(&["a"], &rel(&[]), 10), 0.0));
    // No hit is +0, not -0 (which a report prints as "-0.00").
    assert!(ndcg_at_k(&["x"], &rel(&["a"]), 10).is_sign_positive());
}

#[test]
fn recall_matches_hand_computed_cases() {
    let ranked = ["a", "x1", "x2", "x3", "x4", "b", "x5"];
    let r = rel(&["a", "b"]);
    assert!(close(recall_at_k(&ranked, &r, 5), 0.5));
    assert!(close(recall_at_k(&ranked, &r, 10), 1.0));
    assert!(close(recall_at_k(&["a", "a"], &r, 10), 0.5));
    let s = QueryScore::of(&ranked, &["a".into(), "b".into()]);
    assert!(close(s.recall5, 0.5) && close(s.recall10, 1.0));
    let m = QueryScore::mean(&[s, QueryScore::default()]);
    assert!(close(m.recall10, 0.5));
}

#[test]
fn conversation_times_parse_both_layouts() {
    assert_eq!(
        parse_conversation_time("1:56 pm on 8 May, 2023"),
        Some(1_683_554_160_000)
    );
    assert_eq!(
        parse_conversation_time("01:56:04 AM on Monday 08 May, 2023"),
        Some(1_683_510_964_000)
    );
    assert_eq!(
        parse_conversation_time("12:00 am on 1 January, 2024"),
        Some(1_704_067_200_000)
    );
    assert_eq!(
        parse_conversation_time("12:30 pm on 29 February, 2024"),
        Some(1_709_209_800_000)
    );
    assert_eq!(parse_conversation_time("13:00 pm on 1 May, 2024"), None);
    assert_eq!(
        parse_conversation_time("1:00 pm on 1 Maytember, 2024"),
        None
    );
    assert_eq!(parse_conversation_time("yesterday"), None);
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/beir-tiny")
}

#[test]
fn beir_loader_keeps_judged_queries_and_counts_dangling_labels() {
    let ds = load::beir(&fixture()).expect("fixture loads");
    assert_eq!(ds.docs.len(), 6);
    assert_eq!(
        ds.docs[0].text,
        "Cats The cat sat on the warm windowsill and purred at the sparrows."
    );
    let ids: Vec<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["q1", "q2", "q3", "q5"]);
    assert_eq!(ds.dangling_relevant, 1);
    assert_eq!(ds.queries[3].relevant, ["d6"]);
}

#[test]
fn both_tracks_rank_the_fixture_with_the_hash_embedder() {
    let ds = load::beir(&fixture()).expect("fixture loads");
    let embedder = HashEmbedder::new();
    let embed = |texts: Vec<&str>| -> Vec<Vec<f32>> {
        let mut v = embedder.embed(&texts).expect("hash embeds");
        v.iter_mut().for_each(|x| super::cache::normalise(x));
        v
    };
    let docs = embed(ds.docs.iter().map(|d| d.text.as_str()).collect());
    let queries = embed(ds.queries.iter().map(|q| q.text.as_str()).collect());
    let a = tracks::track_a(&ds, &docs, &queries);
    let dir = tempfile::tempdir().expect("tempdir");
    let b = tracks::track_b(
        &ds,
        embedder.identity(),
        &docs,
        &queries,
        &dir.path().join("w"),
    )
    .expect("track b runs");
    for (q, (la, lb)) in ds.queries.iter().zip(a.lists.iter().zip(&b.lists)) {
        assert_eq!(la.len(), 6, "track A ranks the whole group");
        assert_eq!(la[0], q.relevant[0], "track A top-1 for {}", q.id);
        assert_eq!(lb[0], q.relevant[0], "track B top-1 for {}", q.id);
    }
    let (subtasks, sa, sb) = report::score(&ds, &a, &b);
    assert_eq!(subtasks.len(), 1);
    assert_eq!(subtasks[0].queries, 4);
    assert!(close(sa.ndcg10, 1.0) && close(sb.ndcg10, 1.0));
}

#[test]
fn date_in_text_prefixes_dated_rows_only_and_renames_the_task() {
    let mut ds = load::beir(&fixture()).expect("fixture loads");
    let plain: Vec<String> = ds.docs.iter().map(|d| d.text.clone()).collect();
    ds.docs[0].said_at = Some("1:56 pm on 8 May, 2023".into());
    let task = ds.task.clone();
    ds.date_in_text();
    assert_eq!(ds.task, format!("{task}+dated"));
    assert_eq!(
        ds.docs[0].text,
        format!("[1:56 pm on 8 May, 2023] {}", plain[0])
    );
    for (d, before) in ds.docs.iter().zip(&plain).skip(1) {
        assert_eq!(&d.text, before, "a row without a date keeps its text");
    }
}
