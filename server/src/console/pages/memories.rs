//! An agent's memories: the list (paged, filtered), one memory (full text, source, times,
//! lock state, overflow nodes and blocks), and its corrections (edit, lock, unlock, delete)
//! through the same `Engine` calls as the tools.
//!
//! The filters (project, channel, source, creation-time range) are the engine's
//! (`ListMemoriesRequest`), so paging is exact however rare a match is.

use axum::Extension;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use cpersona_engine::refs::Ref;
use cpersona_engine::{ListMemoriesRequest, MemoryIdRequest, MemoryItem, UpdateMemoryRequest};
use maud::html;
use serde::Deserialize;
use serde_json::json;

use crate::console::csrf::{self, SMALL_FORM_BYTES, edit_form_bytes};
use crate::console::layout::{
    Refusal, clip, csrf_field, encode, engine_refusal, page, query_string, source_line,
};
use crate::console::session::Caller;
use crate::console::state::{Shared, blocking};

/// Rows shown per page.
const PAGE_ROWS: usize = 50;
/// The list's filters, as the query string carries them.
#[derive(Deserialize, Default, Clone)]
pub(crate) struct ListQuery {
    #[serde(default)]
    project: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    after: String,
    #[serde(default)]
    before: String,
    #[serde(default)]
    offset: Option<usize>,
}

/// A date or time from a filter box: ISO-8601, or a bare date (midnight UTC).
fn when(field: &str, text: &str) -> Result<Option<i64>, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    cpersona_engine::time::parse_iso8601_ms(text)
        .or_else(|_| cpersona_engine::time::parse_iso8601_ms(&format!("{text}T00:00:00Z")))
        .map(Some)
        .map_err(|_| {
            Refusal::bad(format!(
                "{field} {text:?} is not a date (2026-01-31) or an ISO-8601 time"
            ))
        })
}

/// `GET /console/agents/{agent}/memories`.
pub(crate) async fn list(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(agent): Path<String>,
    Query(q): Query<ListQuery>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "list_memories", &agent)?;
        let after = when("after", &q.after)?;
        let before = when("before", &q.before)?;
        let start = q.offset.unwrap_or(0);
        let nonempty = |text: &str| (!text.trim().is_empty()).then(|| text.trim().to_owned());
        let listed = state
            .engine()
            .list_memories(&ListMemoriesRequest {
                agent_id: agent.clone(),
                limit: PAGE_ROWS,
                offset: start,
                project_id: nonempty(&q.project),
                channel: nonempty(&q.channel),
                source_contains: nonempty(&q.source),
                created_from_ms: after,
                created_before_ms: before,
                ..Default::default()
            })
            .map_err(engine_refusal)?;
        let next = listed.next_offset;
        let shown = listed.memories;
        let base = format!("/console/agents/{}/memories", encode(&agent));
        let filters = |offset: usize| {
            query_string(&[
                ("project", &q.project),
                ("channel", &q.channel),
                ("source", &q.source),
                ("after", &q.after),
                ("before", &q.before),
                ("offset", &offset.to_string()),
            ])
        };
        let body = html! {
            h1 { "Memories of " a href=(format!("/console/agents/{}", encode(&agent))) { (agent) } }
            form.filters method="get" action=(base) {
                label { "Project" input type="text" name="project" value=(q.project); }
                label { "Channel" input type="text" name="channel" value=(q.channel); }
                label { "Source (type, id or name contains)" input type="text" name="source" value=(q.source); }
                label { "Created after" input type="text" name="after" placeholder="2026-01-31" value=(q.after); }
                label { "Created before" input type="text" name="before" placeholder="2026-02-28" value=(q.before); }
                button type="submit" { "Filter" }
            }
            p.note { "A project or channel filter reads that bucket plus the global one, as recall does." }
            @if shown.is_empty() {
                p.muted { "No memories match." }
            } @else {
                table {
                    tr { th { "#" } th { "Content" } th { "Source" } th { "Created" } th { "Project · channel" } th { "Lock" } }
                    @for m in &shown {
                        tr {
                            td { a href=(format!("{base}/{}", m.id)) { "mem:" (m.id) } }
                            td { (clip(&m.content, 240)) }
                            td { (source_line(&m.source)) }
                            td { (m.created_at) }
                            td { (m.project_id) " · " (m.channel) }
                            td { (if m.locked { "locked" } else { "" }) }
                        }
                    }
                }
            }
            div.pager {
                @if start > 0 { a href=(format!("{base}{}", filters(0))) { "← newest" } }
                @if let Some(next) = next { a href=(format!("{base}{}", filters(next))) { "older →" } }
            }
        };
        Ok(page(&format!("Memories of {agent}"), Some(caller.nav()), body))
    })
    .await
}

