//! Unit tests of the merge policy (levels, plans, and a simulated fill that bounds write
//! amplification and the segment count) and of the manifest's encoding.

use std::path::Path;

use super::manifest::{Manifest, SegmentEntry, SegmentOrigin, StoreHead};
use super::policy::{MergePolicy, MergeReason, SegmentStats};
use crate::error::Error;
use crate::generation::EmbedderIdentity;

fn stats(seq: u64, live: u64) -> SegmentStats {
    SegmentStats {
        seq,
        rows: live,
        live_rows: live,
        tombstones: 0,
    }
}

#[test]
fn levels_step_by_the_merge_factor_above_the_floor() {
    let p = MergePolicy {
        floor_rows: 2048,
        ..MergePolicy::default()
    };
    assert_eq!(p.level(0), 0);
    assert_eq!(p.level(2048 * 8 - 1), 0);
    assert_eq!(p.level(2048 * 8), 1);
    assert_eq!(p.level(2048 * 64 - 1), 1);
    assert_eq!(p.level(2048 * 64), 2);
    let d = MergePolicy::default();
    assert_eq!(
        (d.level(7), d.level(8), d.level(63), d.level(64)),
        (0, 1, 1, 2)
    );
    assert_eq!(
        p.level(u64::MAX),
        p.level(u64::MAX / 2).max(p.level(u64::MAX))
    );
}

#[test]
fn a_full_level_merges_its_oldest_members_and_the_newest_level_goes_first() {
    let p = MergePolicy::default();
    // One big segment, eight level-1 ones (10 rows) after it: those eight merge.
    let mut segments = vec![stats(1, 500_000)];
    segments.extend((2..10).map(|s| stats(s, 10)));
    let plan = p.plan(&segments).unwrap();
    assert_eq!(plan.seqs, (2..10).collect::<Vec<_>>());
    assert_eq!(plan.reason, MergeReason::Level(1));
    assert_eq!(plan.live_rows, 80);
    // Seven are not enough.
    assert_eq!(p.plan(&segments[..8]), None);
}

#[test]
fn dead_heavy_and_empty_segments_are_rewritten_alone() {
    let p = MergePolicy::default();
    let mut heavy = stats(1, 10_000);
    heavy.live_rows = 7_000;
    assert_eq!(
        p.plan(&[heavy, stats(2, 5)]).unwrap().reason,
        MergeReason::Dead
    );
    heavy.live_rows = 8_000;
    assert_eq!(p.plan(&[heavy, stats(2, 5)]), None);
    let mut gone = stats(3, 0);
    gone.rows = 40;
    let plan = p.plan(&[stats(1, 50), gone]).unwrap();
    assert_eq!((plan.seqs, plan.reason), (vec![3], MergeReason::Empty));
}

/// Fills a simulated store `flushes` times with `per_flush` new rows each, running every merge
/// the policy plans after each flush; returns (rows written / rows stored, most segments seen).
fn simulate(policy: &MergePolicy, flushes: u64, per_flush: u64) -> (f64, usize) {
    let mut segments: Vec<SegmentStats> = Vec::new();
    let mut next = 1u64;
    let mut written = 0u64;
    let mut most = 0usize;
    for _ in 0..flushes {
        segments.push(stats(next, per_flush));
        next += 1;
        written += per_flush;
        most = most.max(segments.len());
        while let Some(plan) = policy.plan(&segments) {
            let start = segments.iter().position(|s| s.seq == plan.seqs[0]).unwrap();
            let end = start + plan.seqs.len();
            written += plan.live_rows;
            segments.splice(start..end, [stats(next, plan.live_rows)]);
            next += 1;
        }
    }
    (written as f64 / (flushes * per_flush) as f64, most)
}

#[test]
fn write_amplification_and_segment_count_stay_logarithmic() {
    let p = MergePolicy::default();
    // Figures quoted in policy.rs: one row per flush to 100K rows.
    // The figures quoted in policy.rs.
    let cases = [
        (100_000u64, 1u64, 5.96, 38usize),
        (100_000, 10, 5.96, 38),
        (10_000, 100, 4.79, 30),
    ];
    for (flushes, per_flush, amplification, segments) in cases {
        let (got, most) = simulate(&p, flushes, per_flush);
        assert!(
            (got - amplification).abs() < 0.01,
            "{per_flush} per flush: {got}"
        );
        assert_eq!(most, segments, "{per_flush} per flush");
        // The bound: once per level climbed, at most m - 1 segments per level.
        let levels = (flushes as f64).log(8.0).ceil();
        assert!(got <= 1.0 + levels, "{got} > 1 + {levels}");
        assert!(most as f64 <= 7.0 * (levels + 1.0), "{most} segments");
    }
    // A flush itself never rewrites: with merging off, rows are written once.
    let never = MergePolicy {
        merge_factor: usize::MAX,
        ..p.clone()
    };
    assert_eq!(simulate(&never, 1000, 3).0, 1.0);
}

fn manifest() -> Manifest {
    let mut m = Manifest::empty(EmbedderIdentity {
        model_id: "org/model name".into(),
        dim: 384,
    });
    m.version = 7;
    m.next_segment = 12;
    m.head = StoreHead {
        changelog_head: 345,
        schema_version: 9,
    };
    m.last_merge_ms = 1_733_300_000_000;
    m.segments = vec![
        SegmentEntry {
            seq: 3,
            origin: SegmentOrigin::Merge,
            rows: 1000,
            tombstones: 0,
            bytes: 456_064,
            written_ms: 1,
        },
        SegmentEntry {
            seq: 11,
            origin: SegmentOrigin::Flush,
            rows: 3,
            tombstones: 1,
            bytes: 2624,
            written_ms: 2,
        },
    ];
    m
}

#[test]
fn a_manifest_round_trips_and_any_damage_is_refused() {
    let m = manifest();
    let bytes = m.encode().unwrap();
    let path = Path::new("MANIFEST");
    assert_eq!(Manifest::decode(&bytes, path).unwrap(), m);
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains("\nsegment 11 flush rows 3 tombstones 1 bytes 2624 written_ms 2\n"));
    // Every single-byte change and every truncation is caught (checksum or structure).
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0x01;
        assert!(Manifest::decode(&damaged, path).is_err(), "byte {i}");
        assert!(Manifest::decode(&bytes[..i], path).is_err(), "cut at {i}");
    }
    // A segment numbered at or past next_segment is refused even with a right checksum.
    let mut bad = m.clone();
    bad.next_segment = 11;
    let err = Manifest::decode(&bad.encode().unwrap(), path).unwrap_err();
    assert!(matches!(err, Error::Manifest { line: 10, .. }), "{err:?}");
    let mut newline = m;
    newline.embedder.model_id = "a\nb".into();
    assert!(newline.encode().is_err());
}
