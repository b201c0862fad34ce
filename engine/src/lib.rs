//! The memory model: the SQLite store, the write path, the embedders, the recall arms,
//! fusion, the gate, the recall process, reconstruct and the trace.
//!
//! # Overview
//! [`Engine`] owns one SQLite file (the source of truth) and the index generations derived
//! from it. It is synchronous, speaks no MCP, runs no async runtime and reads no environment
//! variables: configuration arrives as typed values from the server. Its methods are named
//! after CPersona's tools; each takes a plain request struct and returns an outcome that
//! serialises to the tool's response body.
//!
//! # Layers
//! Imports point down only (`server/tests/it/tidy.rs` measures it): base utilities (`error`,
//! `refs`, `text`, `time`, `source`, `vector`, `scope`, `embed`, `paging`) → the pure stages
//! (`recall::stages`, `reconstruct::stages`, `derived::{nodes, blocks}`; no SQLite) →
//! `config` → `store` (the state every feature reads) → the features (one folder each) →
//! this facade, whose methods are one line each.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::Arc;

use cpersona_index::Kernels;

use crate::embed::Embedder;
use crate::progress::Progress;
pub use crate::recall::stages::contents::ContentsResponse;
use crate::recall::{ArmList, Period};
use crate::refs::Ref;
use crate::store::Store;
use crate::trace::RecallTrace;
use crate::trace::taxonomy::{EnvelopeFetch, RowFacts};

pub mod config;
pub mod embed;
pub mod error;
pub mod progress;
pub mod refs;
pub mod scope;
pub mod source;
pub mod text;
pub mod time;
pub mod vector;

pub mod store;

mod agent;
pub mod associations;
mod channel_axis;
pub mod deep;
pub mod derived;
mod episodes;
pub mod health;
mod memories;
mod names;
mod paging;
mod portability;
mod profiles;
pub mod recall;
pub mod reconstruct;
mod reembed;
pub mod trace;

use crate::recall::calibration;

pub use derived::{blocks, nodes};
pub use reconstruct::tokens;
pub use trace::{replay, taxonomy};

