//! The backend the binary runs: each validated wire input becomes the engine's request struct,
//! each engine outcome (already in CPersona's response shape) becomes the JSON body as is.
//! It holds no ranking or storage logic, and never answers a tool the engine cannot serve
//! with anything but a clear `ok: false`.

mod associations;
mod backend;
pub(crate) mod convert;
pub(crate) mod health;
mod recall;
mod reconstruct;
mod resources;

pub use backend::EngineBackend;
pub use convert::embedder_advisory;

use cpersona_engine::{
    ArchiveEpisodeRequest, DeleteEpisodeRequest, ExportRequest, ImportRequest, ListEpisodesRequest,
    ListMemoriesRequest, MemoryIdRequest, MergeMode, MergeRequest, StoreId, StoreRequest,
    StoreResult, UpdateMemoryRequest, UpdateProfileRequest,
};
use serde_json::Value;

use crate::config::Precision;
use crate::mcp::backend::{
    ResourceBody, ResourceEntry, ResourceKind, ToolBackend, ToolError, ToolResult,
};
use crate::mcp::wire;
use convert::{body, encode, engine_error, object, source};
use cpersona_engine::precision_label;
use cpersona_engine::progress::Progress;

impl ToolBackend for EngineBackend {
    fn content_limit(&self) -> usize {
        self.engine.config().max_content_chars
    }

    fn store(&self, args: wire::StoreArgs) -> ToolResult {
        let mut req = StoreRequest {
            agent_id: args.agent_id,
            lock: args.lock,
            channel: args.channel,
            project_id: args.project_id,
            session_key: args.session_key,
            ..StoreRequest::default()
        };
        match args.message {
            // The legacy form: validation made sure the top-level fields are absent.
            Some(message) => {
                req.content = message.content;
                req.msg_id = message.id.unwrap_or_default();
                req.source = source(message.source)?;
                req.timestamp = message.timestamp;
                req.metadata = object(message.metadata);
            }
            None => {
                req.content = args.content.unwrap_or_default();
                req.msg_id = args.id.unwrap_or_default();
                req.source = source(args.source)?;
                req.timestamp = args.timestamp;
                req.metadata = object(args.metadata);
            }
        }
        let scope = (
            req.agent_id.clone(),
            req.project_id.clone(),
            req.channel.clone(),
            req.session_key.clone(),
        );
        let outcome = self.engine.store(&req).map_err(engine_error)?;
        let stored_id = match (&outcome.result, &outcome.id) {
            (StoreResult::Stored, Some(StoreId::Row(id))) => Some(*id),
            _ => None,
        };
        let associations = match (args.associations, stored_id) {
            (Some(associations), Some(id)) => Some(associations::after_store(
                &self.engine,
                id,
                scope,
                associations,
            )),
            _ => None,
        };
        encode(&wire::StoreBody {
            outcome: &outcome,
            advisory: self.advisory(),
            associations,
        })
    }

    fn recall(&self, args: wire::RecallArgs) -> ToolResult {
        recall::recall_args(self, args)
    }

    fn reconstruct(&self, args: wire::ReconstructArgs, progress: &Progress<'_>) -> ToolResult {
        reconstruct::reconstruct(self, args, progress)
    }

    fn recall_with_context(&self, args: wire::RecallWithContextArgs) -> ToolResult {
        recall::recall_with_context(self, args)
    }

    fn get_contents(&self, args: wire::GetContentsArgs) -> ToolResult {
        recall::get_contents(self, args)
    }

    fn archive_episode(&self, args: wire::ArchiveEpisodeArgs) -> ToolResult {
        let req = ArchiveEpisodeRequest {
            agent_id: args.agent_id,
            summary: args.summary,
            history: args.history.into_iter().map(Value::Object).collect(),
            keywords: args.keywords,
            resolved: args.resolved,
            project_id: args.project_id,
            channel: args.channel,
            session_key: args.session_key,
        };
        body(self.engine.archive_episode(&req))
    }

    fn update_memory(&self, args: wire::UpdateMemoryArgs) -> ToolResult {
        let req = UpdateMemoryRequest {
            memory_id: args.memory_id,
            content: args.content,
            agent_id: args.agent_id,
            session_key: args.session_key,
        };
        body(self.engine.update_memory(&req))
    }

