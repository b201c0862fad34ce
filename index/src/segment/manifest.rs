//! The manifest: the one file that says which segments make up a table's index, in which
//! order, and up to which change-log head they are complete. A small text file (an operator can
//! read it), ending with a checksum line, replaced only by write-temp, fsync, rename, fsync the
//! directory, so a reader finds the old manifest or the new one, never a mix.
//!
//! ```text
//! cpersona-segments 1
//! manifest 7
//! next_segment 12
//! changelog_head 345
//! schema_version 9
//! last_merge_ms 1733300000000
//! dim 384
//! model sentence-transformers/all-MiniLM-L6-v2
//! segment 3 merge rows 1000 tombstones 0 bytes 456064 written_ms 1733300000000
//! segment 11 flush rows 3 tombstones 1 bytes 2624 written_ms 1733300001000
//! end 9f3c0a1b2c3d4e5f
//! ```
//! Segment lines run oldest first; segment `n` is the file `seg-<n, 12 digits>.gen`. `end` is
//! the FNV-1a 64 hash of every byte before that line, in hex.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::generation::EmbedderIdentity;

/// The first line of every manifest.
const MAGIC_LINE: &str = "cpersona-segments 1";

/// How a segment came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentOrigin {
    /// A write batch (a flush of changed rows).
    Flush,
    /// A merge of adjacent segments.
    Merge,
    /// A whole-table rebuild.
    Rebuild,
}

impl SegmentOrigin {
    fn name(self) -> &'static str {
        match self {
            SegmentOrigin::Flush => "flush",
            SegmentOrigin::Merge => "merge",
            SegmentOrigin::Rebuild => "rebuild",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "flush" => SegmentOrigin::Flush,
            "merge" => SegmentOrigin::Merge,
            "rebuild" => SegmentOrigin::Rebuild,
            _ => return None,
        })
    }
}

/// One segment as the manifest lists it (checked against the file when it is opened).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SegmentEntry {
    /// Sequence number, unique in the store; names the file.
    pub seq: u64,
    /// How it was made.
    pub origin: SegmentOrigin,
    /// Rows in the file (live or not).
    pub rows: u64,
    /// Tombstones in the file.
    pub tombstones: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// When it was written, UTC ms (status only).
    pub written_ms: u64,
}

impl SegmentEntry {
    /// The file name of segment `seq`.
    pub fn file_name_of(seq: u64) -> String {
        format!("seg-{seq:012}.gen")
    }

    /// This segment's file name.
    pub fn file_name(&self) -> String {
        Self::file_name_of(self.seq)
    }
}

/// The change-log position a store's segments are complete up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StoreHead {
    /// The caller's change-log head: every change at or before it is in the segments.
    pub changelog_head: u64,
    /// The source's schema version.
    pub schema_version: u32,
}

/// A parsed manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Incremented by every swap, so a reader can tell whether the file moved.
    pub version: u64,
    /// The sequence number the next segment gets.
    pub next_segment: u64,
    /// What the segments are complete up to.
    pub head: StoreHead,
    /// When the last merge was published, UTC ms (0: never).
    pub last_merge_ms: u64,
    /// The embedder every segment's vectors come from.
    pub embedder: EmbedderIdentity,
    /// The segments, oldest first.
    pub segments: Vec<SegmentEntry>,
}

impl Manifest {
    /// An empty manifest (version 1, no segments) for `embedder`.
    pub fn empty(embedder: EmbedderIdentity) -> Self {
        Self {
            version: 1,
            next_segment: 1,
            head: StoreHead::default(),
            last_merge_ms: 0,
            embedder,
            segments: Vec::new(),
        }
    }

