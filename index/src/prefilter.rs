//! The sign-bit prefilter: Hamming distance between the query's sign words and each admitted
//! row's picks the best C candidates for the int8 re-rank. It only selects; it never scores.

use crate::filter::{RowFilter, ScopeColumns};
use crate::kernels::Kernels;
use crate::quantize::QueryCodes;
use crate::rerank::BLOCK_ROWS;

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

/// Keeps the `capacity` smallest candidates (in [`Candidate`] order) offered to it.
///
/// PERF: no heap. A candidate at or under the running threshold is appended to a list; when
/// the list reaches twice the capacity, a histogram of its distances (integers in
/// `0..=bits`) gives the exact distance of the capacity-th best, the list keeps what is at or
/// under it, and that distance becomes the threshold. A row then costs one compare. The list
/// holds (distance, row) only: a row's id (the tie-break) is read when a cut falls in a tie.
#[derive(Clone, Debug)]
pub(crate) struct Selection<'a> {
    ids: &'a [i64],
    capacity: usize,
    threshold: u32,
    items: Vec<(u32, u32)>,
    histogram: Vec<u32>,
}

impl<'a> Selection<'a> {
    /// An empty selection of at most `capacity` candidates with distances in `0..=bits`, among
    /// rows whose ids are `ids`.
    pub(crate) fn new(ids: &'a [i64], capacity: usize, bits: usize) -> Self {
        Self {
            ids,
            capacity,
            threshold: u32::MAX,
            items: Vec::with_capacity(Self::limit(capacity).min(1 << 20)),
            histogram: vec![0; bits + 1],
        }
    }

    fn limit(capacity: usize) -> usize {
        capacity.saturating_mul(2).max(capacity + 64)
    }

    /// Offers row `row` at Hamming distance `distance`.
    #[inline]
    pub(crate) fn offer(&mut self, distance: u32, row: u32) {
        if distance <= self.threshold {
            self.items.push((distance, row));
            if self.items.len() >= Self::limit(self.capacity) {
                self.compact();
            }
        }
    }

    /// Cuts the list to the candidates at or under the capacity-th best distance, and to
    /// exactly `capacity` by the full order when ties at that distance leave more.
    fn compact(&mut self) {
        if self.items.len() <= self.capacity {
            return;
        }
        if self.capacity == 0 {
            self.items.clear();
            return;
        }
        self.histogram.fill(0);
        let top = self.histogram.len() - 1;
        for c in &self.items {
            self.histogram[(c.0 as usize).min(top)] += 1;
        }
        let mut seen = 0usize;
        // The last bucket also counts distances past the range, so reaching it means "no cut".
        let mut threshold = u32::MAX;
        for (distance, &count) in self.histogram[..top].iter().enumerate() {
            seen += count as usize;
            if seen >= self.capacity {
                threshold = distance as u32;
                break;
            }
        }
        self.items.retain(|c| c.0 <= threshold);
        if self.items.len() > self.capacity {
            let ids = self.ids;
            self.items
                .select_nth_unstable_by_key(self.capacity - 1, |&(d, r)| (d, ids[r as usize], r));
            self.items.truncate(self.capacity);
        }
        self.threshold = threshold;
    }

    /// Adds everything `other` kept (the scan merges candidates of several parts itself).
    #[cfg(test)]
    pub(crate) fn merge(&mut self, other: Self) {
        for (distance, row) in other.items {
            self.offer(distance, row);
        }
    }

    /// The kept candidates (at most `capacity`), in no particular order.
    pub(crate) fn into_candidates(mut self) -> Vec<Candidate> {
        self.compact();
        let ids = self.ids;
        self.items
            .into_iter()
            .map(|(d, r)| (d, ids[r as usize], r))
            .collect()
    }
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
        best: &mut Selection<'_>,
    ) -> PassCounts {
        let mut counts = PassCounts::default();
        let mut distances = [0u32; BLOCK_ROWS];
        let mut mask = [0u8; BLOCK_ROWS];
        let mut start = rows.start;
        while start < rows.end {
            let n = (rows.end - start).min(BLOCK_ROWS);
            let block = &self.signs[start * self.words..(start + n) * self.words];
            kernels.hamming_batch(query.signs(), block, &mut distances[..n]);
            // PERF: the threshold lives in a register and is tested first: it rejects almost
            // every row with one well-predicted compare, before the (unpredictable) mask.
            let mut threshold = best.threshold;
            let admitted = match scopes {
                None => None,
                Some(scopes) => {
                    counts.admitted += scopes.admit_mask(filter, start, &mut mask[..n]) as u64;
                    Some(&mask[..n])
                }
            };
            if admitted.is_none() {
                counts.admitted += n as u64;
            }
            for (offset, &distance) in distances[..n].iter().enumerate() {
                if distance <= threshold && admitted.is_none_or(|m| m[offset] != 0) {
                    best.offer(distance, (start + offset) as u32);
                    threshold = best.threshold;
                }
            }
            start += n;
        }
        counts
    }
}

#[cfg(test)]
mod tests;
