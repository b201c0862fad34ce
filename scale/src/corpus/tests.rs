//! Unit tests of the synthetic corpus: determinism and the clustered geometry.

use super::*;

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn rows_are_a_pure_function_of_seed_and_index() {
    let corpus = Corpus::new(CorpusConfig {
        dim: 32,
        clusters: 50,
        ..Default::default()
    });
    let again = Corpus::new(CorpusConfig {
        dim: 32,
        clusters: 50,
        ..Default::default()
    });
    assert_eq!(corpus.row(17, 1000), again.row(17, 1000));
    assert_ne!(corpus.row(17, 1000).vector, corpus.row(18, 1000).vector);
    let other = Corpus::new(CorpusConfig {
        seed: 43,
        dim: 32,
        clusters: 50,
        ..Default::default()
    });
    assert_ne!(corpus.row(17, 1000).vector, other.row(17, 1000).vector);
}

#[test]
fn rows_come_newest_first_with_unique_ids_over_years() {
    let corpus = Corpus::new(CorpusConfig {
        dim: 16,
        clusters: 10,
        ..Default::default()
    });
    let rows: Vec<CorpusRow> = (0..2000).map(|i| corpus.row(i, 2000)).collect();
    for pair in rows.windows(2) {
        assert!(pair[0].created_at > pair[1].created_at);
        assert!(pair[0].id < pair[1].id);
    }
    let span = rows[0].created_at - rows[1999].created_at;
    assert!(span > 2 * 365 * 24 * 3_600_000, "span {span} ms");
    assert!(rows.iter().any(|r| r.project == 0) && rows.iter().any(|r| r.project > 0));
    assert!(rows.iter().all(|r| r.agent < corpus.agents().len()));
    assert!(
        rows.iter()
            .all(|r| (r.vector.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-4)
    );
}

#[test]
fn same_cluster_rows_are_closer_than_unrelated_ones() {
    // Fewer clusters than the default so a small sample holds same-cluster pairs; the spreads
    // (what the test is about) are the defaults.
    let corpus = Corpus::new(CorpusConfig {
        clusters: 100,
        ..Default::default()
    });
    let rows: Vec<CorpusRow> = (0..800).map(|i| corpus.row(i, 800)).collect();
    let (mut same, mut n_same, mut diff, mut n_diff) = (0.0, 0, 0.0, 0);
    for i in 0..rows.len() {
        for j in (i + 1)..rows.len().min(i + 100) {
            let c = cos(&rows[i].vector, &rows[j].vector);
            if rows[i].cluster == rows[j].cluster {
                same += c;
                n_same += 1;
            } else {
                diff += c;
                n_diff += 1;
            }
        }
    }
    let (same, diff) = (same / n_same.max(1) as f32, diff / n_diff as f32);
    eprintln!("mean cosine: same cluster {same}, unrelated {diff}");
    assert!(
        diff > 0.02 && diff < 0.3,
        "unrelated rows: mean cosine {diff}"
    );
    assert!(same > diff + 0.2, "same cluster {same} vs unrelated {diff}");
}
