//! Texts for the synthetic corpus: a per-topic vocabulary of pronounceable made-up words, a
//! per-cluster subset of it, and common English words, so the lexical and keyword arms see the
//! same relatedness as the vector arm. Every text is a pure function of (seed, index); it must
//! never draw from an unseeded RNG.

use rand::Rng;
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::{Corpus, CorpusRow, Stream, splitmix};

/// Words per topic vocabulary.
pub const TOPIC_WORDS: usize = 300;
/// Words of its topic's vocabulary each cluster favours.
pub const CLUSTER_WORDS: usize = 40;
/// Words of a query text.
pub const QUERY_WORDS: usize = 3;

/// Common words every text mixes in (the lexical arm must rank past them).
const COMMON: [&str; 64] = [
    "the",
    "and",
    "that",
    "with",
    "for",
    "this",
    "from",
    "have",
    "about",
    "will",
    "after",
    "before",
    "meeting",
    "today",
    "yesterday",
    "tomorrow",
    "because",
    "should",
    "could",
    "would",
    "again",
    "still",
    "note",
    "remember",
    "user",
    "asked",
    "said",
    "want",
    "need",
    "plan",
    "check",
    "later",
    "morning",
    "evening",
    "week",
    "month",
    "issue",
    "idea",
    "work",
    "team",
    "call",
    "email",
    "review",
    "update",
    "change",
    "problem",
    "answer",
    "question",
    "project",
    "details",
    "small",
    "large",
    "first",
    "last",
    "next",
    "other",
    "some",
    "every",
    "never",
    "always",
    "maybe",
    "really",
    "thing",
    "time",
];

const ONSETS: [&str; 16] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st",
];
const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "ai"];

impl Corpus {
    /// Word `j` of topic `topic`'s vocabulary: three syllables, deterministic from the seed.
    pub fn topic_word(&self, topic: u32, j: usize) -> String {
        let mut h = splitmix(self.config.seed ^ splitmix(u64::from(topic) << 32 ^ j as u64));
        let mut word = String::new();
        for _ in 0..3 {
            word.push_str(ONSETS[(h % 16) as usize]);
            h >>= 4;
            word.push_str(VOWELS[(h % 6) as usize]);
            h >>= 3;
        }
        // The topic number keeps vocabularies of different topics apart.
        word.push_str(&format!("{}", topic % 10));
        word
    }

    /// The words cluster `cluster` favours: a fixed subset of its topic's vocabulary.
    pub fn cluster_words(&self, cluster: u32) -> Vec<String> {
        let topic = self.cluster_topic[cluster as usize];
        let mut rng =
            StdRng::seed_from_u64(splitmix(self.config.seed ^ 0x7e47 ^ u64::from(cluster)));
        (0..CLUSTER_WORDS)
            .map(|_| self.topic_word(topic, rng.random_range(0..TOPIC_WORDS)))
            .collect()
    }

    /// The text of `row`: 12 to 20 words, about 40% from its cluster, 20% from its topic, the
    /// rest common words, ending with the row id so no two texts are equal.
    pub fn text(&self, row: &CorpusRow) -> String {
        let mut rng = self.row_rng(Stream::Text, (row.id - 1).max(0) as u64);
        let cluster = self.cluster_words(row.cluster);
        let n = rng.random_range(12..=20);
        let mut words: Vec<String> = Vec::with_capacity(n + 2);
        // At least one cluster word, always.
        words.push(cluster[rng.random_range(0..cluster.len())].clone());
        for _ in 1..n {
            let roll: f64 = rng.random();
            let word = if roll < 0.4 {
                cluster[rng.random_range(0..cluster.len())].clone()
            } else if roll < 0.6 {
                self.topic_word(row.topic, rng.random_range(0..TOPIC_WORDS))
            } else {
                COMMON[rng.random_range(0..COMMON.len())].to_owned()
            };
            words.push(word);
        }
        words.push(format!("item{}", row.id));
        words.join(" ")
    }

    /// The cluster query `index` is drawn around (the same draw as [`Corpus::query`]).
    pub fn query_cluster(&self, index: usize) -> u32 {
        let mut rng = self.row_rng(Stream::Query, index as u64);
        self.pick_cluster(&mut rng) as u32
    }

    /// The text of query `index`: [`QUERY_WORDS`] words of its cluster's favoured words.
    pub fn query_text(&self, index: usize) -> String {
        let cluster = self.cluster_words(self.query_cluster(index));
        let mut rng = self.row_rng(Stream::QueryText, index as u64);
        (0..QUERY_WORDS)
            .map(|_| cluster[rng.random_range(0..cluster.len())].clone())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests;
