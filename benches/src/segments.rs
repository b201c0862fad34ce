//! Segment layouts of a search fixture's rows for the segmented-search bench: the same live
//! rows as the fixture's one generation, cut into segment files the way a store would hold
//! them, so a search over each layout can be timed against the single generation (and its
//! hits checked equal). Files are cached beside the fixture.

use std::path::Path;
use std::sync::Arc;

use cpersona_index::segment::{MergePolicy, Segment, SegmentSet, SegmentStats};
use cpersona_index::{Generation, GenerationMeta, GenerationWriter, QuantizedRow, Scope};

use crate::{SearchFixture, cache_dir};

/// How the rows are cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One segment: the fixture's generation.
    Single,
    /// The oldest 90% in one segment, the newest 10% in the segments the default merge policy
    /// leaves after flushes of `flush_rows` rows (nothing merged into the big one since).
    BigPlusTail {
        /// Rows per flush.
        flush_rows: usize,
        /// Also re-put every 100th row of the big segment in the small ones (an edit keeps
        /// its created_at), so 1% of the big segment is dead.
        updates: bool,
    },
    /// `count` segments of equal size.
    Equal {
        /// How many.
        count: usize,
    },
}

impl Layout {
    /// A short label for the bench output.
    pub fn label(&self) -> String {
        match self {
            Layout::Single => "1 segment".into(),
            Layout::BigPlusTail {
                flush_rows,
                updates,
            } => format!(
                "90% + 10% in flushes of {flush_rows}{}",
                if *updates { " + 1% updated" } else { "" }
            ),
            Layout::Equal { count } => format!("{count} equal segments"),
        }
    }
}

/// The sizes (oldest first) the default policy leaves after `rows` arrive in flushes of
/// `flush_rows`, every planned merge run.
pub fn policy_sizes(rows: usize, flush_rows: usize) -> Vec<usize> {
    let policy = MergePolicy::default();
    let mut segments: Vec<SegmentStats> = Vec::new();
    let mut next = 1;
    let mut left = rows;
    let stats = |seq: u64, n: u64| SegmentStats {
        seq,
        rows: n,
        live_rows: n,
        tombstones: 0,
    };
    while left > 0 {
        let n = left.min(flush_rows.max(1));
        left -= n;
        segments.push(stats(next, n as u64));
        next += 1;
        while let Some(plan) = policy.plan(&segments) {
            let start = segments
                .iter()
                .position(|s| s.seq == plan.seqs[0])
                .unwrap_or(0);
            let end = start + plan.seqs.len();
            segments.splice(start..end, [stats(next, plan.live_rows)]);
            next += 1;
        }
    }
    segments.iter().map(|s| s.rows as usize).collect()
}

/// The fixture's rows cut by `layout`, as an open set (files cached in [`cache_dir`]).
pub fn segment_set(fixture: &SearchFixture, layout: Layout) -> std::io::Result<SegmentSet> {
    let g = &fixture.generation;
    let embedder = g.embedder();
    let n = g.len();
    // Positions of each segment's rows, oldest segment first (rows are newest first, so the
    // oldest segment holds the highest positions).
    let mut groups: Vec<Vec<usize>> = match layout {
        Layout::Single => {
            let segment = Segment::open(1, &fixture.path).map_err(std::io::Error::other)?;
            return SegmentSet::new(&embedder, vec![Arc::new(segment)])
                .map_err(std::io::Error::other);
        }
        Layout::Equal { count } => {
            let size = n.div_ceil(count.max(1)).max(1);
            (0..n)
                .step_by(size)
                .map(|start| (start..(start + size).min(n)).collect())
                .rev()
                .collect()
        }
        Layout::BigPlusTail {
            flush_rows,
            updates,
        } => {
            let tail = n / 10;
            let mut groups = vec![(tail..n).collect::<Vec<usize>>()];
            let mut end = tail;
            for size in policy_sizes(tail, flush_rows) {
                groups.push((end - size..end).collect());
                end -= size;
            }
            if updates {
                let small = groups.len() - 1;
                for (i, pos) in (tail..n).step_by(100).enumerate() {
                    groups[1 + i % small.max(1)].push(pos);
                }
                for group in &mut groups[1..] {
                    group.sort_unstable();
                }
            }
            groups
        }
    };
    let key = format!(
        "{}-{layout:?}",
        fixture
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
    .replace([' ', '{', '}', ':', ','], "");
    let mut segments = Vec::with_capacity(groups.len());
    for (i, group) in groups.iter_mut().enumerate() {
        let path = cache_dir().join(format!("{key}-{i}.seg"));
        if Generation::open(&path).map(|s| s.len()).ok() != Some(group.len()) {
            write_segment(g, group, &path)?;
        }
        let segment = Segment::open(i as u64 + 1, &path).map_err(std::io::Error::other)?;
        segments.push(Arc::new(segment));
    }
    SegmentSet::new(&embedder, segments).map_err(std::io::Error::other)
}

fn write_segment(g: &Generation, positions: &[usize], path: &Path) -> std::io::Result<()> {
    let meta = GenerationMeta {
        generation: 1,
        source: g.source(),
        embedder: g.embedder(),
    };
    let mut writer = GenerationWriter::create(path, meta).map_err(std::io::Error::other)?;
    let (stride, words, dim) = (g.dim().code_stride(), g.dim().sign_words(), g.dim().get());
    for &r in positions {
        let labels = g.labels(r);
        writer
            .push_quantized(&QuantizedRow {
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
            })
            .map_err(std::io::Error::other)?;
    }
    writer.finish().map_err(std::io::Error::other)?;
    Ok(())
}
