//! `/console/agents/{agent}/search`: a query box with the time cue, the rows as the agent
//! would get them (best first), and for each row why it is there, read from the recall's
//! trace (arms and ranks, fusion votes, the gate's cosine, confidence, a held seat). The
//! query and the cue go through the `recall` tool's own conversion
//! (`mcp::engine::convert::{recall_query, engine_cue}`), so the console refuses the same
//! cues with the same words; the trace is kept in the session for the trace page.

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::console::layout::{Refusal, encode, json_view, page};
use crate::console::layout::{engine_refusal, text_of};
use crate::console::pages::trace::{score_picture, why};
use crate::console::session::Caller;
use crate::console::state::{Shared, blocking};
use crate::console::svg::fmt;
use crate::mcp::engine::convert::{RecallCommon, engine_cue, recall_query};
use crate::mcp::wire;

/// The search form's fields.
#[derive(Deserialize, Default, Clone)]
pub(crate) struct SearchQuery {
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    limit: Option<String>,
    #[serde(default)]
    project: String,
    #[serde(default)]
    channel: String,
    #[serde(default)]
    deep: Option<String>,
    #[serde(default)]
    after: String,
    #[serde(default)]
    before: String,
    #[serde(default)]
    ago_value: String,
    #[serde(default)]
    ago_unit: String,
    #[serde(default)]
    confidence: String,
}

/// The `time_cue` argument the form's fields make, as the `recall` tool takes it; `None`
/// when no cue field is filled.
fn wire_cue(q: &SearchQuery) -> Result<Option<wire::TimeCue>, Refusal> {
    let mut cue = serde_json::Map::new();
    if !q.after.trim().is_empty() {
        cue.insert("after".into(), json!(q.after.trim()));
    }
    if !q.before.trim().is_empty() {
        cue.insert("before".into(), json!(q.before.trim()));
    }
    if q.ago_unit == "long_ago" {
        cue.insert("ago".into(), json!("long_ago"));
    } else if !q.ago_value.trim().is_empty() {
        let value: u32 = q.ago_value.trim().parse().map_err(|_| {
            Refusal::bad(format!("\"ago\" {:?} is not a whole number", q.ago_value))
        })?;
        cue.insert("ago".into(), json!({"unit": q.ago_unit, "value": value}));
    }
    if cue.is_empty() {
        return Ok(None);
    }
    let confidence = if q.confidence.is_empty() {
        "likely"
    } else {
        q.confidence.as_str()
    };
    cue.insert("confidence".into(), json!(confidence));
    serde_json::from_value(Value::Object(cue))
        .map(Some)
        .map_err(|err| Refusal::bad(format!("time cue: {err}")))
}

