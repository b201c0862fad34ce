//! Configuration: environment variables and flags read once, at start-up, into typed values
//! (ripgrep's LowArgs → HiArgs step). Nothing else in the workspace reads the environment;
//! an invalid setting is a start-up error naming the variable, never a silent default.

use cpersona_engine::FutureTimestampMode;
use std::net::SocketAddr;
use std::path::PathBuf;

pub mod coverage;
mod env;
mod error;
mod hub;
mod proxy;
mod reconstruct;
use reconstruct::parse_reconstruct;
#[cfg(test)]
mod tests;

pub use coverage::UnhonouredSetting;
pub use env::Env;
use env::invalid;
pub use error::ConfigError;
use error::Result;
pub use hub::{DEFAULT_ENDPOINT, HubSettings};
pub use proxy::ProxySettings;
pub use reconstruct::ReconstructSettings;

/// Everything the server needs, validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// The SQLite file, the source of truth.
    pub db_path: PathBuf,
    /// True when neither `--db` nor `CPERSONA_DB_PATH` named the database (the default path).
    pub db_path_defaulted: bool,
    pub embedder: EmbedderConfig,
    pub http: HttpConfig,
    pub writes: WriteLimits,
    pub recall: RecallSettings,
    pub reconstruct: ReconstructSettings,
    /// Confinement root for export/import paths (`CPERSONA_EXPORT_DIR`); unset, the engine's
    /// default `<database folder>/exports`.
    pub export_dir: Option<PathBuf>,
    /// Largest import file accepted (`CPERSONA_MAX_IMPORT_BYTES`).
    pub max_import_bytes: u64,
    /// Declared associations and their recall cue (`CPERSONA_ASSOCIATIONS_ENABLED`, on by
    /// default as CPersona 2.6 ships them; `false` is this port's switch for operators who
    /// want the tools refused and recall never reading the association tables).
    pub associations_enabled: bool,
    /// Re-embed the store in the background when the embedder changed
    /// (`CPERSONA_AUTO_REEMBED`, default true; never toward the hashed fallback over a real
    /// model's vectors). Off, the old vectors stay and `cpersona reembed` starts it.
    pub auto_reembed: bool,
    /// The builtin model's folder (`CPERSONA_MODEL_DIR`, else [`default_model_dir`]), whatever
    /// the embedding mode: `cpersona model install` installs there.
    pub model_dir: PathBuf,
    /// `model_dir` came from `CPERSONA_MODEL_DIR`.
    pub model_dir_from_env: bool,
    /// The background index maintenance (`CPERSONA_INDEX_AUTO_MERGE`, `CPERSONA_INDEX_FLUSH_MS`).
    pub index: IndexMaintenance,
    /// The operating context sidecar (`CPERSONA_OPERATING_CONTEXT_PATH`, default
    /// `~/.cpersona/operating-context.toml`); `None` when `CPERSONA_OPERATING_CONTEXT=off`.
    pub operating_context: Option<PathBuf>,
    /// Recall's query-vector cache (`CPERSONA_EMBEDDING_CACHE_SIZE`, default 256, 0 off;
    /// `CPERSONA_EMBEDDING_CACHE_TTL`, seconds, default 300).
    pub query_cache: cpersona_engine::QueryCacheConfig,
    /// The embedding queue's retries: attempts before a row is left alone
    /// (`CPERSONA_TASK_MAX_RETRIES`, default 3) and the wait after a failure
    /// (`CPERSONA_TASK_RETRY_DELAY`, seconds, default 30).
    pub queue_max_attempts: u32,
    pub queue_retry_delay_secs: u64,
    /// `deep_check`'s scan bounds (`CPERSONA_NEAR_DUPLICATE_ROW_CAP`, default 5,000, at
    /// least 2; `CPERSONA_NORMALIZATION_SCAN_CAP`, default 10,000, at least 1).
    pub deep: cpersona_engine::DeepConfig,
    /// The set `CPERSONA_*` variables that are inert, refused or unknown (`coverage.rs`), in
    /// name order.
    pub unhonoured: Vec<UnhonouredSetting>,
}

