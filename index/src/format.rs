//! The generation file format (see `index/FORMAT.md`): the `#[repr(C)]` Pod header, the section
//! layout, and `validate`, which turns untrusted bytes into checked section ranges once.
//! Safe code only: every view is made with bytemuck's checked casts, so a bad file is an
//! `Error`, never undefined behaviour or a panic.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::error::{Error, Result};

// FORMAT: the format is little-endian and read by casting bytes in place, which is only right
// on a little-endian host.
#[cfg(target_endian = "big")]
compile_error!("the generation format is little-endian; big-endian hosts are not supported");

/// The first eight bytes of every generation file.
pub const MAGIC: [u8; 8] = *b"CPGEN\0\0\x01";
/// The one format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Alignment of the header and every section, in bytes (a cache line and an AVX-512 register).
pub const ALIGN: usize = 64;
/// Largest dimension the format accepts.
pub const MAX_DIM: usize = 65_536;
/// Longest model id and dictionary entry, in bytes.
pub const MAX_STRING: usize = 4096;
/// Number of sections, fixed by this version.
pub const SECTION_COUNT: usize = 14;

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

/// The fixed 320-byte header at offset 0. FORMAT: field order and sizes mirror `FORMAT.md`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// Size of this header in bytes (320).
    pub header_len: u32,
    /// Vector dimension.
    pub dim: u32,
    /// Bytes per row in the codes section: `dim` rounded up to a multiple of 64.
    pub code_stride: u32,
    /// u64 words per row in the signs section: `ceil(dim / 64)`.
    pub sign_words: u32,
    /// [`SECTION_COUNT`].
    pub section_count: u32,
    /// Number of rows.
    pub count: u64,
    /// Generation number, chosen by the caller (monotonic per table).
    pub generation: u64,
    /// Opaque change-log head the generation was built from.
    pub changelog_head: u64,
    /// Schema version of the source the generation was built from.
    pub schema_version: u32,
    /// Dimension of the embedder (equals `dim` in this version).
    pub embed_dim: u32,
    /// Section table.
    pub sections: [SectionEntry; SECTION_COUNT],
    /// Zero.
    pub reserved: [u64; 4],
}

/// Size of [`Header`] in bytes.
pub const HEADER_LEN: usize = std::mem::size_of::<Header>();
const _: () = assert!(HEADER_LEN == 320 && HEADER_LEN.is_multiple_of(ALIGN));

/// A checked vector dimension, with the row strides that follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dim(u32);

