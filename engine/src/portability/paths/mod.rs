//! Where an export may land and an import may read ([`ExportDir`]). Paths resolve inside the
//! export folder and are judged where they really lead (canonicalised: `..`, symlinks, the
//! folder's own location); an export never lands on the store's own files and never
//! replaces an existing file unless asked, and it is written to a temporary file in the same
//! folder, then linked (create-exclusive) or renamed into place, so a failed export leaves no
//! partial file. A refusal names the argument and a reason, never anything about a path
//! outside the folder: one message covers "outside", "missing", "unreadable" and "a symlink
//! that leaves the folder".
//!
//! Without `openat`, a path is checked, then opened, then checked again: the handle's
//! (device, inode) must be the file that the canonical path inside the folder names after
//! the open, so a component swapped for a symlink in between is refused.

use std::ffi::OsString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::ExportDir;
use crate::error::{Error, Result};

/// The one refusal of an export target outside the folder (or in a folder that is missing).
pub(crate) const OUTSIDE_EXPORT: &str =
    "it must name a file in an existing folder inside the export folder";
/// The one refusal of an import source that is outside the folder, missing, unreadable, not
/// a regular file or a symlink that leaves the folder.
pub(crate) const OUTSIDE_IMPORT: &str =
    "it must name a readable export file inside the export folder";
/// An export target that exists, without `overwrite`.
pub(crate) const EXISTS: &str =
    "the file already exists; pass overwrite: true (`cpersona export --force`) to replace it";
/// An export target that is the database or one of its companions.
pub(crate) const STORE_FILE: &str =
    "it names one of the store's own files (the database, its -wal, -shm, -journal or index files)";

/// Serial of the temporary files this process creates (with its pid, unique per folder).
static SERIAL: AtomicU64 = AtomicU64::new(0);

fn refused(field: &'static str, reason: impl Into<String>) -> Error {
    Error::PathRefused {
        field,
        reason: reason.into(),
    }
}

/// CPersona's lexical rule, kept in every reach: not empty, no `..` segment.
fn lexical(path: &Path, field: &'static str) -> Result<()> {
    if path.as_os_str().is_empty() {
        return Err(refused(field, "it is empty"));
    }
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(refused(field, "it contains a '..' segment"));
    }
    Ok(())
}

/// (device, inode): the identity of a file whatever names it.
#[cfg(unix)]
fn inode(meta: &Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn inode(_meta: &Metadata) -> Option<(u64, u64)> {
    None
}

/// The store's own files: every entry of the database's folder named after the database
/// (the database, `-wal`, `-shm`, `-journal`, `<db>.<table>.gen`, segment
/// folders), through the path as configured and through its canonical form, and the
/// (device, inode) of each that exists, so a hard link to one of them is known too.
pub(crate) struct StoreFiles {
    prefixes: Vec<(PathBuf, OsString)>,
    inodes: Vec<(u64, u64)>,
}

impl StoreFiles {
    pub(crate) fn of(db_path: &Path) -> StoreFiles {
        let mut prefixes: Vec<(PathBuf, OsString)> = Vec::new();
        let mut add = |path: &Path| {
            let Some(name) = path.file_name() else {
                return;
            };
            let Ok(dir) = folder_of(path).canonicalize() else {
                return;
            };
            let entry = (dir, name.to_owned());
            if !prefixes.contains(&entry) {
                prefixes.push(entry);
            }
        };
        add(db_path);
        if let Ok(real) = db_path.canonicalize() {
            add(&real);
        }
        let mut inodes = Vec::new();
        for (dir, name) in &prefixes {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if !starts_with(&entry.file_name(), name) {
                    continue;
                }
                if let Some(id) = std::fs::metadata(entry.path())
                    .ok()
                    .as_ref()
                    .and_then(inode)
                {
                    inodes.push(id);
                }
            }
        }
        StoreFiles { prefixes, inodes }
    }

    /// Whether the canonical `path` (whose metadata is `meta` when it exists) is one of the
    /// store's files or lies inside one of its folders.
    pub(crate) fn holds(&self, path: &Path, meta: Option<&Metadata>) -> bool {
        let by_name = self.prefixes.iter().any(|(dir, name)| {
            path.strip_prefix(dir).ok().is_some_and(|rest| {
                matches!(rest.components().next(), Some(Component::Normal(first)) if starts_with(first, name))
            })
        });
        by_name
            || meta
                .and_then(inode)
                .is_some_and(|id| self.inodes.contains(&id))
    }
}