/// What `serve` does in the background to keep the vector index fresh: every `flush_every_ms`
/// it flushes rows written since the last pass into a new segment and, when `auto_merge`, runs
/// the merge the policy picks. Flushing is not optional: it is what keeps recall off the
/// SQLite scan; merging can be left to an operator (`cpersona index merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexMaintenance {
    /// `CPERSONA_INDEX_AUTO_MERGE` (default true).
    pub auto_merge: bool,
    /// `CPERSONA_INDEX_FLUSH_MS` (default 500, 50 to 60,000).
    pub flush_every_ms: u64,
}

/// Which embedder the engine builds (`CPERSONA_EMBEDDING_MODE`).
#[derive(Clone, Debug, PartialEq)]
pub enum EmbedderConfig {
    /// The in-process model read from `CPERSONA_MODEL_DIR` (default: works offline).
    Builtin { model_dir: PathBuf },
    /// No embedder: recall is lexical only and says so.
    None,
    /// CPersona's embedding contract: `POST <url>` (`/embed`), `/count_tokens`, `/capabilities`.
    Http { url: String, timeout_secs: u64 },
    /// An OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama, llama.cpp, vLLM, TEI).
    Api {
        url: String,
        api_key: Option<String>,
        model: String,
        timeout_secs: u64,
    },
}

/// Mode names of `CPERSONA_EMBEDDING_MODE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EmbeddingMode {
    Builtin,
    None,
    Http,
    Api,
}

/// The streamable HTTP transport's security settings.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The bearer token (`CPERSONA_AUTH_TOKEN`); `None` only when unauthenticated HTTP is allowed.
    pub auth_token: Option<String>,
    /// `CPERSONA_ALLOW_UNAUTHENTICATED_HTTP`.
    pub allow_unauthenticated: bool,
    /// Largest request body (`CPERSONA_HTTP_MAX_BODY_BYTES`), answered 413 above.
    pub max_body_bytes: usize,
    /// Browser Origins allowed besides the loopback ones (`CPERSONA_HTTP_ALLOWED_ORIGINS`).
    pub extra_allowed_origins: Vec<String>,
    /// `Host` values allowed besides the loopback ones (`CPERSONA_HTTP_ALLOWED_HOSTS`).
    pub extra_allowed_hosts: Vec<String>,
    /// The ACL file (`CPERSONA_ACL_FILE`): per-client tokens and per-agent grants, read and
    /// validated at `serve` start-up (`access::load`); it replaces `auth_token` over HTTP.
    pub acl_file: Option<PathBuf>,
    /// The address from `CPERSONA_TRANSPORT=streamable-http` + `CPERSONA_HTTP_HOST`/`_PORT`,
    /// used when `serve` gets no `--http` flag.
    pub env_bind: Option<SocketAddr>,
}

/// Caps on what a write may carry.
#[derive(Clone, Debug)]
pub struct WriteLimits {
    pub max_content_chars: usize,
    pub max_profile_chars: usize,
    pub max_metadata_chars: usize,
    /// `CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS` (default 300) and `_MODE` (warn, reject, off).
    pub future_timestamps: cpersona_engine::FutureTimestamps,
}

/// Fusion mode (`CPERSONA_RECALL_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecallMode {
    Rrf,
    Rsf,
}

/// How `calibrate_threshold` places the threshold when a call does not say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalibrateMethod {
    Separation,
    Percentile,
    Zscore,
}

/// `calibrate_threshold`'s defaults (CPersona's `CPERSONA_CALIBRATE_*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CalibrateDefaults {
    /// 1..=2,000 (default 200).
    pub sample_size: u32,
    /// -10..=10 (default 1.0).
    pub z_factor: f64,
    pub method: CalibrateMethod,
    /// A fraction in (0, 1] or a percent above 1 (default 0.95).
    pub percentile: f64,
}

