//! The coverage table itself: one row per `CPERSONA_*` name, by topic, with what this server
//! does with it and why (the policy is in `coverage.rs`).

use super::{Accepts, Coverage, Setting};

const fn honoured(name: &'static str) -> Setting {
    honoured_as(name, "")
}

/// Honoured, with a difference made on purpose that `note` names.
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

const fn fixed(name: &'static str, words: &'static [&'static str], note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Fixed(Accepts::Words(words)),
        ..honoured_as(name, note)
    }
}

const fn fixed_as(name: &'static str, accepts: Accepts, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Fixed(accepts),
        ..honoured_as(name, note)
    }
}

const fn inert(name: &'static str, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Inert,
        ..honoured_as(name, note)
    }
}

const fn refused(name: &'static str, note: &'static str) -> Setting {
    Setting {
        coverage: Coverage::Refused,
        ..honoured_as(name, note)
    }
}

const OAUTH: &str = "OAuth resource-server authentication is not implemented; serving without \
                     it would accept clients CPersona refuses. Put the server behind a token \
                     (CPERSONA_AUTH_TOKEN) or an ACL file (CPERSONA_ACL_FILE) instead";
const OAUTH_ONLY: &str = "CPersona reads it only with OAuth on (CPERSONA_OAUTH_RESOURCE), which \
                          this server refuses";
const REMOTE_ONLY: &str = "used only with CPERSONA_VECTOR_SEARCH_MODE=remote, which this server \
                           refuses: vectors are searched locally";
const NO_AUTOCUT: &str = "there is no autocut here: rows are cut by count after the gate \
                          (CPERSONA_AUTOCUT_ENABLED=false is the one value accepted); unset it";
const NO_FOLDERS: &str = "folders and the logical directory are not implemented; unset it \
                          (`false` is accepted)";
const NO_UPDATE_CHECK: &str = "this server never checks for updates (no outbound calls); \
                               updates come from the package manager";
const SCOPE_STATS: &str = "scope statistics are read fresh on every call, so a cache of them \
                           changes no answer";
const NO_TIME_SPAN: &str = "confidence here decays by CPERSONA_DECAY_RATE/FLOOR/CEIL over the \
                            row's age, with no reference span; unset it";
const NO_RECALL_PENALTY: &str = "recently recalled rows get no penalty here (confidence only \
                                 reports, never orders); unset it";
