//! The merge policy: a pure function from the segments' sizes (oldest first) to the next merge,
//! if any. Log-structured, in the manner of tantivy's `LogMergePolicy` and LevelDB's levels:
//! a segment's level is `floor(log_m(live rows / floor_rows))` (m = `merge_factor`);
//! `merge_factor` adjacent segments of one level merge into one of the next level; a segment
//! whose dead share passes `max_dead_share` is rewritten alone to drop what is dead.
//!
//! # Why log-structured and adjacent
//! A segment shadows every older one (`segment.rs`), so a merge must take an adjacent run: the
//! merged segment then sits where the run sat and the order of every id's copies is unchanged.
//! Lucene's `TieredMergePolicy` picks any segments of similar size, which its per-segment
//! delete bitmaps allow and our shadowing does not. Flushes arrive newest last, so sizes fall
//! from oldest to newest and same-level segments are adjacent anyway: the log policy loses
//! nothing by insisting on it.
//!
//! # Cost
//! A row is written once by its flush and once per level it climbs: with `r` rows per flush and
//! `N` rows, about `1 + log_m(N / r)` writes of its bytes. Simulated with the defaults
//! (`segment/tests.rs`): one row per flush to 100K rows writes each row 5.96 times, ten rows per
//! flush to 1M 5.96 times, a hundred per flush to 1M 4.79 times; a flush itself rewrites
//! nothing. At most `m - 1` segments wait per level, so a search reads at most about
//! `(m - 1) · (levels + 1)` segments: 38 in those simulations at worst, 30 for flushes of 100.
//! The floor is 1 row by default: a floor of F rows makes every segment under `F·m` rows one
//! level, so a flush of one row rewrites the whole bottom level every `m - 1` flushes (with
//! F = 2048 the simulation wrote each row 1,154 times).

/// The knobs of the log-structured policy.
#[derive(Clone, Debug, PartialEq)]
pub struct MergePolicy {
    /// Segments of one level that merge into one (at least 2).
    pub merge_factor: usize,
    /// Live rows under which every segment is level 0.
    pub floor_rows: usize,
    /// A segment of at least `dead_min_rows` rows whose dead share (dead rows over rows)
    /// reaches this is rewritten alone.
    pub max_dead_share: f64,
    /// See `max_dead_share`: smaller segments wait for their level's merge.
    pub dead_min_rows: usize,
    /// Most segments one merge takes.
    pub max_merge_segments: usize,
}

impl Default for MergePolicy {
    fn default() -> Self {
        Self {
            merge_factor: 8,
            floor_rows: 1,
            max_dead_share: 0.25,
            dead_min_rows: 1024,
            max_merge_segments: 32,
        }
    }
}

/// What the policy reads of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentStats {
    /// Sequence number.
    pub seq: u64,
    /// Rows in the file.
    pub rows: u64,
    /// Rows no newer segment shadows.
    pub live_rows: u64,
    /// Tombstones in the file.
    pub tombstones: u64,
}

/// Why a merge was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeReason {
    /// `merge_factor` adjacent segments of one level (the level given).
    Level(u32),
    /// One segment's dead share passed the limit.
    Dead,
    /// A segment with neither live rows nor tombstones: dropping it costs nothing.
    Empty,
}

/// A merge to run: an adjacent run of segments, oldest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergePlan {
    /// The segments' sequence numbers, oldest first.
    pub seqs: Vec<u64>,
    /// Why.
    pub reason: MergeReason,
    /// Live rows the merged segment will hold.
    pub live_rows: u64,
}

impl MergePolicy {
    /// The level of a segment with `live_rows` live rows.
    pub fn level(&self, live_rows: u64) -> u32 {
        let factor = self.merge_factor.max(2) as u64;
        let mut bound = (self.floor_rows.max(1) as u64).saturating_mul(factor);
        // Level 0 is everything under floor·m rows, level 1 under floor·m², and so on.
        let mut level = 0;
        while live_rows >= bound && bound < u64::MAX {
            level += 1;
            bound = bound.saturating_mul(factor);
        }
        level
    }

    /// The next merge for `segments` (oldest first), or `None` when the set is in shape.
    /// Cheap merges first: empty segments, then the newest full level (the smallest), then
    /// dead-heavy segments.
    pub fn plan(&self, segments: &[SegmentStats]) -> Option<MergePlan> {
        if let Some(s) = segments
            .iter()
            .find(|s| s.live_rows == 0 && s.tombstones == 0)
        {
            return Some(MergePlan {
                seqs: vec![s.seq],
                reason: MergeReason::Empty,
                live_rows: 0,
            });
        }
        let factor = self.merge_factor.max(2);
        let levels: Vec<u32> = segments.iter().map(|s| self.level(s.live_rows)).collect();
        // Runs of one level, newest first.
        let mut end = segments.len();
        while end > 0 {
            let level = levels[end - 1];
            let mut start = end - 1;
            while start > 0 && levels[start - 1] == level {
                start -= 1;
            }
            if end - start >= factor {
                // The oldest of the run first, so what stays behind is the newest.
                let take = (end - start).min(self.max_merge_segments.max(factor));
                let run = &segments[start..start + take];
                return Some(MergePlan {
                    seqs: run.iter().map(|s| s.seq).collect(),
                    reason: MergeReason::Level(level),
                    live_rows: run.iter().map(|s| s.live_rows).sum(),
                });
            }
            end = start;
        }
        segments
            .iter()
            .find(|s| {
                s.rows >= self.dead_min_rows as u64
                    && (s.rows - s.live_rows) as f64 >= self.max_dead_share * s.rows as f64
            })
            .map(|s| MergePlan {
                seqs: vec![s.seq],
                reason: MergeReason::Dead,
                live_rows: s.live_rows,
            })
    }
}