/// Gate precision presets (`CPERSONA_RECALL_PRECISION`): β 2.0 / 1.0 / 0.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    Strict,
    Balanced,
    Lenient,
}

impl Precision {
    /// The gate's β for this preset.
    pub fn beta(self) -> f64 {
        match self {
            Precision::Strict => 2.0,
            Precision::Balanced => 1.0,
            Precision::Lenient => 0.5,
        }
    }
}

/// Where the age prior measures from (`CPERSONA_PRIOR_AGE_ANCHOR`). The engine honours
/// `newest` (the newest dated row of the answer); `now` with a rate above 0 is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgeAnchor {
    Newest,
    Now,
}

/// Recall settings (cpersona-2.6.14 §7 "Scan / reach / depth", "Fusion / gate / scoring",
/// "2.6 recall process"), collected here even where the engine does not consume them yet.
#[derive(Clone, Debug)]
pub struct RecallSettings {
    pub scan_window: u64,
    pub mode: RecallMode,
    pub rrf_k: u64,
    pub fused_gate_enabled: bool,
    pub precision: Precision,
    /// Raw β; when unset the precision preset's β applies.
    pub fused_gate_beta: f64,
    pub confidence_enabled: bool,
    pub cosine_floor: f64,
    pub cosine_ceil: f64,
    pub decay_rate: f64,
    pub decay_floor: f64,
    pub decay_ceil: f64,
    pub recall_boost: f64,
    pub boost_decay_rate: f64,
    pub prior_age_rate: f64,
    pub prior_age_floor: f64,
    pub prior_age_anchor: AgeAnchor,
    pub preview_chars: u64,
    pub excerpt_chars: u64,
    pub cue_time_limit_ms: u64,
    pub propagation_seat: bool,
    pub degraded_advisory: bool,
    /// `calibrate_threshold`'s defaults for the arguments a call leaves out
    /// (`CPERSONA_CALIBRATE_SAMPLE_SIZE`, `_Z_FACTOR`, `_METHOD`, `_PERCENTILE`).
    pub calibrate: CalibrateDefaults,
    /// `check_health` warns when a table's live tail exceeds this share of its generation's
    /// rows (`CPERSONA_INDEX_STALE_WARN_SHARE`, 0..=1; 0 warns on any live tail).
    pub index_stale_warn_share: f64,
    /// bm25 ranks at most this many matching rows per FTS table (over it, the rows holding
    /// the rarest terms); `None` = every match (`CPERSONA_RECALL_LEXICAL_CAP`: `off`, or
    /// 100..=100,000,000; default 100).
    pub lexical_cap: Option<usize>,
    /// Adaptive fusion (`CPERSONA_RECALL_ADAPTIVE_FUSION`, default the engine's, off): per
    /// query, a lexical arm that filled the Recall Depth and was less decisive than the
    /// vector arm is weighted down (`engine::recall::stages::fusion_weights`).
    pub adaptive_fusion: bool,
}

/// The default database path: `<user data dir>/cpersona/cpersona.db`, else `./cpersona.db`.
fn default_db_path() -> PathBuf {
    dirs::data_dir()
        .map(|d| d.join("cpersona").join("cpersona.db"))
        .unwrap_or_else(|| PathBuf::from("cpersona.db"))
}

/// The default model folder of the builtin embedder: `<user data dir>/cpersona/model`.
pub(crate) fn default_model_dir() -> PathBuf {
    dirs::data_dir()
        .map(|d| d.join("cpersona").join("model"))
        .unwrap_or_else(|| PathBuf::from("model"))
}

