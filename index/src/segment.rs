//! Segments: the index of one table as several immutable generation files (version 2) read
//! together, newest last, each shadowing the older ones. A row's id in a segment, or a tombstone
//! for it, makes every older copy of that id dead, so a write never rewrites an older file; a
//! merge folds adjacent segments into one and drops what is dead.
//!
//! # Pieces
//! - [`SegmentSet`] (here): an immutable snapshot of open segments with, per segment, the rows
//!   newer segments shadow (computed once when the snapshot is made); searched by
//!   `segment/search.rs` with the same kernels and the same merge as one generation.
//! - `segment/manifest.rs`: the manifest file that lists a table's segments, swapped atomically.
//! - `segment/store.rs`: [`SegmentStore`], the owner of a segment directory: commits (a write
//!   batch becomes a small segment, then a new manifest), merges, garbage collection, faults.
//! - `segment/merge.rs`: writing one segment from an adjacent run of segments.
//! - `segment/policy.rs`: [`MergePolicy`], the pure function that picks the next merge.
//! - `segment/files.rs`: the directory lock, the manifest's atomic swap and the fault points.
//!
//! # Invariant
//! The live rows of a set (each id's copy in the newest segment holding it, unless a newer
//! segment tombstones it) answer every search exactly like one generation freshly built from
//! those rows: same hits, same scores bit for bit, same counts (`tests/it/segments.rs`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filter::RowSet;
use crate::format::Dim;
use crate::generation::{EmbedderIdentity, Generation};
use crate::kernels::Kernels;
use crate::quantize::QueryCodes;

mod files;
mod manifest;
mod merge;
mod policy;
mod search;
mod store;

pub use files::{FaultPoint, Faults};
pub use manifest::{Manifest, SegmentEntry, SegmentOrigin, StoreHead};
pub use merge::MergeOutcome;
pub use policy::{MergePlan, MergePolicy, MergeReason, SegmentStats};
pub use search::{SetFilter, SetHit, SetNearFar, SetSearchResult, Window};
pub use store::{CommitOutcome, SegmentStore, WriteBatch};

/// One open segment: its sequence number (unique within its store, the order of the
/// manifest) and its generation.
#[derive(Debug)]
pub struct Segment {
    seq: u64,
    generation: Generation,
    path: Option<PathBuf>,
}

impl Segment {
    /// Opens the segment file at `path` as sequence `seq`.
    pub fn open(seq: u64, path: impl AsRef<Path>) -> Result<Self> {
        let generation = Generation::open(path.as_ref())?;
        Ok(Self {
            seq,
            generation,
            path: Some(path.as_ref().to_path_buf()),
        })
    }

    /// A segment from a generation already open (tests, benches, memory-only sets).
    pub fn from_generation(seq: u64, generation: Generation) -> Self {
        Self {
            seq,
            generation,
            path: None,
        }
    }