/// `name` is the database's `prefix` itself or a companion of it: `<db>-…` (`-wal`, `-shm`,
/// `-journal`, `-mj…`) or `<db>.…` (index generations and segments).
fn starts_with(name: &std::ffi::OsStr, prefix: &std::ffi::OsStr) -> bool {
    let (name, prefix) = (name.as_encoded_bytes(), prefix.as_encoded_bytes());
    match name.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(b"-") || rest.starts_with(b"."),
        None => false,
    }
}

/// The folder a path names its file in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The canonical export folder, or `None` for the operator's unconfined reach.
fn root(reach: &ExportDir, create: bool) -> std::result::Result<Option<PathBuf>, ()> {
    match reach {
        ExportDir::Operator => Ok(None),
        ExportDir::Folder(dir) => {
            if create && std::fs::symlink_metadata(dir).is_err() {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder.create(dir).map_err(|_| ())?;
            }
            dir.canonicalize().map(Some).map_err(|_| ())
        }
    }
}

/// Where an export lands: a checked name in a canonical folder.
#[derive(Debug)]
pub(crate) struct ExportTarget {
    /// The file (canonical folder + name).
    pub(crate) path: PathBuf,
    folder: PathBuf,
    name: OsString,
    overwrite: bool,
}

/// Resolves and checks `output_path`. Nothing is written yet; [`ExportTarget::write`] checks
/// again where it matters (create-exclusive, the store's files just before a rename).
pub(crate) fn export_target(
    reach: &ExportDir,
    db_path: &Path,
    output_path: &Path,
    overwrite: bool,
) -> Result<ExportTarget> {
    const FIELD: &str = "output_path";
    lexical(output_path, FIELD)?;
    let confined = matches!(reach, ExportDir::Folder(_));
    let outside = || {
        refused(
            FIELD,
            if confined {
                OUTSIDE_EXPORT
            } else {
                "its folder does not exist or cannot be read"
            },
        )
    };
    let root = root(reach, true)
        .map_err(|()| refused(FIELD, "the export folder cannot be created or opened"))?;
    let joined = match &root {
        Some(root) => root.join(output_path),
        None => output_path.to_owned(),
    };
    let inside = |p: &Path| root.as_ref().is_none_or(|root| p.starts_with(root));
    let name = joined
        .file_name()
        .ok_or_else(|| refused(FIELD, "it names no file"))?
        .to_owned();
    let folder = folder_of(&joined).canonicalize().map_err(|_| outside())?;
    if !inside(&folder) {
        return Err(outside());
    }
    let mut path = folder.join(&name);
    let mut meta = std::fs::symlink_metadata(&path).ok();
    if meta.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
        // Judged where it leads: a dangling symlink or one that leaves the folder is refused.
        let real = path.canonicalize().map_err(|_| outside())?;
        if !inside(&real) {
            return Err(outside());
        }
        meta = std::fs::symlink_metadata(&real).ok();
        path = real;
    }
    if StoreFiles::of(db_path).holds(&path, meta.as_ref()) {
        return Err(refused(FIELD, STORE_FILE));
    }
    if let Some(meta) = &meta {
        if !meta.is_file() {
            return Err(refused(
                FIELD,
                "it names something that is not a regular file",
            ));
        }
        if !overwrite {
            return Err(refused(FIELD, EXISTS));
        }
    }
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(outside());
    };
    Ok(ExportTarget {
        folder: folder.to_owned(),
        name: name.to_owned(),
        path: path.clone(),
        overwrite,
    })
}

