//! The trace page: a search's trace (kept in the session) or a saved one (`cpersona recall
//! --trace-out`, pasted or chosen as a file). It shows the arms side by side, the fused order
//! with each candidate's votes and gate decision, the gate's threshold and whom it cut, every
//! exclusion with its reason, the time cue's loop stages, and the score picture; a ref that
//! should have come back gets its failure code (`cli::replay::attribute`, the taxonomy's
//! one-change replays, reading the row's facts from the store), and one changed condition
//! is replayed offline beside the recorded answer (`cpersona_engine::replay`, as `cpersona
//! replay --set` does).

use std::collections::HashMap;

use axum::Extension;
use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, replay};
use cpersona_engine::trace::RecallTrace;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use crate::cli::replay::{attribute, response_rows, trace_rows};
use crate::console::csrf::{self, TRACE_BYTES};
use crate::console::layout::text_of;
use crate::console::layout::{Refusal, csrf_field, json_view, page};
use crate::console::session::{Caller, no_trace};
use crate::console::state::{Shared, blocking};
use crate::console::svg::{self, Strip, fmt};

/// `GET /console/trace`: paste or choose a saved trace.
pub(crate) async fn upload_form(Extension(caller): Extension<Caller>) -> Response {
    let body = html! {
        h1 { "Open a saved trace" }
        p { "A trace written by " code { "cpersona recall --trace-out FILE" } " or a recall tool's "
            code { "trace" } "." }
        form method="post" action="/console/trace" {
            (csrf_field(caller.csrf()))
            label { "Choose the file" input #trace-file type="file" accept=".json,application/json"; }
            label { "or paste it" textarea #trace-text name="trace" {} }
            button type="submit" { "Open" }
        }
    };
    page("Open a trace", Some(caller.nav()), body).into_response()
}

#[derive(Deserialize)]
struct UploadForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    trace: String,
}

/// `POST /console/trace`: a form with the trace, or (bearer clients) the JSON as the body.
pub(crate) async fn upload(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    request: Request,
) -> Response {
    let json_body = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let text = if json_body {
        if !caller.bearer {
            return Refusal::new(
                StatusCode::FORBIDDEN,
                "Form refused",
                "a JSON body is accepted from bearer-token clients only; browsers post the form",
            )
            .into_response();
        }
        match csrf::read_limited(request, TRACE_BYTES).await {
            Ok((_, bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(refusal) => return refusal.into_response(),
        }
    } else {
        let form: UploadForm = match csrf::read_form(request, TRACE_BYTES).await {
            Ok(form) => form,
            Err(refusal) => return refusal.into_response(),
        };
        if let Err(refusal) = csrf::check_token(&caller, &form.csrf) {
            return refusal.into_response();
        }
        form.trace
    };
    blocking(move || {
        let trace = RecallTrace::from_json(&text)
            .map_err(|err| Refusal::bad(format!("this is not a recall trace: {err}")))?;
        state.allow(&caller, "recall", &trace.scope.agent_id)?;
        let id = caller.session.keep_trace(trace);
        Ok(Redirect::to(&format!("/console/trace/{id}")))
    })
    .await
}

/// The trace page's query: the ref to attribute and the one condition to change.
#[derive(Deserialize, Default)]
pub(crate) struct ViewQuery {
    #[serde(default)]
    expect: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
}

/// The kept trace `id`, if the caller may read its agent.
fn kept(state: &Shared, caller: &Caller, id: &str) -> Result<std::sync::Arc<RecallTrace>, Refusal> {
    let trace = caller.session.trace(id).ok_or_else(|| no_trace(id))?;
    state.allow(caller, "recall", &trace.scope.agent_id)?;
    Ok(trace)
}

/// `GET /console/trace/{id}/json`: the trace as a file.
pub(crate) async fn download(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Response {
    blocking(move || {
        let trace = kept(&state, &caller, &id)?;
        let text = serde_json::to_string_pretty(trace.as_ref()).unwrap_or_default();
        let mut response = Response::new(Body::from(text));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static("attachment; filename=\"trace.json\""),
        );
        Ok(response)
    })
    .await
}

/// `GET /console/trace/{id}`.
pub(crate) async fn view(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(q): Query<ViewQuery>,
) -> Response {
    blocking(move || {
        let trace = kept(&state, &caller, &id)?;
        let t = trace.as_ref();
        let attribution = match q.expect.trim() {
            "" => None,
            text => {
                let expected: Ref = text
                    .parse()
                    .map_err(|err| Refusal::bad(format!("{text:?} is no ref (mem:12, ep:3): {err}")))?;
                Some(
                    attribute(Some(state.engine()), t, expected, None)
                        .map_err(|err| Refusal::bad(format!("{err:#}")))?,
                )
            }
        };
        let change = (!q.key.is_empty()).then(|| format!("{}={}", q.key.trim(), q.value.trim()));
        let replayed = match &change {
            None => None,
            Some(pair) => {
                let changes = ReplayChanges::parse_all([pair.as_str()])
                    .map_err(|err| Refusal::bad(format!("{pair}: {err}")))?;
                Some(replay(t, &changes).map_err(|err| Refusal::bad(format!("replay failed: {err}")))?)
            }
        };
        let before = trace_rows(t);
        let base = format!("/console/trace/{id}");
        let missed: Vec<String> = t
            .exclusions
            .iter()
            .map(|e| e.r#ref.to_string())
            .collect();
        let body = html! {
            h1 { "Trace of \"" (t.query.text) "\"" }
            p.note {
                "agent " (t.scope.agent_id)
                @if let Some(p) = &t.scope.project_id { " · project " (p) }
                @if let Some(c) = &t.scope.channel { " · channel " (c) }
                " · limit " (t.request.limit) (if t.request.deep { " · deep" } else { "" })
                " · " (t.policy.engine_version) " · "
                a href=(format!("{base}/json")) { "download" }
            }
            @for a in &t.advisories { p.why { (a) } }
            @for b in &t.bounds { p.why { "bound: " (b) } }
            (score_picture(t))
            h2 { "The answer, best first" }
            (rows_table(&before))
            h2 { "Arms side by side" }
            div.cols {
                @for arm in &t.arms {
                    div {
                        strong { (arm.arm) } (if arm.exhausted { " (exhausted)" } else { "" })
                        table {
                            tr { th.num { "rank" } th { "ref" } th.num { "raw" } }
                            @for h in &arm.hits {
                                tr { td.num { (h.rank) } td { (h.r#ref.to_string()) } td.num { (h.raw.map(fmt).unwrap_or_default()) } }
                            }
                        }
                    }
                }
            }
            h2 { "Fused order" }
            (fused_table(t))
            h2 { "The gate" }
            table.kv {
                tr { th { "Threshold" } td { (fmt(t.gate.threshold)) " (" (t.gate.origin) ")" } }
                tr { th { "Calibrated" } td { (t.gate.calibrated.map(fmt).unwrap_or_else(|| "none".into())) } }
                tr { th { "Heuristic minimum" } td { (fmt(t.gate.heuristic_min)) } }
                tr { th { "Pool" } td { (t.gate.pool) } }
                tr { th { "Fell back to lexical rows" } td { (if t.gate.gate_fallback { "yes" } else { "no" }) } }
                tr { th { "Cut" } td {
                    @for d in t.gate.decisions.iter().filter(|d| !d.passed) {
                        span.badge.cut { (d.r#ref.to_string()) " " (d.cosine.map(fmt).unwrap_or_default()) } " "
                    }
                } }
            }
            h2 { "Exclusions" }
            @if t.exclusions.is_empty() { p.muted { "None." } } @else {
                table {
                    tr { th { "ref" } th.num { "fused rank" } th { "reason" } }
                    @for e in &t.exclusions {
                        tr { td { (e.r#ref.to_string()) } td.num { (e.fused_rank) } td { (serde_json::to_value(e.reason).map(|v| text_of(&v)).unwrap_or_default()) } }
                    }
                }
            }
            p.note { "Counts: " (json_view(&serde_json::to_value(&t.counts).unwrap_or(Value::Null))) }
            h2 { "The time cue's loop" }
            @match (&t.cue_request, &t.cue) {
                (None, None) => p.muted { "No time cue." },
                (request, cue) => {
                    @if let Some(r) = request { details open { summary { "Cue as given" } (json_view(&serde_json::to_value(r).unwrap_or(Value::Null))) } }
                    @if let Some(c) = cue { details { summary { "Envelope, prior and seats" } (json_view(&serde_json::to_value(c).unwrap_or(Value::Null))) } }
                }
            }
            h2 #attribute { "Why did a row not come back?" }
            form.filters method="get" action=(base) {
                label { "Ref that should have come back"
                    input type="text" name="expect" list="missed" placeholder="mem:12" value=(q.expect); }
                datalist #missed { @for r in &missed { option value=(r) {} } }
                button type="submit" { "Attribute" }
            }
            @if let Some(att) = &attribution {
                table.kv {
                    tr { th { "Ref" } td { (att.expected.to_string()) } }
                    tr { th { "Returned" } td { (if att.found { "yes" } else { "no" }) } }
                    tr { th { "Failure code" } td { strong { (att.code.map(|c| serde_json::to_value(c).map(|v| text_of(&v)).unwrap_or_default()).unwrap_or_else(|| "—".into())) } } }
                    tr { th { "Stage" } td { (att.stage) } }
                    tr { th { "Evidence" } td { ul { @for e in &att.evidence { li { (e) } } } } }
                }
                @if !att.counterfactuals.is_empty() {
                    p { "One-change replays that show the cause:" }
                    table {
                        tr { th { "change" } th { "returned" } th.num { "position" } th { "exact" } th { "" } }
                        @for c in &att.counterfactuals {
                            tr {
                                td { code { (c.change) } }
                                td { (if c.returned { "yes" } else { "no" }) }
                                td.num { (c.position.map(|p| p.to_string()).unwrap_or_default()) }
                                td { (if c.exact { "exact" } else { "approximate" }) }
                                td { @if let Some((k, v)) = c.change.split_once('=') {
                                    a href=(format!("{base}{}", crate::console::layout::query_string(&[("expect", &q.expect), ("key", k), ("value", v)]))) { "replay it" }
                                } }
                            }
                        }
                    }
                }
            }
            h2 #replay { "Change one condition" }
            form.filters method="get" action=(base) {
                input type="hidden" name="expect" value=(q.expect);
                label { "Condition" select name="key" {
                    @for k in ["depth", "threshold", "gate", "arm_off", "arm", "cue", "cue.confidence", "cue.propagation", "limit", "deep", "fusion", "rrf_k"] {
                        option value=(k) selected[q.key == k] { (k) }
                    }
                } }
                label { "Value" input type="text" name="value" placeholder="100, off, vector_near, sure" value=(q.value); }
                button type="submit" { "Replay" }
            }
            @if let Some(out) = &replayed {
                p.note { "Changed: " (out.changes.join(", ")) " · " (if out.exact { "exact replay" } else { "approximate replay" })
                    @if out.unchanged { " · the answer did not change" } }
                @for r in &out.rerun { p.note { "re-ran " (r.stage) ": " (r.reason) } }
                @for n in &out.notes { p.note { (n) } }
                div.cols {
                    div { strong { "Recorded answer" } (rows_table(&before)) }
                    div { strong { "Replayed answer" } (rows_table(&response_rows(out))) }
                }
            }
        };
        Ok(page("Trace", Some(caller.nav()), body))
    })
    .await
}

/// Rows `[{position, ref, score}]` as a table.
fn rows_table(rows: &[Value]) -> Markup {
    html! {
        @if rows.is_empty() { p.muted { "No rows." } } @else {
            table {
                tr { th.num { "#" } th { "ref" } th.num { "score" } }
                @for r in rows {
                    tr { td.num { (text_of(&r["position"])) } td { (text_of(&r["ref"])) } td.num { (text_of(&r["score"])) } }
                }
            }
        }
    }
}

/// Every fused candidate: its votes, its gate decision and what became of it.
fn fused_table(t: &RecallTrace) -> Markup {
    let decisions: HashMap<Ref, (bool, &str)> = t
        .gate
        .decisions
        .iter()
        .map(|d| (d.r#ref, (d.passed, d.reason.as_str())))
        .collect();
    let excluded: HashMap<Ref, String> = t
        .exclusions
        .iter()
        .map(|e| {
            let reason = serde_json::to_value(e.reason)
                .map(|v| text_of(&v))
                .unwrap_or_default();
            (e.r#ref, reason)
        })
        .collect();
    html! {
        table {
            tr { th.num { "#" } th { "ref" } th.num { "fused" } th.num { "cosine" } th { "votes (arm #rank → contribution)" } th { "gate" } th { "outcome" } }
            @for f in &t.fusion {
                tr {
                    td.num { (f.fused_rank) }
                    td { (f.r#ref.to_string()) }
                    td.num { (fmt(f.score)) }
                    td.num { (f.cosine.map(fmt).unwrap_or_default()) }
                    td { @for v in &f.votes { span.badge { (v.arm) " #" (v.rank) " → " (fmt(v.contribution)) } " " } }
                    td { @match decisions.get(&f.r#ref) {
                        Some((true, reason)) => span.badge.ok { "passed " (reason) },
                        Some((false, reason)) => span.badge.cut { "cut " (reason) },
                        None => span.muted { "—" },
                    } }
                    td { @match excluded.get(&f.r#ref) { Some(reason) => span.badge.cut { (reason) }, None => span.badge.ok { "returned" } } }
                }
            }
        }
    }
}

/// The arms' hits as cosines against the gate's threshold (`svg::strips`).
pub(crate) fn score_picture(t: &RecallTrace) -> Markup {
    let cosine: HashMap<Ref, Option<f64>> = t.fusion.iter().map(|f| (f.r#ref, f.cosine)).collect();
    let passed: HashMap<Ref, bool> = t
        .gate
        .decisions
        .iter()
        .map(|d| (d.r#ref, d.passed))
        .collect();
    let strips: Vec<Strip> = t
        .arms
        .iter()
        .map(|arm| Strip {
            arm: arm.arm.clone(),
            points: arm
                .hits
                .iter()
                .map(|h| {
                    (
                        cosine.get(&h.r#ref).copied().flatten(),
                        passed.get(&h.r#ref).copied().unwrap_or(false),
                    )
                })
                .collect(),
        })
        .collect();
    // A recall whose gate judged nothing (blank query, gate off) draws no threshold line.
    let threshold = (!t.gate.decisions.is_empty()).then_some(t.gate.threshold);
    html! {
        details.picture open {
            summary { "Each arm's hits by cosine against the gate (filled: passed, hollow: cut)" }
            (svg::strips(&strips, threshold, "arms' cosines against the gate threshold"))
        }
    }
}

/// Why `r` is in the answer: its arms and ranks, its fused rank and votes, the gate's
/// decision, and a held seat.
pub(crate) fn why(t: &RecallTrace, r: &str) -> Markup {
    let held = t.held.iter().any(|m| text_of(&m["ref"]) == r);
    let fused = t.fusion.iter().find(|f| f.r#ref.to_string() == r);
    let decision = t.gate.decisions.iter().find(|d| d.r#ref.to_string() == r);
    html! {
        @if held { span.badge.info { "held seat" } " " }
        @match fused {
            Some(f) => {
                "fused #" (f.fused_rank) " (" (fmt(f.score)) ")"
                @if let Some(c) = f.cosine { " · cosine " (fmt(c)) }
                div { @for v in &f.votes { span.badge { (v.arm) " #" (v.rank) } " " } }
            },
            None => @if !held { span.muted { "not in the fused list" } },
        }
        @if let Some(d) = decision {
            div { (if d.passed { "gate: passed" } else { "gate: cut" }) " (" (d.reason) ")" }
        }
    }
}
