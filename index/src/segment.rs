//! Segments: the index of one table as several immutable generation files plus tombstones,
//! listed by a manifest that is swapped atomically.

/// A step of a commit or merge where a test can inject a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    /// After the new segment file is written and fsynced under its pending name.
    SegmentWritten,
}
