//! Quoting one record (reference §4.2 step 8): the head quote (the record's best passages —
//! its stored blocks ranked against the query vector, else by query trigrams — filled while
//! they fit the cap, in text order, joined by " … ") and the preview-tier excerpt.
//!
//! Must never write a character that is not in the record, or reorder its passages.

use serde::Serialize;

/// The separator between passages that do not touch.
pub const ELLIPSIS: &str = " … ";

use crate::derived::blocks::{BlockChoice, BlockOrder};
use crate::recall::stages::excerpt::{excerpt, passages, query_grams};

/// How a quote was chosen (`quote_basis`): the whole text, or passages picked by the record's
/// stored blocks (int8 cosine, else sign bits), else by the text heuristic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuoteBasis {
    /// The text fits the quote: all of it.
    Whole,
    /// Blocks ranked by int8 cosine to the query vector.
    Blocks,
    /// Blocks ranked by sign-bit Hamming distance (some block lacks int8 codes).
    Bits,
    /// The text heuristic: passages by query trigrams, else the text's start.
    Text,
}

impl QuoteBasis {
    /// The basis a block ranking gives.
    pub fn of(choice: &BlockChoice) -> Self {
        match choice.order {
            Some(BlockOrder::SignBits) => Self::Bits,
            _ => Self::Blocks,
        }
    }
}

/// A verbatim quotation of one stored text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quote {
    /// The quoted passages joined by [`ELLIPSIS`].
    pub text: String,
    /// Where the passages are, `[start, end)` in characters, in text order.
    pub ranges: Vec<[usize; 2]>,
    /// How they were chosen.
    pub basis: QuoteBasis,
    /// The stored text's length in characters.
    pub len: usize,
    /// The smallest next read when the quote was cut (a `get_contents` span).
    pub expand: Option<[usize; 2]>,
}

impl Quote {
    /// True when the quote is not the whole text.
    pub fn is_cut(&self) -> bool {
        self.basis != QuoteBasis::Whole
    }

    /// Characters the quote spends of the budget.
    pub fn chars(&self) -> usize {
        self.text.chars().count()
    }
}

fn lower(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

fn whole(chars: &[char]) -> Quote {
    Quote {
        text: chars.iter().collect(),
        ranges: vec![[0, chars.len()]],
        basis: QuoteBasis::Whole,
        len: chars.len(),
        expand: None,
    }
}

fn start(chars: &[char], cap: usize) -> Quote {
    let end = cap.min(chars.len());
    Quote {
        text: chars[..end].iter().collect(),
        ranges: vec![[0, end]],
        basis: QuoteBasis::Text,
        len: chars.len(),
        expand: Some([end, chars.len()]),
    }
}

/// Cuts `ranges` of `chars` and joins them by [`ELLIPSIS`].
fn joined(chars: &[char], ranges: &[[usize; 2]]) -> String {
    ranges
        .iter()
        .map(|r| chars[r[0]..r[1]].iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(ELLIPSIS)
}

/// The head quote of `text` at most `cap` characters long: the whole text when it fits, else
/// the record's blocks ranked against the query vector (`blocks`, when the record has a
/// rankable block set) filled while the joined quote fits, else its passages ranked by query
/// trigrams held (earlier first on ties) filled the same way; shown in text order, touching
/// passages as one.
pub fn head_quote(text: &str, query: &str, cap: usize, blocks: Option<&BlockChoice>) -> Quote {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= cap {
        return whole(&chars);
    }
    if let Some(choice) = blocks.filter(|c| !c.ranked.is_empty()) {
        let filled = choice.fill(cap, ELLIPSIS.chars().count());
        return Quote {
            text: joined(&chars, &filled.ranges),
            ranges: filled.ranges,
            basis: QuoteBasis::of(choice),
            len: chars.len(),
            expand: filled.severed,
        };
    }
    let grams = query_grams(query);
    let parts = passages(&chars);
    let folded: Vec<char> = chars.iter().copied().map(lower).collect();
    let mut ranked: Vec<(usize, usize)> = parts
        .iter()
        .enumerate()
        .map(|(i, &(s, e))| {
            let passage: String = folded[s..e].iter().collect();
            (
                grams
                    .iter()
                    .filter(|g| passage.contains(g.as_str()))
                    .count(),
                i,
            )
        })
        .filter(|&(score, _)| score > 0)
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let Some(&(_, best)) = ranked.first() else {
        return start(&chars, cap);
    };
    let (bs, be) = parts[best];
    if be - bs > cap {
        // The best passage alone is longer than the quote: its start, severed.
        return Quote {
            text: chars[bs..bs + cap].iter().collect(),
            ranges: vec![[bs, bs + cap]],
            basis: QuoteBasis::Text,
            len: chars.len(),
            expand: Some([bs, be]),
        };
    }
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut spent = 0;
    for &(_, i) in &ranked {
        let (s, e) = parts[i];
        let sep = if chosen.is_empty() {
            0
        } else {
            ELLIPSIS.chars().count()
        };
        if spent + sep + (e - s) <= cap {
            spent += sep + (e - s);
            chosen.push((s, e));
        }
    }
    chosen.sort_unstable();
    let mut merged: Vec<[usize; 2]> = Vec::new();
    for (s, e) in chosen {
        match merged.last_mut() {
            Some(last) if last[1] == s => last[1] = e,
            _ => merged.push([s, e]),
        }
    }
    let text = joined(&chars, &merged);
    Quote {
        text,
        ranges: merged,
        basis: QuoteBasis::Text,
        len: chars.len(),
        expand: None,
    }
}

/// An excerpt cut as the preview tier cuts: whole when it fits, else the best block grown
/// (`blocks`), else the best passage grown (`recall::excerpt`), else the text's start.
pub fn excerpt_quote(text: &str, query: &str, cap: usize, blocks: Option<&BlockChoice>) -> Quote {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= cap {
        return whole(&chars);
    }
    if let Some(choice) = blocks.filter(|c| !c.ranked.is_empty()) {
        let (s, e) = choice.grow(cap);
        return Quote {
            text: chars[s..e].iter().collect(),
            ranges: vec![[s, e]],
            basis: QuoteBasis::of(choice),
            len: chars.len(),
            expand: None,
        };
    }
    match excerpt(text, query, cap) {
        Some(found) if found.basis == crate::recall::stages::excerpt::ExcerptBasis::Lexical => {
            Quote {
                text: found.text,
                ranges: vec![[found.span.0, found.span.1]],
                basis: QuoteBasis::Text,
                len: chars.len(),
                expand: None,
            }
        }
        _ => start(&chars, cap),
    }
}