    /// The manifest's bytes (see the module doc); refuses a model id with a line break.
    pub fn encode(&self) -> Result<Vec<u8>> {
        if self.embedder.model_id.contains(['\n', '\r']) {
            return Err(Error::Manifest {
                path: PathBuf::new(),
                reason: "model id holds a line break",
                line: 0,
            });
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = writeln!(text, "{MAGIC_LINE}");
        let _ = writeln!(text, "manifest {}", self.version);
        let _ = writeln!(text, "next_segment {}", self.next_segment);
        let _ = writeln!(text, "changelog_head {}", self.head.changelog_head);
        let _ = writeln!(text, "schema_version {}", self.head.schema_version);
        let _ = writeln!(text, "last_merge_ms {}", self.last_merge_ms);
        let _ = writeln!(text, "dim {}", self.embedder.dim);
        let _ = writeln!(text, "model {}", self.embedder.model_id);
        for s in &self.segments {
            let _ = writeln!(
                text,
                "segment {} {} rows {} tombstones {} bytes {} written_ms {}",
                s.seq,
                s.origin.name(),
                s.rows,
                s.tombstones,
                s.bytes,
                s.written_ms
            );
        }
        let _ = writeln!(text, "end {:016x}", fnv1a64(text.as_bytes()));
        Ok(text.into_bytes())
    }

    /// Parses and checks a manifest read from `path` (for error messages).
    pub fn decode(bytes: &[u8], path: &Path) -> Result<Self> {
        let bad = |reason: &'static str, line: usize| Error::Manifest {
            path: path.to_path_buf(),
            reason,
            line,
        };
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not utf-8", 0))?;
        let body_end = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
        let (body, last) = text.split_at(body_end);
        let lines: Vec<&str> = body.lines().collect();
        let end_line = lines.len() + 1;
        let sum = last
            .trim_end_matches('\n')
            .strip_prefix("end ")
            .ok_or(bad("no end line (truncated?)", end_line))?;
        if !text.ends_with('\n')
            || u64::from_str_radix(sum, 16).ok() != Some(fnv1a64(body.as_bytes()))
        {
            return Err(bad("checksum does not match", end_line));
        }
        if lines.first() != Some(&MAGIC_LINE) {
            return Err(bad("not a segment manifest", 1));
        }
        let field = |at: usize, key: &str| -> Result<&str> {
            lines
                .get(at)
                .and_then(|l| l.strip_prefix(key))
                .and_then(|l| l.strip_prefix(' '))
                .ok_or(bad("missing or misplaced field", at + 1))
        };
        let number = |at: usize, key: &str| -> Result<u64> {
            field(at, key)?
                .parse()
                .map_err(|_| bad("not a number", at + 1))
        };
        let version = number(1, "manifest")?;
        let next_segment = number(2, "next_segment")?;
        let changelog_head = number(3, "changelog_head")?;
        let schema_version =
            u32::try_from(number(4, "schema_version")?).map_err(|_| bad("not a number", 5))?;
        let last_merge_ms = number(5, "last_merge_ms")?;
        let dim = usize::try_from(number(6, "dim")?).map_err(|_| bad("not a number", 7))?;
        let model_id = field(7, "model")?.to_owned();
        let mut segments: Vec<SegmentEntry> = Vec::new();
        for (i, line) in lines.iter().enumerate().skip(8) {
            let entry = parse_segment(line).ok_or(bad("bad segment line", i + 1))?;
            if entry.seq >= next_segment || segments.iter().any(|s| s.seq == entry.seq) {
                return Err(bad(
                    "segment number repeated or not below next_segment",
                    i + 1,
                ));
            }
            segments.push(entry);
        }
        Ok(Self {
            version,
            next_segment,
            head: StoreHead {
                changelog_head,
                schema_version,
            },
            last_merge_ms,
            embedder: EmbedderIdentity { model_id, dim },
            segments,
        })
    }

    /// Total rows (live or not) and tombstones over the segments.
    pub fn totals(&self) -> (u64, u64) {
        self.segments
            .iter()
            .fold((0, 0), |(r, t), s| (r + s.rows, t + s.tombstones))
    }
}

fn parse_segment(line: &str) -> Option<SegmentEntry> {
    let words: Vec<&str> = line.split(' ').collect();
    let [
        "segment",
        seq,
        origin,
        "rows",
        rows,
        "tombstones",
        tombstones,
        "bytes",
        bytes,
        "written_ms",
        written,
    ] = words.as_slice()
    else {
        return None;
    };
    Some(SegmentEntry {
        seq: seq.parse().ok()?,
        origin: SegmentOrigin::parse(origin)?,
        rows: rows.parse().ok()?,
        tombstones: tombstones.parse().ok()?,
        bytes: bytes.parse().ok()?,
        written_ms: written.parse().ok()?,
    })
}

/// FNV-1a, 64 bits: enough to catch a torn or hand-edited manifest (the rename already makes
/// tearing impossible on a journaling filesystem); not a defence against an adversary.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
