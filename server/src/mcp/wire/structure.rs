//! Wire types of the structure tools: reconstruct, declare_associations, traverse. Types
//! only; no logic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Associations, TimeCue};

fn default_traverse_hops() -> u32 {
    1
}
fn default_traverse_limit() -> u32 {
    20
}

/// Reconstruct's shaping mode.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReconstructMode {
    Lite,
    Pro,
}

/// `reconstruct` (registered when its issue lands).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReconstructArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// What to look for; blank lists the most recent rows.
    #[schemars(length(max = 16_000))]
    pub query: String,
    /// How many items; omitted = the server default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1000))]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub top_k: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 5))]
    pub max_hops: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_evidence: Option<u32>,
    /// Search deeper (slower).
    #[serde(default)]
    pub deep: bool,
    /// Conversation channel: reads that channel plus channel-less rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub project_id: Option<String>,
    /// Filter on `source.id` (memories only): one id whole, or a namespace when it ends in
    /// a delimiter (`discord:`), as CPersona 2.6.14 reads it.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub source_id: String,
    /// Return the trace of how the result was made.
    #[serde(default)]
    pub trace: bool,
    /// Characters of quoted text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000_000))]
    pub budget: Option<u32>,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
    /// When the sought memory happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_cue: Option<TimeCue>,
    /// `lite` (2,800 characters of quotes by default, at most 3,000 cl100k_base tokens of JSON,
    /// no relation walk) or `pro` (15 items, the maximum budget, at most 5,000 tokens, no
    /// relation walk); `mode.used_tokens` and `mode.token_cap_cut` say what the cap did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ReconstructMode>,
    /// Legacy alias of `mode: "lite"`; not with `mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lite: Option<bool>,
}

/// Mentions to retract: `{entity, ref}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MentionRef {
    /// Entity id.
    pub entity: i64,
    #[serde(rename = "ref")]
    #[schemars(length(max = 64))]
    pub reference: String,
}

/// What `declare_associations` retracts.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Retract {
    /// Relation ids.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub relations: Vec<i64>,
    /// Mentions to retract.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub mentions: Vec<MentionRef>,
}

/// `declare_associations` (registered when its issue lands).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeclareAssociationsArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Entities and relations to declare.
    #[serde(default)]
    pub associations: Associations,
    /// `mem:<id>` or `ep:<id>` the declarations are anchored to; "" for none.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub anchor_ref: String,
    /// Declarations to withdraw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retract: Option<Retract>,
    /// Conversation channel: reads that channel plus channel-less rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub project_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `traverse` (registered when its issue lands).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraverseArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Entity name or alias.
    #[schemars(length(min = 1, max = 256))]
    pub entity: String,
    #[serde(default = "default_traverse_hops")]
    #[schemars(range(max = 5))]
    pub max_hops: u32,
    /// How many entities to list at most.
    #[serde(default = "default_traverse_limit")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: u32,
    /// Conversation channel: reads that channel plus channel-less rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub project_id: Option<String>,
    /// Filter on `source.id` (memories only): one id whole, or a namespace when it ends in
    /// a delimiter (`discord:`), as CPersona 2.6.14 reads it.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub source_id: String,
}
