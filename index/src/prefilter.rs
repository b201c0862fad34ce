//! The sign-bit prefilter: Hamming distance between the query's sign words and each admitted
//! row's picks the best C candidates for the int8 re-rank. It only selects; it never scores.

use std::sync::atomic::{AtomicU32, Ordering as AtomicOrdering};

use crate::filter::{RowFilter, ScopeColumns};
use crate::kernels::Kernels;
use crate::quantize::QueryCodes;
use crate::rerank::BLOCK_ROWS;

/// A prefilter candidate, ordered by (Hamming distance, id, part, row): smaller is better. A
/// part is one generation of a multi-part scan (a segment); ids are unique among the rows a
/// search admits, so part and row only make the order total.
pub(crate) type Candidate = (u32, i64, u32, u32);

/// The columns the prefilter reads, of part `part`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SignColumns<'a> {
    pub(crate) part: u32,
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
/// holds (distance, part, row) only: a row's id (the tie-break) is read when a cut falls in a
/// tie. One selection may take rows of several parts, so a scan task can cover several small
/// segments and still reach a tight threshold.
#[derive(Clone, Debug)]
pub(crate) struct Selection<'a> {
    ids: &'a [&'a [i64]],
    capacity: usize,
    threshold: u32,
    items: Vec<(u32, u32, u32)>,
    histogram: Vec<u32>,
}

impl<'a> Selection<'a> {
    /// An empty selection of at most `capacity` candidates with distances in `0..=bits`, among
    /// rows whose ids are `ids[part][row]`.
    pub(crate) fn new(ids: &'a [&'a [i64]], capacity: usize, bits: usize) -> Self {
        Self {
            ids,
            capacity,
            threshold: u32::MAX,
            items: Vec::with_capacity(Self::limit(capacity).min(1 << 16)),
            histogram: vec![0; bits + 1],
        }
    }

    fn limit(capacity: usize) -> usize {
        capacity.saturating_mul(2).max(capacity + 64)
    }

    /// Offers row `row` of part `part` at Hamming distance `distance`.
    #[inline]
    pub(crate) fn offer(&mut self, distance: u32, part: u32, row: u32) {
        if distance <= self.threshold {
            self.items.push((distance, part, row));
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
                .select_nth_unstable_by_key(self.capacity - 1, |&(d, p, r)| {
                    (d, ids[p as usize][r as usize], p, r)
                });
            self.items.truncate(self.capacity);
        }
        self.threshold = threshold;
    }

    /// Adds everything `other` kept (the scan merges candidates of several parts itself).
    #[cfg(test)]
    pub(crate) fn merge(&mut self, other: Self) {
        for (distance, part, row) in other.items {
            self.offer(distance, part, row);
        }
    }

    /// The kept candidates (at most `capacity`), in no particular order.
    pub(crate) fn into_candidates(mut self) -> Vec<Candidate> {
        self.compact();
        let ids = self.ids;
        self.items
            .into_iter()
            .map(|(d, p, r)| (d, ids[p as usize][r as usize], p, r))
            .collect()
    }
}

impl SignColumns<'_> {
    /// Offers every admitted row of `rows` to `best`, a block at a time. `shared` is the
    /// threshold every selection of the same list publishes (see [`SharedThreshold`]): rows
    /// above it are not offered, since enough rows at or under it exist elsewhere.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn select(
        &self,
        kernels: &Kernels,
        query: &QueryCodes,
        rows: std::ops::Range<usize>,
        filter: &RowFilter,
        scopes: Option<&ScopeColumns<'_>>,
        best: &mut Selection<'_>,
        shared: &SharedThreshold,
    ) -> PassCounts {
        let mut counts = PassCounts::default();
        let mut distances = [0u32; BLOCK_ROWS];
        let mut mask = [0u8; BLOCK_ROWS];
        let mut start = rows.start;
        while start < rows.end {
            let n = (rows.end - start).min(BLOCK_ROWS);
            let block = &self.signs[start * self.words..(start + n) * self.words];
            kernels.hamming_batch(query.signs(), block, &mut distances[..n]);
            let admitted = match scopes {
                None => {
                    counts.admitted += n as u64;
                    None
                }
                Some(scopes) => {
                    counts.admitted += scopes.admit_mask(filter, start, &mut mask[..n]) as u64;
                    Some(&mask[..n])
                }
            };
            let published = shared.get();
            let mut threshold = best.threshold.min(published);
            // PERF: a group of rows is tested against the threshold in one branch-free pass
            // (vectorised), and only a group holding a row at or under it is walked. Once the
            // threshold has settled almost every group is rejected whole, so the scan costs a
            // compare per row and no unpredictable branch.
            for (g, group) in distances[..n].chunks(GROUP_ROWS).enumerate() {
                let any = group.iter().fold(false, |acc, &d| acc | (d <= threshold));
                if !any {
                    continue;
                }
                let base = g * GROUP_ROWS;
                for (i, &distance) in group.iter().enumerate() {
                    let offset = base + i;
                    if distance <= threshold && admitted.is_none_or(|m| m[offset] != 0) {
                        best.offer(distance, self.part, (start + offset) as u32);
                        threshold = best.threshold.min(published);
                    }
                }
            }
            if best.threshold < published {
                shared.lower_to(best.threshold);
            }
            start += n;
        }
        counts
    }
}

/// Rows tested against the threshold per branch.
const GROUP_ROWS: usize = 16;

/// The lowest threshold any selection of one list has reached, shared by the rayon tasks of
/// that list. A selection's threshold is the distance of its `capacity`-th best candidate, so
/// at least `capacity` admitted rows lie at or under it: no row above it can be among the
/// list's best `capacity`, whatever task scans it. Filtering by it changes no result (ties at
/// it are still offered), only how many rows each task offers; a task that starts after
/// another has settled skips its warm-up.
#[derive(Debug)]
pub(crate) struct SharedThreshold(AtomicU32);

impl SharedThreshold {
    pub(crate) fn new() -> Self {
        Self(AtomicU32::new(u32::MAX))
    }

    fn get(&self) -> u32 {
        self.0.load(AtomicOrdering::Relaxed)
    }

    fn lower_to(&self, threshold: u32) {
        self.0.fetch_min(threshold, AtomicOrdering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
