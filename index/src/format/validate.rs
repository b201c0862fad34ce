//! `validate`: untrusted bytes of either format version into checked section ranges, once.
//! Every check a search, a merge or a tombstone lookup relies on happens here, so those run
//! without checks; nothing here panics on any input (fuzzed by `tests/it/fuzz.rs`).

use std::ops::Range;

use bytemuck::Pod;

use super::{
    Dim, FORMAT_VERSION, HEADER_LEN, HEADER_LEN_V1, Header, HeaderV1, MAGIC, MAX_STRING,
    OLDEST_READ_VERSION, SECTION_COUNT, SECTION_COUNT_V1, SectionEntry, Validated, layout,
    row_section_lens, section,
};
use crate::error::{Error, Result};

fn corrupt(section: &'static str, reason: &'static str, offset: u64) -> Error {
    Error::Corrupt {
        section,
        reason,
        offset,
    }
}

fn read_u32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The header of either version in the version 2 shape (see [`Validated::header`]), and the
/// number of sections the file has.
fn read_header(bytes: &[u8]) -> Result<(Header, usize)> {
    let mut magic = [0u8; 8];
    let n = bytes.len().min(8);
    magic[..n].copy_from_slice(&bytes[..n]);
    if magic != MAGIC {
        return Err(Error::Magic { found: magic });
    }
    // A short file may still tell its version; report that before the truncation.
    let Some(version) = read_u32(bytes, 8) else {
        return Err(corrupt(
            "header",
            "file shorter than the header",
            bytes.len() as u64,
        ));
    };
    if !(OLDEST_READ_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(Error::Version {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let short = || corrupt("header", "file shorter than the header", bytes.len() as u64);
    let misaligned = || corrupt("header", "misaligned buffer", 0);
    if version == 1 {
        let head = bytes.get(..HEADER_LEN_V1).ok_or_else(short)?;
        let v1: HeaderV1 = *bytemuck::try_from_bytes(head).map_err(|_| misaligned())?;
        if v1.reserved != [0; 4] {
            return Err(corrupt("header", "reserved not zero", 288));
        }
        let mut sections = [SectionEntry::default(); SECTION_COUNT];
        sections[..SECTION_COUNT_V1].copy_from_slice(&v1.sections);
        let header = Header {
            magic: v1.magic,
            format_version: v1.format_version,
            header_len: v1.header_len,
            dim: v1.dim,
            code_stride: v1.code_stride,
            sign_words: v1.sign_words,
            section_count: v1.section_count,
            count: v1.count,
            generation: v1.generation,
            changelog_head: v1.changelog_head,
            schema_version: v1.schema_version,
            embed_dim: v1.embed_dim,
            sections,
            reserved: [0; 8],
        };
        return Ok((header, SECTION_COUNT_V1));
    }
    let head = bytes.get(..HEADER_LEN).ok_or_else(short)?;
    let header: Header = *bytemuck::try_from_bytes(head).map_err(|_| misaligned())?;
    if header.reserved != [0; 8] {
        return Err(corrupt("header", "reserved not zero", 320));
    }
    Ok((header, SECTION_COUNT))
}

/// Checks everything a search relies on, once: magic, version, header fields, section layout,
/// sizes and alignment, zero padding, dictionaries, codes within dictionaries, finite scales,
/// the row order, and (version 2) the tombstones' order and the id order. `bytes` must start
/// at an address aligned to 8 (the owner guarantees 64).
pub fn validate(bytes: &[u8]) -> Result<Validated> {
    let (mut header, n_sections) = read_header(bytes)?;
    let v1 = n_sections == SECTION_COUNT_V1;
    let header_len = if v1 { HEADER_LEN_V1 } else { HEADER_LEN };
    if header.header_len as usize != header_len {
        return Err(corrupt("header", "header_len", 12));
    }
    let dim = Dim::new(header.dim as usize).map_err(|_| corrupt("header", "dim", 16))?;
    if header.code_stride as usize != dim.code_stride() {
        return Err(corrupt("header", "code_stride", 20));
    }
    if header.sign_words as usize != dim.sign_words() {
        return Err(corrupt("header", "sign_words", 24));
    }
    if header.section_count as usize != n_sections {
        return Err(corrupt("header", "section_count", 28));
    }
    if header.embed_dim != header.dim {
        return Err(corrupt("header", "embed_dim differs from dim", 60));
    }
    if header.count > u64::from(u32::MAX) {
        return Err(corrupt("header", "count", 32));
    }
    let count = header.count;
    let mut lens = header.sections.map(|s| s.len);
    let fixed = row_section_lens(count, dim).ok_or(corrupt("header", "count", 32))?;
    for (idx, want) in fixed {
        if idx >= n_sections {
            continue;
        }
        if lens[idx] != want {
            return Err(corrupt(
                section::NAMES[idx],
                "length",
                64 + 16 * idx as u64 + 8,
            ));
        }
        lens[idx] = want;
    }
    if !v1 && !lens[section::TOMBSTONES].is_multiple_of(8) {
        return Err(corrupt(
            "tombstones",
            "length",
            64 + 16 * section::TOMBSTONES as u64 + 8,
        ));
    }
    let (table, file_len) = if v1 {
        let mut short = [0u64; SECTION_COUNT_V1];
        short.copy_from_slice(&lens[..SECTION_COUNT_V1]);
        let (t, len) =
            layout(header_len, &short).ok_or(corrupt("header", "section lengths overflow", 64))?;
        let mut table = [SectionEntry {
            offset: len,
            len: 0,
        }; SECTION_COUNT];
        table[..SECTION_COUNT_V1].copy_from_slice(&t);
        (table, len)
    } else {
        layout(header_len, &lens).ok_or(corrupt("header", "section lengths overflow", 64))?
    };
    for (idx, (got, want)) in header.sections[..n_sections].iter().zip(&table).enumerate() {
        if got != want {
            return Err(corrupt(section::NAMES[idx], "offset", 64 + 16 * idx as u64));
        }
    }
    if v1 {
        header.sections = table;
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
    let mut prev_end = header_len;
    for (idx, range) in ranges[..n_sections].iter().enumerate() {
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
    // FORMAT: tombstones are strictly ascending, so a merge walks them with the id order.
    let tombstones: &[i64] = cast(bytes, &ranges[section::TOMBSTONES], "tombstones")?;
    if let Some(pos) = (1..tombstones.len()).find(|&p| tombstones[p - 1] >= tombstones[p]) {
        let at = ranges[section::TOMBSTONES].start as u64 + 8 * pos as u64;
        return Err(corrupt("tombstones", "not strictly ascending", at));
    }
    // FORMAT: `id_order` lists every row once, by ascending id. Strictly ascending ids over
    // positions that are all in range prove it a permutation and the ids unique.
    let order: &[u32] = cast(bytes, &ranges[section::ID_ORDER], "id_order")?;
    let start = ranges[section::ID_ORDER].start as u64;
    for (i, &p) in order.iter().enumerate() {
        let at = start + 4 * i as u64;
        if p as usize >= ids.len() {
            return Err(corrupt("id_order", "position out of range", at));
        }
        if i > 0 && ids[order[i - 1] as usize] >= ids[p as usize] {
            return Err(corrupt("id_order", "ids not strictly ascending", at));
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
