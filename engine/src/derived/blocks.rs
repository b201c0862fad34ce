//! Clause-sized blocks of a record's own text (CPersona 2.6 `blocks.py`), their two
//! quantisations (sign bits and int8 codes) and the pure block ranking quotes and excerpts use.
//!
//! A block is a span of character offsets into the stored text; blocks tile the text exactly.
//! Cuts are structural only: the end of a line break (a blank line ends in one) or of a
//! sentence end (`。．！？`, or `.!?` before whitespace or the end). No structural cut falls
//! inside a fenced code block (```` ``` ```` lines; an unterminated fence runs to the end; the
//! closing fence line belongs to the block) or inside a bracket or quote pair (`「」 『』 （）
//! () ［］ [] 【】 《》 〈〉 “”`, and ASCII `"` pairs within one paragraph; unmatched openings are
//! ignored). Every node end is a cut, so a block never spans two nodes. A piece longer than
//! [`MAX_BLOCK_CHARS`] is split by force at its last weak boundary (`、，,;；:：`, then
//! whitespace) that keeps at least half the allowance, else hard, and marked `forced`.
//! Whitespace-only pieces fold into the next block (the previous one at a node end).
//!
//! This module must never call a model, read the store or depend on anything but the text:
//! the same text and node ends always give the same blocks.

use serde::Serialize;

pub mod choice;

pub use choice::BlockChoice;

/// The longest block before a forced split (CPersona's `MAX_BLOCK_CHARS`).
pub const MAX_BLOCK_CHARS: usize = 739;

/// One block: `[start, end)` in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Block {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// True when the end is not a structural cut (length split, or a node end inside a
    /// protected run).
    pub forced: bool,
}

impl Block {
    /// Length in characters.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True for an empty block (never produced by [`segment`]).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// Divides `text` into blocks. `node_ends` are character offsets that must end a block
/// (unsorted and out-of-range values are tolerated). An empty text has no blocks.
pub fn segment(text: &str, node_ends: &[usize]) -> Vec<Block> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    if n == 0 {
        return Vec::new();
    }
    let protected = protected_boundaries(&chars);
    let mut hard: Vec<usize> = node_ends
        .iter()
        .copied()
        .filter(|&e| e > 0 && e < n)
        .collect();
    hard.push(n);
    hard.sort_unstable();
    hard.dedup();
    let mut blocks = Vec::new();
    let mut start = 0;
    for &seg_end in &hard {
        let end_forced = seg_end < n && (protected[seg_end] || !is_natural(&chars, seg_end));
        let mut pieces = Vec::new();
        let mut piece_start = start;
        let bounds = protected.iter().enumerate().take(seg_end).skip(start + 1);
        for (p, &locked) in bounds {
            if !locked && is_natural(&chars, p) {
                pieces.push(Block {
                    start: piece_start,
                    end: p,
                    forced: false,
                });
                piece_start = p;
            }
        }
        pieces.push(Block {
            start: piece_start,
            end: seg_end,
            forced: end_forced,
        });
        let mut split = Vec::new();
        for piece in pieces {
            split_long(&chars, &protected, piece, &mut split);
        }
        blocks.extend(fold_whitespace(&chars, split));
        start = seg_end;
    }
    blocks
}

