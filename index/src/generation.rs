//! `Generation`: one validated, read-only generation file and typed views of its sections.
//! It validates once at open so searches run without checks; it never writes or mutates a file.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

use crate::error::Result;
use crate::format::{self, Dim, section};
use crate::kernels::Kernels;
use crate::mmap::GenerationBytes;
use crate::quantize::QueryCodes;

/// What a generation was built from, handed in by the caller and stored in the header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SourceFingerprint {
    /// Opaque head of the source's change log at build time (the engine's last change seq).
    pub changelog_head: u64,
    /// Schema version of the source database.
    pub schema_version: u32,
}

/// The embedder the vectors came from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EmbedderIdentity {
    /// Model id, at most [`format::MAX_STRING`] bytes.
    pub model_id: String,
    /// Vector dimension.
    pub dim: usize,
}

/// The header fields a caller chooses when building a generation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GenerationMeta {
    /// Generation number (monotonic per table, chosen by the caller).
    pub generation: u64,
    /// What the generation was built from.
    pub source: SourceFingerprint,
    /// The embedder's identity; its `dim` is the generation's dimension.
    pub embedder: EmbedderIdentity,
}

/// One of the four isolation columns, each with its own dictionary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScopeField {
    /// `agent_id`.
    Agent,
    /// `project_id`.
    Project,
    /// `channel`.
    Channel,
    /// `source`.
    Source,
}

impl ScopeField {
    /// All four, in file order.
    pub const ALL: [ScopeField; 4] = [
        ScopeField::Agent,
        ScopeField::Project,
        ScopeField::Channel,
        ScopeField::Source,
    ];

    fn slot(self) -> usize {
        self as usize
    }
}

/// A validated generation: the bytes (mapped or owned) and the checked section ranges.
#[derive(Debug)]
pub struct Generation {
    bytes: GenerationBytes,
    layout: format::Validated,
    dim: Dim,
    kernels: Kernels,
    /// Version 1 files have no `id_order` section; it is computed on first use.
    id_order_v1: OnceLock<Box<[u32]>>,
}

impl Generation {
    /// Maps and validates the generation at `path`; scans with [`Kernels::detect`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        if len < format::HEADER_LEN as u64 {
            // A short file is read rather than mapped (mapping an empty file fails on some
            // systems); validation then reports what it is.
            let mut buf = Vec::new();
            (&file).read_to_end(&mut buf)?;
            return Self::from_bytes(buf);
        }
        Self::from_owner(GenerationBytes::map(&file)?)
    }

    /// Validates a generation held in memory (tests, fuzzing); the bytes are copied once into
    /// an aligned buffer.
    pub fn from_bytes(bytes: impl AsRef<[u8]>) -> Result<Self> {
        Self::from_owner(GenerationBytes::copy_from(bytes.as_ref()))
    }

    fn from_owner(bytes: GenerationBytes) -> Result<Self> {
        let layout = format::validate(bytes.as_slice())?;
        let dim = Dim::new(layout.header.dim as usize)?;
        Ok(Self {
            bytes,
            layout,
            dim,
            kernels: Kernels::detect(),
            id_order_v1: OnceLock::new(),
        })
    }

    /// The same generation scanned with other kernels (tests compare scalar and detected).
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

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.layout.header.count as usize
    }

    /// Whether the generation has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The generation number.
    pub fn generation(&self) -> u64 {
        self.layout.header.generation
    }

    /// What the generation was built from.
    pub fn source(&self) -> SourceFingerprint {
        SourceFingerprint {
            changelog_head: self.layout.header.changelog_head,
            schema_version: self.layout.header.schema_version,
        }
    }

    /// The embedder the vectors came from.
    pub fn embedder(&self) -> EmbedderIdentity {
        EmbedderIdentity {
            model_id: self.layout.model_id.to_string(),
            dim: self.dim.get(),
        }
    }

    /// The file header in the version 2 shape (see [`format::Validated::header`]).
    pub fn header(&self) -> &format::Header {
        &self.layout.header
    }

    /// The file's format version (1 or 2).
    pub fn format_version(&self) -> u32 {
        self.layout.header.format_version
    }

    /// Quantises a query for this generation (checks its dimension).
    pub fn query(&self, vector: &[f32]) -> Result<QueryCodes> {
        QueryCodes::new(vector, self.dim)
    }

    /// Row ids, newest row first.
    pub fn ids(&self) -> &[i64] {
        self.section(section::IDS)
    }

    /// Row creation times (UTC ms), descending.
    pub fn created_at(&self) -> &[i64] {
        self.section(section::CREATED_AT)
    }

    /// Per-row scales.
    pub fn scales(&self) -> &[f32] {
        self.section(section::SCALE)
    }

    /// Int8 codes, `dim().code_stride()` bytes per row.
    pub fn codes(&self) -> &[i8] {
        self.section(section::CODES)
    }

    /// Sign words, `dim().sign_words()` per row.
    pub fn signs(&self) -> &[u64] {
        self.section(section::SIGNS)
    }

    /// Ids this generation removes from the segments older than it, ascending (empty for a
    /// version 1 file and for a generation built as a whole table).
    pub fn tombstones(&self) -> &[i64] {
        self.section(section::TOMBSTONES)
    }

    /// Row positions ordered by ascending id (read from the file in version 2, computed once
    /// on first use for a version 1 file).
    pub fn id_order(&self) -> &[u32] {
        if self.format_version() >= 2 {
            return self.section(section::ID_ORDER);
        }
        self.id_order_v1.get_or_init(|| {
            let ids = self.ids();
            let mut order: Vec<u32> = (0..ids.len() as u32).collect();
            order.sort_unstable_by_key(|&p| (ids[p as usize], p));
            order.into_boxed_slice()
        })
    }

    /// The position of the row with id `id`, by binary search over [`Generation::id_order`].
    pub fn position_of(&self, id: i64) -> Option<u32> {
        let ids = self.ids();
        let order = self.id_order();
        order
            .binary_search_by(|&p| ids[p as usize].cmp(&id))
            .ok()
            .map(|i| order[i])
    }

    /// The four isolation labels of row `row` (`""` for none).
    pub fn labels(&self, row: usize) -> [&str; 4] {
        ScopeField::ALL.map(|field| {
            let code = self.scope_codes(field)[row];
            self.name(field, code).unwrap_or("")
        })
    }

    /// The dictionary codes of one isolation column, one per row.
    pub fn scope_codes(&self, field: ScopeField) -> &[u32] {
        self.section(section::AGENT + field.slot())
    }

    /// The dictionary of one isolation column: entry 0 is `""` (none / global), the rest are
    /// sorted and unique.
    pub fn dictionary(&self, field: ScopeField) -> &[Box<str>] {
        &self.layout.dictionaries[field.slot()]
    }

    /// The code of `name` in a column's dictionary (`""` is code 0); `None` when no row has it.
    pub fn code(&self, field: ScopeField, name: &str) -> Option<u32> {
        let dict = self.dictionary(field);
        if name.is_empty() {
            return Some(0);
        }
        dict[1..]
            .binary_search_by(|e| (**e).cmp(name))
            .ok()
            .map(|i| i as u32 + 1)
    }

    /// The name behind a code.
    pub fn name(&self, field: ScopeField, code: u32) -> Option<&str> {
        self.dictionary(field).get(code as usize).map(|s| &**s)
    }

    fn section<T: bytemuck::Pod>(&self, idx: usize) -> &[T] {
        format::cast(
            self.bytes.as_slice(),
            &self.layout.ranges[idx],
            section::NAMES[idx],
        )
        .expect("section sizes and alignment were validated at open")
    }
}
