//! The operator's subcommands over the engine: `import`, `export`, `check` and `embed-serve`
//! (`model` is `model.rs`). Results go to stdout as JSON (these commands never serve stdio MCP);
//! the operator naming a path on the command line is trusted with it, so `CPERSONA_EXPORT_DIR`
//! confinement does not apply (`ExportDir::Operator`: relative paths against the working
//! directory, symlinks followed). Two rules still hold: an export never lands on the store's
//! own files (the database, `-wal`, `-shm`, `-journal`, index files), and never replaces an
//! existing file without `--force`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use cpersona_engine::{Engine, ExportDir, ExportRequest, ImportRequest};
use serde::Serialize;

use crate::cli::{RunError, open};
use crate::config::Config;

/// Opens the engine for an operator command (the operator's reach, no export folder).
pub(crate) fn open_engine(config: &Config) -> Result<Arc<Engine>, RunError> {
    Ok(open::open_with(config, |engine| engine.export_dir = ExportDir::Operator)?.0)
}

pub(crate) fn print_json(value: &impl Serialize) -> Result<(), RunError> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    writeln!(out)?;
    Ok(())
}

/// `cpersona import FILE`.
pub(crate) fn import(
    config: &Config,
    file: PathBuf,
    target_agent_id: Option<String>,
    dry_run: bool,
) -> Result<(), RunError> {
    let engine = open_engine(config)?;
    let outcome = engine
        .import_memories(&ImportRequest {
            input_path: file,
            target_agent_id: target_agent_id.unwrap_or_default(),
            dry_run,
            session_key: String::new(),
        })
        .context("import failed")?;
    print_json(&outcome)
}

/// `cpersona export [FILE] [--force]`: to FILE (an existing one only with `--force`), or
/// through a temporary file in a private folder of its own to stdout.
pub(crate) fn export(
    config: &Config,
    file: Option<PathBuf>,
    agent_id: Option<String>,
    force: bool,
) -> Result<(), RunError> {
    let engine = open_engine(config)?;
    let request = |output_path: PathBuf, overwrite: bool| ExportRequest {
        agent_id: agent_id.clone().unwrap_or_default(),
        output_path,
        include_embeddings: false,
        overwrite,
    };
    if let Some(file) = file {
        let outcome = engine
            .export_memories(
                &request(file, force),
                &cpersona_engine::progress::Progress::none(),
            )
            .context("export failed")?;
        return print_json(&outcome);
    }
    let folder = private_temp_folder()?;
    let path = folder.join("export.jsonl");
    let exported = engine
        .export_memories(
            &request(path.clone(), false),
            &cpersona_engine::progress::Progress::none(),
        )
        .context("export failed");
    let copied = exported.is_ok().then(|| copy_to_stdout(&path));
    let _ = std::fs::remove_file(&path);
    let removed = std::fs::remove_dir(&folder);
    let outcome = exported?;
    copied.transpose()?;
    removed.with_context(|| format!("cannot remove {}", folder.display()))?;
    tracing::info!(
        memories = outcome.memories,
        episodes = outcome.episodes,
        profiles = outcome.profiles,
        "exported"
    );
    Ok(())
}

/// A fresh folder only this process can use (mode 0700, created exclusively), so nobody can
/// plant a file or symlink at the name the export is written to.
fn private_temp_folder() -> Result<PathBuf, RunError> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for attempt in 0..16u32 {
        let folder = base.join(format!(
            "cpersona-export-{}-{nanos:x}-{attempt}",
            std::process::id()
        ));
        match builder.create(&folder) {
            Ok(()) => return Ok(folder),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => {
                return Err(anyhow::Error::new(err)
                    .context(format!("cannot create a folder in {}", base.display()))
                    .into());
            }
        }
    }
    Err(anyhow::anyhow!("cannot create a private folder in {}", base.display()).into())
}

fn copy_to_stdout(path: &Path) -> Result<(), RunError> {
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = std::io::stdout().lock();
    std::io::copy(&mut file, &mut out)?;
    out.flush()?;
    Ok(())
}

/// `cpersona check`: open (and migrate), SQLite's integrity check, counts. Fails when the
/// integrity check does.
pub(crate) fn check(config: &Config) -> Result<(), RunError> {
    let engine = open_engine(config)?;
    let stats = engine
        .store_stats("")
        .with_context(|| format!("cannot read {}", config.db_path.display()))?;
    let queue = engine.get_queue_status().context("cannot read the queue")?;
    print_json(&serde_json::json!({
        "db_path": config.db_path.display().to_string(),
        "stats": stats,
        "queue": queue,
    }))?;
    if stats.integrity != ["ok"] {
        return Err(
            anyhow::anyhow!("integrity check failed: {}", stats.integrity.join("; ")).into(),
        );
    }
    Ok(())
}

/// `cpersona embed-serve --http ADDR`.
pub(crate) fn embed_serve(config: &Config, addr: SocketAddr) -> Result<(), RunError> {
    let embedder = open::build_embedder(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(crate::embed_serve::serve(addr, embedder))?;
    Ok(())
}