/// `protected[p]` is true when no structural cut may fall at boundary `p` (between
/// characters `p - 1` and `p`): inside a code fence or a bracket/quote pair.
pub fn protected_boundaries(chars: &[char]) -> Vec<bool> {
    let n = chars.len();
    let mut protected = vec![false; n + 1];
    let mut in_fence = vec![false; n];
    // Fences, line by line.
    let mut line_start = 0;
    let mut open: Option<usize> = None;
    while line_start < n {
        let line_end = (line_start..n)
            .find(|&i| chars[i] == '\n')
            .map_or(n, |i| i + 1);
        let first = (line_start..line_end).find(|&i| chars[i] != ' ' && chars[i] != '\t');
        let is_fence =
            first.is_some_and(|f| f + 3 <= line_end && chars[f..f + 3].iter().all(|&c| c == '`'));
        if is_fence {
            match open.take() {
                None => open = Some(line_start),
                Some(o) => mark(&mut protected, &mut in_fence, o, line_end),
            }
        }
        line_start = line_end;
    }
    if let Some(o) = open {
        mark(&mut protected, &mut in_fence, o, n);
    }
    // Bracket pairs (outside fences), nesting through a stack; a closer with no opener and
    // openers never closed are ignored.
    const PAIRS: [(char, char); 11] = [
        ('「', '」'),
        ('『', '』'),
        ('（', '）'),
        ('(', ')'),
        ('［', '］'),
        ('[', ']'),
        ('【', '】'),
        ('《', '》'),
        ('〈', '〉'),
        ('“', '”'),
        ('{', '}'),
    ];
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut quote: Option<usize> = None;
    for i in 0..n {
        if in_fence[i] {
            continue;
        }
        let c = chars[i];
        if c == '"' {
            match quote.take() {
                None => quote = Some(i),
                Some(o) => protect_pair(&mut protected, o, i),
            }
        } else if c == '\n'
            && i + 1 < n
            && chars[i + 1..]
                .iter()
                .take_while(|c| **c != '\n')
                .all(|c| c.is_whitespace())
        {
            // A blank line ends a paragraph: an unmatched ASCII quote is ignored.
            quote = None;
        }
        if let Some(&(_, close)) = PAIRS.iter().find(|(o, _)| *o == c) {
            stack.push((close, i));
        } else if PAIRS.iter().any(|(_, cl)| *cl == c)
            && let Some(depth) = stack.iter().rposition(|(cl, _)| *cl == c)
        {
            let opened = stack[depth].1;
            stack.truncate(depth);
            protect_pair(&mut protected, opened, i);
        }
    }
    protected
}

fn mark(protected: &mut [bool], in_fence: &mut [bool], from: usize, to: usize) {
    for flag in &mut in_fence[from..to] {
        *flag = true;
    }
    for flag in &mut protected[from + 1..to] {
        *flag = true;
    }
}

/// Boundaries after the opener up to and including the one before the closer.
fn protect_pair(protected: &mut [bool], open: usize, close: usize) {
    for flag in &mut protected[open + 1..=close] {
        *flag = true;
    }
}

/// A structural cut at boundary `p`: after a line break, or after a sentence end.
fn is_natural(chars: &[char], p: usize) -> bool {
    let prev = chars[p - 1];
    if prev == '\n' || matches!(prev, '。' | '．' | '！' | '？') {
        return true;
    }
    matches!(prev, '.' | '!' | '?') && chars.get(p).is_none_or(|c| c.is_whitespace())
}

/// Splits a piece longer than [`MAX_BLOCK_CHARS`] by force; appends the parts to `out`.
fn split_long(chars: &[char], protected: &[bool], piece: Block, out: &mut Vec<Block>) {
    let mut start = piece.start;
    while piece.end - start > MAX_BLOCK_CHARS {
        let limit = start + MAX_BLOCK_CHARS;
        let floor = start + MAX_BLOCK_CHARS / 2;
        let weak = |p: usize| matches!(chars[p - 1], '、' | '，' | ',' | ';' | '；' | ':' | '：');
        let space = |p: usize| chars[p - 1].is_whitespace();
        let pick = |ok: &dyn Fn(usize) -> bool, free: bool| {
            (floor..=limit)
                .rev()
                .find(|&p| p > start && ok(p) && (!free || !protected[p]))
        };
        let cut = pick(&weak, true)
            .or_else(|| pick(&space, true))
            .or_else(|| pick(&weak, false))
            .or_else(|| pick(&space, false))
            .unwrap_or(limit);
        out.push(Block {
            start,
            end: cut,
            forced: true,
        });
        start = cut;
    }
    out.push(Block { start, ..piece });
}

