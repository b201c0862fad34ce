//! Portability: `export_memories` / `import_memories` in CPersona's JSONL format
//! (`cpersona-export/1.0`), so a CPersona user can bring their memories, and
//! `merge_memories` between agents. Imports are idempotent (dedup on the exact bucket), and
//! a malformed file writes nothing. Declared associations travel as `entity` / `relation`
//! lines (`assoc`), which CPersona's importer passes over.

mod apply;
mod assoc;
mod bulk;
pub(crate) mod export;
mod fields;
pub(crate) mod import;
pub(crate) mod merge;
mod record;

use std::path::{Component, Path, PathBuf};

pub use export::{ExportOutcome, ExportRequest};
pub use merge::{MergeMode, MergeOutcome, MergeRequest};
pub use record::{ImportOutcome, ImportRequest};

use crate::error::{Error, Result};

/// The format version written in the header; imports accept any `cpersona-export/1.x`.
pub(crate) const EXPORT_VERSION: &str = "cpersona-export/1.0";

/// CPersona's path rule: inside `export_dir` when one is configured, else no `..` segment.
fn check_path(path: &Path, export_dir: Option<&Path>) -> Result<PathBuf> {
    let refuse = |reason: &str| Error::PathRefused {
        path: path.display().to_string(),
        reason: reason.to_owned(),
    };
    if path.as_os_str().is_empty() {
        return Err(refuse("is empty"));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refuse("contains a '..' segment"));
    }
    let Some(root) = export_dir else {
        return Ok(path.to_owned());
    };
    let root = root
        .canonicalize()
        .map_err(|_| refuse("the export folder does not exist"))?;
    let absolute = if path.is_absolute() {
        path.to_owned()
    } else {
        root.join(path)
    };
    // The file may not exist yet (export): resolve its folder.
    let parent = absolute
        .parent()
        .ok_or_else(|| refuse("has no parent folder"))?;
    let parent = parent
        .canonicalize()
        .map_err(|_| refuse("its folder does not exist"))?;
    if !parent.starts_with(&root) {
        return Err(refuse("is outside the export folder"));
    }
    let file_name = absolute
        .file_name()
        .ok_or_else(|| refuse("names no file"))?;
    Ok(parent.join(file_name))
}
