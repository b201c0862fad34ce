//! Portability: `export_memories` / `import_memories` in CPersona's JSONL format
//! (`cpersona-export/1.0`), so a CPersona user can bring their memories, and
//! `merge_memories` between agents. Imports are idempotent (dedup on the exact bucket), and
//! a malformed file writes nothing. Declared associations travel as `entity` / `relation`
//! lines (`assoc`), which CPersona's importer passes over. Paths stay inside the export folder
//! and off the store's own files (`paths`).

mod apply;
mod assoc;
mod bulk;
pub mod cpersona;
pub(crate) mod export;
mod fields;
pub(crate) mod import;
pub(crate) mod merge;
mod paths;
mod record;

pub use export::{ExportOutcome, ExportRequest};
pub use merge::{MergeMode, MergeOutcome, MergeRequest};
pub use record::{ImportOutcome, ImportRequest};

/// The format version written in the header; imports accept any `cpersona-export/1.x`.
pub(crate) const EXPORT_VERSION: &str = "cpersona-export/1.0";