    /// The sequence number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The generation.
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// The file it was opened from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The ids this segment shadows in older segments: its rows' ids and its tombstones,
    /// ascending (a tombstone may also name one of its own rows).
    fn shadowed_ids(&self) -> Vec<i64> {
        let g = &self.generation;
        let ids = g.ids();
        let mut out: Vec<i64> = g.id_order().iter().map(|&p| ids[p as usize]).collect();
        out.extend_from_slice(g.tombstones());
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// An immutable snapshot of a table's segments, oldest first, with the rows of each that newer
/// segments shadow. Cheap to clone (segments and dead sets are shared).
#[derive(Clone, Debug)]
pub struct SegmentSet {
    dim: Dim,
    model_id: Arc<str>,
    segments: Vec<Arc<Segment>>,
    dead: Vec<Arc<RowSet>>,
    kernels: Kernels,
}

impl SegmentSet {
    /// An empty set for `embedder`'s vectors.
    pub fn empty(embedder: &EmbedderIdentity) -> Result<Self> {
        Ok(Self {
            dim: Dim::new(embedder.dim)?,
            model_id: embedder.model_id.as_str().into(),
            segments: Vec::new(),
            dead: Vec::new(),
            kernels: Kernels::detect(),
        })
    }

    /// The set of `segments`, oldest first (the order decides which copy of an id wins, not
    /// the sequence numbers, which only need to be unique), every one of `embedder`'s model and
    /// dimension.
    pub fn new(embedder: &EmbedderIdentity, segments: Vec<Arc<Segment>>) -> Result<Self> {
        let mut set = Self::empty(embedder)?;
        for segment in &segments {
            set.check_fits(segment)?;
            set.segments.push(segment.clone());
        }
        let dead = (0..segments.len())
            .map(|i| Arc::new(dead_rows(&segments[i], &segments[i + 1..])))
            .collect();
        set.dead = dead;
        Ok(set)
    }

    /// The same set with `segment` added as the newest: older segments gain the rows it
    /// shadows (copied on write; untouched dead sets stay shared).
    pub fn with_newest(&self, segment: Arc<Segment>) -> Result<Self> {
        self.check_fits(&segment)?;
        let shadowed = segment.shadowed_ids();
        let mut next = self.clone();
        for (older, dead) in next.segments.iter().zip(next.dead.iter_mut()) {
            let mut marks = RowSet::default();
            mark_shadowed(older.generation(), &shadowed, &mut marks);
            if !marks.is_empty() {
                let mut merged = (**dead).clone();
                merged.union_with(&marks);
                *dead = Arc::new(merged);
            }
        }
        next.segments.push(segment);
        next.dead.push(Arc::new(RowSet::default()));
        Ok(next)
    }

    /// The same set with the adjacent run `run` replaced by `merged` (`None`: dropped), which
    /// must hold exactly the run's live rows and the run's tombstones an older segment still
    /// holds a row for. What the run shadowed in older segments, `merged` shadows (a dead row
    /// of the run died by a newer copy or a tombstone, which stays or is carried), so the older
    /// and newer segments' dead sets stay as they are; only `merged`'s own is computed.
    pub fn with_merged(
        &self,
        run: std::ops::Range<usize>,
        merged: Option<Arc<Segment>>,
    ) -> Result<Self> {
        let mut next = self.clone();
        let Some(merged) = merged else {
            next.segments.drain(run.clone());
            next.dead.drain(run);
            return Ok(next);
        };
        self.check_fits(&merged)?;
        let dead = Arc::new(dead_rows(&merged, &self.segments[run.end..]));
        next.segments.splice(run.clone(), [merged]);
        next.dead.splice(run, [dead]);
        Ok(next)
    }

    /// The same set scanned with other kernels (tests compare scalar and detected).
    pub fn with_kernels(mut self, kernels: Kernels) -> Self {
        self.kernels = kernels;
        self
    }

    /// The kernels searches use.
    pub fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// The vector dimension.
    pub fn dim(&self) -> Dim {
        self.dim
    }

    /// The embedder's model id.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The segments, oldest first.
    pub fn segments(&self) -> &[Arc<Segment>] {
        &self.segments
    }

    /// The rows of segment `index` that newer segments shadow.
    pub fn dead(&self, index: usize) -> &RowSet {
        &self.dead[index]
    }

    /// Live rows of segment `index`.
    pub fn live_rows_of(&self, index: usize) -> usize {
        self.segments[index].generation.len() - self.dead[index].len()
    }

    /// Live rows of the whole set.
    pub fn live_rows(&self) -> usize {
        (0..self.segments.len()).map(|i| self.live_rows_of(i)).sum()
    }

    /// Quantises a query for this set (checks its dimension).
    pub fn query(&self, vector: &[f32]) -> Result<QueryCodes> {
        QueryCodes::new(vector, self.dim)
    }

    /// Whether row `row` of segment `index` is live.
    pub fn is_live(&self, index: usize, row: usize) -> bool {
        !self.dead[index].contains(row as u32)
    }

    /// The live row holding `id`: (segment index, row), newest copy first.
    pub fn find(&self, id: i64) -> Option<(usize, u32)> {
        (0..self.segments.len()).rev().find_map(|i| {
            let row = self.segments[i].generation.position_of(id)?;
            self.is_live(i, row as usize).then_some((i, row))
        })
    }

    /// The live rows in file order (created_at descending, id ascending) across segments, as
    /// (segment index, row): what one freshly built generation of them would hold, row by row.
    pub fn live_in_order(&self) -> LiveRows<'_> {
        LiveRows::new(self, 0..self.segments.len(), |_, _| true)
    }

    fn check_fits(&self, segment: &Segment) -> Result<()> {
        let g = segment.generation();
        if g.dim() != self.dim {
            return Err(Error::SegmentMismatch {
                segment: segment.seq,
                reason: "dimension differs from the set's",
            });
        }
        if g.embedder().model_id != *self.model_id {
            return Err(Error::SegmentMismatch {
                segment: segment.seq,
                reason: "model id differs from the set's",
            });
        }
        if self.segments.iter().any(|s| s.seq == segment.seq) {
            return Err(Error::SegmentMismatch {
                segment: segment.seq,
                reason: "sequence already in the set",
            });
        }
        Ok(())
    }
}

/// The rows of `segment` that any of `newer` shadows.
fn dead_rows(segment: &Segment, newer: &[Arc<Segment>]) -> RowSet {
    let mut dead = RowSet::default();
    for other in newer {
        mark_shadowed(segment.generation(), &other.shadowed_ids(), &mut dead);
    }
    dead
}

/// Marks in `dead` the rows of `g` whose ids are in `ids` (ascending). PERF: a binary search
/// per id when the list is short next to the segment, else one merge walk along the id order.
fn mark_shadowed(g: &Generation, ids: &[i64], dead: &mut RowSet) {
    if ids.is_empty() || g.is_empty() {
        return;
    }
    let (rows, order) = (g.ids(), g.id_order());
    if ids.len().saturating_mul(16) < order.len() {
        for &id in ids {
            if let Some(row) = g.position_of(id) {
                dead.insert(row);
            }
        }
        return;
    }
    let mut at = 0usize;
    for &p in order {
        let id = rows[p as usize];
        while at < ids.len() && ids[at] < id {
            at += 1;
        }
        if at == ids.len() {
            break;
        }
        if ids[at] == id {
            dead.insert(p);
        }
    }
}

/// A k-way merge of some segments' rows in file order (created_at descending, id ascending),
/// skipping dead rows and rows `admit(segment, row)` refuses.
pub struct LiveRows<'a> {
    set: &'a SegmentSet,
    cursors: Vec<usize>,
    heap: BinaryHeap<Reverse<(Reverse<i64>, i64, usize)>>,
    admit: Box<dyn Fn(usize, usize) -> bool + 'a>,
}

