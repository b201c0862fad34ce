//! Seeded text corpora for the recall bench (`benches/benches/recall.rs`): a *realistic* one
//! (a Zipf-distributed vocabulary of several thousand made-up words, so common terms match
//! many rows and rare ones few) and a *repetitive* one (the side-by-side driver's sentences
//! over about 36 distinct words, where every query term matches a large share of the rows).
//! Every text and query is a pure function of (seed, index); nothing here draws from an
//! unseeded RNG or is asserted as a test.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Which corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    /// Zipf (s = 1) over [`TextCorpus::VOCABULARY`] words, 8–30 words a row.
    Realistic,
    /// `scale/side_by_side/driver.py`'s sentences: subject, verb, object, when, why.
    Repetitive,
}

impl TextKind {
    /// The short name used in bench ids.
    pub fn name(self) -> &'static str {
        match self {
            TextKind::Realistic => "zipf",
            TextKind::Repetitive => "rep36",
        }
    }
}

const SUBJECTS: [&str; 10] = [
    "Aiko", "Ben", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
];
const VERBS: [&str; 12] = [
    "booked",
    "cancelled",
    "moved",
    "discussed",
    "finished",
    "reviewed",
    "forgot",
    "planned",
    "paid",
    "fixed",
    "postponed",
    "shared",
];
const OBJECTS: [&str; 10] = [
    "the dentist appointment",
    "the flight to Kyoto",
    "the invoice",
    "the piano lesson",
    "the database migration",
    "the budget review",
    "the tax return",
    "the team retro",
    "the vector index",
    "the car service",
];
const WHEN: [&str; 6] = [
    "on Monday",
    "next week",
    "yesterday",
    "after lunch",
    "last night",
    "tomorrow morning",
];

const ONSETS: [&str; 16] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st",
];
const VOWELS: [&str; 6] = ["a", "e", "i", "o", "u", "ai"];

/// A seeded text corpus.
#[derive(Clone, Debug)]
pub struct TextCorpus {
    kind: TextKind,
    seed: u64,
    words: Vec<String>,
    /// Cumulative Zipf weights over `words` (realistic only).
    cumulative: Vec<f64>,
}

impl TextCorpus {
    /// Distinct words of the realistic vocabulary.
    pub const VOCABULARY: usize = 6_000;

    /// The corpus of `kind` drawn from `seed`.
    pub fn new(kind: TextKind, seed: u64) -> TextCorpus {
        let (words, cumulative) = match kind {
            TextKind::Realistic => {
                let words: Vec<String> = (0..Self::VOCABULARY).map(made_up_word).collect();
                let mut total = 0.0;
                let cumulative = (1..=words.len())
                    .map(|rank| {
                        total += 1.0 / rank as f64;
                        total
                    })
                    .collect();
                (words, cumulative)
            }
            TextKind::Repetitive => (Vec::new(), Vec::new()),
        };
        TextCorpus {
            kind,
            seed,
            words,
            cumulative,
        }
    }

    /// Which corpus this is.
    pub fn kind(&self) -> TextKind {
        self.kind
    }

    fn rng(&self, stream: u64, index: usize) -> StdRng {
        StdRng::seed_from_u64(
            self.seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (index as u64).rotate_left(17),
        )
    }

    fn zipf_word(&self, rng: &mut StdRng) -> &str {
        let total = self.cumulative.last().copied().unwrap_or(1.0);
        let x = rng.random::<f64>() * total;
        let at = self.cumulative.partition_point(|&c| c < x);
        &self.words[at.min(self.words.len() - 1)]
    }

    /// The text of row `index`.
    pub fn text(&self, index: usize) -> String {
        let mut rng = self.rng(1, index);
        match self.kind {
            TextKind::Realistic => {
                let n = rng.random_range(8..=30);
                (0..n)
                    .map(|_| self.zipf_word(&mut rng).to_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            TextKind::Repetitive => (0..rng.random_range(1..=3))
                .map(|_| {
                    format!(
                        "{} {} {} {}.",
                        SUBJECTS[rng.random_range(0..SUBJECTS.len())],
                        VERBS[rng.random_range(0..VERBS.len())],
                        OBJECTS[rng.random_range(0..OBJECTS.len())],
                        WHEN[rng.random_range(0..WHEN.len())],
                    )
                })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// Query `index`: realistic, three words of a random row's text (so it matches, with
    /// common and rare terms at their natural rates); repetitive, the driver's two shapes.
    pub fn query(&self, index: usize, rows: usize) -> String {
        let mut rng = self.rng(2, index);
        match self.kind {
            TextKind::Realistic => {
                let text = self.text(rng.random_range(0..rows.max(1)));
                let words: Vec<&str> = text.split(' ').collect();
                (0..3)
                    .map(|_| words[rng.random_range(0..words.len())])
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            TextKind::Repetitive => {
                let object = OBJECTS[rng.random_range(0..OBJECTS.len())];
                if index % 2 == 1 {
                    format!(
                        "what did {} do about {object}",
                        SUBJECTS[rng.random_range(0..SUBJECTS.len())]
                    )
                } else {
                    format!("{object} {}", WHEN[rng.random_range(0..WHEN.len())])
                }
            }
        }
    }
}

/// Word `j` of the realistic vocabulary: syllables from the digits of `j`, unique per `j`.
fn made_up_word(j: usize) -> String {
    let mut word = String::new();
    let mut h = j as u64 + 1;
    while h > 0 {
        word.push_str(ONSETS[(h % 16) as usize]);
        h /= 16;
        word.push_str(VOWELS[(h % 6) as usize]);
        h /= 6;
    }
    // Short words get an `x`, a letter no syllable uses, so they stay distinct and reach
    // the trigram index's 3 characters.
    if word.chars().count() < 4 {
        word.push('x');
    }
    word
}
