//! What an import reads and reports: the request, the outcome, and one validated record of
//! a JSONL file, shared by the parser (`import`, `fields`, `assoc`) and the writer (`apply`).

use std::path::PathBuf;

use serde::Serialize;

use crate::store::pauses::NoPersist;

/// The most row errors listed in a response; the rest are counted in `errors_omitted`.
pub(crate) const MAX_LISTED_ERRORS: usize = 100;

/// `import_memories`' arguments.
#[derive(Clone, Debug, Default)]
pub struct ImportRequest {
    /// The JSONL file.
    pub input_path: PathBuf,
    /// When not empty, every row is imported under this agent.
    pub target_agent_id: String,
    /// Count what would be imported, write nothing.
    pub dry_run: bool,
    /// Pause bucket.
    pub session_key: String,
}

/// `import_memories`' response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Default, schemars::JsonSchema)]
pub struct ImportOutcome {
    /// True.
    pub ok: bool,
    /// Echo of the request.
    pub dry_run: bool,
    /// Memories written.
    pub imported_memories: usize,
    /// Memories skipped (duplicates, or invalid rows listed in `errors`).
    pub skipped_memories: usize,
    /// Episodes written.
    pub imported_episodes: usize,
    /// Episodes skipped.
    pub skipped_episodes: usize,
    /// Whether a profile was written.
    pub profile_updated: bool,
    /// Imported rows whose pre-computed vector was kept.
    pub embedded_rows: usize,
    /// Imported rows queued for embedding (no vector, or one the store cannot take).
    pub queued_embeddings: usize,
    /// Association entities written (`_type: "entity"` lines; absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub imported_entities: usize,
    /// Association relations written (`_type: "relation"` lines; absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub imported_relations: usize,
    /// Mentions and relations dropped because a row or entity they name is not in the file
    /// (each listed in `errors`).
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_associations: usize,
    /// Per-row problems (at most [`MAX_LISTED_ERRORS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Problems beyond the listed ones.
    #[serde(skip_serializing_if = "is_zero")]
    pub errors_omitted: usize,
    /// The paused shape.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub no_persist: Option<NoPersist>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Axes shared by memories and episodes.
pub(crate) struct Axes {
    pub(crate) agent_id: String,
    pub(crate) project_id: String,
    pub(crate) channel: String,
}

/// A vector to store, or why the row is queued instead.
pub(crate) enum Embedding {
    /// A vector of the store's target model, in the store's format.
    Blob(Vec<u8>),
    /// A vector of another model (a converted CPersona row whose label names no model this
    /// store embeds with), kept with its own identity so re-embedding replaces it, never a
    /// query compares with it.
    Foreign {
        blob: Vec<u8>,
        model_id: String,
        dim: usize,
    },
    Queue(String),
}

pub(crate) enum Record {
    Memory {
        /// The row's id when it keeps its source's (a CPersona conversion); `None` takes the
        /// next one.
        id: Option<i64>,
        axes: Axes,
        msg_id: String,
        content: String,
        source: String,
        metadata: String,
        timestamp: String,
        timestamp_ms: i64,
        created_at_ms: i64,
        locked: bool,
        recall_count: i64,
        last_recalled_at_ms: Option<i64>,
        embedding: Embedding,
    },
    Episode {
        /// As for memories; an episode with its own id is never skipped as a duplicate.
        id: Option<i64>,
        axes: Axes,
        summary: String,
        keywords: String,
        start: Option<(String, i64)>,
        end: Option<(String, i64)>,
        created_at_ms: i64,
        resolved: bool,
        embedding: Embedding,
    },
    Profile {
        agent_id: String,
        project_id: String,
        user_id: String,
        content: String,
        updated_at_ms: i64,
    },
}
