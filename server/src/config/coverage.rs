//! Which `CPERSONA_*` settings this server honours: one row per name CPersona 2.6.14 reads (the
//! 127 names of its configuration tables, reference 2.6 §7 and 2.5 §9, also every quoted
//! `CPERSONA_*` literal in its 2.6.14 wheel) and per name this server adds. At start-up every
//! variable that is set and not honoured is listed, and one whose absence would open the store
//! wider than the operator configured (OAuth) stops the server. The rows that
//! the parser reads are checked against the names it really asks for (`coverage/tests.rs`);
//! the CPersona parity work moves rows to `Honoured` as it lands.

use serde::Serialize;

use super::{ConfigError, Env};

/// What this server does with a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Read and applied (perhaps with a difference the note names).
    Honoured,
    /// Read and validated (a bad value is refused), then without effect.
    Ignored,
    /// Never read.
    NotRead,
    /// Never read, and serving without it would drop an access barrier: start-up refuses it.
    Refused,
}

/// One `CPERSONA_*` name.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub name: &'static str,
    pub coverage: Coverage,
    /// CPersona 2.6.14 reads it (`false`: a setting of this server only).
    pub cpersona: bool,
    /// What differs, or what happens instead; empty when honoured as CPersona means it.
    pub note: &'static str,
}

const fn honoured(name: &'static str) -> Setting {
    honoured_as(name, "")
}

const fn honoured_as(name: &'static str, note: &'static str) -> Setting {
    Setting {
        name,
        coverage: Coverage::Honoured,
        cpersona: true,
        note,
    }
}

const fn ours(name: &'static str) -> Setting {
    Setting {
        cpersona: false,
        ..honoured(name)
    }
}

const fn ignored(name: &'static str, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Ignored,
        ..honoured_as(name, note)
    }
}

const fn not_read(name: &'static str, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::NotRead,
        ..honoured_as(name, note)
    }
}

const fn refused(name: &'static str, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Refused,
        ..honoured_as(name, note)
    }
}

const NO_CALIBRATION: &str = "calibration runs only when calibrate_threshold is called, \
                              on its own sample";
const NO_REMOTE: &str = "there is no remote vector service here; vectors are searched locally";
const NO_TASKS: &str = "the embedding queue is always on, with its own retry policy";
const NO_FOLDERS: &str = "folders and the logical directory are not implemented";
const NO_UPDATE_CHECK: &str = "this server never checks for updates (no outbound calls)";
const OAUTH: &str = "OAuth resource-server authentication is not implemented; serving without \
                     it would accept clients CPersona refuses";