/// The listing facts of memory `id` (lock state, project, channel, creation time).
fn listing_of(state: &Shared, agent: &str, id: i64) -> Result<Option<MemoryItem>, Refusal> {
    let listed = state
        .engine()
        .list_memories(&ListMemoriesRequest {
            agent_id: agent.to_owned(),
            limit: 1,
            memory_id: Some(id),
            ..Default::default()
        })
        .map_err(engine_refusal)?;
    Ok(listed.memories.into_iter().next())
}

/// `GET /console/agents/{agent}/memories/{id}`.
pub(crate) async fn detail(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((agent, id)): Path<(String, i64)>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "get_contents", &agent)?;
        let engine = state.engine();
        let contents = engine
            .get_contents(&agent, None, None, &[json!({"ref": format!("mem:{id}")})])
            .map_err(engine_refusal)?;
        let Some(item) = contents.items.into_iter().next() else {
            return Err(Refusal::not_found(format!("agent {agent:?} has no memory mem:{id}")));
        };
        let listing = listing_of(&state, &agent, id)?;
        let facts = engine.row_facts(&agent, None, None, Ref::mem(id)).map_err(engine_refusal)?;
        let blocks = engine.stored_blocks(Ref::mem(id)).map_err(engine_refusal)?;
        let chars: Vec<char> = item.content.chars().collect();
        let span_text = |start: usize, end: usize| -> String {
            chars.get(start..end.min(chars.len())).map(|s| s.iter().collect()).unwrap_or_default()
        };
        let embedder = &state.embedder;
        let nodes = cpersona_engine::nodes::divide(&item.content, |t| {
            match embedder.count_tokens(&[t]) {
                Ok(Some(mut infos)) if !infos.is_empty() => Ok(infos.swap_remove(0)),
                Ok(_) => Err("this embedder does not count tokens, so no overflow nodes are derived".to_owned()),
                Err(err) => Err(format!("the embedder could not count tokens: {err}")),
            }
        });
        let base = format!("/console/agents/{}/memories/{id}", encode(&agent));
        let write = state.may(&caller, "update_memory", &agent);
        let locked = listing.as_ref().map(|m| m.locked);
        let body = html! {
            h1 { "mem:" (id) " of " a href=(format!("/console/agents/{}", encode(&agent))) { (agent) } }
            table.kv {
                tr { th { "Source" } td { (item.source.as_ref().map(source_line).unwrap_or_default()) } }
                tr { th { "Timestamp (as given)" } td { (item.timestamp.as_deref().unwrap_or("")) } }
                tr { th { "Message id" } td { (item.id.as_deref().unwrap_or("")) } }
                @if let Some(m) = &listing {
                    tr { th { "Created" } td { (m.created_at) } }
                    tr { th { "Project · channel" } td { (m.project_id) " · " (m.channel) } }
                }
                tr { th { "Lock" } td { (match locked { Some(true) => "locked", Some(false) => "not locked",
                    None => "unknown (not among the newest rows read)" }) } }
                tr { th { "Vector" } td { (if facts.embedded { "embedded for the store's model" } else { "no vector for the store's model (queued or failed)" }) } }
                tr { th { "Length" } td { (chars.len()) " characters" } }
            }
            h2 { "Content" }
            pre.content { (item.content) }
            @if write {
                h2 { "Correct it" }
                form method="post" action=(format!("{base}/edit")) {
                    (csrf_field(caller.csrf()))
                    textarea name="content" { (item.content) }
                    button type="submit" { "Save the new text" }
                }
                @if locked != Some(true) {
                    form.inline method="post" action=(format!("{base}/lock")) {
                        (csrf_field(caller.csrf())) button type="submit" { "Lock" }
                    }
                }
                @if locked != Some(false) {
                    form.inline method="post" action=(format!("{base}/unlock")) {
                        (csrf_field(caller.csrf())) button type="submit" { "Unlock" }
                    }
                }
                form.inline method="post" action=(format!("{base}/delete"))
                    data-confirm=(format!("Delete mem:{id} of {agent}? This cannot be undone.")) {
                    (csrf_field(caller.csrf()))
                    label { span { input type="checkbox" name="confirm" value="yes"; " I mean to delete this memory" } }
                    button.danger type="submit" { "Delete" }
                }
            } @else {
                p.note { "Your grant on this agent is read-only." }
            }
            h2 { "Overflow nodes" }
            @match &nodes {
                Ok(nodes) if nodes.is_empty() => p.muted { "None: the text fits the embedder's window." },
                Ok(nodes) => table {
                    tr { th.num { "#" } th { "Characters" } th.num { "Tokens" } th { "Text" } }
                    @for (i, n) in nodes.iter().enumerate() {
                        tr { td.num { (i) } td { (n.start) "–" (n.end) } td.num { (n.token_count) } td { (clip(&span_text(n.start, n.end), 200)) } }
                    }
                },
                Err(why) => p.muted { (why) },
            }
            h2 { "Blocks" }
            @if blocks.is_empty() {
                p.muted { "No stored blocks (a short text has none)." }
            } @else {
                table {
                    tr { th.num { "#" } th { "Characters" } th { "Vector" } th { "Text" } }
                    @for b in &blocks {
                        tr {
                            td.num { (b.index) }
                            td { (b.span.0) "–" (b.span.1) }
                            td { (if b.int8.is_some() { "int8 + sign bits" } else if b.bits.is_some() { "sign bits" } else { "owed" }) }
                            td { (clip(&span_text(b.span.0, b.span.1), 200)) }
                        }
                    }
                }
            }
        };
        Ok(page(&format!("mem:{id}"), Some(caller.nav()), body))
    })
    .await
}

