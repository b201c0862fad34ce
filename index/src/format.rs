//! The generation file format (see `index/FORMAT.md`): the `#[repr(C)]` Pod headers of both
//! versions, the section layout, and `validate` (in `format/validate.rs`), which turns untrusted
//! bytes into checked section ranges once. Safe code only: every view is made with bytemuck's
//! checked casts, so a bad file is an `Error`, never undefined behaviour or a panic.
//!
//! Version 2 (written) adds two sections to version 1 (still read): `tombstones`, the ids a
//! segment removes from the segments older than it, and `id_order`, the row positions sorted by
//! id, so a tombstone finds its row by binary search without a map built at open.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::error::Result;

mod validate;

pub use validate::{cast, validate};

// FORMAT: the format is little-endian and read by casting bytes in place, which is only right
// on a little-endian host.
#[cfg(target_endian = "big")]
compile_error!("the generation format is little-endian; big-endian hosts are not supported");

/// The first eight bytes of every generation file (both versions).
pub const MAGIC: [u8; 8] = *b"CPGEN\0\0\x01";
/// The format version this build writes.
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format version this build reads.
pub const OLDEST_READ_VERSION: u32 = 1;
/// Alignment of the header and every section, in bytes (a cache line and an AVX-512 register).
pub const ALIGN: usize = 64;
/// Largest dimension the format accepts.
pub const MAX_DIM: usize = 65_536;
/// Longest model id and dictionary entry, in bytes.
pub const MAX_STRING: usize = 4096;
/// Number of sections of version 2.
pub const SECTION_COUNT: usize = 16;
/// Number of sections of version 1 (the first fourteen of version 2).
pub const SECTION_COUNT_V1: usize = 14;

/// Section indices, in file order.
pub mod section {
    /// The embedder's model id, UTF-8.
    pub const MODEL_ID: usize = 0;
    /// Dictionary of agent ids.
    pub const DICT_AGENT: usize = 1;
    /// Dictionary of project ids.
    pub const DICT_PROJECT: usize = 2;
    /// Dictionary of channels.
    pub const DICT_CHANNEL: usize = 3;
    /// Dictionary of sources.
    pub const DICT_SOURCE: usize = 4;
    /// Row ids, i64.
    pub const IDS: usize = 5;
    /// Row creation times, i64 UTC milliseconds.
    pub const CREATED_AT: usize = 6;
    /// Agent codes, u32.
    pub const AGENT: usize = 7;
    /// Project codes, u32.
    pub const PROJECT: usize = 8;
    /// Channel codes, u32.
    pub const CHANNEL: usize = 9;
    /// Source codes, u32.
    pub const SOURCE: usize = 10;
    /// Per-row scale, f32.
    pub const SCALE: usize = 11;
    /// Int8 codes, `code_stride` bytes per row.
    pub const CODES: usize = 12;
    /// Sign bits, `sign_words` u64 per row.
    pub const SIGNS: usize = 13;
    /// Version 2: ids removed from older segments, i64, strictly ascending.
    pub const TOMBSTONES: usize = 14;
    /// Version 2: row positions ordered by id, u32.
    pub const ID_ORDER: usize = 15;
    /// Names for error messages, in section order.
    pub const NAMES: [&str; super::SECTION_COUNT] = [
        "model_id",
        "dict_agent",
        "dict_project",
        "dict_channel",
        "dict_source",
        "ids",
        "created_at",
        "agent",
        "project",
        "channel",
        "source",
        "scale",
        "codes",
        "signs",
        "tombstones",
        "id_order",
    ];
}

/// One entry of the section table: where a section starts and how long it is, in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct SectionEntry {
    /// Byte offset from the start of the file; a multiple of [`ALIGN`].
    pub offset: u64,
    /// Length in bytes (without padding).
    pub len: u64,
}

/// The fixed 384-byte header of version 2 at offset 0. FORMAT: field order and sizes mirror
/// `FORMAT.md`; the first 64 bytes are laid out as in version 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`FORMAT_VERSION`] (a version 1 file read through [`validate`] keeps its 1 here).
    pub format_version: u32,
    /// Size of this header in bytes (384; 320 in version 1).
    pub header_len: u32,
    /// Vector dimension.
    pub dim: u32,
    /// Bytes per row in the codes section: `dim` rounded up to a multiple of 64.
    pub code_stride: u32,
    /// u64 words per row in the signs section: `ceil(dim / 64)`.
    pub sign_words: u32,
    /// [`SECTION_COUNT`] ([`SECTION_COUNT_V1`] in version 1).
    pub section_count: u32,
    /// Number of rows.
    pub count: u64,
    /// Generation number, chosen by the caller (monotonic per table; a segment's sequence).
    pub generation: u64,
    /// Opaque change-log head the generation was built from.
    pub changelog_head: u64,
    /// Schema version of the source the generation was built from.
    pub schema_version: u32,
    /// Dimension of the embedder (equals `dim`).
    pub embed_dim: u32,
    /// Section table.
    pub sections: [SectionEntry; SECTION_COUNT],
    /// Zero.
    pub reserved: [u64; 8],
}