pub use agent::DeleteAgentDataOutcome;
pub use associations::{
    DISABLED_MESSAGE as ASSOCIATIONS_DISABLED, DeclareOutcome, DeclareRequest, DeclaredEntity,
    Dropped, EntityInput, RelationInput, Retracted, TraverseBounds, TraverseEntity,
    TraverseOutcome, TraverseRelation, TraverseRequest,
};
pub use calibration::{
    CalibrateRequest, MAX_SAMPLE_SIZE, PRESETS, PrecisionOutcome, precision_label,
};
pub use channel_axis::{ChannelAxisOutcome, ChannelAxisRequest};
pub use config::{
    DeepConfig, EmbeddingFormat, EngineConfig, ExportDir, FutureTimestampMode, FutureTimestamps,
    QueryCacheConfig, ReconstructConfig,
};
pub use deep::{DeepOutcome, DeepRequest};
pub use derived::{DerivedReport, StoredBlock};
pub use episodes::{
    ArchiveEpisodeOutcome, ArchiveEpisodeRequest, DeleteEpisodeOutcome, DeleteEpisodeRequest,
    EpisodeItem, ListEpisodesOutcome, ListEpisodesRequest,
};
pub use error::{Error, Result};
pub use health::report::{
    DEFAULT_INDEX_STALE_WARN_SHARE, EmbedderSummary, HealthReport, HealthRequest,
};
pub use health::stages::facts::UnusedSetting;
pub use health::stages::findings::SessionFindings;
pub use health::stages::{Finding, Repair, Severity as HealthSeverity};
pub use memories::list::{ListMemoriesOutcome, ListMemoriesRequest, MemoryItem};
pub use memories::{
    DeleteMemoryOutcome, LockMemoryOutcome, MemoryIdRequest, StoreId, StoreOutcome, StoreRequest,
    StoreResult, TimestampAhead, UnlockMemoryOutcome, UpdateMemoryOutcome, UpdateMemoryRequest,
};
pub use names::{AgentSummary, WEEK_MS};
pub use portability::cpersona::{self as cpersona, ConvertOutcome, ConvertRequest, SourceStamp};
pub use portability::{
    ExportOutcome, ExportRequest, ImportOutcome, ImportRequest, MergeMode, MergeOutcome,
    MergeRequest,
};
pub use profiles::{GetProfileOutcome, UpdateProfileOutcome, UpdateProfileRequest};
pub use recall::arms::lexical::{CapActed, CapPolicy};
pub use recall::arms::probe::LexicalArms;
pub use recall::arms::vector::VectorTableReport;
pub use recall::stages::calibrate::{Calibration, ThresholdMethod};
pub use recall::stages::cue::{CueConfidence, TimeCue};
pub use recall::stages::pipeline::RecallResponse;
pub use recall::{
    CALIBRATION_SAMPLE_ROWS, CalibrationOutcome, MAX_MEMORIES, POOL_COUNT_CAP, PREFILTER_MIN_ROWS,
    RecallQuery, RecallResult, RecallTimings, SCORING_VERSION, VectorReport,
};
pub use reconstruct::mode::{ModeReport, ReconstructMode, TokenCapCut};
pub use reconstruct::read::GRAPH_ROW_CAP;
pub use reconstruct::stages::places::{Places, ProPlaces};
pub use reconstruct::{ReconstructBody, ReconstructRequest, ReconstructResult};
pub use reembed::ReembedStep;
pub use scope::Scope;
pub use store::generations::blocks::{block_row_id, split_block_row_id};
pub use store::generations::{
    IndexStatus, IndexTable, PendingMerge, RebuildOutcome, SegmentStatus, TableIndexStatus,
};
pub use store::index::{FlushOutcome, MaintainOutcome, MergeReport};
pub use store::pauses::{NoPersist, PauseOutcome, PersistenceStatus, ResumeOutcome};
pub use store::queue::{DrainOutcome, QueueStatus};
pub use store::reembed::ReembedProgress;
pub use store::stats::StoreStats;

/// The engine: the handle the server holds. A facade of one-line methods, one per tool or
/// operator command, each calling its feature with the [`Store`] and the configuration.
/// `Send + Sync`; every method is blocking.
pub struct Engine {
    store: Store,
    config: EngineConfig,
}

impl Engine {
    /// Converts a CPersona store (read-only) into a new store at `config.db_path`, created
    /// here; the report lists what was carried and what was not. `progress` hears of the rows
    /// read (of the total).
    pub fn convert_cpersona(
        config: &EngineConfig,
        embedder: Arc<dyn Embedder>,
        req: &ConvertRequest,
        progress: &Progress<'_>,
    ) -> Result<ConvertOutcome> {
        portability::cpersona::convert(config, embedder, req, progress)
    }

    /// The stamp of the CPersona file this store was converted from, if it was.
    pub fn converted_from(&self) -> Result<Option<SourceStamp>> {
        portability::cpersona::recorded_stamp(&self.store)
    }

    /// Opens (creating and migrating when needed) the store at `config.db_path`.
    ///
    /// The store records the embedder's identity (model id, dimension) the first time it is
    /// opened, and again while it holds no vector at all. An embedder whose identity differs
    /// from a store that already holds vectors is adopted and the old rows are re-embedded by
    /// [`Engine::reembed_step`] (not over a real model with the hashed fallback, nor with
    /// `reembed_on_model_change` off: then writes queue until a matching embedder is back).
    /// Vectors of two models are never compared.
    pub fn open(config: EngineConfig, embedder: Arc<dyn Embedder>) -> Result<Engine> {
        let store = Store::open(&config, embedder)?;
        if store.vector_target().reembed_from.is_some() {
            // Counted once now, so the first recalls already say what share they covered.
            reembed::progress(&store)?;
        }
        Ok(Engine { store, config })
    }

    /// The same engine scanning vectors with `kernels` (tests compare scalar and detected);
    /// generations load again on next use.
    pub fn with_kernels(self, kernels: Kernels) -> Engine {
        Engine {
            store: self.store.with_kernels(kernels),
            config: self.config,
        }
    }

