//! The MCP wire types: one serde + schemars struct per tool, with CPersona's argument names,
//! types, defaults and bounds (cpersona-2.6.14 §1.3, cpersona-2.5 §2.2). The schemas derived
//! here are what `tools/list` advertises and what arguments are checked against; these types
//! never carry engine logic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The most characters of a key field (agent, project, channel, ids, session key).
pub const KEY_CHARS: usize = 256;
/// The most characters of a free text argument that is not stored as a memory or an episode
/// (context turns, profile). Stored text carries the one content limit instead
/// (`mcp/content_limit.rs`: 16,000 here, the served schema says the configured number).
pub const TEXT_CHARS: usize = 1_000_000;
/// `get_contents` takes at most this many refs (CPersona's `GET_CONTENTS_MAX_REFS`).
pub const MAX_REFS: usize = 20;

mod admin;
mod answers;
mod structure;

pub use admin::*;
pub use answers::*;
pub use structure::*;

fn default_recall_limit() -> u32 {
    10
}
fn default_list_memories_limit() -> u32 {
    100
}
fn default_list_episodes_limit() -> u32 {
    50
}

/// Who wrote a message: `{type, id, name}`; `{}` means unknown.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// `User`, `Agent` or `System`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub kind: Option<String>,
    /// The speaker's id, e.g. `discord:12345` (recall's `source_id` selects one id, or a namespace such as `discord:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub id: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub name: Option<String>,
}

/// The legacy `message` form of `store`: `{content, id, source, timestamp, metadata}`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LegacyMessage {
    /// The text to remember (refused over `CPERSONA_MAX_CONTENT_LENGTH` characters).
    #[schemars(length(max = 16_000))]
    pub content: String,
    /// Caller's message id; a second store with the same id is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub id: Option<String>,
    /// Who said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// ISO-8601 time with offset; default now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub timestamp: Option<String>,
    /// Free-form JSON object (at most `CPERSONA_MAX_METADATA_LENGTH` characters serialised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// An entity declared by name, with other names it goes by.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityDecl {
    /// The entity's name.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
    /// Other names (at most 32).
    #[serde(default)]
    #[schemars(length(max = 32))]
    pub aliases: Vec<String>,
}

/// A relation `subject —predicate→ object` between entity names or record refs.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RelationDecl {
    /// Entity name or `mem:<id>` / `ep:<id>`.
    #[schemars(length(min = 1, max = 256))]
    pub subject: String,
    /// The relation, e.g. `works_at`, `supersedes`.
    #[schemars(length(min = 1, max = 256))]
    pub predicate: String,
    /// Entity name or `mem:<id>` / `ep:<id>`.
    #[schemars(length(min = 1, max = 256))]
    pub object: String,
}

/// Entities and relations a record mentions (at most 64 items per call).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Associations {
    /// Entities the record mentions.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub entities: Vec<EntityDecl>,
    /// Relations the record states.
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub relations: Vec<RelationDecl>,
}

/// `store`: remember one message.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StoreArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// The text to remember: at most `CPERSONA_MAX_CONTENT_LENGTH` characters (16,000 by
    /// default; `maxLength` is this server's number), a longer text is refused, never cut.
    /// Give this or `message`, not both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16_000))]
    pub content: Option<String>,
    /// Caller's message id; a second store with the same id is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub id: Option<String>,
    /// Who said it: `{type: "User"|"Agent"|"System", id, name}`; default the agent itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// ISO-8601 time with offset; default now. Normalised to UTC on write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub timestamp: Option<String>,
    /// Free-form JSON object (refused, not cut, above `CPERSONA_MAX_METADATA_LENGTH`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Protect the memory from edit and delete (never a ranking boost).
    #[serde(default)]
    pub lock: bool,
    /// Legacy form `{content, id, source, timestamp, metadata}`; do not mix with top-level fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<LegacyMessage>,
    /// Conversation channel; recall with `channel = X` reads X plus channel-less rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Project bucket; "" is the global pool every project reads.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub project_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
    /// Entities and relations this memory mentions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub associations: Option<Associations>,
}

/// How sure the caller is about a time cue.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CueConfidence {
    Sure,
    Likely,
    Vague,
}

/// Unit of an `ago` cue.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgoUnit {
    Days,
    Weeks,
    Months,
}

/// `{unit, value}`: so many days, weeks or months ago.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgoAmount {
    /// Days, weeks or months.
    pub unit: AgoUnit,
    /// How many units ago.
    #[schemars(range(max = 100_000))]
    pub value: u32,
}

/// The literal `"long_ago"`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum LongAgo {
    LongAgo,
}

/// How long ago: an amount, or `"long_ago"`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Ago {
    Amount(AgoAmount),
    LongAgo(LongAgo),
}

/// When the sought memory happened, as the user said it.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeCue {
    /// ISO-8601 date or time: after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub after: Option<String>,
    /// ISO-8601 date or time: before this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub before: Option<String>,
    /// How long ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ago: Option<Ago>,
    /// `sure` narrows hard, `vague` only nudges.
    pub confidence: CueConfidence,
}

/// `recall`: hybrid search over an agent's memories and episodes.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The agent whose memory to search.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// What to look for; blank lists the most recent rows.
    #[schemars(length(max = 16_000))]
    pub query: String,
    /// How many rows to return; the last row is the best.
    #[serde(default = "default_recall_limit")]
    #[schemars(range(max = 100))]
    pub limit: u32,
    /// Search deeper (slower).
    #[serde(default)]
    pub deep: bool,
    /// Read this channel plus channel-less rows; "" reads every channel.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Drop rows whose content matches one of these (already in context).
    #[serde(default)]
    #[schemars(length(max = 1_000))]
    pub exclude_contents: Vec<String>,
    /// Read this project plus the global pool; "" the global pool only; omitted, no filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub project_id: Option<String>,
    /// Filter on `source.id` (memories only): one id whole, or a namespace when it ends in
    /// a delimiter (`discord:`), as CPersona 2.6.14 reads it.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub source_id: String,
    /// Whole rows instead of 500-character previews (200,000-character budget, best first).
    #[serde(default)]
    pub full_content: bool,
    /// Opaque per-session partition hint.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
    /// Return the recall trace.
    #[serde(default)]
    pub trace: bool,
    /// When the sought memory happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_cue: Option<TimeCue>,
}

