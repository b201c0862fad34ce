//! `/console/health`: `check_health` as a page, through the tool's own handler (so the
//! stale-index share and the settings without effect are the ones the tool reports), plus
//! the embedding queue (with a re-embedding's progress). Every check's finding, its reason
//! and remedy first; then the index segments and freshness, the embedder and the store.

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use maud::html;
use serde_json::Value;

use crate::console::layout::{Refusal, json_view, page};
use crate::console::layout::{engine_refusal, text_of};
use crate::console::session::Caller;
use crate::console::state::{Shared, blocking};
use crate::mcp::engine::health::check_health;
use crate::mcp::wire;

/// `GET /console/health`.
pub(crate) async fn health(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "check_health", "")?;
        let report = check_health(
            &state.backend,
            wire::CheckHealthArgs {
                agent_id: String::new(),
                fix: false,
                checks: Vec::new(),
                session_key: String::new(),
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .map_err(|err| Refusal::bad(err.to_string()))?;
        let queue = state.engine().get_queue_status().map_err(engine_refusal)?;
        let queue = serde_json::to_value(&queue).unwrap_or(Value::Null);
        let advisory = state
            .backend
            .embedder_degraded()
            .map(|a| serde_json::to_value(a).unwrap_or(Value::Null));
        let status = text_of(&report["status"]);
        let empty = Vec::new();
        let checks = report["checks"].as_array().unwrap_or(&empty);
        let body = html! {
            h1 { "Health " span class=(format!("badge {}", if status == "healthy" { "ok" } else { "warning" })) { (status) } }
            p.note { (text_of(&report["total_memories"])) " memories · " (json_view(&report["severity_summary"])) }
            @if let Some(a) = &advisory { div.refusal { strong { "Semantic recall is degraded. " } (json_view(a)) } }
            h2 { "Checks" }
            table {
                tr { th { "Check" } th { "Severity" } th { "Reason" } th { "Remedy" } th { "Detail" } }
                @for f in checks {
                    @let severity = text_of(&f["severity"]);
                    tr {
                        td { (text_of(&f["check"])) }
                        td { span class=(format!("badge {severity}")) { (severity) } }
                        td { (text_of(&f["reason"])) }
                        td { (text_of(&f["remedy"])) }
                        td { @if let Some(d) = f.get("detail") { details { summary { "detail" } (json_view(d)) } } }
                    }
                }
            }
            h2 { "Index segments and freshness" }
            (json_view(&report["index"]))
            h2 { "Embedding queue and re-embedding" }
            (json_view(&queue))
            h2 { "Embedder" }
            (json_view(&report["embedder"]))
            h2 { "Store" }
            (json_view(&report["stats"]))
        };
        Ok(page("Health", Some(caller.nav()), body))
    })
    .await
}