/// Every `CPERSONA_*` name CPersona 2.6.14 reads, then this server's own, by topic.
pub const SETTINGS: &[Setting] = &[
    // Paths, transport, auth.
    honoured("CPERSONA_DB_PATH"),
    honoured("CPERSONA_TRANSPORT"),
    honoured_as(
        "CPERSONA_HTTP_HOST",
        "must be an IP address, not a host name",
    ),
    honoured("CPERSONA_HTTP_PORT"),
    honoured("CPERSONA_AUTH_TOKEN"),
    honoured("CPERSONA_ALLOW_UNAUTHENTICATED_HTTP"),
    honoured("CPERSONA_HTTP_MAX_BODY_BYTES"),
    not_read(
        "CPERSONA_HTTP_BODY_LIMIT_MODE",
        "a body over CPERSONA_HTTP_MAX_BODY_BYTES is always refused (413), as `reject`",
    ),
    honoured_as(
        "CPERSONA_ACL_FILE",
        "as CPersona, but a file other users can read is refused (CPersona warns), every token \
         must pass CPERSONA_AUTH_TOKEN's hygiene, and export/import demand read-write on `*` \
         whatever CPERSONA_EXPORT_DIR says",
    ),
    not_read(
        "CPERSONA_ALIAS_LEDGER_FILE",
        "OAuth subjects' alias ledger; OAuth is not implemented",
    ),
    refused("CPERSONA_OAUTH_RESOURCE", OAUTH),
    refused("CPERSONA_OAUTH_AUTHORIZATION_SERVERS", OAUTH),
    not_read(
        "CPERSONA_OAUTH_SCOPES",
        "OAuth is not implemented (CPersona only advertises the scopes)",
    ),
    not_read(
        "CPERSONA_OAUTH_JWKS_URI",
        "OAuth is not implemented (without CPERSONA_OAUTH_RESOURCE it does nothing in CPersona either)",
    ),
    honoured_as(
        "CPERSONA_EXPORT_DIR",
        "unset confines export/import to `<database folder>/exports` (CPersona: anywhere but `..`); \
         `/` restores that reach; relative paths resolve inside the folder; an export never lands \
         on the store's own files nor, without `overwrite`, on an existing file",
    ),
    honoured("CPERSONA_MAX_IMPORT_BYTES"),
    honoured_as(
        "CPERSONA_REMOTE_URL",
        "read by `cpersona proxy` only (its `--url` flag wins); http or https",
    ),
    honoured_as(
        "CPERSONA_PROXY_MAX_INFLIGHT",
        "read by `cpersona proxy` only; 1 to 1024, default 16; more requests wait, none is dropped",
    ),
    honoured_as(
        "CPERSONA_OPERATING_CONTEXT",
        "`off` disables the operating context; anything else leaves it on",
    ),
    honoured_as(
        "CPERSONA_OPERATING_CONTEXT_PATH",
        "the operating context sidecar; default ~/.cpersona/operating-context.toml",
    ),
    // Embedding.
    honoured_as(
        "CPERSONA_EMBEDDING_MODE",
        "default `builtin` (CPersona: `none`); `none` stores hashed n-gram vectors",
    ),
    honoured("CPERSONA_EMBEDDING_URL"),
    honoured("CPERSONA_EMBEDDING_API_KEY"),
    honoured("CPERSONA_EMBEDDING_API_URL"),
    honoured_as(
        "CPERSONA_EMBEDDING_MODEL",
        "used as the model name in `api` mode only",
    ),
    not_read(
        "CPERSONA_EMBEDDING_MODEL_MODE",
        "vectors of another model are never mixed: each row records its model and mismatches \
         are skipped",
    ),
    not_read(
        "CPERSONA_EMBEDDING_CACHE_SIZE",
        "there is no query-vector cache",
    ),
    not_read(
        "CPERSONA_EMBEDDING_CACHE_TTL",
        "there is no query-vector cache",
    ),
    honoured("CPERSONA_EMBEDDING_TIMEOUT_SECS"),
    not_read("CPERSONA_VECTOR_SEARCH_MODE", NO_REMOTE),
    not_read("CPERSONA_REMOTE_SEARCH_TIMEOUT_SECS", NO_REMOTE),
    not_read("CPERSONA_REMOTE_INDEX_TIMEOUT_SECS", NO_REMOTE),
    not_read(
        "CPERSONA_STORE_BLOB",
        "vectors are always stored in the database (`false` is not honoured)",
    ),
    ignored(
        "CPERSONA_DEGRADED_ADVISORY",
        "the advisory is always attached while the embedder is degraded",
    ),
    // Write caps.
    honoured("CPERSONA_MAX_CONTENT_LENGTH"),
    honoured("CPERSONA_MAX_PROFILE_LENGTH"),
    honoured("CPERSONA_MAX_METADATA_LENGTH"),
    ignored(
        "CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS",
        "the engine allows a fixed 300 s",
    ),
    ignored(
        "CPERSONA_FUTURE_TIMESTAMP_MODE",
        "a future timestamp always gets a warning (`reject` does not reject)",
    ),
    not_read(
        "CPERSONA_EXTERNAL_CONTEXT_MODE",
        "recall_with_context's external context is not checked",
    ),
    not_read(
        "CPERSONA_FTS_ENABLED",
        "the FTS5 arm is always on (`false` is not honoured)",
    ),
    not_read("CPERSONA_TASK_QUEUE_ENABLED", NO_TASKS),
    not_read("CPERSONA_TASK_MAX_RETRIES", NO_TASKS),
    not_read("CPERSONA_TASK_RETRY_DELAY", NO_TASKS),
    // Scan, reach, depth.
    honoured_as(
        "CPERSONA_MAX_MEMORIES",
        "sets the vector arm's near window; rows past it still vote through the far list",
    ),
    ignored(
        "CPERSONA_VECTOR_REACH",
        "the far list is always on, as deep as the arm's depth",
    ),
    ignored(
        "CPERSONA_VECTOR_FAR_LIMIT",
        "the far list is as deep as the arm's depth",
    ),
    ignored(
        "CPERSONA_RECALL_LIBRARY_MAX_LIMIT",
        "recall depth uses fixed steps (10/50/100)",
    ),
    ignored(
        "CPERSONA_RECALL_DEPTH_FLOOR",
        "recall depth uses fixed steps (10/50/100)",
    ),
    not_read(
        "CPERSONA_VECTOR_SCAN_CHUNK_ROWS",
        "the index generation is scanned whole, memory-mapped",
    ),
    not_read(
        "CPERSONA_VECTOR_INDEX_MAX_EXCLUDED_IDS",
        "the index masks changed rows without a cap",
    ),
    ignored(
        "CPERSONA_VECTOR_MIN_SIMILARITY",
        "no vector floor applies before fusion",
    ),
    // Fusion, gate, scoring.
    honoured_as(
        "CPERSONA_RECALL_MODE",
        "`rrf` and `rsf`; `cascade` runs rrf",
    ),
    honoured("CPERSONA_RRF_K"),
    ignored(
        "CPERSONA_RRF_THRESHOLD_FACTOR",
        "no fused-score floor applies",
    ),
    ignored("CPERSONA_AUTOCUT_ENABLED", "there is no autocut"),
    ignored("CPERSONA_AUTOCUT_MIN_GAP_RATIO", "there is no autocut"),
    ignored("CPERSONA_AUTOCUT_MIN_RESULTS", "there is no autocut"),
    honoured("CPERSONA_FUSED_GATE_ENABLED"),
    ignored("CPERSONA_FUSED_GATE_SAMPLE_QUERIES", NO_CALIBRATION),
    ignored("CPERSONA_FUSED_GATE_CALIBRATION_DRAWS", NO_CALIBRATION),
    honoured("CPERSONA_RECALL_PRECISION"),
    honoured("CPERSONA_FUSED_GATE_BETA"),
    honoured_as(
        "CPERSONA_CONFIDENCE_ENABLED",
        "default true (CPersona: false)",
    ),
    not_read(
        "CPERSONA_CONFIDENCE_ORDERING",
        "confidence never orders rows here (`legacy` is not honoured)",
    ),
    honoured("CPERSONA_COSINE_FLOOR"),
    honoured("CPERSONA_COSINE_CEIL"),
    honoured("CPERSONA_DECAY_RATE"),
    honoured("CPERSONA_DECAY_FLOOR"),
    honoured("CPERSONA_DECAY_CEIL"),
    honoured("CPERSONA_RECALL_BOOST"),
    honoured("CPERSONA_BOOST_DECAY_RATE"),
    not_read(
        "CPERSONA_MIN_TIME_RANGE_HOURS",
        "confidence's time span has no minimum",
    ),
    not_read(
        "CPERSONA_REFERENCE_HOURS",
        "confidence has no reference span",
    ),
    not_read(
        "CPERSONA_RESOLVED_DECAY_FACTOR",
        "resolved rows get no extra decay",
    ),
    not_read(
        "CPERSONA_RECENT_RECALL_PENALTY",
        "recently recalled rows get no penalty",
    ),
    not_read(
        "CPERSONA_RECENT_RECALL_WINDOW_MIN",
        "recently recalled rows get no penalty",
    ),
    ignored(
        "CPERSONA_EPISODE_PENALTY_ENABLED",
        "there is no episode penalty",
    ),
    ignored("CPERSONA_EPISODE_DECAY_RATE", "there is no episode penalty"),
    ignored(
        "CPERSONA_EPISODE_DECAY_FLOOR",
        "there is no episode penalty",
    ),
    ignored(
        "CPERSONA_PRIOR_FAR_WEIGHT",
        "the far list votes at weight 1",
    ),
    honoured_as(
        "CPERSONA_PRIOR_AGE_RATE",
        "a bounded move (at most 3 places) after the count cut, from the answer's newest row",
    ),
    honoured("CPERSONA_PRIOR_AGE_FLOOR"),
    honoured_as(
        "CPERSONA_PRIOR_AGE_ANCHOR",
        "`newest` only; `now` with a rate above 0 is a start-up error",
    ),
    not_read(
        "CPERSONA_SCOPE_STATS_CACHE",
        "scope statistics are read fresh",
    ),
    not_read(
        "CPERSONA_SCOPE_STATS_TTL_SECONDS",
        "scope statistics are read fresh",
    ),
    // Calibration.
    not_read(
        "CPERSONA_AUTO_CALIBRATE",
        "the gate keeps its heuristic until calibrate_threshold is called",
    ),
    not_read(
        "CPERSONA_CALIBRATE_ON_MODEL_CHANGE",
        "a model change does not recalibrate by itself",
    ),
    not_read("CPERSONA_CALIBRATE_SAMPLE_SIZE", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_MAX_SAMPLE", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_Z_FACTOR", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_FLOOR", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_METHOD", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_PERCENTILE", NO_CALIBRATION),
    not_read("CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN", NO_CALIBRATION),
    // The 2.6 recall process.
    honoured("CPERSONA_RECALL_PREVIEW_CHARS"),
    ignored(
        "CPERSONA_RECALL_EXCERPT_CHARS",
        "excerpts keep their fixed size",
    ),
    ignored(
        "CPERSONA_RECALL_CUE_TIME_LIMIT_MS",
        "the recall loop's time limit is a fixed 1,000 ms",
    ),
    not_read(
        "CPERSONA_CUE_COARSE_ENABLED",
        "there is no coarse cue index",
    ),
    honoured("CPERSONA_RECALL_PROPAGATION_SEAT"),
    ignored("CPERSONA_FAR_SEATS_ENABLED", "there are no far seats"),
    not_read("CPERSONA_BLOCK_BUILD_ENABLED", "blocks are always built"),
    not_read(
        "CPERSONA_BLOCK_RETRIEVAL_ENABLED",
        "blocks serve quoting only, never a retrieval arm",
    ),
    not_read(
        "CPERSONA_BLOCK_INDEX",
        "the block generation is built on request (`cpersona index rebuild --table blocks`)",
    ),
    // Reconstruct.
    honoured("CPERSONA_RECONSTRUCT_MAX_COUNT"),
    honoured("CPERSONA_RECONSTRUCT_DEFAULT_COUNT"),
    honoured("CPERSONA_RECONSTRUCT_FORCED_COUNT"),
    honoured("CPERSONA_RECONSTRUCT_TOP_K"),
    honoured("CPERSONA_RECONSTRUCT_MAX_HOPS"),
    honoured("CPERSONA_RECONSTRUCT_MAX_EVIDENCE"),
    honoured("CPERSONA_RECONSTRUCT_ADJACENCY_SECONDS"),
    honoured("CPERSONA_RECONSTRUCT_QUOTE_CHARS"),
    honoured("CPERSONA_RECONSTRUCT_FULL_QUOTES"),
    honoured("CPERSONA_RECONSTRUCT_TAIL_QUOTE_CHARS"),
    ignored(
        "CPERSONA_RECONSTRUCT_SEQUENCE",
        "passages are always ordered by item (`items`)",
    ),
    honoured("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET"),
    honoured("CPERSONA_RECONSTRUCT_MAX_BUDGET"),
    honoured("CPERSONA_RECONSTRUCT_FORCED_BUDGET"),
    // Maintenance and trials.
    not_read(
        "CPERSONA_REEMBED_ROW_CAP",
        "re-embedding after a model change runs in the background until every row is done \
         (CPERSONA_AUTO_REEMBED); there is no per-run cap",
    ),
    not_read(
        "CPERSONA_NEAR_DUPLICATE_ROW_CAP",
        "there is no near-duplicate scan",
    ),
    not_read(
        "CPERSONA_INVALID_SOURCE_CLASSIFY_CAP",
        "there is no invalid-source scan",
    ),
    not_read(
        "CPERSONA_NORMALIZATION_SCAN_CAP",
        "there is no normalisation scan",
    ),
    not_read("CPERSONA_LOGICAL_DIRECTORY", NO_FOLDERS),
    not_read("CPERSONA_DECLARED_FOLDERS", NO_FOLDERS),
    not_read("CPERSONA_FOLDER_MAX_DEPTH", NO_FOLDERS),
    not_read("CPERSONA_UPDATE_CHECK", NO_UPDATE_CHECK),
    not_read("CPERSONA_UPDATE_CHECK_INTERVAL_SECONDS", NO_UPDATE_CHECK),
    // This server's own.
    ours("CPERSONA_MODEL_DIR"),
    ours("CPERSONA_HTTP_ALLOWED_ORIGINS"),
    ours("CPERSONA_HTTP_ALLOWED_HOSTS"),
    ours("CPERSONA_ASSOCIATIONS_ENABLED"),
    ours("CPERSONA_INDEX_STALE_WARN_SHARE"),
    ours("CPERSONA_RECALL_LEXICAL_CAP"),
    ours("CPERSONA_INDEX_AUTO_MERGE"),
    ours("CPERSONA_INDEX_FLUSH_MS"),
    ours("CPERSONA_AUTO_REEMBED"),
    ours("CPERSONA_PROXY_TIMEOUT_SECS"),
];

/// The row for `name`, if it is one.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// A set `CPERSONA_*` variable that has no effect here, as start-up and `check_health` list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnhonouredSetting {
    pub name: String,
    /// `ignored` (read, validated, without effect), `not_read`, `refused` (stops the server),
    /// or `unknown` (neither CPersona's nor this server's; a typo?).
    pub status: &'static str,
    pub note: String,
}