/// One turn of the caller's own conversation.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextEntry {
    /// `user`, `assistant`, or another role (used as a filter only).
    #[schemars(length(max = 64))]
    pub role: String,
    /// What was said.
    #[schemars(length(max = 1_000_000))]
    pub content: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub name: Option<String>,
    /// The speaker's user id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub user_id: Option<String>,
    /// ISO-8601 time with offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub timestamp: Option<String>,
}

/// `recall_with_context`: recall, then merge the caller's history in time order.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallWithContextArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// What to look for; blank lists the most recent rows.
    #[schemars(length(max = 16_000))]
    pub query: String,
    /// How many rows to return; the last row is the best.
    #[serde(default = "default_recall_limit")]
    #[schemars(range(max = 100))]
    pub limit: u32,
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
    /// Whole rows instead of 500-character previews.
    #[serde(default)]
    pub full_content: bool,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
    /// The caller's conversation; every entry's content also filters recalled rows.
    #[serde(default)]
    #[schemars(length(max = 1_000))]
    pub external_context: Vec<ContextEntry>,
}

/// A ref with an optional range: `{ref, node?, block?, span?, revision?}`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RangedRef {
    /// `mem:<id>` or `ep:<id>`.
    #[serde(rename = "ref")]
    #[schemars(length(max = 64))]
    pub reference: String,
    /// Node index or `[first, last]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<IndexOrRange>,
    /// Block index or `[first, last]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<IndexOrRange>,
    /// Character span `[start, end]` into the stored text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<[u32; 2]>,
    /// `sha256(text)[:12]` the range was computed on; a mismatch reports `stale_revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub revision: Option<String>,
}

/// One index or an inclusive `[first, last]` pair.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum IndexOrRange {
    Index(u32),
    Range([u32; 2]),
}

/// A plain ref string or a ranged ref object.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum RefArg {
    Plain(#[schemars(length(max = 64))] String),
    Ranged(RangedRef),
}

/// `get_contents`: expand preview refs into whole rows.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetContentsArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Refs from recall (`mem:<id>` / `ep:<id>`), at most 20.
    #[schemars(length(min = 1, max = 20))]
    pub refs: Vec<RefArg>,
}

/// `archive_episode`: store a session summary the caller wrote.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveEpisodeArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// What happened in the session, written by the caller (refused over
    /// `CPERSONA_MAX_CONTENT_LENGTH` characters).
    #[schemars(length(max = 16_000))]
    pub summary: String,
    /// The session's messages; only their `timestamp` fields are read (start = min, end = max).
    #[serde(default)]
    #[schemars(length(max = 10_000))]
    pub history: Vec<Map<String, Value>>,
    /// Keywords for lexical recall.
    #[serde(default)]
    #[schemars(length(max = 16_000))]
    pub keywords: String,
    /// The session's matter is settled (decays faster).
    #[serde(default)]
    pub resolved: bool,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub project_id: String,
    /// Conversation channel: reads that channel plus channel-less rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub channel: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `update_memory`: replace a memory's content.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMemoryArgs {
    /// The memory's id (the number in `mem:<id>`).
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// The new content (refused over `CPERSONA_MAX_CONTENT_LENGTH` characters).
    #[schemars(length(max = 16_000))]
    pub content: String,
    /// The owner (required). Another agent's memory reads as not found.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `delete_memory`, `lock_memory`, `unlock_memory`: act on one memory.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryIdArgs {
    /// The memory's id (the number in `mem:<id>`).
    #[schemars(range(min = 1))]
    pub memory_id: i64,
    /// The owner (required). Another agent's memory reads as not found.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `delete_episode`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeIdArgs {
    /// The episode's id (the number in `ep:<id>`).
    #[schemars(range(min = 1))]
    pub episode_id: i64,
    /// The owner (required). Another agent's episode reads as not found.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `get_profile`, `get_recall_precision`: one agent.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
}

/// `delete_agent_data`: every row of one agent.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteAgentDataArgs {
    /// The agent to erase (required, non-empty).
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `update_profile`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProfileArgs {
    /// The agent whose memory this is; agents never share rows.
    #[schemars(length(min = 1, max = 256))]
    pub agent_id: String,
    /// The whole profile text (cut to `CPERSONA_MAX_PROFILE_LENGTH`, 2,000 by default).
    #[schemars(length(max = 1_000_000))]
    pub profile: String,
    /// Opaque per-session partition hint (not auth, not a filter).
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub session_key: String,
}

/// `list_memories`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListMemoriesArgs {
    /// The agent; "" lists every agent.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Newest first, at most 500.
    #[serde(default = "default_list_memories_limit")]
    #[schemars(range(max = 500))]
    pub limit: u32,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub project_id: Option<String>,
}

/// `list_episodes`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListEpisodesArgs {
    /// The agent whose memory this is; agents never share rows.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub agent_id: String,
    /// Newest first, at most 200.
    #[serde(default = "default_list_episodes_limit")]
    #[schemars(range(max = 200))]
    pub limit: u32,
    /// Project bucket: reads that project plus the global pool ("" = the global pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub project_id: Option<String>,
}
