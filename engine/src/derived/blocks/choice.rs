//! Quoting by blocks: a record's stored blocks ranked against the query vector
//! ([`super::best_blocks`]) turned into the ranges a quote or an excerpt shows.
//!
//! A [`BlockChoice`] is built only from a block set that tiles the record's current text
//! exactly (first start 0, contiguous, last end the text's length) and that `best_blocks` could
//! rank (int8 codes of the query's width on every block, else sign bits on every block);
//! anything else is `None` and the caller falls back to the text heuristic
//! (`recall::excerpt`). The ranges returned always lie inside the text, so a quote cut at them
//! is verbatim.
//!
//! This module must never read the store, call a model or compose text: it maps spans to spans.

use super::{BlockOrder, BlockVectors, best_blocks};

/// The blocks of one record, best first, and which quantisation ranked them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockChoice {
    /// Block spans `[start, end)` in characters of the record's text, best first.
    pub ranked: Vec<(usize, usize)>,
    /// int8 cosine or sign-bit Hamming (`None` only for a hand-built empty choice).
    pub order: Option<BlockOrder>,
}

/// A quote's ranges chosen from blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filled {
    /// `[start, end)` ranges in text order; touching ranges are one.
    pub ranges: Vec<[usize; 2]>,
    /// The best block when it alone was longer than the cap (the quote is its start).
    pub severed: Option<[usize; 2]>,
}

impl BlockChoice {
    /// Ranks `blocks` (`spans[i]` is the span of `vectors[i]`) against `query` for a text of
    /// `text_len` characters; `None` when the spans do not tile the text or no quantisation
    /// covers every block.
    pub fn rank(
        query: &[f32],
        spans: &[(usize, usize)],
        vectors: &[BlockVectors<'_>],
        text_len: usize,
    ) -> Option<Self> {
        if spans.len() < 2 || spans.len() != vectors.len() || !tiles(spans, text_len) {
            return None;
        }
        let ranked = best_blocks(query, vectors);
        if ranked.len() != spans.len() {
            return None;
        }
        let order = ranked.first().map(|r| r.order);
        let by_index: std::collections::BTreeMap<usize, (usize, usize)> = vectors
            .iter()
            .zip(spans)
            .map(|(v, &span)| (v.index, span))
            .collect();
        let ranked = ranked
            .iter()
            .map(|r| by_index.get(&r.index).copied())
            .collect::<Option<Vec<_>>>()?;
        Some(Self { ranked, order })
    }

    /// The same choice over a text shown with `by` characters before it (an episode's
    /// `"[Episode] "` label).
    pub fn shifted(mut self, by: usize) -> Self {
        for span in &mut self.ranked {
            *span = (span.0 + by, span.1 + by);
        }
        self
    }

    /// The head quote's ranges within `cap` characters, CPersona's filled quote: blocks best
    /// first, a block costs its length plus the separator (`sep` characters) unless it
    /// touches a taken one, filling stops at the first block that does not fit; when the best
    /// block alone is longer than `cap`, its first `cap` characters, marked severed.
    pub fn fill(&self, cap: usize, sep: usize) -> Filled {
        let mut taken: Vec<(usize, usize)> = Vec::new();
        let mut spent = 0;
        for &(s, e) in &self.ranked {
            let touches = taken.iter().any(|&(ts, te)| te == s || e == ts);
            let cost = (e - s) + if taken.is_empty() || touches { 0 } else { sep };
            if spent + cost > cap {
                if taken.is_empty() {
                    return Filled {
                        ranges: vec![[s, s + cap]],
                        severed: Some([s, e]),
                    };
                }
                break;
            }
            spent += cost;
            taken.push((s, e));
        }
        taken.sort_unstable();
        let mut ranges: Vec<[usize; 2]> = Vec::new();
        for (s, e) in taken {
            match ranges.last_mut() {
                Some(last) if last[1] == s => last[1] = e,
                _ => ranges.push([s, e]),
            }
        }
        Filled {
            ranges,
            severed: None,
        }
    }

    /// One contiguous excerpt of at most `cap` characters: the best block (its start when it
    /// alone is longer), grown by whichever neighbouring block ranks better while the whole
    /// still fits.
    pub fn grow(&self, cap: usize) -> (usize, usize) {
        let Some(&(s, e)) = self.ranked.first() else {
            return (0, 0);
        };
        if e - s >= cap {
            return (s, s + cap);
        }
        let rank_of = |start: Option<usize>, end: Option<usize>| {
            self.ranked
                .iter()
                .position(|&(bs, be)| Some(bs) == start || Some(be) == end)
        };
        let (mut start, mut end) = (s, e);
        loop {
            let next = rank_of(Some(end), None).filter(|&i| self.ranked[i].1 - start <= cap);
            let prev = rank_of(None, Some(start)).filter(|&i| end - self.ranked[i].0 <= cap);
            match (next, prev) {
                (Some(n), Some(p)) if p < n => start = self.ranked[p].0,
                (Some(n), _) => end = self.ranked[n].1,
                (None, Some(p)) => start = self.ranked[p].0,
                (None, None) => break,
            }
        }
        (start, end)
    }
}

/// True when `spans` partition `[0, len)` in order.
fn tiles(spans: &[(usize, usize)], len: usize) -> bool {
    let mut at = 0;
    for &(s, e) in spans {
        if s != at || e <= s {
            return false;
        }
        at = e;
    }
    at == len
}