impl Coverage {
    fn label(self) -> &'static str {
        match self {
            Coverage::Honoured => "honoured",
            Coverage::Ignored => "ignored",
            Coverage::NotRead => "not_read",
            Coverage::Refused => "refused",
        }
    }
}

/// The set (non-empty) `CPERSONA_*` variables of `env` that are not honoured, by name.
pub(super) fn unhonoured(env: &Env) -> Vec<UnhonouredSetting> {
    env.cpersona_vars()
        .filter_map(|(name, _)| match setting(name) {
            Some(s) if s.coverage == Coverage::Honoured => None,
            Some(s) => Some(UnhonouredSetting {
                name: name.to_owned(),
                status: s.coverage.label(),
                note: s.note.to_owned(),
            }),
            None => Some(UnhonouredSetting {
                name: name.to_owned(),
                status: "unknown",
                note: "not a setting of CPersona 2.6.14 or of this server".to_owned(),
            }),
        })
        .collect()
}

/// The start-up error for the refused settings among `list`, if any (all of them named).
pub fn refusal(list: &[UnhonouredSetting]) -> Option<ConfigError> {
    let refused: Vec<&UnhonouredSetting> = list.iter().filter(|s| s.status == "refused").collect();
    let first = refused.first()?;
    Some(ConfigError::Unsupported {
        var: refused
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        reason: first.note.clone(),
    })
}

/// The lines start-up writes to stderr for `list` (none when it is empty).
pub fn warning_lines(list: &[UnhonouredSetting]) -> Vec<String> {
    if list.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "cpersona: {} CPERSONA_* setting{} set but without effect on this server:",
        list.len(),
        if list.len() == 1 { " is" } else { "s are" }
    )];
    for s in list {
        let status = match s.status {
            "ignored" => "parsed, then ignored",
            "not_read" => "not read",
            other => other,
        };
        lines.push(format!("  {} ({status}): {}", s.name, s.note));
    }
    lines
}

#[cfg(test)]
mod tests;
