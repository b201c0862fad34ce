//! `GenerationWriter`: builds a generation file from rows handed in newest first, with bounded
//! memory, and swaps it into place atomically. It never modifies a file after its rename, so a
//! reader that mapped an older generation keeps a consistent view.
//!
//! # Memory
//! The caller hands rows already sorted (created_at DESC, id ASC), which the engine gets from
//! SQLite for free; the writer checks the order. Each vector is quantised as it arrives: its
//! int8 codes and sign words stream to two spill files next to the target, and only the small
//! per-row keys stay in memory (id, created_at, four codes, scale: 36 bytes a row, 36 MB for a
//! million rows), since their sections precede the codes in the file and the row count is not
//! known until the end. `finish` writes header, keys and dictionaries, then copies the spill
//! files in, then the tombstones and the id order, fsyncs, renames, and fsyncs the directory.
//!
//! A merge hands rows already quantised ([`GenerationWriter::push_quantized`]): their codes,
//! scale and sign words are copied, never re-derived, and equal what quantising the original
//! vector gives, so a merged segment has the bytes of a fresh build of its rows.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::format::{self, Dim, Header, SECTION_COUNT, section};
use crate::generation::GenerationMeta;
use crate::quantize::{check_vector, quantize_into};

/// The isolation labels of a row; `""` means none (the global pool, no channel, no source).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scope<'a> {
    /// `agent_id`.
    pub agent: &'a str,
    /// `project_id`.
    pub project: &'a str,
    /// `channel`.
    pub channel: &'a str,
    /// `source`.
    pub source: &'a str,
}

/// One row handed to the writer.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    /// The caller's id; unique within a generation.
    pub id: i64,
    /// Creation time, UTC milliseconds.
    pub created_at: i64,
    /// Isolation labels.
    pub scope: Scope<'a>,
    /// The normalised vector, `dim` long.
    pub vector: &'a [f32],
}

/// One row already quantised (a row read back from a generation, for a merge).
#[derive(Clone, Copy, Debug)]
pub struct QuantizedRow<'a> {
    /// The caller's id; unique within a generation.
    pub id: i64,
    /// Creation time, UTC milliseconds.
    pub created_at: i64,
    /// Isolation labels.
    pub scope: Scope<'a>,
    /// Int8 codes: `dim` or `code_stride` long (bytes past `dim` must be zero).
    pub codes: &'a [i8],
    /// The row's scale, finite and >= 0.
    pub scale: f32,
    /// Sign words, `sign_words` long.
    pub signs: &'a [u64],
}

/// What `finish` wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteSummary {
    /// Rows written.
    pub count: u64,
    /// File size in bytes.
    pub bytes: u64,
}

/// Builds one generation file; see the module doc for the memory bound and the swap.
#[derive(Debug)]
pub struct GenerationWriter {
    target: PathBuf,
    meta: GenerationMeta,
    dim: Dim,
    ids: Vec<i64>,
    created_at: Vec<i64>,
    scales: Vec<f32>,
    scopes: [Interner; 4],
    scope_codes: [Vec<u32>; 4],
    codes_spill: Spill,
    signs_spill: Spill,
    code_buf: Vec<i8>,
    sign_buf: Vec<u64>,
    tombstones: Vec<i64>,
}

impl GenerationWriter {
    /// Starts a generation that `finish` will rename to `path`.
    pub fn create(path: impl AsRef<Path>, meta: GenerationMeta) -> Result<Self> {
        let dim = Dim::new(meta.embedder.dim)?;
        if meta.embedder.model_id.len() > format::MAX_STRING {
            return Err(Error::TooLong {
                field: "model id",
                len: meta.embedder.model_id.len(),
            });
        }
        let target = path.as_ref().to_path_buf();
        Ok(Self {
            codes_spill: Spill::create(&target, "codes")?,
            signs_spill: Spill::create(&target, "signs")?,
            target,
            meta,
            dim,
            ids: Vec::new(),
            created_at: Vec::new(),
            scales: Vec::new(),
            scopes: Default::default(),
            scope_codes: Default::default(),
            code_buf: vec![0; dim.code_stride()],
            sign_buf: vec![0; dim.sign_words()],
            tombstones: Vec::new(),
        })
    }

