//! CPersona's profile row in recall: the agent's profile (`update_profile`) joins the answer
//! as `[Profile] <text>` when the answer has a free place (fewer rows than `limit`) and the
//! scope holds at least 50 rows (`gate::PROFILE_MIN_POOL`), below which an agent has too little history
//! for a profile to help (CPersona appends it after fusion, its gate admits it on that pool
//! size alone, and the count cut keeps it only where the rows ranked above it left room). It
//! is not a stored memory: it carries no ref, never takes a ranked row's place, and is never
//! credited or traced.

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use crate::error::Result;
use crate::recall::stages::gate::profile_passes;

/// The profile row a recall returns beside its ranked rows.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProfileRow {
    /// `[Profile] ` and the agent's profile.
    pub content: String,
    /// Always `{"System": "profile"}` (CPersona's).
    pub source: serde_json::Value,
    /// Why it is here: `{signal: "profile", admission: "profile", pool}`.
    pub match_reason: ProfileReason,
}

/// The profile row's `match_reason`.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProfileReason {
    /// Always `profile`.
    pub signal: &'static str,
    /// Always `profile`: admitted on the pool size, not on a score.
    pub admission: &'static str,
    /// Rows in scope when it was admitted (at least 50; counted up to 1,000 per table).
    pub pool: u64,
}

/// The agent's profile row when `returned` rows leave a place under `limit` and the scope
/// holds `pool` ≥ 50 rows (`profile_passes`); `None` otherwise or when it has no profile.
pub(crate) fn held_profile(
    conn: &Connection,
    agent_id: &str,
    pool: u64,
    returned: usize,
    limit: usize,
) -> Result<Option<ProfileRow>> {
    if returned >= limit || !profile_passes(pool) {
        return Ok(None);
    }
    let content: Option<String> = conn
        .query_row(
            "SELECT content FROM profiles WHERE agent_id = ? AND user_id = ''",
            [agent_id],
            |row| row.get(0),
        )
        .optional()?;
    Ok(content
        .filter(|text| !text.trim().is_empty())
        .map(|text| ProfileRow {
            content: format!("[Profile] {text}"),
            source: serde_json::json!({"System": "profile"}),
            match_reason: ProfileReason {
                signal: "profile",
                admission: "profile",
                pool,
            },
        }))
}
