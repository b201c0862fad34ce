//! What every page shares: the engine (through the tools' backend), its embedder, the gate
//! HTTP admits by, the ACL file, the sessions, the allowed hosts and the count cache; the
//! grant check each page runs as the tool it mirrors; and the blocking runner.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use cpersona_engine::Engine;
use cpersona_engine::embed::Embedder;
use serde_json::{Map, json};

use super::counts::CountCache;
use super::layout::Refusal;
use super::session::{Caller, Sessions};
use crate::access::{self, Acl, Decision};
use crate::mcp::engine::EngineBackend;
use crate::transport::http::Gate;

/// What every handler shares.
pub(crate) struct ConsoleState {
    pub(crate) backend: Arc<EngineBackend>,
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) gate: Gate,
    pub(crate) acl: Option<Arc<Acl>>,
    pub(crate) sessions: Sessions,
    /// `Host` values accepted; `None`: the check is off (HTTP's rule).
    pub(crate) hosts: Option<Vec<String>>,
    /// Agents' row counts, kept while the change log stands still.
    pub(crate) counts: CountCache,
}

/// The state as handlers receive it.
pub(crate) type Shared = Arc<ConsoleState>;

impl ConsoleState {
    pub(crate) fn engine(&self) -> &Engine {
        self.backend.engine()
    }

    /// Whether `tool` on `agent` is allowed by the caller's grants (always, outside ACL
    /// mode); a refusal names the client, the agent and the grant missing.
    pub(crate) fn allow(&self, caller: &Caller, tool: &str, agent: &str) -> Result<(), Refusal> {
        let Some(acl) = &self.acl else {
            return Ok(());
        };
        let mut args = Map::new();
        if !agent.is_empty() {
            args.insert("agent_id".to_owned(), json!(agent));
        }
        match access::decide(acl, caller.principal(), tool, &mut args) {
            Decision::Allow { .. } => Ok(()),
            Decision::Deny(denial) => Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "Not allowed",
                format!(
                    "client {:?} has no {} grant on agent {:?} (this page runs as `{}`): {}",
                    denial.client_id,
                    denial.required.map_or("", |p| p.as_str()),
                    denial.agent_id.as_deref().unwrap_or(agent),
                    tool,
                    denial.detail
                ),
            )),
        }
    }

    /// Whether `tool` on `agent` would be allowed, for hiding what the caller cannot see.
    pub(crate) fn may(&self, caller: &Caller, tool: &str, agent: &str) -> bool {
        self.allow(caller, tool, agent).is_ok()
    }
}

/// Runs `work` (engine calls block) off the async threads and answers with its page or its
/// refusal.
pub(crate) async fn blocking<R: IntoResponse + Send + 'static>(
    work: impl FnOnce() -> Result<R, Refusal> + Send + 'static,
) -> Response {
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(page)) => page.into_response(),
        Ok(Err(refusal)) => refusal.into_response(),
        Err(err) => {
            tracing::error!(%err, "console page panicked");
            Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal error",
                "the page failed; the server log has the details",
            )
            .into_response()
        }
    }
}