/// An action's form.
#[derive(Deserialize)]
pub(crate) struct ActForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    confirm: Option<String>,
}

/// `POST /console/agents/{agent}/memories/{id}/{edit|lock|unlock|delete}`: checked in this
/// order, each refusal writing nothing: the body's size, the CSRF token, the grant, then
/// the engine's own validation.
pub(crate) async fn act(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((agent, id, action)): Path<(String, i64, String)>,
    request: Request,
) -> Response {
    let (tool, limit) = match action.as_str() {
        "edit" => (
            "update_memory",
            edit_form_bytes(state.engine().config().max_content_chars),
        ),
        "lock" => ("lock_memory", SMALL_FORM_BYTES),
        "unlock" => ("unlock_memory", SMALL_FORM_BYTES),
        "delete" => ("delete_memory", SMALL_FORM_BYTES),
        _ => return Refusal::not_found(format!("no action {action:?}")).into_response(),
    };
    let form: ActForm = match csrf::read_form(request, limit).await {
        Ok(form) => form,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = csrf::check_token(&caller, &form.csrf) {
        return refusal.into_response();
    }
    blocking(move || {
        state.allow(&caller, tool, &agent)?;
        let engine = state.engine();
        let target = MemoryIdRequest {
            memory_id: id,
            agent_id: agent.clone(),
            session_key: String::new(),
        };
        let detail = format!("/console/agents/{}/memories/{id}", encode(&agent));
        let (ok, outcome) = match action.as_str() {
            "edit" => {
                let Some(content) = form.content else {
                    return Err(Refusal::bad("the edit form carries no content"));
                };
                let out = engine
                    .update_memory(&UpdateMemoryRequest {
                        memory_id: id,
                        content,
                        agent_id: agent.clone(),
                        session_key: String::new(),
                    })
                    .map_err(engine_refusal)?;
                (out.ok, serde_json::to_value(&out))
            }
            "lock" => {
                let out = engine.lock_memory(&target).map_err(engine_refusal)?;
                (out.ok, serde_json::to_value(&out))
            }
            "unlock" => {
                let out = engine.unlock_memory(&target).map_err(engine_refusal)?;
                (out.ok, serde_json::to_value(&out))
            }
            _ => {
                if form.confirm.as_deref() != Some("yes") {
                    return Err(Refusal::bad(
                        "a delete needs its confirmation: tick \"I mean to delete this memory\"",
                    ));
                }
                let out = engine.delete_memory(&target).map_err(engine_refusal)?;
                if out.ok {
                    let list = format!("/console/agents/{}/memories", encode(&agent));
                    let body = html! {
                        h1 { "Deleted mem:" (id) }
                        p { "The memory is gone from " (agent) "'s store. " a href=(list) { "Back to the memories" } }
                    };
                    return Ok(page("Deleted", Some(caller.nav()), body).into_response());
                }
                (out.ok, serde_json::to_value(&out))
            }
        };
        if !ok {
            let said = outcome.map(|v| v.to_string()).unwrap_or_default();
            return Err(Refusal::new(
                StatusCode::CONFLICT,
                "Not done",
                format!("the engine did not {action} mem:{id}: {said}"),
            ));
        }
        Ok(Redirect::to(&detail).into_response())
    })
    .await
}
