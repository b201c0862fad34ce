//! The sign-bit prefilter: Hamming distance between the query's sign words and each admitted
//! row's picks the best C candidates for the int8 re-rank. It only selects; it never scores.

use crate::filter::{RowFilter, ScopeColumns};
use crate::kernels::Kernels;
use crate::quantize::QueryCodes;
use crate::rerank::BLOCK_ROWS;
use crate::topk::BestK;

/// A prefilter candidate, ordered by (Hamming distance, id, row): smaller is better.
pub(crate) type Candidate = (u32, i64, u32);

/// The columns the prefilter reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignColumns<'a> {
    pub(crate) ids: &'a [i64],
    pub(crate) signs: &'a [u64],
    pub(crate) words: usize,
}

/// Counts of one prefilter pass.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PassCounts {
    pub(crate) admitted: u64,
}

impl SignColumns<'_> {
    /// Offers every admitted row of `rows` to `best`, a block at a time.
    pub(crate) fn select(
        &self,
        kernels: &Kernels,
        query: &QueryCodes,
        rows: std::ops::Range<usize>,
        filter: &RowFilter,
        scopes: Option<&ScopeColumns<'_>>,
        best: &mut BestK<Candidate>,
    ) -> PassCounts {
        let mut counts = PassCounts::default();
        let mut distances = [0u32; BLOCK_ROWS];
        // PERF: the worst kept distance is a running threshold; a row strictly above it cannot
        // enter, which rejects most rows with one compare and no heap access.
        let mut threshold = u32::MAX;
        let mut start = rows.start;
        while start < rows.end {
            let n = (rows.end - start).min(BLOCK_ROWS);
            let block = &self.signs[start * self.words..(start + n) * self.words];
            kernels.hamming_batch(query.signs(), block, &mut distances[..n]);
            for (offset, &distance) in distances[..n].iter().enumerate() {
                let row = start + offset;
                if let Some(scopes) = scopes
                    && !scopes.admits(filter, row)
                {
                    continue;
                }
                counts.admitted += 1;
                if distance > threshold {
                    continue;
                }
                if best.push((distance, self.ids[row], row as u32)) && best.len() == best.capacity()
                {
                    threshold = best.worst().map_or(u32::MAX, |c| c.0);
                }
            }
            start += n;
        }
        counts
    }
}