impl ExportTarget {
    /// Writes `body` to a fresh temporary file beside the target (mode 0600), fsyncs it, then
    /// puts it in place: a hard link, which fails when the name exists (create-exclusive, no
    /// window between the check and the write), or with `overwrite` an atomic rename. The
    /// temporary file never outlives the call.
    pub(crate) fn write(
        &self,
        db_path: &Path,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        let tmp = self.folder.join(format!(
            ".{}.{}-{serial}.tmp",
            self.name.to_string_lossy(),
            std::process::id()
        ));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&tmp)?;
        let result = self
            .fill(&file, &tmp, body)
            .and_then(|()| self.place(&tmp, db_path));
        drop(file);
        if std::fs::symlink_metadata(&tmp).is_ok() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        // The new name is durable only once its folder is.
        File::open(&self.folder)?.sync_all()?;
        Ok(())
    }

    fn fill(
        &self,
        file: &File,
        tmp: &Path,
        body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        // The file created is the one the checked folder names (no component was swapped).
        let created = file.metadata()?;
        let named = std::fs::symlink_metadata(tmp)?;
        if inode(&created) != inode(&named) || folder_of(tmp).canonicalize()? != self.folder {
            return Err(refused(
                "output_path",
                "the export folder changed during the export",
            ));
        }
        let mut out = BufWriter::new(file);
        body(&mut out)?;
        out.into_inner()
            .map_err(|err| err.into_error())?
            .sync_all()?;
        Ok(())
    }

    fn place(&self, tmp: &Path, db_path: &Path) -> Result<()> {
        if self.overwrite {
            let meta = std::fs::symlink_metadata(&self.path).ok();
            if StoreFiles::of(db_path).holds(&self.path, meta.as_ref()) {
                return Err(refused("output_path", STORE_FILE));
            }
            std::fs::rename(tmp, &self.path)?;
            return Ok(());
        }
        match std::fs::hard_link(tmp, &self.path) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(refused("output_path", EXISTS))
            }
            // A filesystem without hard links: create-exclusive on the name itself, then copy.
            Err(_) => self.copy_exclusive(tmp),
        }
    }

    fn copy_exclusive(&self, tmp: &Path) -> Result<()> {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = match options.open(&self.path) {
            Ok(out) => out,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(refused("output_path", EXISTS));
            }
            Err(err) => return Err(err.into()),
        };
        let copied = std::io::copy(&mut File::open(tmp)?, &mut out).and_then(|_| out.sync_all());
        if let Err(err) = copied {
            drop(out);
            let _ = std::fs::remove_file(&self.path);
            return Err(err.into());
        }
        Ok(())
    }
}

/// Reads the import file `input_path` names, at most `max_bytes` of it. Inside the export
/// folder, everything that is not a readable regular file there gets [`OUTSIDE_IMPORT`].
pub(crate) fn read_import(
    reach: &ExportDir,
    db_path: &Path,
    input_path: &Path,
    max_bytes: u64,
) -> Result<String> {
    const FIELD: &str = "input_path";
    lexical(input_path, FIELD)?;
    let unreadable = || {
        refused(
            FIELD,
            match reach {
                ExportDir::Folder(_) => OUTSIDE_IMPORT,
                ExportDir::Operator => "it must name a readable regular file",
            },
        )
    };
    let root = root(reach, false).map_err(|()| unreadable())?;
    let joined = match &root {
        Some(root) => root.join(input_path),
        None => input_path.to_owned(),
    };
    let resolve = || -> Option<(PathBuf, Metadata)> {
        let real = joined.canonicalize().ok()?;
        if root.as_ref().is_some_and(|root| !real.starts_with(root)) {
            return None;
        }
        let meta = std::fs::symlink_metadata(&real).ok()?;
        meta.is_file().then_some((real, meta))
    };
    let (real, meta) = resolve().ok_or_else(unreadable)?;
    if StoreFiles::of(db_path).holds(&real, Some(&meta)) {
        return Err(unreadable());
    }
    let file = File::open(&real).map_err(|_| unreadable())?;
    let opened = file.metadata().map_err(|_| unreadable())?;
    // The handle is the file the path inside the folder names now, as before the open.
    let (again, again_meta) = resolve().ok_or_else(unreadable)?;
    if again != real || inode(&opened) != inode(&meta) || inode(&opened) != inode(&again_meta) {
        return Err(unreadable());
    }
    if opened.len() > max_bytes {
        return Err(refused(
            FIELD,
            format!(
                "the file is {} bytes, over the import limit of {max_bytes} (CPERSONA_MAX_IMPORT_BYTES)",
                opened.len()
            ),
        ));
    }
    let mut text = String::new();
    file.take(max_bytes)
        .read_to_string(&mut text)
        .map_err(|_| refused(FIELD, "the file is not UTF-8 text"))?;
    Ok(text)
}

#[cfg(test)]
mod tests;
