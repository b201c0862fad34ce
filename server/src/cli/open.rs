//! Turns the parsed configuration into the engine's typed settings, builds the embedder and
//! opens the store (creating its folder). The one place the CLI meets `Engine::open`; it never
//! reads the environment itself.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use cpersona_engine::embed::{self, Embedder, RemoteOptions};
use cpersona_engine::{Engine, EngineConfig, ExportDir};

use crate::cli::RunError;
use crate::config::{Config, EmbedderConfig, RecallMode};
use cpersona_engine::recall::stages::fusion::FusionMode;

/// Window assumed for an OpenAI-compatible endpoint, which cannot report its own.
const API_WINDOW_TOKENS: usize = 512;

/// The engine settings the configuration asks for.
pub(crate) fn engine_config(config: &Config) -> EngineConfig {
    let mut engine = EngineConfig::new(config.db_path.clone());
    engine.max_content_chars = config.writes.max_content_chars;
    engine.max_profile_chars = config.writes.max_profile_chars;
    engine.max_metadata_chars = config.writes.max_metadata_chars;
    engine.max_import_bytes = config.max_import_bytes;
    // Unset: the engine's default, `<database folder>/exports`.
    if let Some(dir) = &config.export_dir {
        engine.export_dir = ExportDir::Folder(dir.clone());
    }
    let recall = &config.recall;
    engine.scan_window = usize::try_from(recall.scan_window).unwrap_or(usize::MAX);
    engine.recall.fusion = match recall.mode {
        RecallMode::Rsf => FusionMode::Rsf,
        // The engine has no cascade yet: RRF, CPersona's default, serves it.
        RecallMode::Rrf | RecallMode::Cascade => FusionMode::Rrf,
    };
    engine.recall.rrf_k = recall.rrf_k as f64;
    engine.recall.gate.enabled = recall.fused_gate_enabled;
    engine.recall.shape.preview_chars = usize::try_from(recall.preview_chars).unwrap_or(usize::MAX);
    engine.recall.report_confidence = recall.confidence_enabled;
    engine.recall.lexical_cap = recall.lexical_cap;
    engine.recall.recency.rate_per_h = recall.prior_age_rate;
    engine.recall.recency.floor = recall.prior_age_floor;
    engine.recall.precision_beta = if recall.fused_gate_beta > 0.0 {
        recall.fused_gate_beta
    } else {
        recall.precision.beta()
    };
    let confidence = &mut engine.recall.confidence;
    confidence.cosine_floor = recall.cosine_floor;
    confidence.cosine_ceil = recall.cosine_ceil;
    confidence.decay_rate = recall.decay_rate;
    confidence.decay_floor = recall.decay_floor;
    confidence.decay_ceil = recall.decay_ceil;
    confidence.recall_boost = recall.recall_boost;
    confidence.boost_decay_rate = recall.boost_decay_rate;
    engine.reconstruct = config.reconstruct.engine(recall.preview_chars);
    engine.associations_enabled = config.associations_enabled;
    engine.propagation_seat = recall.propagation_seat;
    engine.reembed_on_model_change = config.auto_reembed;
    engine
}

/// The embedder the configuration names. `CPERSONA_EMBEDDING_MODE=none` runs the hashed
/// n-gram fallback, which reports itself degraded (recall says so in its `advisory`).
pub(crate) fn embedder_config(config: &EmbedderConfig) -> embed::EmbedderConfig {
    let options = |timeout_secs: u64| RemoteOptions {
        timeout: Duration::from_secs(timeout_secs),
        ..RemoteOptions::default()
    };
    match config {
        EmbedderConfig::Builtin { model_dir } => embed::EmbedderConfig::Builtin {
            model_dir: model_dir.clone(),
        },
        EmbedderConfig::None => embed::EmbedderConfig::Hash,
        EmbedderConfig::Http { url, timeout_secs } => embed::EmbedderConfig::Http {
            url: url.clone(),
            model: None,
            dim: None,
            window_tokens: None,
            options: options(*timeout_secs),
        },
        EmbedderConfig::Api {
            url,
            api_key,
            model,
            timeout_secs,
        } => embed::EmbedderConfig::OpenAi {
            url: url.clone(),
            model: model.clone(),
            api_key: api_key.clone(),
            dim: None,
            window_tokens: API_WINDOW_TOKENS,
            options: options(*timeout_secs),
        },
    }
}

/// Builds the configured embedder.
pub(crate) fn build_embedder(config: &Config) -> Result<Arc<dyn Embedder>, RunError> {
    let embedder = embed::from_config(&embedder_config(&config.embedder))
        .context("cannot start the embedder")
        .map_err(RunError::config)?;
    let identity = embedder.identity();
    tracing::info!(model = %identity.model_id, dim = identity.dim, "embedder ready");
    if let embed::EmbedHealth::Degraded { reason, .. } = embedder.health() {
        tracing::warn!(%reason, "semantic recall is degraded");
    }
    Ok(embedder)
}

/// Builds the embedder and opens (creating and migrating) the store.
pub(crate) fn open(config: &Config) -> Result<(Arc<Engine>, Arc<dyn Embedder>), RunError> {
    open_with(config, |_| {})
}

/// As [`open`], with the engine settings changed by `edit` first (the operator's reach).
pub(crate) fn open_with(
    config: &Config,
    edit: impl FnOnce(&mut EngineConfig),
) -> Result<(Arc<Engine>, Arc<dyn Embedder>), RunError> {
    let embedder = build_embedder(config)?;
    if let Some(parent) = config
        .db_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the database folder {}", parent.display()))?;
    }
    let mut engine_config = engine_config(config);
    edit(&mut engine_config);
    let engine = Engine::open(engine_config, Arc::clone(&embedder))
        .with_context(|| format!("cannot open the database {}", config.db_path.display()))?;
    Ok((Arc::new(engine), embedder))
}
