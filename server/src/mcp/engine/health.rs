//! `check_health` over the engine: decodes the wire arguments into a
//! [`cpersona_engine::HealthRequest`] (with the stale-index share and the start-up list of
//! `CPERSONA_*` settings without effect), calls `Engine::check_health`, and encodes its
//! report, which already has CPersona's `{issues, severity_summary, status, stats}` shape.
//! Every check, its judging and its repair live in the engine (`engine/src/health/`).

use cpersona_engine::progress::Progress;
use cpersona_engine::{HealthRequest, UnusedSetting};

use crate::mcp::backend::ToolResult;
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::body;
use crate::mcp::wire;

/// `check_health`.
pub(crate) fn check_health(
    backend: &EngineBackend,
    args: wire::CheckHealthArgs,
    progress: &Progress<'_>,
) -> ToolResult {
    let req = HealthRequest {
        agent_id: args.agent_id,
        fix: args.fix,
        checks: args.checks,
        index_stale_warn_share: backend.recall_settings().index_stale_warn_share,
        unused_settings: backend
            .unhonoured_settings()
            .iter()
            .map(|s| UnusedSetting {
                name: s.name.clone(),
                status: s.status.to_owned(),
                note: s.note.clone(),
            })
            .collect(),
    };
    body(backend.engine().check_health_with(&req, progress))
}
