//! The excerpt beside a preview-cut row: the passage of the stored text that holds the most
//! of the query's character trigrams (the earliest on ties), grown with whole neighbouring
//! passages that also hold query trigrams, forwards first, up to the excerpt size. Deterministic; it quotes stored text verbatim and never composes any.
//!
//! A reduced form of CPersona 2.6's lexical basis (`excerpts.py`): passages end at a line
//! break or a sentence end, a passage longer than [`MAX_PASSAGE_CHARS`] is split at its last
//! weak boundary, and passages are ranked by query-trigram presence alone. When the record has
//! a rankable stored block set, the engine replaces this excerpt by [`block_excerpt`] (the best
//! block by int8 cosine, else sign bits, grown with better-ranked neighbours) — CPersona's
//! `blocks` basis.

use std::collections::BTreeSet;

use serde::Serialize;

use super::fts_query::is_query_whitespace;

/// The longest passage before a forced split (CPersona's `MAX_BLOCK_CHARS`).
pub const MAX_PASSAGE_CHARS: usize = 739;

/// How an excerpt was chosen (CPersona's `excerpt_basis`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExcerptBasis {
    /// The best stored block by int8 cosine to the query vector, grown with neighbours.
    Blocks,
    /// The best stored block by sign-bit Hamming distance (some block lacks int8 codes).
    Bits,
    /// The best-matching passage of a read-time division.
    Lexical,
    /// No passage matched (or the text is one passage): the text's start.
    Start,
}

/// An excerpt and where it lies in the stored text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Excerpt {
    /// The quoted text.
    pub text: String,
    /// How it was chosen.
    pub basis: ExcerptBasis,
    /// Character offsets `[start, end)` into the stored text (usable as a `get_contents`
    /// span).
    pub span: (usize, usize),
}

/// The excerpt of at most `cap` characters of `text` for `query`; `None` when `cap` is 0,
/// the query is blank or the text empty.
pub fn excerpt(text: &str, query: &str, cap: usize) -> Option<Excerpt> {
    let chars: Vec<char> = text.chars().collect();
    let grams = query_grams(query);
    if cap == 0 || grams.is_empty() || chars.is_empty() {
        return None;
    }
    let passages = passages(&chars);
    let lower: Vec<char> = chars.iter().copied().map(lower_char).collect();
    let scores: Vec<usize> = passages
        .iter()
        .map(|&(s, e)| {
            let passage: String = lower[s..e].iter().collect();
            grams
                .iter()
                .filter(|g| passage.contains(g.as_str()))
                .count()
        })
        .collect();
    let best = (0..passages.len()).max_by(|&a, &b| scores[a].cmp(&scores[b]).then(b.cmp(&a)));
    let (basis, (mut start, mut end), at) = match best {
        Some(i) if scores[i] > 0 && passages.len() > 1 => (ExcerptBasis::Lexical, passages[i], i),
        _ => (ExcerptBasis::Start, (0, chars.len().min(cap)), 0),
    };
    if basis == ExcerptBasis::Lexical {
        if end - start > cap {
            end = start + cap;
        } else {
            let mut next = at + 1;
            while next < passages.len() && scores[next] > 0 && passages[next].1 - start <= cap {
                end = passages[next].1;
                next += 1;
            }
            let mut prev = at;
            while prev > 0 && scores[prev - 1] > 0 && end - passages[prev - 1].0 <= cap {
                start = passages[prev - 1].0;
                prev -= 1;
            }
        }
    }
    Some(Excerpt {
        text: chars[start..end].iter().collect(),
        basis,
        span: (start, end),
    })
}

/// The excerpt of at most `cap` characters of `text` picked by its ranked blocks (spans into
/// `text` as shown); `None` when `cap` is 0 or the choice is empty or out of range.
pub fn block_excerpt(
    text: &str,
    choice: &crate::derived::blocks::BlockChoice,
    cap: usize,
) -> Option<Excerpt> {
    let chars: Vec<char> = text.chars().collect();
    if cap == 0 || choice.ranked.iter().any(|&(_, e)| e > chars.len()) {
        return None;
    }
    let (start, end) = choice.grow(cap);
    if end <= start {
        return None;
    }
    Some(Excerpt {
        text: chars[start..end].iter().collect(),
        basis: match choice.order {
            Some(crate::derived::blocks::BlockOrder::SignBits) => ExcerptBasis::Bits,
            _ => ExcerptBasis::Blocks,
        },
        span: (start, end),
    })
}

/// Distinct lower-cased query grams: each whitespace token's overlapping 3-character grams,
/// or the whole token when it is shorter than 3 characters.
pub fn query_grams(query: &str) -> BTreeSet<String> {
    let mut grams = BTreeSet::new();
    for token in query.split(is_query_whitespace).filter(|t| !t.is_empty()) {
        let lower: Vec<char> = token.chars().map(lower_char).collect();
        if lower.len() < 3 {
            grams.insert(lower.iter().collect());
        } else {
            grams.extend(lower.windows(3).map(|w| w.iter().collect::<String>()));
        }
    }
    grams
}

/// Divides `chars` into contiguous passages `[start, end)` that partition it.
pub fn passages(chars: &[char]) -> Vec<(usize, usize)> {
    let mut cuts = Vec::new();
    let mut start = 0;
    for i in 0..chars.len() {
        let c = chars[i];
        let next_is_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        let ends = c == '\n'
            || matches!(c, '。' | '！' | '？')
            || (matches!(c, '.' | '!' | '?' | '…' | '．') && next_is_space);
        if ends || i + 1 == chars.len() {
            let mut end = i + 1;
            while end < chars.len() && chars[end].is_whitespace() && chars[end] != '\n' {
                end += 1;
            }
            if end > start {
                cuts.push((start, end));
                start = end;
            }
        }
    }
    if start < chars.len() {
        cuts.push((start, chars.len()));
    }
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in cuts {
        split_long(chars, s, e, &mut out);
    }
    merge_blank(chars, out)
}

/// Splits a passage longer than [`MAX_PASSAGE_CHARS`] at the last weak boundary (a comma,
/// colon or semicolon, then whitespace) that leaves at least half the allowance, else hard.
fn split_long(chars: &[char], mut s: usize, e: usize, out: &mut Vec<(usize, usize)>) {
    while e - s > MAX_PASSAGE_CHARS {
        let window = s + MAX_PASSAGE_CHARS / 2..s + MAX_PASSAGE_CHARS;
        let weak = window
            .clone()
            .rev()
            .find(|&i| matches!(chars[i], '、' | '，' | ',' | ';' | '；' | ':' | '：'));
        let space = window.rev().find(|&i| chars[i].is_whitespace());
        let cut = weak.or(space).map_or(s + MAX_PASSAGE_CHARS, |i| i + 1);
        out.push((s, cut));
        s = cut;
    }
    if e > s {
        out.push((s, e));
    }
}

/// Folds whitespace-only passages into the next one (or the previous at the end).
fn merge_blank(chars: &[char], passages: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut carry: Option<usize> = None;
    for (s, e) in passages {
        if chars[s..e].iter().all(|c| c.is_whitespace()) {
            carry.get_or_insert(s);
            continue;
        }
        out.push((carry.take().unwrap_or(s), e));
    }
    if let Some(s) = carry {
        match out.last_mut() {
            Some(last) => last.1 = chars.len(),
            None => out.push((s, chars.len())),
        }
    }
    out
}

/// Lower-cases one character to one character, so offsets survive case folding.
fn lower_char(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}
