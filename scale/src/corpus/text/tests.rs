//! Unit tests of the corpus texts: determinism and that a query's words are its cluster's.

use super::super::{Corpus, CorpusConfig};
use super::QUERY_WORDS;

fn small() -> Corpus {
    Corpus::new(CorpusConfig {
        dim: 16,
        clusters: 20,
        topics: 5,
        ..Default::default()
    })
}

#[test]
fn texts_are_a_pure_function_of_seed_and_index() {
    let (a, b) = (small(), small());
    let row = a.row(7, 100);
    assert_eq!(a.text(&row), b.text(&b.row(7, 100)));
    assert_ne!(a.text(&row), a.text(&a.row(8, 100)));
    assert_eq!(a.query_text(3), b.query_text(3));
    let other = Corpus::new(CorpusConfig {
        seed: 43,
        ..small().config().clone()
    });
    assert_ne!(a.text(&row), other.text(&other.row(7, 100)));
}

#[test]
fn query_words_appear_in_their_cluster_texts() {
    let corpus = small();
    let rows: Vec<_> = (0..400).map(|i| corpus.row(i, 400)).collect();
    for q in 0..10 {
        let cluster = corpus.query_cluster(q);
        let text = corpus.query_text(q);
        let words: Vec<&str> = text.split(' ').collect();
        assert_eq!(words.len(), QUERY_WORDS);
        let favoured = corpus.cluster_words(cluster);
        assert!(words.iter().all(|w| favoured.iter().any(|f| f == w)));
        // Rows of the same cluster carry the query's words.
        let hits = rows
            .iter()
            .filter(|r| r.cluster == cluster)
            .filter(|r| {
                let t = corpus.text(r);
                words.iter().any(|w| t.split(' ').any(|x| x == *w))
            })
            .count();
        let in_cluster = rows.iter().filter(|r| r.cluster == cluster).count();
        assert!(
            in_cluster == 0 || hits > 0,
            "query {q}: no row of cluster {cluster} matched"
        );
    }
}