    fn delete_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        body(self.engine.delete_memory(&memory_id(args)))
    }

    fn delete_episode(&self, args: wire::EpisodeIdArgs) -> ToolResult {
        let req = DeleteEpisodeRequest {
            episode_id: args.episode_id,
            agent_id: args.agent_id,
            session_key: args.session_key,
        };
        body(self.engine.delete_episode(&req))
    }

    fn lock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        body(self.engine.lock_memory(&memory_id(args)))
    }

    fn unlock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        body(self.engine.unlock_memory(&memory_id(args)))
    }

    fn get_profile(&self, args: wire::AgentArgs) -> ToolResult {
        body(self.engine.get_profile(&args.agent_id))
    }

    fn update_profile(&self, args: wire::UpdateProfileArgs) -> ToolResult {
        let req = UpdateProfileRequest {
            agent_id: args.agent_id,
            profile: args.profile,
            session_key: args.session_key,
        };
        body(self.engine.update_profile(&req))
    }

    fn list_memories(&self, args: wire::ListMemoriesArgs) -> ToolResult {
        let req = ListMemoriesRequest {
            agent_id: args.agent_id,
            limit: args.limit as usize,
            offset: 0,
            project_id: args.project_id,
            ..Default::default()
        };
        body(self.engine.list_memories(&req))
    }

    fn list_episodes(&self, args: wire::ListEpisodesArgs) -> ToolResult {
        let req = ListEpisodesRequest {
            agent_id: args.agent_id,
            limit: args.limit as usize,
            offset: 0,
            project_id: args.project_id,
        };
        body(self.engine.list_episodes(&req))
    }

    fn delete_agent_data(&self, args: wire::DeleteAgentDataArgs) -> ToolResult {
        body(
            self.engine
                .delete_agent_data(&args.agent_id, &args.session_key),
        )
    }

    fn export_memories(&self, args: wire::ExportArgs, progress: &Progress<'_>) -> ToolResult {
        let req = ExportRequest {
            agent_id: args.agent_id,
            output_path: args.output_path.into(),
            include_embeddings: args.include_embeddings,
            overwrite: args.overwrite,
        };
        body(self.engine.export_memories(&req, progress))
    }

    fn import_memories(&self, args: wire::ImportArgs, progress: &Progress<'_>) -> ToolResult {
        let req = ImportRequest {
            input_path: args.input_path.into(),
            target_agent_id: args.target_agent_id,
            dry_run: args.dry_run,
            session_key: args.session_key,
        };
        body(self.engine.import_memories_with(&req, progress))
    }

    fn merge_memories(&self, args: wire::MergeArgs, progress: &Progress<'_>) -> ToolResult {
        let req = MergeRequest {
            source_agent_id: args.source_agent_id,
            target_agent_id: args.target_agent_id,
            strategy: "skip".to_owned(),
            mode: match args.mode {
                wire::MergeMode::Copy => MergeMode::Copy,
                wire::MergeMode::Move => MergeMode::Move,
            },
            dry_run: args.dry_run,
            session_key: args.session_key,
        };
        body(self.engine.merge_memories(&req, progress))
    }

    fn calibrate_threshold(&self, args: wire::CalibrateArgs) -> ToolResult {
        recall::calibrate_threshold(self, args)
    }

    fn set_recall_precision(&self, args: wire::SetPrecisionArgs) -> ToolResult {
        let beta = if args.beta > 0.0 {
            Some(args.beta)
        } else {
            match args.precision {
                wire::PrecisionArg::Strict => Some(Precision::Strict.beta()),
                wire::PrecisionArg::Balanced => Some(Precision::Balanced.beta()),
                wire::PrecisionArg::Lenient => Some(Precision::Lenient.beta()),
                wire::PrecisionArg::Unset => None,
            }
        };
        let outcome = self
            .engine
            .set_recall_precision(&args.agent_id, beta, &args.session_key)
            .map_err(engine_error)?;
        let calibrate = match &outcome.calibration {
            Ok(c) => wire::Recalibration {
                ok: true,
                scope: "agent",
                new_threshold: Some(c.calibration.threshold),
                error: None,
            },
            Err(error) => wire::Recalibration {
                ok: false,
                scope: "agent",
                new_threshold: None,
                error: Some(error.to_string()),
            },
        };
        let paused = outcome.no_persist.is_some();
        encode(&wire::SetPrecisionAnswer {
            // A paused session's call is answered as done-nothing, not as a failure.
            ok: outcome.calibration.is_ok() || paused,
            agent_id: outcome.agent_id,
            precision: precision_label(outcome.beta),
            beta: outcome.beta,
            cleared: outcome.cleared,
            fused_gate: self.recall.fused_gate_enabled,
            calibrate,
            error: outcome
                .calibration
                .as_ref()
                .err()
                .filter(|_| !paused)
                .map(|error| {
                    format!(
                        "the agent could not be recalibrated, so its previous precision was \
                         kept: {error}"
                    )
                }),
            no_persist: outcome.no_persist,
        })
    }

    fn get_recall_precision(&self, args: wire::AgentArgs) -> ToolResult {
        let global_beta = self.engine.config().recall.precision_beta;
        let own = self
            .engine
            .recall_beta(&args.agent_id)
            .map_err(engine_error)?;
        let beta = own.unwrap_or(global_beta);
        encode(&wire::PrecisionAnswer {
            ok: true,
            agent_id: args.agent_id,
            precision: precision_label(beta),
            beta,
            overridden: own.is_some(),
            global_precision: precision_label(global_beta),
            global_beta,
        })
    }

    fn resource_page(
        &self,
        kind: ResourceKind,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<ResourceEntry>, ToolError> {
        resources::page(self, kind, offset, limit)
    }

    fn read_resource(
        &self,
        agent_id: &str,
        kind: ResourceKind,
        id: Option<i64>,
    ) -> Result<Option<ResourceBody>, ToolError> {
        resources::read(self, agent_id, kind, id)
    }

    fn names(
        &self,
        projects: bool,
        agent: Option<&str>,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, ToolError> {
        // Room for the names the caller may not show, which it filters out.
        const ASKED: usize = 100;
        if projects {
            self.engine
                .project_ids(agent, prefix, ASKED)
                .map_err(engine_error)
        } else {
            Ok(self
                .engine
                .agent_ids(prefix, ASKED)
                .map_err(engine_error)?
                .into_iter()
                .map(|agent| (agent.clone(), agent))
                .collect())
        }
    }

    fn check_health(&self, args: wire::CheckHealthArgs, progress: &Progress<'_>) -> ToolResult {
        health::check_health(self, args, progress)
    }

    fn migrate_channel_axis(&self, args: wire::ChannelAxisArgs) -> ToolResult {
        let req = cpersona_engine::ChannelAxisRequest {
            agent_id: args.agent_id,
            dry_run: args.dry_run,
            globalize_unrecoverable: args.globalize_unrecoverable,
            session_key: args.session_key,
        };
        body(self.engine.migrate_channel_axis(&req))
    }

    fn deep_check(&self, args: wire::DeepCheckArgs) -> ToolResult {
        let req = cpersona_engine::DeepRequest {
            agent_id: args.agent_id,
            fix: args.fix,
            checks: args.checks,
            session_key: args.session_key,
        };
        body(self.engine.deep_check(&req))
    }

    fn get_session_findings(&self, args: wire::FindingsArgs, shared: bool) -> ToolResult {
        health::session_findings(self, args, shared)
    }

    fn get_queue_status(&self, _args: wire::NoArgs) -> ToolResult {
        body(self.engine.get_queue_status())
    }

    fn pause_persistence(&self, args: wire::PauseArgs) -> ToolResult {
        let ttl = Some(u64::from(args.ttl_seconds));
        body(Ok(self.engine.pause_persistence(ttl, &args.session_key)))
    }

    fn resume_persistence(&self, args: wire::SessionArgs) -> ToolResult {
        body(Ok(self.engine.resume_persistence(&args.session_key)))
    }

    fn persistence_status(&self, args: wire::SessionArgs) -> ToolResult {
        body(Ok(self.engine.persistence_status(&args.session_key)))
    }

    fn declare_associations(&self, args: wire::DeclareAssociationsArgs) -> ToolResult {
        associations::declare(&self.engine, args)
    }

    fn traverse(&self, args: wire::TraverseArgs) -> ToolResult {
        associations::traverse(&self.engine, args)
    }
}

fn memory_id(args: wire::MemoryIdArgs) -> MemoryIdRequest {
    MemoryIdRequest {
        memory_id: args.memory_id,
        agent_id: args.agent_id,
        session_key: args.session_key,
    }
}