const CALIBRATION_DRAWS: &str = "the fused gate is calibrated by calibrate_threshold on its own \
                                 sample (its `sample_size` argument or \
                                 CPERSONA_CALIBRATE_SAMPLE_SIZE); unset it";

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
    fixed(
        "CPERSONA_HTTP_BODY_LIMIT_MODE",
        &["reject"],
        "a body over CPERSONA_HTTP_MAX_BODY_BYTES is always refused (413), as `reject`; \
         `warn` (accept it and log) is not offered",
    ),
    honoured_as(
        "CPERSONA_ACL_FILE",
        "as CPersona, but a file other users can read is refused (CPersona warns), every token \
         must pass CPERSONA_AUTH_TOKEN's hygiene, and export/import demand read-write on `*` \
         whatever CPERSONA_EXPORT_DIR says",
    ),
    inert("CPERSONA_ALIAS_LEDGER_FILE", OAUTH_ONLY),
    refused("CPERSONA_OAUTH_RESOURCE", OAUTH),
    refused("CPERSONA_OAUTH_AUTHORIZATION_SERVERS", OAUTH),
    inert("CPERSONA_OAUTH_SCOPES", OAUTH_ONLY),
    inert("CPERSONA_OAUTH_JWKS_URI", OAUTH_ONLY),
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
    fixed(
        "CPERSONA_EMBEDDING_MODEL_MODE",
        &["reject"],
        "a vector of another model is never compared here, as `reject`: each row records its \
         model and a model change re-embeds the store (CPERSONA_AUTO_REEMBED)",
    ),
    honoured_as(
        "CPERSONA_EMBEDDING_CACHE_SIZE",
        "recall's query-vector cache, for every embedding mode (CPersona: http and api only); \
         0 to 100,000, 0 turns it off",
    ),
    honoured("CPERSONA_EMBEDDING_CACHE_TTL"),
    honoured("CPERSONA_EMBEDDING_TIMEOUT_SECS"),
    fixed(
        "CPERSONA_VECTOR_SEARCH_MODE",
        &["local"],
        "vectors are always searched locally, memory-mapped; there is no remote vector service",
    ),
    inert("CPERSONA_REMOTE_SEARCH_TIMEOUT_SECS", REMOTE_ONLY),
    inert("CPERSONA_REMOTE_INDEX_TIMEOUT_SECS", REMOTE_ONLY),
    fixed(
        "CPERSONA_STORE_BLOB",
        &["true"],
        "vectors are always stored in the database",
    ),
    honoured("CPERSONA_DEGRADED_ADVISORY"),
    // Write caps.
    honoured("CPERSONA_MAX_CONTENT_LENGTH"),
    honoured("CPERSONA_MAX_PROFILE_LENGTH"),
    honoured("CPERSONA_MAX_METADATA_LENGTH"),
    honoured("CPERSONA_FUTURE_TIMESTAMP_SKEW_SECONDS"),
    honoured("CPERSONA_FUTURE_TIMESTAMP_MODE"),
    fixed(
        "CPERSONA_EXTERNAL_CONTEXT_MODE",
        &["reject"],
        "an external_context entry whose declared field is not a string refuses the call, as \
         `reject`",
    ),
    fixed(
        "CPERSONA_FTS_ENABLED",
        &["true"],
        "the FTS5 arm is always on",
    ),
    fixed(
        "CPERSONA_TASK_QUEUE_ENABLED",
        &["true"],
        "the embedding queue is always on",
    ),
    honoured_as(
        "CPERSONA_TASK_MAX_RETRIES",
        "failed embedding attempts after which a queued row is no longer retried (1 to 100)",
    ),
    honoured_as(
        "CPERSONA_TASK_RETRY_DELAY",
        "seconds a queued row waits after a failure (0 to 86,400)",
    ),
    // Scan, reach, depth.
    honoured_as(
        "CPERSONA_MAX_MEMORIES",
        "sets the vector arm's near window; rows past it still vote through the far list",
    ),
    refused(
        "CPERSONA_VECTOR_REACH",
        "the far list is always on here, as deep as the arm's depth: rows past \
         CPERSONA_MAX_MEMORIES vote through it; unset it",
    ),
    refused(
        "CPERSONA_VECTOR_FAR_LIMIT",
        "the far list is as deep as the arm's depth here; unset it",
    ),
    fixed_as(
        "CPERSONA_RECALL_LIBRARY_MAX_LIMIT",
        Accepts::AtLeast(100),
        "the recall tools cap `limit` at 100, so a ceiling at or above 100 changes nothing; a \
         lower library ceiling is not offered",
    ),
    refused(
        "CPERSONA_RECALL_DEPTH_FLOOR",
        "Recall Depth here follows fixed steps (10/50/100, never the count); unset it",
    ),
    inert(
        "CPERSONA_VECTOR_SCAN_CHUNK_ROWS",
        "the index is scanned whole, memory-mapped; a chunk size changes no answer",
    ),
    inert(
        "CPERSONA_VECTOR_INDEX_MAX_EXCLUDED_IDS",
        "the index masks changed rows without a cap and scores them exactly; no answer depends \
         on it",
    ),
    refused(
        "CPERSONA_VECTOR_MIN_SIMILARITY",
        "no floor applies to the vector arm before fusion here: the gate judges cosines \
         (CPERSONA_RECALL_PRECISION), and recall's `min_similarity` argument filters one call; \
         unset it",
    ),
    // Fusion, gate, scoring.
    honoured_as(
        "CPERSONA_RECALL_MODE",
        "`rrf` and `rsf`; `cascade` is refused at start-up",
    ),
    honoured("CPERSONA_RRF_K"),
    refused(
        "CPERSONA_RRF_THRESHOLD_FACTOR",
        "no fused-score floor applies here: a rank-relative score is never compared to a \
         threshold, the gate judges cosines; unset it",
    ),
    fixed("CPERSONA_AUTOCUT_ENABLED", &["false"], NO_AUTOCUT),
    refused("CPERSONA_AUTOCUT_MIN_GAP_RATIO", NO_AUTOCUT),
    refused("CPERSONA_AUTOCUT_MIN_RESULTS", NO_AUTOCUT),
    honoured("CPERSONA_FUSED_GATE_ENABLED"),
    refused("CPERSONA_FUSED_GATE_SAMPLE_QUERIES", CALIBRATION_DRAWS),
    refused("CPERSONA_FUSED_GATE_CALIBRATION_DRAWS", CALIBRATION_DRAWS),
    honoured("CPERSONA_RECALL_PRECISION"),
    honoured("CPERSONA_FUSED_GATE_BETA"),
    honoured_as(
        "CPERSONA_CONFIDENCE_ENABLED",
        "default true (CPersona: false): confidence is only reported here, never orders",
    ),
    fixed(
        "CPERSONA_CONFIDENCE_ORDERING",
        &["fusion"],
        "confidence never orders rows here, as `fusion`; `legacy` is not offered",
    ),
    honoured("CPERSONA_COSINE_FLOOR"),
    honoured("CPERSONA_COSINE_CEIL"),
    honoured("CPERSONA_DECAY_RATE"),
    honoured("CPERSONA_DECAY_FLOOR"),
    honoured("CPERSONA_DECAY_CEIL"),
    honoured("CPERSONA_RECALL_BOOST"),
    honoured("CPERSONA_BOOST_DECAY_RATE"),
    refused("CPERSONA_MIN_TIME_RANGE_HOURS", NO_TIME_SPAN),
    refused("CPERSONA_REFERENCE_HOURS", NO_TIME_SPAN),
    refused(
        "CPERSONA_RESOLVED_DECAY_FACTOR",
        "resolved rows get no extra decay here; unset it",
    ),
    refused("CPERSONA_RECENT_RECALL_PENALTY", NO_RECALL_PENALTY),
    refused("CPERSONA_RECENT_RECALL_WINDOW_MIN", NO_RECALL_PENALTY),
    fixed(
        "CPERSONA_EPISODE_PENALTY_ENABLED",
        &["false"],
        "there is no episode penalty here (`false`, CPersona's default, is accepted)",
    ),
    inert(
        "CPERSONA_EPISODE_DECAY_RATE",
        "used only with CPERSONA_EPISODE_PENALTY_ENABLED=true, which this server refuses",
    ),
    inert(
        "CPERSONA_EPISODE_DECAY_FLOOR",
        "used only with CPERSONA_EPISODE_PENALTY_ENABLED=true, which this server refuses",
    ),
    fixed_as(
        "CPERSONA_PRIOR_FAR_WEIGHT",
        Accepts::Number(1.0),
        "the far list votes at weight 1 here (CPersona's default); another weight is not offered",
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
    inert("CPERSONA_SCOPE_STATS_CACHE", SCOPE_STATS),
    inert("CPERSONA_SCOPE_STATS_TTL_SECONDS", SCOPE_STATS),
    // Calibration.
    fixed(
        "CPERSONA_AUTO_CALIBRATE",
        &["false"],
        "the gate keeps its heuristic until calibrate_threshold is called (CPersona's default, \
         `false`); automatic calibration is not offered",
    ),
    fixed(
        "CPERSONA_CALIBRATE_ON_MODEL_CHANGE",
        &["false"],
        "a model change re-embeds the store but does not recalibrate by itself; call \
         calibrate_threshold after the re-embedding",
    ),
    honoured_as(
        "CPERSONA_CALIBRATE_SAMPLE_SIZE",
        "calibrate_threshold's default `sample_size` (1 to 2,000)",
    ),
    fixed_as(
        "CPERSONA_CALIBRATE_MAX_SAMPLE",
        Accepts::AtLeast(2_000),
        "calibrate_threshold's `sample_size` is at most 2,000 here; a lower ceiling is not offered",
    ),
    honoured_as(
        "CPERSONA_CALIBRATE_Z_FACTOR",
        "calibrate_threshold's default `z_factor` (-10 to 10)",
    ),
    refused(
        "CPERSONA_CALIBRATE_FLOOR",
        "the calibrated threshold has no separate floor here; unset it",
    ),
    honoured_as(
        "CPERSONA_CALIBRATE_METHOD",
        "calibrate_threshold's default `method`: separation, percentile or zscore",
    ),
    honoured_as(
        "CPERSONA_CALIBRATE_PERCENTILE",
        "calibrate_threshold's default `percentile` (a fraction in (0, 1], or a percent above 1)",
    ),
    refused(
        "CPERSONA_CALIBRATE_TEMPORAL_WINDOW_MIN",
        "calibration samples at random, with no temporal window; unset it",
    ),
    // The 2.6 recall process.
    honoured("CPERSONA_RECALL_PREVIEW_CHARS"),
    honoured("CPERSONA_RECALL_EXCERPT_CHARS"),
    honoured("CPERSONA_RECALL_CUE_TIME_LIMIT_MS"),
    fixed(
        "CPERSONA_CUE_COARSE_ENABLED",
        &["false"],
        "there is no coarse cue index: the time cue's envelope is fetched exactly",
    ),
    honoured("CPERSONA_RECALL_PROPAGATION_SEAT"),
    fixed(
        "CPERSONA_FAR_SEATS_ENABLED",
        &["false"],
        "there are no far seats here (`false`, CPersona's default, is accepted)",
    ),
    fixed(
        "CPERSONA_BLOCK_BUILD_ENABLED",
        &["true"],
        "blocks are always built",
    ),
    fixed(
        "CPERSONA_BLOCK_RETRIEVAL_ENABLED",
        &["false"],
        "blocks serve quoting only, never a retrieval arm",
    ),
    inert(
        "CPERSONA_BLOCK_INDEX",
        "the block generation serves reconstruct's quoting and is built on request \
         (`cpersona index rebuild --table blocks`); no answer depends on it",
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
    fixed(
        "CPERSONA_RECONSTRUCT_SEQUENCE",
        &["items"],
        "passages are always ordered by item, as `items` (CPersona's default)",
    ),
    honoured("CPERSONA_RECONSTRUCT_DEFAULT_BUDGET"),
    honoured("CPERSONA_RECONSTRUCT_MAX_BUDGET"),
    honoured("CPERSONA_RECONSTRUCT_FORCED_BUDGET"),
    // Maintenance and trials.
    inert(
        "CPERSONA_REEMBED_ROW_CAP",
        "re-embedding after a model change runs in bounded background steps until every row is \
         done (CPERSONA_AUTO_REEMBED); a per-run cap changes no answer",
    ),
    honoured("CPERSONA_NEAR_DUPLICATE_ROW_CAP"),
    inert(
        "CPERSONA_INVALID_SOURCE_CLASSIFY_CAP",
        "deep_check's anonymous_source reads every row of the agent in SQL; no cap applies",
    ),
    honoured("CPERSONA_NORMALIZATION_SCAN_CAP"),
    fixed("CPERSONA_LOGICAL_DIRECTORY", &["false"], NO_FOLDERS),
    fixed("CPERSONA_DECLARED_FOLDERS", &["false"], NO_FOLDERS),
    inert(
        "CPERSONA_FOLDER_MAX_DEPTH",
        "used only with folders on, which this server refuses",
    ),
    fixed("CPERSONA_UPDATE_CHECK", &["false"], NO_UPDATE_CHECK),
    inert("CPERSONA_UPDATE_CHECK_INTERVAL_SECONDS", NO_UPDATE_CHECK),
    // This server's own.
    ours("CPERSONA_MODEL_DIR"),
    ours("CPERSONA_HTTP_ALLOWED_ORIGINS"),
    ours("CPERSONA_HTTP_ALLOWED_HOSTS"),
    ours("CPERSONA_ASSOCIATIONS_ENABLED"),
    ours("CPERSONA_INDEX_STALE_WARN_SHARE"),
    ours("CPERSONA_RECALL_LEXICAL_CAP"),
    ours("CPERSONA_RECALL_ADAPTIVE_FUSION"),
    ours("CPERSONA_INDEX_AUTO_MERGE"),
    ours("CPERSONA_INDEX_FLUSH_MS"),
    ours("CPERSONA_AUTO_REEMBED"),
    ours("CPERSONA_PROXY_TIMEOUT_SECS"),
];