impl Config {
    /// Parse and validate every setting. `db_override` is the `--db` flag, which wins over
    /// `CPERSONA_DB_PATH`.
    pub fn from_env(env: &Env, db_override: Option<PathBuf>) -> Result<Config> {
        let named = db_override.or_else(|| env.get("CPERSONA_DB_PATH").map(PathBuf::from));
        let db_path_defaulted = named.is_none();
        let db_path = named.unwrap_or_else(default_db_path);
        let recall = parse_recall(env)?;
        let reconstruct = parse_reconstruct(env, recall.preview_chars)?;
        let env_model_dir = env.get("CPERSONA_MODEL_DIR").map(PathBuf::from);
        let model_dir_from_env = env_model_dir.is_some();
        let model_dir = env_model_dir.unwrap_or_else(default_model_dir);
        Ok(Config {
            db_path,
            db_path_defaulted,
            embedder: parse_embedder(env, &model_dir)?,
            http: parse_http(env)?,
            writes: parse_writes(env)?,
            recall,
            reconstruct,
            export_dir: env.get("CPERSONA_EXPORT_DIR").map(PathBuf::from),
            max_import_bytes: env.int("CPERSONA_MAX_IMPORT_BYTES", 104_857_600, 1, u64::MAX)?,
            associations_enabled: env.boolean("CPERSONA_ASSOCIATIONS_ENABLED", true)?,
            auto_reembed: env.boolean("CPERSONA_AUTO_REEMBED", true)?,
            model_dir,
            model_dir_from_env,
            index: IndexMaintenance {
                auto_merge: env.boolean("CPERSONA_INDEX_AUTO_MERGE", true)?,
                flush_every_ms: env.int("CPERSONA_INDEX_FLUSH_MS", 500, 50, 60_000)?,
            },
            operating_context: operating_context_path(env),
            query_cache: cpersona_engine::QueryCacheConfig {
                entries: env.int("CPERSONA_EMBEDDING_CACHE_SIZE", 256, 0, 100_000)? as usize,
                ttl: std::time::Duration::from_secs(env.int(
                    "CPERSONA_EMBEDDING_CACHE_TTL",
                    300,
                    0,
                    604_800,
                )?),
            },
            queue_max_attempts: env.int("CPERSONA_TASK_MAX_RETRIES", 3, 1, 100)? as u32,
            queue_retry_delay_secs: env.int("CPERSONA_TASK_RETRY_DELAY", 30, 0, 86_400)?,
            deep: cpersona_engine::DeepConfig {
                near_duplicate_row_cap: env.int(
                    "CPERSONA_NEAR_DUPLICATE_ROW_CAP",
                    5_000,
                    2,
                    1_000_000,
                )? as usize,
                normalization_scan_cap: env.int(
                    "CPERSONA_NORMALIZATION_SCAN_CAP",
                    10_000,
                    1,
                    10_000_000,
                )? as usize,
            },
            unhonoured: coverage::unhonoured(env),
        })
    }

    /// The start-up error a refused setting causes (`coverage.rs`), if one is set.
    pub fn refused_setting(&self) -> Option<ConfigError> {
        coverage::refusal(&self.unhonoured)
    }
}

/// CPersona's sidecar path rule: the kill switch, the variable, then the home default.
fn operating_context_path(env: &Env) -> Option<PathBuf> {
    if env
        .get("CPERSONA_OPERATING_CONTEXT")
        .is_some_and(|v| v.eq_ignore_ascii_case("off"))
    {
        return None;
    }
    match env.get("CPERSONA_OPERATING_CONTEXT_PATH") {
        Some(path) if !path.is_empty() => Some(expand_home(path)),
        _ => dirs::home_dir().map(|home| home.join(".cpersona/operating-context.toml")),
    }
}

/// `~/x` under the home folder, as CPersona's `expanduser` reads it.
fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), dirs::home_dir()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => PathBuf::from(path),
    }
}

