//! `cpersona migrate --from-cpersona PATH [--to OURS] [--dry-run]`, and the conversion
//! `serve` runs itself when the configured database is a CPersona store. The original is
//! only ever read; the store is written under a temporary name and renamed into place, so
//! a conversion that stops half-way leaves nothing a later start would take for finished.
//! The report goes to stdout as JSON (`migrate`) or to stderr (`serve`), progress to stderr.

use std::path::{Path, PathBuf};

use anyhow::Context;
use cpersona_engine::cpersona::{self, StoreKind};
use cpersona_engine::progress::{Progress, Step};
use cpersona_engine::{ConvertOutcome, ConvertRequest, Engine};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{RunError, admin, open};
use crate::config::Config;

/// The suffix of the store converted from `<stem>.db`: `<stem>.cpersona-rs.db`, beside it.
pub(crate) const CONVERTED_SUFFIX: &str = ".cpersona-rs.db";

/// CPersona's default database, relative to the working directory (its `config.py`).
pub(crate) const CPERSONA_DEFAULT_DB: &str = "data/cpersona.db";

/// The store a CPersona file converts to: `<folder>/<stem>.cpersona-rs.db`.
pub(crate) fn converted_path(source: &Path) -> PathBuf {
    let stem = source
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "cpersona".into());
    source.with_file_name(format!("{stem}{CONVERTED_SUFFIX}"))
}

/// `cpersona migrate`.
pub(crate) fn run(
    config: &Config,
    from: &Path,
    to: Option<PathBuf>,
    dry_run: bool,
) -> Result<(), RunError> {
    let target = to.unwrap_or_else(|| converted_path(from));
    let outcome = convert(config, from, &target, dry_run)?;
    admin::print_json(&outcome)
}

/// Converts `from` into a new store at `target` (or, with `dry_run`, into a scratch store
/// that is removed, reporting what would be carried), with a progress bar on stderr.
pub(crate) fn convert(
    config: &Config,
    from: &Path,
    target: &Path,
    dry_run: bool,
) -> Result<ConvertOutcome, RunError> {
    // What the source is, before anything is created.
    match cpersona::inspect(from).map_err(RunError::config)? {
        StoreKind::CPersona { .. } => {}
        StoreKind::Missing => {
            return Err(RunError::config(anyhow::anyhow!(
                "{} does not exist or is empty",
                from.display()
            )));
        }
        StoreKind::Ours => {
            return Err(RunError::config(anyhow::anyhow!(
                "{} is already a cpersona-rs store: serve it as it is",
                from.display()
            )));
        }
        StoreKind::Other { reason } => {
            return Err(RunError::config(anyhow::anyhow!(
                "{} is not a CPersona store: {reason}",
                from.display()
            )));
        }
    }
    if same_file(from, target) {
        return Err(RunError::config(anyhow::anyhow!(
            "--to names the CPersona file itself; the original is never written"
        )));
    }
    if std::fs::metadata(target).is_ok_and(|m| m.len() > 0) {
        return Err(RunError::config(anyhow::anyhow!(
            "{} exists and is not empty; refusing to overwrite it (choose another --to, or \
             remove it)",
            target.display()
        )));
    }
    let embedder = open::build_embedder(config)?;
    let scratch = if dry_run {
        Some(ScratchDir::new()?)
    } else {
        None
    };
    let write_to = match &scratch {
        Some(dir) => dir.0.join("dry-run.db"),
        None => {
            if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            partial_path(target)
        }
    };
    remove_store_files(&write_to)?;
    let mut engine_config = open::engine_config(config);
    engine_config.db_path = write_to.clone();
    engine_config.export_dir = cpersona_engine::ExportDir::default_for(&write_to);
    let bar = ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("converting {bar:40} {pos}/{len} rows ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let on_progress = |step: Step| {
        if let Some(total) = step.total {
            bar.set_length(total);
        }
        bar.set_position(step.done);
    };
    let request = ConvertRequest {
        source: from.to_path_buf(),
        dry_run,
    };
    let converted = Engine::convert_cpersona(
        &engine_config,
        embedder,
        &request,
        &Progress::new(Some(&on_progress), None),
    );
    let mut outcome = match converted {
        Ok(outcome) => outcome,
        Err(err) => {
            bar.abandon();
            let _ = remove_store_files(&write_to);
            return Err(if is_input_error(&err) {
                RunError::config(err)
            } else {
                anyhow::Error::from(err)
                    .context(format!("converting {} failed", from.display()))
                    .into()
            });
        }
    };
    bar.finish_and_clear();
    if dry_run {
        drop(scratch);
    } else {
        rename_store(&write_to, target)?;
    }
    outcome.target = target.display().to_string();
    Ok(outcome)
}