    /// Builds the generation at `path` from `rows` in one call.
    pub fn write<'a>(
        path: impl AsRef<Path>,
        meta: GenerationMeta,
        rows: impl IntoIterator<Item = Row<'a>>,
    ) -> Result<WriteSummary> {
        let mut writer = Self::create(path, meta)?;
        for row in rows {
            writer.push(&row)?;
        }
        writer.finish()
    }

    /// Appends one row; rows must come created_at DESC, id ASC.
    pub fn push(&mut self, row: &Row<'_>) -> Result<()> {
        let position = self.check_key(row.id, row.created_at)?;
        check_vector(row.vector, self.dim, position)?;
        let codes = self.intern(&row.scope)?;
        self.code_buf.fill(0);
        self.sign_buf.fill(0);
        let scale = quantize_into(row.vector, &mut self.code_buf, &mut self.sign_buf);
        self.append(row.id, row.created_at, codes, scale)
    }

    /// Appends one row already quantised (codes, scale and sign words copied as they are);
    /// rows must come created_at DESC, id ASC.
    pub fn push_quantized(&mut self, row: &QuantizedRow<'_>) -> Result<()> {
        let position = self.check_key(row.id, row.created_at)?;
        let (dim, stride) = (self.dim.get(), self.dim.code_stride());
        if !(row.codes.len() == dim || row.codes.len() == stride)
            || row.signs.len() != self.dim.sign_words()
        {
            return Err(Error::Dim {
                expected: dim,
                found: row.codes.len(),
            });
        }
        if !row.scale.is_finite() || row.scale < 0.0 {
            return Err(Error::NonFinite { row: position });
        }
        let codes = self.intern(&row.scope)?;
        self.code_buf.fill(0);
        self.code_buf[..dim].copy_from_slice(&row.codes[..dim]);
        self.sign_buf.copy_from_slice(row.signs);
        self.append(row.id, row.created_at, codes, row.scale)
    }

    /// Ids this generation removes from the segments older than it (any order, duplicates
    /// allowed; stored sorted and unique). Replaces what an earlier call set.
    pub fn set_tombstones(&mut self, ids: impl IntoIterator<Item = i64>) -> Result<()> {
        let mut ids: Vec<i64> = ids.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() > u32::MAX as usize {
            return Err(Error::TooMany { what: "tombstones" });
        }
        self.tombstones = ids;
        Ok(())
    }

    /// Checks the row order against the previous row; returns the new row's position.
    fn check_key(&self, id: i64, created_at: i64) -> Result<u64> {
        let position = self.ids.len() as u64;
        if position >= u64::from(u32::MAX) {
            return Err(Error::TooMany { what: "rows" });
        }
        if let (Some(&last_id), Some(&last_at)) = (self.ids.last(), self.created_at.last()) {
            let ordered = last_at > created_at || (last_at == created_at && last_id < id);
            if !ordered {
                return Err(Error::RowOrder { position, id });
            }
        }
        Ok(position)
    }

    fn intern(&mut self, scope: &Scope<'_>) -> Result<[u32; 4]> {
        let labels = [scope.agent, scope.project, scope.channel, scope.source];
        let mut codes = [0u32; 4];
        for ((code, interner), label) in codes.iter_mut().zip(&mut self.scopes).zip(labels) {
            *code = interner.intern(label)?;
        }
        Ok(codes)
    }

    /// Streams `code_buf` and `sign_buf` to the spill files and keeps the row's keys.
    fn append(&mut self, id: i64, created_at: i64, codes: [u32; 4], scale: f32) -> Result<()> {
        self.codes_spill
            .writer
            .write_all(bytemuck::cast_slice(&self.code_buf))?;
        for word in &self.sign_buf {
            self.signs_spill.writer.write_all(&word.to_le_bytes())?;
        }
        self.ids.push(id);
        self.created_at.push(created_at);
        self.scales.push(scale);
        for (column, code) in self.scope_codes.iter_mut().zip(codes) {
            column.push(code);
        }
        Ok(())
    }

    /// Writes the file under a temporary name, fsyncs it, renames it to the target and fsyncs
    /// the directory.
    pub fn finish(mut self) -> Result<WriteSummary> {
        let count = self.ids.len() as u64;
        let dictionaries: Vec<(Vec<u8>, Vec<u32>)> =
            self.scopes.iter().map(Interner::seal).collect();
        let mut lens = [0u64; SECTION_COUNT];
        lens[section::MODEL_ID] = self.meta.embedder.model_id.len() as u64;
        for (i, (bytes, _)) in dictionaries.iter().enumerate() {
            lens[section::DICT_AGENT + i] = bytes.len() as u64;
        }
        let fixed =
            format::row_section_lens(count, self.dim).ok_or(Error::TooMany { what: "rows" })?;
        for (idx, len) in fixed {
            lens[idx] = len;
        }
        lens[section::TOMBSTONES] = self.tombstones.len() as u64 * 8;
        // FORMAT: the id order is the row positions sorted by id; equal neighbours are a
        // duplicate id, which the row order alone cannot catch across created_at values.
        let mut id_order: Vec<u32> = (0..count as u32).collect();
        id_order.sort_unstable_by_key(|&p| self.ids[p as usize]);
        if let Some(pair) = id_order
            .windows(2)
            .find(|w| self.ids[w[0] as usize] == self.ids[w[1] as usize])
        {
            return Err(Error::DuplicateId {
                id: self.ids[pair[0] as usize],
            });
        }
        let (sections, file_len) =
            format::layout(format::HEADER_LEN, &lens).ok_or(Error::TooMany { what: "rows" })?;
        let header = Header {
            magic: format::MAGIC,
            format_version: format::FORMAT_VERSION,
            header_len: format::HEADER_LEN as u32,
            dim: self.dim.get() as u32,
            code_stride: self.dim.code_stride() as u32,
            sign_words: self.dim.sign_words() as u32,
            section_count: SECTION_COUNT as u32,
            count,
            generation: self.meta.generation,
            changelog_head: self.meta.source.changelog_head,
            schema_version: self.meta.source.schema_version,
            embed_dim: self.dim.get() as u32,
            sections,
            reserved: [0; 8],
        };

        let tmp_path = sibling_name(&self.target, "tmp");
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp_path)?;
        let mut guard = RemoveOnDrop(Some(tmp_path.clone()));
        let mut out = Counted {
            inner: BufWriter::with_capacity(1 << 20, file),
            at: 0,
        };
        // FORMAT: header, then each section at its 64-aligned offset, zero padding between.
        out.write_all(bytemuck::bytes_of(&header))?;
        let put = |out: &mut Counted, idx: usize, bytes: &[u8]| -> Result<()> {
            out.pad_to(sections[idx].offset)?;
            out.write_all(bytes)?;
            Ok(())
        };
        put(
            &mut out,
            section::MODEL_ID,
            self.meta.embedder.model_id.as_bytes(),
        )?;
        for (i, (bytes, _)) in dictionaries.iter().enumerate() {
            put(&mut out, section::DICT_AGENT + i, bytes)?;
        }
        put(
            &mut out,
            section::IDS,
            &le_bytes(&self.ids, |v| v.to_le_bytes()),
        )?;
        put(
            &mut out,
            section::CREATED_AT,
            &le_bytes(&self.created_at, |v| v.to_le_bytes()),
        )?;
        for (i, (_, remap)) in dictionaries.iter().enumerate() {
            let column: Vec<u32> = self.scope_codes[i]
                .iter()
                .map(|&c| remap[c as usize])
                .collect();
            put(
                &mut out,
                section::AGENT + i,
                &le_bytes(&column, |v| v.to_le_bytes()),
            )?;
        }
        put(
            &mut out,
            section::SCALE,
            &le_bytes(&self.scales, |v| v.to_le_bytes()),
        )?;
        out.pad_to(sections[section::CODES].offset)?;
        self.codes_spill.copy_into(&mut out)?;
        out.pad_to(sections[section::SIGNS].offset)?;
        self.signs_spill.copy_into(&mut out)?;
        put(
            &mut out,
            section::TOMBSTONES,
            &le_bytes(&self.tombstones, |v| v.to_le_bytes()),
        )?;
        put(
            &mut out,
            section::ID_ORDER,
            &le_bytes(&id_order, |v| v.to_le_bytes()),
        )?;
        out.pad_to(file_len)?;
        let file = out.inner.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp_path, &self.target)?;
        guard.0 = None;
        sync_parent(&self.target)?;
        Ok(WriteSummary {
            count,
            bytes: file_len,
        })
    }
}