fn parse_embedder(env: &Env, model_dir: &std::path::Path) -> Result<EmbedderConfig> {
    let mode_var = env.get_aliased("CPERSONA_EMBEDDING_MODE", "EMBEDDING_MODE");
    let mode = match mode_var {
        None => EmbeddingMode::Builtin,
        Some((var, raw)) => match raw.to_ascii_lowercase().as_str() {
            "builtin" => EmbeddingMode::Builtin,
            "none" => EmbeddingMode::None,
            "http" => EmbeddingMode::Http,
            "api" | "openai" => EmbeddingMode::Api,
            _ => {
                return Err(invalid(
                    var,
                    raw,
                    "expected one of builtin, none, http, api (openai is an alias of api)",
                ));
            }
        },
    };
    let timeout_secs = env.int("CPERSONA_EMBEDDING_TIMEOUT_SECS", 30, 1, 3600)?;
    Ok(match mode {
        EmbeddingMode::Builtin => EmbedderConfig::Builtin {
            model_dir: model_dir.to_path_buf(),
        },
        EmbeddingMode::None => EmbedderConfig::None,
        EmbeddingMode::Http => {
            let Some((var, url)) = env.get_aliased("CPERSONA_EMBEDDING_URL", "EMBEDDING_HTTP_URL")
            else {
                return Err(ConfigError::Missing {
                    var: "CPERSONA_EMBEDDING_URL",
                    reason: "CPERSONA_EMBEDDING_MODE=http needs the embed endpoint, \
                             e.g. http://127.0.0.1:8401/embed"
                        .into(),
                });
            };
            check_http_url(var, url)?;
            EmbedderConfig::Http {
                url: url.to_owned(),
                timeout_secs,
            }
        }
        EmbeddingMode::Api => {
            let (url_var, url) = env
                .get_aliased("CPERSONA_EMBEDDING_API_URL", "EMBEDDING_API_URL")
                .unwrap_or((
                    "CPERSONA_EMBEDDING_API_URL",
                    "https://api.openai.com/v1/embeddings",
                ));
            check_http_url(url_var, url)?;
            EmbedderConfig::Api {
                url: url.to_owned(),
                api_key: env
                    .get_aliased("CPERSONA_EMBEDDING_API_KEY", "EMBEDDING_API_KEY")
                    .map(|(_, k)| k.to_owned()),
                model: env
                    .get_aliased("CPERSONA_EMBEDDING_MODEL", "EMBEDDING_MODEL")
                    .map_or("text-embedding-3-small", |(_, m)| m)
                    .to_owned(),
                timeout_secs,
            }
        }
    })
}

fn check_http_url(var: &'static str, url: &str) -> Result<()> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(invalid(var, url, "must be an http:// or https:// URL"))
    }
}

fn parse_http(env: &Env) -> Result<HttpConfig> {
    let auth_token = env.get("CPERSONA_AUTH_TOKEN").map(str::to_owned);
    let env_bind = match env.get("CPERSONA_TRANSPORT") {
        None | Some("stdio") => None,
        Some("streamable-http") => {
            let host = env.get("CPERSONA_HTTP_HOST").unwrap_or("127.0.0.1");
            let port: u16 = env.parse("CPERSONA_HTTP_PORT", 8402)?;
            let ip: std::net::IpAddr = host
                .parse()
                .map_err(|_| invalid("CPERSONA_HTTP_HOST", host, "must be an IP address"))?;
            Some(SocketAddr::new(ip, port))
        }
        Some(other) => {
            return Err(invalid(
                "CPERSONA_TRANSPORT",
                other,
                "expected stdio or streamable-http",
            ));
        }
    };
    Ok(HttpConfig {
        auth_token,
        allow_unauthenticated: env.boolean("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP", false)?,
        max_body_bytes: env.int("CPERSONA_HTTP_MAX_BODY_BYTES", 4_194_304, 1024, 1 << 30)? as usize,
        extra_allowed_origins: env.list("CPERSONA_HTTP_ALLOWED_ORIGINS"),
        extra_allowed_hosts: env.list("CPERSONA_HTTP_ALLOWED_HOSTS"),
        acl_file: env.get("CPERSONA_ACL_FILE").map(PathBuf::from),
        env_bind,
    })
}