/// The fixed 320-byte header of version 1, read only.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct HeaderV1 {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// 1.
    pub format_version: u32,
    /// 320.
    pub header_len: u32,
    /// Vector dimension.
    pub dim: u32,
    /// Bytes per row in the codes section.
    pub code_stride: u32,
    /// u64 words per row in the signs section.
    pub sign_words: u32,
    /// 14.
    pub section_count: u32,
    /// Number of rows.
    pub count: u64,
    /// Generation number.
    pub generation: u64,
    /// Opaque change-log head.
    pub changelog_head: u64,
    /// Schema version of the source.
    pub schema_version: u32,
    /// Dimension of the embedder.
    pub embed_dim: u32,
    /// Section table.
    pub sections: [SectionEntry; SECTION_COUNT_V1],
    /// Zero.
    pub reserved: [u64; 4],
}

/// Size of [`Header`] in bytes.
pub const HEADER_LEN: usize = std::mem::size_of::<Header>();
/// Size of [`HeaderV1`] in bytes.
pub const HEADER_LEN_V1: usize = std::mem::size_of::<HeaderV1>();
const _: () = assert!(HEADER_LEN == 384 && HEADER_LEN.is_multiple_of(ALIGN));
const _: () = assert!(HEADER_LEN_V1 == 320 && HEADER_LEN_V1.is_multiple_of(ALIGN));

/// A checked vector dimension, with the row strides that follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim(u32);

impl Dim {
    /// Checks `1 <= dim <= MAX_DIM`.
    pub fn new(dim: usize) -> Result<Self> {
        if dim == 0 || dim > MAX_DIM {
            return Err(crate::error::Error::DimUnsupported { dim });
        }
        Ok(Self(dim as u32))
    }

    /// The dimension.
    pub fn get(self) -> usize {
        self.0 as usize
    }

    /// Bytes per row of int8 codes: the dimension rounded up to a multiple of 64, zero padded.
    pub fn code_stride(self) -> usize {
        self.get().div_ceil(64) * 64
    }

    /// u64 words of sign bits per row.
    pub fn sign_words(self) -> usize {
        self.get().div_ceil(64)
    }
}

/// Rounds `n` up to a multiple of [`ALIGN`].
pub fn align_up(n: u64) -> Option<u64> {
    n.checked_add(ALIGN as u64 - 1)
        .map(|v| v / ALIGN as u64 * ALIGN as u64)
}

/// Lays sections out in order after a header of `header_len` bytes; returns the table and the
/// file length.
pub fn layout<const N: usize>(
    header_len: usize,
    lens: &[u64; N],
) -> Option<([SectionEntry; N], u64)> {
    let mut table = [SectionEntry::default(); N];
    let mut at = header_len as u64;
    for (entry, &len) in table.iter_mut().zip(lens) {
        *entry = SectionEntry { offset: at, len };
        at = align_up(at.checked_add(len)?)?;
    }
    Some((table, at))
}

/// Fixed section lengths for `count` rows of dimension `dim` (dictionaries, model id and
/// tombstones are given by the caller). The last entry, `id_order`, exists in version 2 only.
pub fn row_section_lens(count: u64, dim: Dim) -> Option<[(usize, u64); 10]> {
    let stride = dim.code_stride() as u64;
    let words = dim.sign_words() as u64;
    Some([
        (section::IDS, count.checked_mul(8)?),
        (section::CREATED_AT, count.checked_mul(8)?),
        (section::AGENT, count.checked_mul(4)?),
        (section::PROJECT, count.checked_mul(4)?),
        (section::CHANNEL, count.checked_mul(4)?),
        (section::SOURCE, count.checked_mul(4)?),
        (section::SCALE, count.checked_mul(4)?),
        (section::CODES, count.checked_mul(stride)?),
        (section::SIGNS, count.checked_mul(words)?.checked_mul(8)?),
        (section::ID_ORDER, count.checked_mul(4)?),
    ])
}

/// Encodes a dictionary: u32 entry count, u32 end offsets (n + 1, starting at 0), UTF-8 bytes.
pub fn encode_dictionary(entries: &[&str]) -> Vec<u8> {
    let total: usize = entries.iter().map(|s| s.len()).sum();
    let mut out = Vec::with_capacity(4 + 4 * (entries.len() + 1) + total);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    let mut end = 0u32;
    out.extend_from_slice(&end.to_le_bytes());
    for s in entries {
        end += s.len() as u32;
        out.extend_from_slice(&end.to_le_bytes());
    }
    for s in entries {
        out.extend_from_slice(s.as_bytes());
    }
    out
}

/// A validated file: the header and the byte range of each section.
#[derive(Clone, Debug)]
pub struct Validated {
    /// The header, in the version 2 shape; a version 1 file keeps `format_version == 1`, its
    /// own `header_len` and `section_count`, and empty `tombstones` and `id_order` entries at
    /// the end of the file.
    pub header: Header,
    /// Byte range of each section (version 1: the last two are empty).
    pub ranges: [Range<usize>; SECTION_COUNT],
    /// Parsed dictionaries (agent, project, channel, source).
    pub dictionaries: [Vec<Box<str>>; 4],
    /// The embedder's model id.
    pub model_id: Box<str>,
}
