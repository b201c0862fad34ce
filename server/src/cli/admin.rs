//! The operator's subcommands over the engine: `import`, `export`, `check` and `embed-serve`
//! (`model` is `model.rs`). Results go to stdout as JSON (these commands never serve stdio MCP);
//! the operator is trusted with paths, so `CPERSONA_EXPORT_DIR` confinement does not apply.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use cpersona_engine::{Engine, ExportRequest, ImportRequest};
use serde::Serialize;

use crate::cli::{RunError, open};
use crate::config::Config;

/// Opens the engine for an operator command (no path confinement).
pub(crate) fn open_engine(config: &Config) -> Result<Arc<Engine>, RunError> {
    let mut config = config.clone();
    config.export_dir = None;
    Ok(open::open(&config)?.0)
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

/// `cpersona export [FILE]`: to FILE, or through a temporary file to stdout.
pub(crate) fn export(
    config: &Config,
    file: Option<PathBuf>,
    agent_id: Option<String>,
) -> Result<(), RunError> {
    let engine = open_engine(config)?;
    let to_stdout = file.is_none();
    let path = file.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("cpersona-export-{}.jsonl", std::process::id()))
    });
    let outcome = engine
        .export_memories(&ExportRequest {
            agent_id: agent_id.unwrap_or_default(),
            output_path: path.clone(),
            include_embeddings: false,
        })
        .context("export failed")?;
    if !to_stdout {
        return print_json(&outcome);
    }
    let copied = copy_to_stdout(&path);
    let removed = std::fs::remove_file(&path);
    copied?;
    removed.with_context(|| format!("cannot remove {}", path.display()))?;
    tracing::info!(
        memories = outcome.memories,
        episodes = outcome.episodes,
        profiles = outcome.profiles,
        "exported"
    );
    Ok(())
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
