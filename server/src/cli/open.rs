//! Turns the parsed configuration into the engine's typed settings, builds the embedder and
//! opens the store (creating its folder). The one place the CLI meets `Engine::open`; it never
//! reads the environment itself.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use cpersona_engine::embed::{self, Embedder, RemoteOptions};
use cpersona_engine::recall::stages::fusion_weights::AdaptiveFusion;
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
    engine.future_timestamps = config.writes.future_timestamps;
    engine.queue_max_attempts = config.queue_max_attempts;
    engine.queue_retry_delay_secs = config.queue_retry_delay_secs;
    engine.deep = config.deep;
    engine.query_cache = config.query_cache;
    engine.max_import_bytes = config.max_import_bytes;
    // Unset: the engine's default, `<database folder>/exports`.
    if let Some(dir) = &config.export_dir {
        engine.export_dir = ExportDir::Folder(dir.clone());
    }
    let recall = &config.recall;
    engine.scan_window = usize::try_from(recall.scan_window).unwrap_or(usize::MAX);
    engine.recall.fusion = match recall.mode {
        RecallMode::Rsf => FusionMode::Rsf,
        RecallMode::Rrf => FusionMode::Rrf,
    };
    engine.recall.rrf_k = recall.rrf_k as f64;
    engine.recall.gate.enabled = recall.fused_gate_enabled;
    engine.recall.shape.preview_chars = usize::try_from(recall.preview_chars).unwrap_or(usize::MAX);
    engine.recall.shape.excerpt_chars = usize::try_from(recall.excerpt_chars).unwrap_or(usize::MAX);
    engine.recall.cue.max_ms = recall.cue_time_limit_ms as f64;
    engine.recall.report_confidence = recall.confidence_enabled;
    engine.recall.lexical_cap = recall.lexical_cap;
    engine.recall.adaptive = recall.adaptive_fusion.then(AdaptiveFusion::default);
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

#[cfg(test)]
mod tests {
    use super::engine_config;
    use crate::config::{Config, Env};

    /// Each setting issue 20 moved to honoured reaches the engine field that acts on it.
    #[test]
    fn the_newly_honoured_settings_reach_the_engine() {
        let env = Env::from_pairs(&[
            ("CPERSONA_RECALL_EXCERPT_CHARS", "120"),
            ("CPERSONA_RECALL_CUE_TIME_LIMIT_MS", "250"),
            ("CPERSONA_TASK_MAX_RETRIES", "5"),
            ("CPERSONA_TASK_RETRY_DELAY", "7"),
            ("CPERSONA_NEAR_DUPLICATE_ROW_CAP", "300"),
            ("CPERSONA_NORMALIZATION_SCAN_CAP", "400"),
            ("CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS", "90"),
            ("CPERSONA_FUTURE_TIMESTAMP_MODE", "off"),
            ("CPERSONA_EMBEDDING_CACHE_SIZE", "0"),
            ("CPERSONA_EMBEDDING_CACHE_TTL", "9"),
        ]);
        let engine = engine_config(&Config::from_env(&env, None).unwrap());
        assert_eq!(engine.recall.shape.excerpt_chars, 120);
        assert_eq!(engine.recall.cue.max_ms, 250.0);
        assert_eq!(engine.queue_max_attempts, 5);
        assert_eq!(engine.queue_retry_delay_secs, 7);
        assert_eq!(engine.deep.near_duplicate_row_cap, 300);
        assert_eq!(engine.deep.normalization_scan_cap, 400);
        assert_eq!(engine.future_timestamps.allowance_secs, 90);
        assert_eq!(engine.query_cache.entries, 0);
        assert_eq!(engine.query_cache.ttl, std::time::Duration::from_secs(9));
        assert_eq!(
            engine.future_timestamps.mode,
            cpersona_engine::FutureTimestampMode::Off
        );
        // Unset, the engine's own defaults (CPersona's values).
        let defaults = engine_config(&Config::from_env(&Env::from_pairs(&[]), None).unwrap());
        let engine_defaults = cpersona_engine::EngineConfig::new(defaults.db_path.clone());
        assert_eq!(defaults.recall.shape, engine_defaults.recall.shape);
        assert_eq!(
            defaults.recall.cue.max_ms,
            engine_defaults.recall.cue.max_ms
        );
        assert_eq!(defaults.deep, engine_defaults.deep);
        assert_eq!(
            defaults.future_timestamps,
            engine_defaults.future_timestamps
        );
        assert_eq!(
            defaults.queue_max_attempts,
            engine_defaults.queue_max_attempts
        );
    }
}
