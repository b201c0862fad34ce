//! Writing one segment from an adjacent run of a set's segments: the run's live rows in file
//! order, copied as they are quantised (so the bytes equal a fresh build of those rows), and
//! the run's tombstones that an older segment still holds. Dead rows and tombstones nothing
//! older needs are dropped; that is what a merge reclaims.

use std::ops::Range;
use std::path::Path;

use super::{LiveRows, SegmentSet};
use crate::error::Result;
use crate::generation::{GenerationMeta, SourceFingerprint};
use crate::writer::{GenerationWriter, QuantizedRow, Scope, WriteSummary};

/// What a merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeOutcome {
    /// The new segment's sequence number; `None` when the run held nothing to keep (every row
    /// dead, no tombstone needed), so the run was only dropped.
    pub seq: Option<u64>,
    /// The segments it replaced, oldest first.
    pub replaced: Vec<u64>,
    /// Rows written (the run's live rows).
    pub rows: u64,
    /// Dead rows of the run left behind.
    pub dropped_rows: u64,
    /// Tombstones carried (an older segment holds their id).
    pub tombstones: u64,
    /// Tombstones left behind.
    pub dropped_tombstones: u64,
    /// Size of the new file in bytes (0 without one).
    pub bytes: u64,
}

/// The header fields of a merged segment: the largest of the run's, so the same run always
/// gives the same bytes.
pub(crate) fn merged_meta(set: &SegmentSet, run: Range<usize>) -> GenerationMeta {
    let mut meta = GenerationMeta {
        generation: 0,
        source: SourceFingerprint::default(),
        embedder: crate::generation::EmbedderIdentity {
            model_id: set.model_id().to_owned(),
            dim: set.dim().get(),
        },
    };
    for segment in &set.segments()[run] {
        let g = segment.generation();
        meta.generation = meta.generation.max(g.generation());
        let source = g.source();
        meta.source.changelog_head = meta.source.changelog_head.max(source.changelog_head);
        meta.source.schema_version = meta.source.schema_version.max(source.schema_version);
    }
    meta
}

/// The run's tombstones an older segment (one before `run.start`) holds a row for, ascending.
pub(crate) fn carried_tombstones(set: &SegmentSet, run: Range<usize>) -> (Vec<i64>, u64) {
    let older = &set.segments()[..run.start];
    let mut all: Vec<i64> = set.segments()[run]
        .iter()
        .flat_map(|s| s.generation().tombstones().iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    let total = all.len() as u64;
    all.retain(|&id| {
        older
            .iter()
            .any(|s| s.generation().position_of(id).is_some())
    });
    let dropped = total - all.len() as u64;
    (all, dropped)
}

/// Writes the merged segment of `run` to `target` (temporary name, fsync, rename, like every
/// generation). Returns the summary and the outcome's counts (its `seq` left `None`).
pub(crate) fn write_run(
    set: &SegmentSet,
    run: Range<usize>,
    target: &Path,
) -> Result<(WriteSummary, MergeOutcome)> {
    let meta = merged_meta(set, run.clone());
    let (tombstones, dropped_tombstones) = carried_tombstones(set, run.clone());
    let mut writer = GenerationWriter::create(target, meta)?;
    writer.set_tombstones(tombstones.iter().copied())?;
    let stride = set.dim().code_stride();
    let words = set.dim().sign_words();
    let dim = set.dim().get();
    let mut rows = 0u64;
    for (s, row) in LiveRows::new(set, run.clone(), |_, _| true) {
        let g = set.segments()[s].generation();
        let r = row as usize;
        let labels = g.labels(r);
        writer.push_quantized(&QuantizedRow {
            id: g.ids()[r],
            created_at: g.created_at()[r],
            scope: Scope {
                agent: labels[0],
                project: labels[1],
                channel: labels[2],
                source: labels[3],
            },
            codes: &g.codes()[r * stride..r * stride + dim],
            scale: g.scales()[r],
            signs: &g.signs()[r * words..(r + 1) * words],
        })?;
        rows += 1;
    }
    let total: u64 = set.segments()[run.clone()]
        .iter()
        .map(|s| s.generation().len() as u64)
        .sum();
    let summary = writer.finish()?;
    let outcome = MergeOutcome {
        seq: None,
        replaced: set.segments()[run].iter().map(|s| s.seq()).collect(),
        rows,
        dropped_rows: total - rows,
        tombstones: tombstones.len() as u64,
        dropped_tombstones,
        bytes: summary.bytes,
    };
    Ok((summary, outcome))
}