fn parse_writes(env: &Env) -> Result<WriteLimits> {
    Ok(WriteLimits {
        max_content_chars: env.int("CPERSONA_MAX_CONTENT_LENGTH", 16_000, 1, 10_000_000)? as usize,
        max_profile_chars: env.int("CPERSONA_MAX_PROFILE_LENGTH", 2_000, 1, 10_000_000)? as usize,
        max_metadata_chars: env.int("CPERSONA_MAX_METADATA_LENGTH", 8_000, 1, 10_000_000)? as usize,
        future_timestamps: cpersona_engine::FutureTimestamps {
            allowance_secs: env.int(
                "CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS",
                300,
                0,
                u64::from(u32::MAX),
            )? as i64,
            mode: env.word(
                "CPERSONA_FUTURE_TIMESTAMP_MODE",
                FutureTimestampMode::Warn,
                &[
                    ("warn", FutureTimestampMode::Warn),
                    ("reject", FutureTimestampMode::Reject),
                    ("off", FutureTimestampMode::Off),
                ],
            )?,
        },
    })
}

/// `CPERSONA_RECALL_LEXICAL_CAP`: `off` (identity: bm25 over every match) or a count no
/// smaller than the recall depth maximum, so the capped arm can still fill its depth.
fn lexical_cap(env: &Env) -> Result<Option<usize>> {
    const VAR: &str = "CPERSONA_RECALL_LEXICAL_CAP";
    let default = cpersona_engine::recall::RecallConfig::LEXICAL_CAP;
    let lo = cpersona_engine::recall::stages::select::RecallDepth::MAX as u64;
    if env
        .get(VAR)
        .is_some_and(|raw| raw.eq_ignore_ascii_case("off"))
    {
        return Ok(None);
    }
    let cap = env.int(VAR, default as u64, lo, 100_000_000)?;
    Ok(Some(usize::try_from(cap).unwrap_or(usize::MAX)))
}

/// `CPERSONA_RECALL_MODE`: `rrf` (default) or `rsf`. CPersona's `cascade` (stages filling the
/// count one after another, no fusion) is refused rather than quietly served by rrf.
fn recall_mode(env: &Env) -> Result<RecallMode> {
    const VAR: &str = "CPERSONA_RECALL_MODE";
    if env
        .get(VAR)
        .is_some_and(|raw| raw.eq_ignore_ascii_case("cascade"))
    {
        return Err(invalid(
            VAR,
            "cascade",
            "the cascade recall is not offered here; use rrf (CPersona's default) or rsf",
        ));
    }
    env.word(
        VAR,
        RecallMode::Rrf,
        &[("rrf", RecallMode::Rrf), ("rsf", RecallMode::Rsf)],
    )
}