    /// The configuration the engine was opened with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The store under the facade, for unit tests that drive a feature function directly.
    #[cfg(test)]
    pub(crate) fn store_handle(&self) -> &Store {
        &self.store
    }

    // Memories: store, update, delete, lock, list.
    /// `store`: one memory, unless a duplicate is visible (then `skipped`).
    pub fn store(&self, req: &StoreRequest) -> Result<StoreOutcome> {
        memories::store(&self.store, &self.config, req)
    }

    /// `update_memory`: replaces an unlocked memory's text and re-embeds it.
    pub fn update_memory(&self, req: &UpdateMemoryRequest) -> Result<UpdateMemoryOutcome> {
        memories::update_memory(&self.store, &self.config, req)
    }

    /// `delete_memory`: deletes an unlocked memory and everything derived from it.
    pub fn delete_memory(&self, req: &MemoryIdRequest) -> Result<DeleteMemoryOutcome> {
        memories::delete_memory(&self.store, req)
    }

    /// `lock_memory`: protects a memory from update, delete and merge moves.
    pub fn lock_memory(&self, req: &MemoryIdRequest) -> Result<LockMemoryOutcome> {
        memories::lock_memory(&self.store, req)
    }

    /// `unlock_memory`: lifts the protection.
    pub fn unlock_memory(&self, req: &MemoryIdRequest) -> Result<UnlockMemoryOutcome> {
        memories::unlock_memory(&self.store, req)
    }

    /// `list_memories`.
    pub fn list_memories(&self, req: &ListMemoriesRequest) -> Result<ListMemoriesOutcome> {
        memories::list::list_memories(&self.store, req)
    }

    // Episodes and profiles.
    /// `archive_episode`: stores the summary (required) and keywords, embeds the summary.
    pub fn archive_episode(&self, req: &ArchiveEpisodeRequest) -> Result<ArchiveEpisodeOutcome> {
        episodes::archive_episode(&self.store, &self.config, req)
    }

    /// `delete_episode`.
    pub fn delete_episode(&self, req: &DeleteEpisodeRequest) -> Result<DeleteEpisodeOutcome> {
        episodes::delete_episode(&self.store, req)
    }

    /// `list_episodes`: newest first, paged, within CPersona's character budget.
    pub fn list_episodes(&self, req: &ListEpisodesRequest) -> Result<ListEpisodesOutcome> {
        episodes::list_episodes(&self.store, req)
    }

    /// `get_profile`.
    pub fn get_profile(&self, agent_id: &str) -> Result<GetProfileOutcome> {
        profiles::get_profile(&self.store, agent_id)
    }

    /// `update_profile`: one profile per agent, upserted.
    pub fn update_profile(&self, req: &UpdateProfileRequest) -> Result<UpdateProfileOutcome> {
        profiles::update_profile(&self.store, &self.config, req)
    }

    // Purge and the session pause.
    /// `delete_agent_data`.
    pub fn delete_agent_data(
        &self,
        agent_id: &str,
        session_key: &str,
    ) -> Result<DeleteAgentDataOutcome> {
        agent::delete_agent_data(&self.store, agent_id, session_key)
    }

    /// `pause_persistence`: `ttl_seconds` `None` = 1800; clamped to 1..=86400.
    pub fn pause_persistence(&self, ttl_seconds: Option<u64>, session_key: &str) -> PauseOutcome {
        self.store.pause_persistence(ttl_seconds, session_key)
    }

    /// `resume_persistence`.
    pub fn resume_persistence(&self, session_key: &str) -> ResumeOutcome {
        self.store.resume_persistence(session_key)
    }

    /// `persistence_status`.
    pub fn persistence_status(&self, session_key: &str) -> PersistenceStatus {
        self.store.persistence_status(session_key)
    }

    // Recall, its calibration and its arms one at a time.
    /// `recall`: the hybrid recall of `q` in the caller's scope, credited to its rows.
    pub fn recall(&self, q: &RecallQuery) -> Result<RecallResult> {
        recall::recall(&self.store, &self.config, q)
    }