/// A private folder for a dry run's scratch store, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<ScratchDir, RunError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "cpersona-migrate-dry-run-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir(&dir)
            .with_context(|| format!("cannot create a scratch folder {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Errors about the input (not a CPersona file, unknown schema, unreadable, target full).
fn is_input_error(err: &cpersona_engine::Error) -> bool {
    matches!(
        err,
        cpersona_engine::Error::NotCPersona { .. }
            | cpersona_engine::Error::CPersonaSchemaUnknown { .. }
            | cpersona_engine::Error::CPersonaUnreadable { .. }
            | cpersona_engine::Error::TargetNotEmpty { .. }
    )
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `<target>.partial`: where the store is written before it is renamed into place.
fn partial_path(target: &Path) -> PathBuf {
    suffixed(target, ".partial")
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Removes a store file and its SQLite companions, where they exist.
fn remove_store_files(db: &Path) -> Result<(), RunError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let path = suffixed(db, suffix);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(anyhow::Error::from(err)
                    .context(format!("cannot remove {}", path.display()))
                    .into());
            }
        }
    }
    Ok(())
}

/// Moves the finished store (and a write-ahead log SQLite left, log first) into place.
fn rename_store(from: &Path, to: &Path) -> Result<(), RunError> {
    for suffix in ["-wal", "-shm", ""] {
        let src = suffixed(from, suffix);
        if src.exists() {
            std::fs::rename(&src, suffixed(to, suffix))
                .with_context(|| format!("cannot move {} into place", src.display()))?;
        }
    }
    Ok(())
}

/// What `serve` does with a CPersona database: the configuration to serve (its `db_path`
/// switched to the converted store) and the CPersona original, when there is one.
pub(crate) struct Served {
    pub(crate) config: Config,
    pub(crate) original: Option<PathBuf>,
}

/// When the configured database is a CPersona store, converts it once to
/// `<stem>.cpersona-rs.db` beside it and serves that (a later start reuses it). With no
/// database named and none at the default path, CPersona's own default
/// (`data/cpersona.db` under the working directory) is converted to the default path.
pub(crate) fn for_serve(config: Config) -> Result<Served, RunError> {
    let kind = cpersona::inspect(&config.db_path).map_err(RunError::config)?;
    let (original, target) = match kind {
        StoreKind::CPersona { .. } => {
            let original = config.db_path.clone();
            (original.clone(), converted_path(&original))
        }
        StoreKind::Missing if config.db_path_defaulted => {
            let theirs = PathBuf::from(CPERSONA_DEFAULT_DB);
            if !matches!(cpersona::inspect(&theirs), Ok(StoreKind::CPersona { .. })) {
                return Ok(Served {
                    config,
                    original: None,
                });
            }
            eprintln!(
                "cpersona: no database at the default path {}, and CPersona's default {} is a \
                 CPersona store: converting it there (the original is only read)",
                config.db_path.display(),
                theirs.display()
            );
            (theirs, config.db_path.clone())
        }
        _ => {
            return Ok(Served {
                config,
                original: None,
            });
        }
    };
    let mut served = config.clone();
    served.db_path = target.clone();
    if matches!(cpersona::inspect(&target), Ok(StoreKind::Ours)) {
        tracing::info!(
            original = %original.display(),
            converted = %target.display(),
            "serving the store converted from the CPersona database"
        );
    } else {
        eprintln!(
            "cpersona: {} is a CPersona database; converting it to {} (the original is only \
             read; later starts reuse the converted store)",
            original.display(),
            target.display()
        );
        let outcome = convert(&config, &original, &target, false)?;
        let report = serde_json::to_string(&outcome).unwrap_or_default();
        eprintln!("cpersona: conversion report: {report}");
    }
    Ok(Served {
        config: served,
        original: Some(original),
    })
}

/// A warning when the CPersona original changed since `engine`'s store was converted from
/// it: the converted store does not follow it.
pub(crate) fn drift_warning(engine: &Engine, original: &Path) -> Option<String> {
    let recorded = engine.converted_from().ok().flatten()?;
    let now = match cpersona::stamp(original) {
        Ok(now) => now,
        Err(err) => {
            return Some(format!(
                "the CPersona original {} cannot be read to compare ({err}); this store was \
                 converted from it and does not follow it",
                original.display()
            ));
        }
    };
    let changes = recorded.changes_to(&now);
    if changes.is_empty() {
        return None;
    }
    Some(format!(
        "the CPersona original {} changed since it was converted ({}): this store does not \
         follow it; writes made there since are not here (to take them, move the converted \
         store aside and start again, or run `cpersona migrate --from-cpersona` to a new file)",
        original.display(),
        changes.join("; ")
    ))
}