/// Strings of one isolation column: provisional codes in first-seen order while rows stream,
/// sorted into final codes (`""` = 0, then byte order) at the end.
#[derive(Debug, Default)]
struct Interner {
    codes: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
}

impl Interner {
    fn intern(&mut self, name: &str) -> Result<u32> {
        if name.is_empty() {
            return Ok(0);
        }
        if let Some(&code) = self.codes.get(name) {
            return Ok(code);
        }
        if name.len() > format::MAX_STRING {
            return Err(Error::TooLong {
                field: "isolation label",
                len: name.len(),
            });
        }
        if self.names.len() >= u32::MAX as usize - 1 {
            return Err(Error::TooMany {
                what: "dictionary entries",
            });
        }
        self.names.push(name.into());
        let code = self.names.len() as u32;
        self.codes.insert(name.into(), code);
        Ok(code)
    }

    /// The encoded dictionary and the map from provisional to final code.
    fn seal(&self) -> (Vec<u8>, Vec<u32>) {
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_by(|&a, &b| self.names[a].cmp(&self.names[b]));
        let mut remap = vec![0u32; self.names.len() + 1];
        for (final_idx, &provisional) in order.iter().enumerate() {
            remap[provisional + 1] = final_idx as u32 + 1;
        }
        let mut entries: Vec<&str> = vec![""];
        entries.extend(order.iter().map(|&i| &*self.names[i]));
        (format::encode_dictionary(&entries), remap)
    }
}

