//! `check_health` over the engine: decodes the wire arguments into a
//! [`cpersona_engine::HealthRequest`] (with the stale-index share and the start-up list of
//! `CPERSONA_*` settings without effect), calls `Engine::check_health`, and encodes its
//! report, which already has CPersona's `{issues, severity_summary, status, stats}` shape.
//! Every check, its judging and its repair live in the engine (`engine/src/health/`).

use cpersona_engine::progress::Progress;
use cpersona_engine::{HealthRequest, UnusedSetting};

use crate::mcp::backend::ToolResult;
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::{body, encode, engine_error};
use crate::mcp::wire;

/// `get_session_findings`: the whole registry over the whole store, never repairing.
pub(crate) fn session_findings(
    backend: &EngineBackend,
    args: wire::FindingsArgs,
    shared: bool,
) -> ToolResult {
    let req = request(backend, String::new(), false, Vec::new(), String::new());
    let delivered = backend
        .engine()
        .session_findings(&req, args.per_kind_limit as usize, args.include_summary)
        .map_err(engine_error)?;
    encode(&wire::FindingsAnswer {
        delivered,
        identity_shared: shared.then_some(true),
        meta: wire::FindingsMeta {
            server_version: env!("CARGO_PKG_VERSION"),
            superauditor: cpersona_engine::health::stages::findings::SUPERAUDITOR_VERSION,
        },
    })
}

/// `check_health`'s request from the tool's arguments and the server's settings.
fn request(
    backend: &EngineBackend,
    agent_id: String,
    fix: bool,
    checks: Vec<String>,
    session_key: String,
) -> HealthRequest {
    HealthRequest {
        agent_id,
        fix,
        checks,
        session_key,
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
    }
}

/// `check_health`.
pub(crate) fn check_health(
    backend: &EngineBackend,
    args: wire::CheckHealthArgs,
    progress: &Progress<'_>,
) -> ToolResult {
    let req = request(
        backend,
        args.agent_id,
        args.fix,
        args.checks,
        args.session_key,
    );
    body(backend.engine().check_health(&req, progress))
}