    /// The same recall without crediting the rows it returns: for a person looking (the
    /// console's search), whose reading is not the agent being handed them.
    pub fn recall_without_credit(&self, q: &RecallQuery) -> Result<RecallResult> {
        recall::answer(&self.store, &self.config, q)
    }

    /// `get_contents`: the full text (or a span) of each ref within the caller's scope.
    pub fn get_contents(
        &self,
        agent_id: &str,
        project_id: Option<&str>,
        channel: Option<&str>,
        refs: &[serde_json::Value],
    ) -> Result<ContentsResponse> {
        recall::get_contents(&self.store, agent_id, project_id, channel, refs)
    }

    /// `calibrate_threshold`: fits and stores the gate's threshold for `req.agent_id` (the
    /// global one for `""`).
    pub fn calibrate_threshold(&self, req: &CalibrateRequest<'_>) -> Result<CalibrationOutcome> {
        calibration::calibrate_threshold(&self.store, &self.config, req)
    }

    /// The agent's own β, if one is set.
    pub fn recall_beta(&self, agent_id: &str) -> Result<Option<f64>> {
        calibration::recall_beta(&self.store, agent_id)
    }

    /// The β calibration uses for `agent_id`: its own, else the configured global one.
    pub fn effective_recall_beta(&self, agent_id: &str) -> Result<f64> {
        calibration::effective_recall_beta(&self.store, &self.config, agent_id)
    }

    /// `set_recall_precision`: sets or clears the agent's β and recalibrates with it.
    pub fn set_recall_precision(
        &self,
        agent_id: &str,
        beta: Option<f64>,
        session_key: &str,
    ) -> Result<PrecisionOutcome> {
        calibration::set_recall_precision(&self.store, &self.config, agent_id, beta, session_key)
    }

    /// The vector arm alone, for the per-stage bench and tests.
    pub fn vector_arm(
        &self,
        agent_id: &str,
        project_id: Option<&str>,
        vector: &[f32],
        depth: usize,
    ) -> Result<Vec<ArmList>> {
        recall::arms::probe::vector_arm(
            &self.store,
            &self.config,
            agent_id,
            project_id,
            vector,
            depth,
        )
    }

    /// The lexical arms alone, for the per-stage bench and tests.
    pub fn lexical_arm(
        &self,
        agent_id: &str,
        project_id: Option<&str>,
        query: &str,
        depth: usize,
        cap: Option<usize>,
    ) -> Result<LexicalArms> {
        recall::arms::probe::lexical_arm(&self.store, agent_id, project_id, query, depth, cap)
    }

    /// The keyword (LIKE) pass alone; `None` when the query has no keyword.
    pub fn keyword_arm(
        &self,
        agent_id: &str,
        project_id: Option<&str>,
        query: &str,
        depth: usize,
    ) -> Result<Option<ArmList>> {
        recall::arms::probe::keyword_arm(&self.store, agent_id, project_id, query, depth)
    }

    // Reconstruct and declared associations.
    /// `reconstruct`: recall's candidates as quoted items with provenance, in budget.
    pub fn reconstruct(&self, req: &ReconstructRequest) -> Result<ReconstructResult> {
        self.reconstruct_with(req, &Progress::none())
    }

    /// `reconstruct`, reporting its phases to and cancellable through `progress`.
    pub fn reconstruct_with(
        &self,
        req: &ReconstructRequest,
        progress: &Progress<'_>,
    ) -> Result<ReconstructResult> {
        reconstruct::reconstruct(&self.store, &self.config, req, progress)
    }

    /// `declare_associations`: entities, aliases, mentions and relations of one agent.
    pub fn declare_associations(&self, req: &DeclareRequest) -> Result<DeclareOutcome> {
        associations::declare_associations(&self.store, &self.config, req)
    }

    /// `traverse`: a bounded walk over declared relations from one entity.
    pub fn traverse(&self, req: &TraverseRequest) -> Result<TraverseOutcome> {
        associations::traverse::traverse(&self.store, &self.config, req)
    }