/// A spill file beside the target, removed when dropped.
#[derive(Debug)]
struct Spill {
    writer: BufWriter<File>,
    _guard: RemoveOnDrop,
}

impl Spill {
    fn create(target: &Path, what: &str) -> Result<Self> {
        let path = sibling_name(target, what);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        Ok(Self {
            writer: BufWriter::with_capacity(1 << 20, file),
            _guard: RemoveOnDrop(Some(path)),
        })
    }

    fn copy_into(&mut self, out: &mut Counted) -> Result<()> {
        self.writer.flush()?;
        let file = self.writer.get_mut();
        file.seek(SeekFrom::Start(0))?;
        out.at += std::io::copy(file, &mut out.inner)?;
        Ok(())
    }
}

/// Removes a file when dropped, unless disarmed (`.0 = None`).
#[derive(Debug)]
pub(crate) struct RemoveOnDrop(pub(crate) Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            // Best effort: a leftover temporary file is harmless and named so it is never
            // mistaken for a generation.
            let _ = fs::remove_file(path);
        }
    }
}

/// A writer that counts its position, to pad to section offsets.
struct Counted {
    inner: BufWriter<File>,
    at: u64,
}

impl Counted {
    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.inner.write_all(bytes)?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    fn pad_to(&mut self, offset: u64) -> Result<()> {
        const ZEROS: [u8; format::ALIGN] = [0; format::ALIGN];
        while self.at < offset {
            let n = (offset - self.at).min(ZEROS.len() as u64) as usize;
            self.write_all(&ZEROS[..n])?;
        }
        Ok(())
    }
}

fn le_bytes<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&f(v));
    }
    out
}

/// `.<name>.<what>-<pid>-<n>` in the target's directory, so the rename stays on one filesystem.
pub(crate) fn sibling_name(target: &Path, what: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.{what}-{}-{n}", std::process::id()))
}

pub(crate) fn sync_parent(target: &Path) -> Result<()> {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Directories can be opened and fsynced on Unix; elsewhere the rename is as durable as the
    // platform makes it.
    #[cfg(unix)]
    File::open(parent)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = parent;
    Ok(())
}