/// `GET /console/agents/{agent}/search`.
pub(crate) async fn search(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(agent): Path<String>,
    Query(q): Query<SearchQuery>,
) -> Response {
    blocking(move || {
        state.allow(&caller, "recall", &agent)?;
        let form = form(&agent, &q);
        let Some(text) = q.q.clone() else {
            let body = html! { h1 { "Search " (agent) } (form) };
            return Ok(page(&format!("Search {agent}"), Some(caller.nav()), body));
        };
        let limit: u32 = match q.limit.as_deref().map(str::trim) {
            None | Some("") => 10,
            Some(n) => n
                .parse()
                .ok()
                .filter(|n| (1..=100).contains(n))
                .ok_or_else(|| Refusal::bad(format!("limit {n:?} is not 1 to 100")))?,
        };
        let cue = engine_cue(wire_cue(&q)?.as_ref()).map_err(|err| Refusal::bad(err.to_string()))?;
        let mut query = recall_query(RecallCommon {
            agent_id: agent.clone(),
            project_id: (!q.project.is_empty()).then(|| q.project.clone()),
            channel: q.channel.clone(),
            query: text,
            limit,
            deep: q.deep.is_some(),
            full_content: false,
            source_id: String::new(),
            session_key: String::new(),
        });
        query.trace = true;
        query.time_cue = cue;
        let started = std::time::Instant::now();
        // A person's search is not the agent recalling: nothing is credited.
        let result = state
            .engine()
            .recall_without_credit(&query)
            .map_err(engine_refusal)?;
        let took_ms = started.elapsed().as_secs_f64() * 1000.0;
        let response = serde_json::to_value(&result.response).unwrap_or(Value::Null);
        let trace = result.trace();
        let messages: Vec<Value> = response["messages"]
            .as_array()
            .map(|m| m.iter().rev().cloned().collect())
            .unwrap_or_default();
        let mut advisories: Vec<String> = result.advisories.clone();
        if let Some(advisory) = state.backend.advisory() {
            advisories.push(format!("embedder: {}", advisory.reason));
        }
        let trace_id = trace.clone().map(|t| caller.session.keep_trace(t));
        let body = html! {
            h1 { "Search " a href=(format!("/console/agents/{}", encode(&agent))) { (agent) } }
            (form)
            p.note {
                (messages.len()) " rows, best first, in " (fmt(took_ms)) " ms"
                @if let Some(id) = &trace_id { " · " a href=(format!("/console/trace/{id}")) { "open the trace" } }
            }
            @for a in &advisories { p.why { (a) } }
            @if let Some(cue) = response.get("time_cue") {
                details { summary { "Time cue as applied" } (json_view(cue)) }
            }
            @if let Some(trace) = &trace { (score_picture(trace)) }
            table {
                tr { th.num { "#" } th { "Row" } th { "Why it is here" } }
                @for (i, m) in messages.iter().enumerate() {
                    @let r = text_of(&m["ref"]);
                    tr {
                        td.num { (i + 1) }
                        td { (row(&agent, m)) }
                        td {
                            @if let Some(trace) = &trace { (why(trace, &r)) }
                            @if let Some(c) = m.get("confidence") { details { summary { "confidence" } (json_view(c)) } }
                            details { summary { "match reason" } (json_view(&m["match_reason"])) }
                        }
                    }
                }
            }
        };
        Ok(page(&format!("Search {agent}"), Some(caller.nav()), body))
    })
    .await
}

/// One returned row: its ref (a link for a memory), text, source and score.
fn row(agent: &str, m: &Value) -> Markup {
    let r = text_of(&m["ref"]);
    let link = r
        .strip_prefix("mem:")
        .map(|id| format!("/console/agents/{}/memories/{id}", encode(agent)));
    html! {
        @match link { Some(href) => a href=(href) { (r) }, None => strong { (r) } }
        " · score " (text_of(&m["score"]))
        @if let Some(t) = m.get("timestamp") { " · " (text_of(t)) }
        div { (text_of(&m["content"])) }
        @if let Some(e) = m.get("excerpt") { div.muted { "excerpt: " (text_of(e)) } }
    }
}

/// The query form, filled with what was asked.
fn form(agent: &str, q: &SearchQuery) -> Markup {
    let unit = |u: &str| q.ago_unit == u;
    let conf = |c: &str| q.confidence == c || (q.confidence.is_empty() && c == "likely");
    html! {
        form.search method="get" action=(format!("/console/agents/{}/search", encode(agent))) {
            label { "Query" input type="text" name="q" size="40" value=(q.q.as_deref().unwrap_or("")); }
            label { "Rows" input type="number" name="limit" min="1" max="100" value=(q.limit.as_deref().unwrap_or("10")); }
            label { "Project" input type="text" name="project" size="10" value=(q.project); }
            label { "Channel" input type="text" name="channel" size="10" value=(q.channel); }
            label { "Deep" input type="checkbox" name="deep" value="on" checked[q.deep.is_some()]; }
            label { "After" input type="text" name="after" size="11" placeholder="2026-01-31" value=(q.after); }
            label { "Before" input type="text" name="before" size="11" value=(q.before); }
            label { "Ago" input type="number" name="ago_value" min="0" size="4" value=(q.ago_value); }
            label { "unit" select name="ago_unit" {
                option value="days" selected[unit("days")] { "days" }
                option value="weeks" selected[unit("weeks")] { "weeks" }
                option value="months" selected[unit("months")] { "months" }
                option value="long_ago" selected[unit("long_ago")] { "long ago" }
            } }
            label { "Confidence" select name="confidence" {
                option value="sure" selected[conf("sure")] { "sure" }
                option value="likely" selected[conf("likely")] { "likely" }
                option value="vague" selected[conf("vague")] { "vague" }
            } }
            button type="submit" { "Search" }
        }
    }
}