    // Export, import, merge.
    /// `export_memories`.
    /// `progress` hears of it and may cancel it (`crate::progress`).
    pub fn export_memories(
        &self,
        req: &ExportRequest,
        progress: &Progress<'_>,
    ) -> Result<ExportOutcome> {
        portability::export::export_memories(&self.store, &self.config, req, progress)
    }

    /// `import_memories`.
    pub fn import_memories(&self, req: &ImportRequest) -> Result<ImportOutcome> {
        self.import_memories_with(req, &Progress::none())
    }

    /// `import_memories`, reporting to and cancellable through `progress`.
    pub fn import_memories_with(
        &self,
        req: &ImportRequest,
        progress: &Progress<'_>,
    ) -> Result<ImportOutcome> {
        portability::import::import_memories(&self.store, &self.config, req, progress)
    }

    /// `merge_memories`.
    /// `progress` hears of it and may cancel it (`crate::progress`).
    pub fn merge_memories(
        &self,
        req: &MergeRequest,
        progress: &Progress<'_>,
    ) -> Result<MergeOutcome> {
        portability::merge::merge_memories(&self.store, req, progress)
    }

    // Derived rows, the embedding queue, the index generations, the store.
    /// Embeds again up to `max_records` records whose node or block vectors are owed.
    pub fn fill_derived(&self, max_records: usize) -> Result<usize> {
        derived::fill_derived(&self.store, max_records)
    }

    /// The stored blocks of record `r` (offsets and vectors), in index order.
    pub fn stored_blocks(&self, r: Ref) -> Result<Vec<StoredBlock>> {
        derived::stored_blocks(&self.store, r)
    }

    /// `get_queue_status`, with a re-embedding's progress while one is under way.
    pub fn get_queue_status(&self) -> Result<QueueStatus> {
        reembed::queue_status(&self.store)
    }

    // Re-embedding after a model change.
    /// One bounded step of re-embedding rows of another model (the background task's unit).
    pub fn reembed_step(&self, max_rows: usize) -> Result<ReembedStep> {
        reembed::step(&self.store, max_rows)
    }

    /// Where re-embedding stands (counts the rows).
    pub fn reembed_progress(&self) -> Result<ReembedProgress> {
        reembed::progress(&self.store)
    }

    /// An operator's `cpersona reembed`: adopts the configured embedder when the store holds
    /// another model's vectors (even over a real model, even with adoption off).
    pub fn start_reembed(&self) -> Result<ReembedProgress> {
        reembed::start(&self.store)
    }

    /// Embeds up to `max_rows` queued rows, then owed node and block vectors.
    pub fn drain_embedding_queue(&self, max_rows: usize) -> Result<DrainOutcome> {
        derived::drain_embedding_queue(&self.store, max_rows, false)
    }

    /// [`Engine::drain_embedding_queue`], retrying delayed and exhausted rows too.
    pub fn drain_embedding_queue_now(&self, max_rows: usize) -> Result<DrainOutcome> {
        derived::drain_embedding_queue(&self.store, max_rows, true)
    }

    /// `check_health`: the vector arm, index freshness and CPersona's applicable checks,
    /// repaired first when `req.fix` asks.
    /// `progress` hears of it and may cancel it (`crate::progress`).
    pub fn check_health(
        &self,
        req: &HealthRequest,
        progress: &Progress<'_>,
    ) -> Result<HealthReport> {
        health::check_health(&self.store, &self.config, req, progress)
    }

    /// `deep_check`: CPersona's heuristic data-quality checks over one agent, repairing the
    /// two repairable ones with `fix`.
    pub fn deep_check(&self, req: &DeepRequest) -> Result<DeepOutcome> {
        deep::deep_check(&self.store, &self.config.deep, req)
    }

    /// What `agent_id` holds (row counts, a profile, memories per week), counted in SQL:
    /// for an overview such as the console's, without `store_stats`' integrity check.
    pub fn agent_summary(&self, agent_id: &str) -> Result<AgentSummary> {
        names::agent_summary(&self.store, agent_id)
    }

