//! Int8 scoring of rows into a top-k: whole contiguous blocks through the batch kernel, or a
//! gathered list of row positions (admitted rows of a filtered block, or prefilter candidates).
//! It trusts the row positions it is handed; the scan validates them.

use crate::kernels::Kernels;
use crate::quantize::{QueryCodes, score};
use crate::topk::{Hit, Ranked, TopHits};

/// Rows per kernel call. PERF: 256 rows × 384 bytes = 96 KiB of codes, small enough to stay in
/// L2 while the scores are pushed, large enough that a call's overhead is amortised.
pub(crate) const BLOCK_ROWS: usize = 256;

/// The columns int8 scoring reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CodeColumns<'a> {
    pub(crate) ids: &'a [i64],
    pub(crate) scales: &'a [f32],
    pub(crate) codes: &'a [i8],
    pub(crate) stride: usize,
}

impl CodeColumns<'_> {
    /// Scores the contiguous rows `start..start + n` (`n <= BLOCK_ROWS`) into `top`.
    pub(crate) fn score_block(
        &self,
        kernels: &Kernels,
        query: &QueryCodes,
        start: usize,
        n: usize,
        top: &mut TopHits,
    ) {
        let mut dots = [0i32; BLOCK_ROWS];
        let rows = &self.codes[start * self.stride..(start + n) * self.stride];
        kernels.dot_i8_batch(query.codes(), rows, self.stride, &mut dots[..n]);
        let mut floor = top.floor();
        for (offset, &dot) in dots[..n].iter().enumerate() {
            self.offer(query, start + offset, dot, top, &mut floor);
        }
    }

    /// Scores the contiguous rows `start..start + mask.len()` (at most `BLOCK_ROWS`) and offers
    /// those whose mask byte is non-zero to `top`.
    pub(crate) fn score_block_masked(
        &self,
        kernels: &Kernels,
        query: &QueryCodes,
        start: usize,
        mask: &[u8],
        top: &mut TopHits,
    ) {
        let mut dots = [0i32; BLOCK_ROWS];
        let n = mask.len();
        let rows = &self.codes[start * self.stride..(start + n) * self.stride];
        kernels.dot_i8_batch(query.codes(), rows, self.stride, &mut dots[..n]);
        let mut floor = top.floor();
        for (offset, (&dot, &m)) in dots[..n].iter().zip(mask).enumerate() {
            if m != 0 {
                self.offer(query, start + offset, dot, top, &mut floor);
            }
        }
    }

    /// Scores the rows at `positions` (`len <= BLOCK_ROWS`) into `top`.
    pub(crate) fn score_gathered(
        &self,
        kernels: &Kernels,
        query: &QueryCodes,
        positions: &[u32],
        top: &mut TopHits,
    ) {
        let mut dots = [0i32; BLOCK_ROWS];
        let n = positions.len();
        kernels.dot_i8_gather(
            query.codes(),
            self.codes,
            self.stride,
            positions,
            &mut dots[..n],
        );
        let mut floor = top.floor();
        for (&row, &dot) in positions.iter().zip(&dots[..n]) {
            self.offer(query, row as usize, dot, top, &mut floor);
        }
    }

    /// PERF: `floor` is the running threshold (the worst kept score once the top is full); a
    /// score strictly below it cannot enter, so most rows cost one compare and no heap access.
    /// Equal scores still go through the heap, where the id breaks the tie.
    #[inline]
    fn offer(&self, query: &QueryCodes, row: usize, dot: i32, top: &mut TopHits, floor: &mut f32) {
        let score = score(dot, query.scale(), self.scales[row]);
        if score < *floor {
            return;
        }
        if top.push(Ranked(Hit {
            id: self.ids[row],
            row: row as u32,
            score,
        })) {
            *floor = top.floor();
        }
    }
}