impl<'a> LiveRows<'a> {
    pub(crate) fn new(
        set: &'a SegmentSet,
        segments: std::ops::Range<usize>,
        admit: impl Fn(usize, usize) -> bool + 'a,
    ) -> Self {
        let mut rows = Self {
            set,
            cursors: vec![0; set.segments.len()],
            heap: BinaryHeap::new(),
            admit: Box::new(admit),
        };
        for s in segments {
            rows.push_next(s);
        }
        rows
    }

    /// Moves segment `s`'s cursor to its next admitted live row and queues it.
    fn push_next(&mut self, s: usize) {
        let g = self.set.segments[s].generation();
        let (created, ids) = (g.created_at(), g.ids());
        while self.cursors[s] < g.len() {
            let row = self.cursors[s];
            if self.set.is_live(s, row) && (self.admit)(s, row) {
                self.heap
                    .push(Reverse((Reverse(created[row]), ids[row], s)));
                return;
            }
            self.cursors[s] += 1;
        }
    }
}

impl Iterator for LiveRows<'_> {
    type Item = (usize, u32);

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((_, _, s)) = self.heap.pop()?;
        let row = self.cursors[s];
        self.cursors[s] += 1;
        self.push_next(s);
        Some((s, row as u32))
    }
}

#[cfg(test)]
mod tests;