fn parse_recall(env: &Env) -> Result<RecallSettings> {
    let precision = env.word(
        "CPERSONA_RECALL_PRECISION",
        Precision::Balanced,
        &[
            ("strict", Precision::Strict),
            ("balanced", Precision::Balanced),
            ("lenient", Precision::Lenient),
        ],
    )?;
    let cosine_floor = env.float("CPERSONA_COSINE_FLOOR", 0.20, -1.0, 1.0)?;
    let cosine_ceil = env.float("CPERSONA_COSINE_CEIL", 0.75, -1.0, 1.0)?;
    if cosine_ceil <= cosine_floor {
        return Err(ConfigError::Conflict {
            var: "CPERSONA_COSINE_CEIL",
            other: "CPERSONA_COSINE_FLOOR",
            reason: format!("ceil {cosine_ceil} must be above floor {cosine_floor}"),
        });
    }
    let settings = RecallSettings {
        scan_window: env.int("CPERSONA_MAX_MEMORIES", 10_000, 1, 100_000_000)?,
        mode: recall_mode(env)?,
        rrf_k: env.int("CPERSONA_RRF_K", 60, 1, 100_000)?,
        fused_gate_enabled: env.boolean("CPERSONA_FUSED_GATE_ENABLED", true)?,
        precision,
        fused_gate_beta: env.float("CPERSONA_FUSED_GATE_BETA", precision.beta(), 0.0, 100.0)?,
        // On by default (CPersona's is off): the row's confidence is only reported here,
        // never used to order or gate, so showing it costs an agent nothing.
        confidence_enabled: env.boolean("CPERSONA_CONFIDENCE_ENABLED", true)?,
        cosine_floor,
        cosine_ceil,
        decay_rate: env.float("CPERSONA_DECAY_RATE", 0.005, 0.0, 10.0)?,
        decay_floor: env.float("CPERSONA_DECAY_FLOOR", 0.3, 0.0, 1.0)?,
        decay_ceil: env.float("CPERSONA_DECAY_CEIL", 0.5, 0.0, 1.0)?,
        recall_boost: env.float("CPERSONA_RECALL_BOOST", 0.02, 0.0, 10.0)?,
        boost_decay_rate: env.float("CPERSONA_BOOST_DECAY_RATE", 0.002, 0.0, 10.0)?,
        prior_age_rate: env.float("CPERSONA_PRIOR_AGE_RATE", 0.0, 0.0, 10.0)?,
        prior_age_floor: env.float("CPERSONA_PRIOR_AGE_FLOOR", 0.3, 0.0, 1.0)?,
        prior_age_anchor: env.word(
            "CPERSONA_PRIOR_AGE_ANCHOR",
            AgeAnchor::Newest,
            &[("newest", AgeAnchor::Newest), ("now", AgeAnchor::Now)],
        )?,
        preview_chars: env.int("CPERSONA_RECALL_PREVIEW_CHARS", 500, 0, 1_000_000)?,
        excerpt_chars: env.int("CPERSONA_RECALL_EXCERPT_CHARS", 800, 0, 1_000_000)?,
        cue_time_limit_ms: env.int("CPERSONA_RECALL_CUE_TIME_LIMIT_MS", 1_000, 1, 600_000)?,
        propagation_seat: env.boolean("CPERSONA_RECALL_PROPAGATION_SEAT", false)?,
        degraded_advisory: env.boolean("CPERSONA_DEGRADED_ADVISORY", true)?,
        calibrate: CalibrateDefaults {
            sample_size: env.int("CPERSONA_CALIBRATE_SAMPLE_SIZE", 200, 1, 2_000)? as u32,
            z_factor: env.float("CPERSONA_CALIBRATE_Z_FACTOR", 1.0, -10.0, 10.0)?,
            method: env.word(
                "CPERSONA_CALIBRATE_METHOD",
                CalibrateMethod::Separation,
                &[
                    ("separation", CalibrateMethod::Separation),
                    ("percentile", CalibrateMethod::Percentile),
                    ("zscore", CalibrateMethod::Zscore),
                ],
            )?,
            percentile: env.float("CPERSONA_CALIBRATE_PERCENTILE", 0.95, 0.0001, 100.0)?,
        },
        index_stale_warn_share: env.float("CPERSONA_INDEX_STALE_WARN_SHARE", 0.2, 0.0, 1.0)?,
        lexical_cap: lexical_cap(env)?,
        adaptive_fusion: env.boolean(
            "CPERSONA_RECALL_ADAPTIVE_FUSION",
            cpersona_engine::recall::RecallConfig::default()
                .adaptive
                .is_some(),
        )?,
    };
    // The engine takes ages at the newest dated row of the answer (a pure pass, replayable);
    // it reads no clock, so `now` cannot be honoured and is refused rather than ignored.
    if settings.prior_age_rate > 0.0 && settings.prior_age_anchor == AgeAnchor::Now {
        return Err(ConfigError::Conflict {
            var: "CPERSONA_PRIOR_AGE_ANCHOR",
            other: "CPERSONA_PRIOR_AGE_RATE",
            reason: "anchor `now` is not supported; use `newest` (the newest row of the answer)"
                .into(),
        });
    }
    Ok(settings)
}