impl Dim {
    /// Checks `1 <= dim <= MAX_DIM`.
    pub fn new(dim: usize) -> Result<Self> {
        if dim == 0 || dim > MAX_DIM {
            return Err(Error::DimUnsupported { dim });
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

/// Lays sections out in order after the header; returns the table and the file length.
pub fn layout(lens: &[u64; SECTION_COUNT]) -> Option<([SectionEntry; SECTION_COUNT], u64)> {
    let mut table = [SectionEntry::default(); SECTION_COUNT];
    let mut at = HEADER_LEN as u64;
    for (entry, &len) in table.iter_mut().zip(lens) {
        *entry = SectionEntry { offset: at, len };
        at = align_up(at.checked_add(len)?)?;
    }
    Some((table, at))
}

/// Fixed section lengths for `count` rows of dimension `dim` (dictionaries and model id are
/// given by the caller).
pub fn row_section_lens(count: u64, dim: Dim) -> Option<[(usize, u64); 9]> {
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
    /// The header, copied out.
    pub header: Header,
    /// Byte range of each section.
    pub ranges: [Range<usize>; SECTION_COUNT],
    /// Parsed dictionaries (agent, project, channel, source).
    pub dictionaries: [Vec<Box<str>>; 4],
    /// The embedder's model id.
    pub model_id: Box<str>,
}

fn corrupt(section: &'static str, reason: &'static str, offset: u64) -> Error {
    Error::Corrupt {
        section,
        reason,
        offset,
    }
}

/// Checks everything a search relies on, once: magic, version, header fields, section layout,
/// sizes and alignment, zero padding, dictionaries, codes within dictionaries, finite scales,
/// and the row order. `bytes` must start at an address aligned to 8 (the owner guarantees 64).
pub fn validate(bytes: &[u8]) -> Result<Validated> {
    let mut magic = [0u8; 8];
    let n = bytes.len().min(8);
    magic[..n].copy_from_slice(&bytes[..n]);
    if magic != MAGIC {
        return Err(Error::Magic { found: magic });
    }
    let Some(head) = bytes.get(..HEADER_LEN) else {
        // A short file may still tell its version; report that before the truncation.
        if let Some(v) = bytes.get(8..12) {
            let found = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
            if found != FORMAT_VERSION {
                return Err(Error::Version {
                    found,
                    supported: FORMAT_VERSION,
                });
            }
        }
        return Err(corrupt(
            "header",
            "file shorter than the header",
            bytes.len() as u64,
        ));
    };
    let header: Header =
        *bytemuck::try_from_bytes(head).map_err(|_| corrupt("header", "misaligned buffer", 0))?;
    if header.format_version != FORMAT_VERSION {
        return Err(Error::Version {
            found: header.format_version,
            supported: FORMAT_VERSION,
        });
    }
    if header.header_len as usize != HEADER_LEN {
        return Err(corrupt("header", "header_len", 12));
    }
    let dim = Dim::new(header.dim as usize).map_err(|_| corrupt("header", "dim", 16))?;
    if header.code_stride as usize != dim.code_stride() {
        return Err(corrupt("header", "code_stride", 20));
    }
    if header.sign_words as usize != dim.sign_words() {
        return Err(corrupt("header", "sign_words", 24));
    }
    if header.section_count as usize != SECTION_COUNT {
        return Err(corrupt("header", "section_count", 28));
    }
    if header.embed_dim != header.dim {
        return Err(corrupt("header", "embed_dim differs from dim", 60));
    }
    if header.count > u64::from(u32::MAX) {
        return Err(corrupt("header", "count", 32));
    }
    if header.reserved != [0; 4] {
        return Err(corrupt("header", "reserved not zero", 288));
    }
    let count = header.count;
    let mut lens = header.sections.map(|s| s.len);
    let fixed = row_section_lens(count, dim).ok_or(corrupt("header", "count", 32))?;
    for (idx, want) in fixed {
        if lens[idx] != want {
            return Err(corrupt(
                section::NAMES[idx],
                "length",
                64 + 16 * idx as u64 + 8,
            ));
        }
        lens[idx] = want;
    }
    let (table, file_len) =
        layout(&lens).ok_or(corrupt("header", "section lengths overflow", 64))?;
    for (idx, (got, want)) in header.sections.iter().zip(&table).enumerate() {
        if got != want {
            return Err(corrupt(section::NAMES[idx], "offset", 64 + 16 * idx as u64));
        }
    }
    if (bytes.len() as u64) < file_len {
        return Err(corrupt("file", "truncated", bytes.len() as u64));
    }
    if bytes.len() as u64 != file_len {
        return Err(corrupt("file", "trailing bytes", file_len));
    }
    // Every offset fits in usize now: the file is in memory and at least that long.
    let ranges: [Range<usize>; SECTION_COUNT] =
        table.map(|s| s.offset as usize..(s.offset + s.len) as usize);
    // FORMAT: padding between sections is zero, so equal rows always give equal bytes.
    let mut prev_end = HEADER_LEN;
    for (idx, range) in ranges.iter().enumerate() {
        if bytes[prev_end..range.start].iter().any(|&b| b != 0) {
            return Err(corrupt(
                section::NAMES[idx],
                "padding not zero",
                prev_end as u64,
            ));
        }
        prev_end = range.end;
    }
    if bytes[prev_end..].iter().any(|&b| b != 0) {
        return Err(corrupt("file", "padding not zero", prev_end as u64));
    }

    let model_bytes = &bytes[ranges[section::MODEL_ID].clone()];
    if model_bytes.len() > MAX_STRING {
        return Err(corrupt(
            "model_id",
            "too long",
            ranges[section::MODEL_ID].start as u64,
        ));
    }
    let model_id: Box<str> = std::str::from_utf8(model_bytes)
        .map_err(|_| {
            corrupt(
                "model_id",
                "not utf-8",
                ranges[section::MODEL_ID].start as u64,
            )
        })?
        .into();

    let dict_sections = [
        section::DICT_AGENT,
        section::DICT_PROJECT,
        section::DICT_CHANNEL,
        section::DICT_SOURCE,
    ];
    let mut dictionaries: [Vec<Box<str>>; 4] = Default::default();
    for (slot, &idx) in dictionaries.iter_mut().zip(&dict_sections) {
        *slot = parse_dictionary(bytes, ranges[idx].clone(), section::NAMES[idx])?;
    }
    let code_sections = [
        section::AGENT,
        section::PROJECT,
        section::CHANNEL,
        section::SOURCE,
    ];
    for (dict, &idx) in dictionaries.iter().zip(&code_sections) {
        let codes: &[u32] = cast(bytes, &ranges[idx], section::NAMES[idx])?;
        if let Some(pos) = codes.iter().position(|&c| c as usize >= dict.len()) {
            let at = ranges[idx].start as u64 + 4 * pos as u64;
            return Err(corrupt(
                section::NAMES[idx],
                "code outside its dictionary",
                at,
            ));
        }
    }
    let scales: &[f32] = cast(bytes, &ranges[section::SCALE], "scale")?;
    if let Some(pos) = scales.iter().position(|s| !s.is_finite() || *s < 0.0) {
        let at = ranges[section::SCALE].start as u64 + 4 * pos as u64;
        return Err(corrupt("scale", "negative or non-finite", at));
    }
    let ids: &[i64] = cast(bytes, &ranges[section::IDS], "ids")?;
    let created: &[i64] = cast(bytes, &ranges[section::CREATED_AT], "created_at")?;
    // FORMAT: rows are sorted created_at DESC, id ASC; the scan window and the created_at
    // range search rely on it.
    for pos in 1..ids.len() {
        let ordered = created[pos - 1] > created[pos]
            || (created[pos - 1] == created[pos] && ids[pos - 1] < ids[pos]);
        if !ordered {
            let at = ranges[section::CREATED_AT].start as u64 + 8 * pos as u64;
            return Err(corrupt("created_at", "rows out of order", at));
        }
    }
    // The big sections are cast once here so a misaligned buffer fails now, not in a search.
    cast::<i8>(bytes, &ranges[section::CODES], "codes")?;
    cast::<u64>(bytes, &ranges[section::SIGNS], "signs")?;
    Ok(Validated {
        header,
        ranges,
        dictionaries,
        model_id,
    })
}

/// Casts a section to a typed slice, checking size and alignment.
pub fn cast<'a, T: Pod>(
    bytes: &'a [u8],
    range: &Range<usize>,
    name: &'static str,
) -> Result<&'a [T]> {
    let raw = bytes
        .get(range.clone())
        .ok_or(corrupt(name, "out of bounds", range.start as u64))?;
    bytemuck::try_cast_slice(raw).map_err(|_| corrupt(name, "misaligned", range.start as u64))
}

fn parse_dictionary(
    bytes: &[u8],
    range: Range<usize>,
    name: &'static str,
) -> Result<Vec<Box<str>>> {
    let start = range.start as u64;
    let raw = &bytes[range];
    let read_u32 = |at: usize| -> Option<u32> {
        let b = raw.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let n = read_u32(0).ok_or(corrupt(name, "truncated", start))? as usize;
    if n == 0 {
        return Err(corrupt(name, "missing entry 0 (none)", start));
    }
    let table_end = n
        .checked_add(1)
        .and_then(|m| m.checked_mul(4))
        .and_then(|m| m.checked_add(4))
        .filter(|&end| end <= raw.len())
        .ok_or(corrupt(name, "entry count exceeds section", start))?;
    let text = &raw[table_end..];
    let mut entries: Vec<Box<str>> = Vec::with_capacity(n);
    let mut prev = 0usize;
    for i in 0..=n {
        let end = read_u32(4 + 4 * i).ok_or(corrupt(name, "truncated", start))? as usize;
        if i == 0 {
            if end != 0 {
                return Err(corrupt(name, "first offset not zero", start + 4));
            }
            continue;
        }
        if end < prev || end > text.len() || end - prev > MAX_STRING {
            return Err(corrupt(
                name,
                "entry offset out of bounds",
                start + 4 + 4 * i as u64,
            ));
        }
        let s = std::str::from_utf8(&text[prev..end])
            .map_err(|_| corrupt(name, "entry not utf-8", start + (table_end + prev) as u64))?;
        let ok = match entries.last() {
            None => s.is_empty(),
            Some(last) => !s.is_empty() && **last < *s,
        };
        if !ok {
            return Err(corrupt(
                name,
                "entries not \"\" then sorted unique",
                start + (table_end + prev) as u64,
            ));
        }
        entries.push(s.into());
        prev = end;
    }
    if prev != text.len() {
        return Err(corrupt(
            name,
            "trailing bytes",
            start + (table_end + prev) as u64,
        ));
    }
    Ok(entries)
}
