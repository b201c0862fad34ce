//! `/console` (every agent the caller may read, with its row counts), an agent's page (its
//! weekly histogram and where to go next), its episodes and its profile.

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use cpersona_engine::ListEpisodesRequest;
use maud::html;
use serde::Deserialize;

use crate::console::layout::{clip, encode, engine_refusal, page, query_string};
use crate::console::session::Caller;
use crate::console::state::{Shared, blocking};
use crate::console::svg;

/// Agents listed at most on the overview.
const MAX_AGENTS: usize = 1000;
/// Episodes per console page.
const EPISODES_PAGE: usize = 50;

/// `GET /console`.
pub(crate) async fn index(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
) -> Response {
    blocking(move || {
        let engine = state.engine();
        let agents = engine.agent_ids("", MAX_AGENTS).map_err(engine_refusal)?;
        let listed = agents.len();
        let mut rows = Vec::new();
        for agent in agents {
            if !state.may(&caller, "list_memories", &agent) {
                continue;
            }
            let counts = state.counts.of(engine, &agent)?;
            rows.push((agent, counts.memories, counts.episodes, counts.profile));
        }
        let body = html! {
            h1 { "Agents" }
            @if rows.is_empty() {
                p.muted { "No agent you may read has stored anything yet." }
            } @else {
                table {
                    tr { th { "Agent" } th.num { "Memories" } th.num { "Episodes" } th.num { "Profile" } th { "" } }
                    @for (agent, memories, episodes, profiles) in &rows {
                        @let base = format!("/console/agents/{}", encode(agent));
                        tr {
                            td { a href=(base) { (agent) } }
                            td.num { a href=(format!("{base}/memories")) { (memories) } }
                            td.num { a href=(format!("{base}/episodes")) { (episodes) } }
                            td.num { (if *profiles { "yes" } else { "—" }) }
                            td { a href=(format!("{base}/search")) { "search" } }
                        }
                    }
                }
            }
            @if listed == MAX_AGENTS {
                p.note { "Only the first " (MAX_AGENTS) " agents (by name) are listed." }
            }
        };
        Ok(page("Agents", Some(caller.nav()), body))
    })
    .await
}

/// `GET /console/agents/{agent}`: counts, the weekly histogram, links.
pub(crate) async fn agent(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(agent): Path<String>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "list_memories", &agent)?;
        let engine = state.engine();
        let stats = state.counts.of(engine, &agent)?;
        let weeks = state.counts.weeks_of(engine, &agent)?;
        let base = format!("/console/agents/{}", encode(&agent));
        let body = html! {
            h1 { "Agent " (agent) }
            p {
                a href=(format!("{base}/memories")) { (stats.memories) " memories" } " · "
                a href=(format!("{base}/episodes")) { (stats.episodes) " episodes" } " · "
                a href=(format!("{base}/profile")) { "profile" } " · "
                a href=(format!("{base}/search")) { "search" }
            }
            h2 { "Memories stored per week" }
            @if weeks.is_empty() {
                p.muted { "No memories yet." }
            } @else {
                (svg::histogram(&weeks, &format!("memories of {agent} per week")))
            }
        };
        Ok(page(&format!("Agent {agent}"), Some(caller.nav()), body))
    })
    .await
}

/// The episodes page's query.
#[derive(Deserialize, Default)]
pub(crate) struct EpisodesQuery {
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    project: Option<String>,
}

/// `GET /console/agents/{agent}/episodes`: paged, newest first, by project.
pub(crate) async fn episodes(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(agent): Path<String>,
    Query(query): Query<EpisodesQuery>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "list_episodes", &agent)?;
        let offset = query.offset.unwrap_or(0);
        let project = query.project.clone().filter(|p| !p.is_empty());
        let listed = state
            .engine()
            .list_episodes(&ListEpisodesRequest {
                agent_id: agent.clone(),
                limit: EPISODES_PAGE,
                offset,
                project_id: project.clone(),
            })
            .map_err(engine_refusal)?;
        let base = format!("/console/agents/{}/episodes", encode(&agent));
        let project = project.unwrap_or_default();
        let body = html! {
            h1 { "Episodes of " a href=(format!("/console/agents/{}", encode(&agent))) { (agent) } }
            form.filters method="get" action=(base) {
                label { "Project" input type="text" name="project" value=(project); }
                button type="submit" { "Filter" }
            }
            @if listed.episodes.is_empty() {
                p.muted { "No episodes here." }
            } @else {
                table {
                    tr { th { "#" } th { "Summary" } th { "Keywords" } th { "Span" } th { "Project · channel" } th { "Resolved" } }
                    @for e in &listed.episodes {
                        tr {
                            td { "ep:" (e.id) }
                            td { (clip(&e.summary, 400)) }
                            td { (e.keywords) }
                            td { (e.start_time.as_deref().unwrap_or("")) " – " (e.end_time.as_deref().unwrap_or("")) }
                            td { (e.project_id) " · " (e.channel) }
                            td { (if e.resolved { "yes" } else { "no" }) }
                        }
                    }
                }
            }
            div.pager {
                @if offset > 0 {
                    a href=(format!("{base}{}", query_string(&[("project", &project), ("offset", &offset.saturating_sub(EPISODES_PAGE).to_string())]))) { "← newer" }
                }
                @if let Some(next) = listed.next_offset {
                    a href=(format!("{base}{}", query_string(&[("project", &project), ("offset", &next.to_string())]))) { "older →" }
                }
            }
        };
        Ok(page(&format!("Episodes of {agent}"), Some(caller.nav()), body))
    })
    .await
}

/// `GET /console/agents/{agent}/profile`.
pub(crate) async fn profile(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(agent): Path<String>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "get_profile", &agent)?;
        let profile = state
            .engine()
            .get_profile(&agent)
            .map_err(engine_refusal)?
            .profile;
        let body = html! {
            h1 { "Profile of " a href=(format!("/console/agents/{}", encode(&agent))) { (agent) } }
            @if profile.is_empty() {
                p.muted { "This agent has no profile." }
            } @else {
                pre.content { (profile) }
            }
        };
        Ok(page(
            &format!("Profile of {agent}"),
            Some(caller.nav()),
            body,
        ))
    })
    .await
}