/// Folds whitespace-only blocks of one node segment into the next block (the previous one
/// at the segment's end), unless the fold would pass [`MAX_BLOCK_CHARS`].
fn fold_whitespace(chars: &[char], pieces: Vec<Block>) -> Vec<Block> {
    let blank = |b: &Block| chars[b.start..b.end].iter().all(|c| c.is_whitespace());
    let mut out: Vec<Block> = Vec::with_capacity(pieces.len());
    let mut carry: Option<Block> = None;
    for piece in pieces {
        let piece = match carry.take() {
            Some(c) if piece.end - c.start <= MAX_BLOCK_CHARS => Block {
                start: c.start,
                ..piece
            },
            Some(c) => {
                out.push(c);
                piece
            }
            None => piece,
        };
        if blank(&piece) {
            carry = Some(piece);
        } else {
            out.push(piece);
        }
    }
    if let Some(c) = carry {
        match out.last_mut() {
            Some(last) if c.end - last.start <= MAX_BLOCK_CHARS => {
                last.end = c.end;
                last.forced = c.forced;
            }
            _ => out.push(c),
        }
    }
    out
}

/// Sign bits of `v`: one bit per dimension, set when `v[i] > 0`, most significant bit first
/// (`np.packbits(v > 0)`).
pub fn sign_bits(v: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; v.len().div_ceil(8)];
    for (i, &x) in v.iter().enumerate() {
        if x > 0.0 {
            out[i / 8] |= 0x80 >> (i % 8);
        }
    }
    out
}

/// int8 codes `round(v · 127 / max|v|)` (the scale is dropped: only cosines are taken).
/// `None` for a zero or non-finite vector.
pub fn int8_codes(v: &[f32]) -> Option<Vec<i8>> {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max.is_finite() && max > 0.0) {
        return None;
    }
    Some(
        v.iter()
            .map(|&x| (x * 127.0 / max).round().clamp(-127.0, 127.0) as i8)
            .collect(),
    )
}

/// One block's stored quantisations, as ranking reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockVectors<'a> {
    /// The block's index in its record.
    pub index: usize,
    /// Sign bits, when stored.
    pub bits: Option<&'a [u8]>,
    /// int8 codes, when stored.
    pub int8: Option<&'a [i8]>,
}

/// Which quantisation ranked the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOrder {
    /// int8 cosine: every block had codes of the query's width.
    Int8,
    /// Negative Hamming distance of the sign bits: some block lacked int8 codes.
    SignBits,
}

/// A ranked block.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RankedBlock {
    /// The block's index in its record.
    pub index: usize,
    /// int8 cosine, or the negative Hamming distance.
    pub score: f64,
    /// Which quantisation gave the score.
    pub order: BlockOrder,
}

/// Ranks a record's blocks against `query` (a normalised vector): by int8 cosine when every
/// block has codes of the query's width, else by sign-bit Hamming distance when every block
/// has bits of that width, else not at all (empty). Best first; ties go to the lower index.
pub fn best_blocks(query: &[f32], blocks: &[BlockVectors<'_>]) -> Vec<RankedBlock> {
    let width = query.len();
    let mut ranked: Vec<RankedBlock> = if let (Some(q), true) = (
        int8_codes(query),
        blocks
            .iter()
            .all(|b| b.int8.is_some_and(|c| c.len() == width)),
    ) {
        blocks
            .iter()
            .filter_map(|b| {
                Some(RankedBlock {
                    index: b.index,
                    score: int8_cosine(&q, b.int8?),
                    order: BlockOrder::Int8,
                })
            })
            .collect()
    } else {
        let q = sign_bits(query);
        if !blocks
            .iter()
            .all(|b| b.bits.is_some_and(|bits| bits.len() == q.len()))
        {
            return Vec::new();
        }
        blocks
            .iter()
            .filter_map(|b| {
                let distance: u32 = b
                    .bits?
                    .iter()
                    .zip(&q)
                    .map(|(a, b)| (a ^ b).count_ones())
                    .sum();
                Some(RankedBlock {
                    index: b.index,
                    score: -f64::from(distance),
                    order: BlockOrder::SignBits,
                })
            })
            .collect()
    };
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    ranked
}

/// `(a·b) / (‖a‖‖b‖)` over int8 codes; 0 when either is zero.
pub fn int8_cosine(a: &[i8], b: &[i8]) -> f64 {
    let (mut dot, mut na, mut nb) = (0i64, 0i64, 0i64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (i64::from(x), i64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0 || nb == 0 {
        return 0.0;
    }
    dot as f64 / ((na as f64).sqrt() * (nb as f64).sqrt())
}

#[cfg(test)]
mod tests;