    /// `migrate_channel_axis`: Discord bridge rows re-channelled from their session ids.
    pub fn migrate_channel_axis(&self, req: &ChannelAxisRequest) -> Result<ChannelAxisOutcome> {
        channel_axis::migrate_channel_axis(&self.store, req)
    }

    /// `get_session_findings`: `check_health` of `req` (the whole store, no repair) delivered
    /// as SuperAuditor findings, at most `per_kind_limit` per kind.
    pub fn session_findings(
        &self,
        req: &HealthRequest,
        per_kind_limit: usize,
        summary: bool,
    ) -> Result<SessionFindings> {
        health::session_findings(&self.store, &self.config, req, per_kind_limit, summary)
    }

    /// Schema version, integrity, row counts (of one agent, `""` = all) and file size.
    pub fn store_stats(&self, agent_id: &str) -> Result<StoreStats> {
        self.store.store_stats(agent_id)
    }

    /// Where `table`'s index lives: `<db_path>.<table>.seg/` (records), `<db_path>.blocks.gen`.
    pub fn index_path(&self, table: IndexTable) -> PathBuf {
        self.store.index_path(table)
    }

    /// Rebuilds `table`'s index whole from SQLite and publishes it.
    pub fn rebuild_index(
        &self,
        table: IndexTable,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<RebuildOutcome> {
        self.store.rebuild_index(table, progress)
    }

    /// The index state of each table (segments, rows, tombstones, live tail, merges).
    pub fn index_status(&self) -> Result<IndexStatus> {
        self.store.index_status()
    }

    /// Flushes the change log of `table` into a new segment (a rebuild when never built).
    pub fn flush_index(&self, table: IndexTable) -> Result<Option<FlushOutcome>> {
        self.store.flush_index(table)
    }

    /// Runs the merge the policy picks for `table`, if any.
    pub fn merge_index(&self, table: IndexTable) -> Result<Option<MergeReport>> {
        self.store.merge_index(table)
    }

    /// One background maintenance pass: flush every table, then merge when `merge`.
    pub fn maintain_index(&self, merge: bool) -> Result<MaintainOutcome> {
        self.store.maintain_index(merge)
    }

    /// Agent ids starting with `prefix` (for a client's completion), at most `limit`.
    pub fn agent_ids(&self, prefix: &str, limit: usize) -> Result<Vec<String>> {
        names::agent_ids(&self.store, prefix, limit)
    }

    /// `(agent_id, project_id)` pairs whose project starts with `prefix` (of `agent_id` when
    /// given), at most `limit`.
    pub fn project_ids(
        &self,
        agent_id: Option<&str>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        names::project_ids(&self.store, agent_id, prefix, limit)
    }

    /// Writes the recall credit waiting in memory now (`serve`'s upkeep does it every pass,
    /// and dropping the engine does it last); returns the memory rows credited.
    pub fn flush_recall_credits(&self) -> Result<usize> {
        self.store.flush_credits()
    }

    /// Maintenance passes until one finds nothing to do (a backlog clears at flush speed);
    /// returns the passes run, the idle one included. `serve`'s upkeep runs this every tick.
    pub fn maintain_index_until_idle(&self, merge: bool) -> Result<u64> {
        self.store.maintain_index_until_idle(merge)
    }

    /// The highest change-log sequence number: "rows changed since seq S" reads `seq > S`.
    pub fn change_log_head(&self) -> Result<i64> {
        self.store.change_log_head()
    }

    // The failure taxonomy's reads.
    /// What the store holds about `r` for a caller in that scope (the taxonomy's facts).
    pub fn row_facts(
        &self,
        agent_id: &str,
        project_id: Option<&str>,
        channel: Option<&str>,
        r: Ref,
    ) -> Result<RowFacts> {
        trace::taxonomy::row_facts(&self.store, agent_id, project_id, channel, r)
    }

    /// Re-runs the loop's envelope fetch for `period` in the trace's scope.
    pub fn refetch_envelope(&self, trace: &RecallTrace, period: Period) -> Result<EnvelopeFetch> {
        trace::taxonomy::loop_codes::refetch_envelope(&self.store, &self.config, trace, period)
    }
}
