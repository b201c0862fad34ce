//! `Engine::reconstruct`: candidates from `Engine::recall` at the reconstruct candidate depth
//! (`top_k`, never derived from the count), each candidate's context and the declared
//! relations read within the caller's `Scope`, then the pure stages of `reconstruct/`.
//!
//! The candidate recall gets the caller's `time_cue` (a prior and held places, never a filter:
//! recall's own contract) and `source_id` (recall's source filter), so both act exactly as in
//! `recall`. A `mode` (reference §4.2 step 11, `reconstruct/mode.rs`) sets its window and
//! default budget, skips the relation walk and, without `trace`, returns the shortened shape
//! (`reconstruct/compact.rs`) fitted to its cap on `cl100k_base` tokens of the JSON the
//! server returns ([`ReconstructResult::wire_body`], the one body both count and send).
//!
//! Must never write (this is a read path), read a row outside the caller's scope, or let the
//! count reach the recall call.

pub(crate) mod mode;
pub(crate) mod read;
pub mod stages;
#[cfg(test)]
mod tests;
pub mod tokens;

pub use stages::{
    Bounds, BudgetPolicy, BudgetResolution, Candidate, Claim, Cluster, Conflict, CountPolicy,
    CountSource, DeclaredLink, EntityGraph, Expand, Item, ItemExcerpt, POLICY_VERSION, Piece,
    Quote, QuoteBasis, ReconstructResponse, Report, Request, Role, Slot, Trace, Walked, Why,
    Window, assemble, budget, bundle, compact, items, quote, window,
};

use crate::progress::Progress;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde::Serialize;

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::recall::RecallQuery;
use crate::recall::stages::cue::TimeCue;
use crate::recall::stages::pipeline::CueResponse;
use crate::reconstruct::mode::{
    Attempt, Fitting, ModeReport, ReconstructMode, TokenCapCut, fit_to_cap, mode_report, shape,
};
use crate::reconstruct::read::{
    GRAPH_ROW_CAP, is_held_place, pro_place_rows, read_candidate, read_graph, read_links,
};
use crate::reconstruct::stages::Mutation;
use crate::reconstruct::stages::assemble::assemble_with;
use crate::reconstruct::stages::compact::Compacted;
use crate::reconstruct::stages::config::ReconstructConfig;
use crate::reconstruct::stages::places;
use crate::reconstruct::stages::window::candidate_limit_with;
use crate::refs::Ref;
use crate::scope::Scope;
use crate::store::Store;

/// A reconstruct as an agent asks it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReconstructRequest {
    /// The agent (required).
    pub agent_id: String,
    /// `None` = no project filter, `X` = X plus the global pool.
    pub project_id: Option<String>,
    /// `None` = no channel filter, `X` = X plus channel-less rows.
    pub channel: Option<String>,
    /// What to reconstruct.
    pub query: String,
    /// Items asked; `None` = the server default.
    pub count: Option<usize>,
    /// Candidate rows asked of recall; `None` = the configured `top_k`.
    pub top_k: Option<usize>,
    /// Relation hops; `None` = configured.
    pub max_hops: Option<usize>,
    /// Claims per item; `None` = configured.
    pub max_evidence: Option<usize>,
    /// Characters of quoted text; `None` = the default budget.
    pub budget: Option<usize>,
    /// Halves recall's gate.
    pub deep: bool,
    /// The full audit.
    pub trace: bool,
    /// When the sought memory happened: passed to the candidate recall (a prior, never a
    /// filter).
    pub time_cue: Option<TimeCue>,
    /// Recall's filter on `source.id` (memories only; `crate::source::source_id_matches`);
    /// empty = none.
    pub source_id: String,
    /// `lite` or `pro`; `None` = the default shape.
    pub mode: Option<ReconstructMode>,
    /// The clock the time cue resolves against; `None` = now (tests pin it).
    pub now_ms: Option<i64>,
    /// The embedder advisory the server attaches to the body: part of what a mode's token
    /// cap counts, and carried into [`ReconstructResult::wire_body`].
    pub wire_advisory: Option<serde_json::Value>,
}

/// A reconstruct's answer: the response body, recall's notices and where the time went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReconstructResult {
    /// The response body.
    pub response: ReconstructResponse,
    /// Recall's notices, forwarded.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub advisories: Vec<String>,
    /// The candidate recall's time cue block (as recall reports it); absent without a cue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_cue: Option<CueResponse>,
    /// What the `mode` did; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeReport>,
    /// Milliseconds in recall.
    pub recall_ms: f64,
    /// Milliseconds reading contexts, bundling, quoting and allocating.
    pub assemble_ms: f64,
    /// The request's `wire_advisory`, attached by [`ReconstructResult::wire_body`].
    #[serde(skip)]
    pub wire_advisory: Option<serde_json::Value>,
}

impl ReconstructResult {
    /// The JSON the server returns: the response body plus the embedder advisory, recall's
    /// notices, the candidate recall's `time_cue` block and the `mode` report. A mode's token
    /// cap counts exactly this (the server adds only `trace.timings_ms`, under `trace`, where
    /// the cap does not apply).
    pub fn wire_body(&self) -> serde_json::Value {
        wire_body(
            &self.response,
            &self.advisories,
            self.time_cue.as_ref(),
            self.mode.as_ref(),
            self.wire_advisory.as_ref(),
        )
    }
}

/// The body `reconstruct` answers with, as one derived type so that the tool's output schema
/// is the schema of exactly what is serialised.
#[derive(Serialize, schemars::JsonSchema)]
pub struct ReconstructBody<'a> {
    /// The response.
    #[serde(flatten)]
    pub response: &'a ReconstructResponse,
    /// The embedder's degraded advisory, when it reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advisory: Option<&'a serde_json::Value>,
    /// Recall's notices.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub notices: &'a [String],
    /// The candidate recall's time cue block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_cue: Option<&'a CueResponse>,
    /// What the `mode` did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'a ModeReport>,
}

fn wire_body(
    response: &ReconstructResponse,
    notices: &[String],
    time_cue: Option<&CueResponse>,
    mode: Option<&ModeReport>,
    advisory: Option<&serde_json::Value>,
) -> serde_json::Value {
    json_of(&ReconstructBody {
        response,
        advisory,
        notices,
        time_cue,
        mode,
    })
}

/// Serialising these plain structs cannot fail (string keys, no non-finite floats reachable
/// from a response); a failure would show as a `null` field, never a panic.
fn json_of(value: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

impl Fitting for ReconstructResponse {
    fn pieces_kept(&self) -> usize {
        self.pieces_kept
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// `reconstruct`: recall's candidates bundled into items with provenance, quoted
/// verbatim, within the window and the payload budget (design §7).
///
/// `progress` hears of its phases (the candidate recall, pro's deeper recall, the assembly);
/// a cancel is seen between them (reconstruct writes nothing, so stopping loses nothing).
pub(crate) fn reconstruct(
    store: &Store,
    config: &EngineConfig,
    req: &ReconstructRequest,
    progress: &Progress<'_>,
) -> Result<ReconstructResult> {
    run(store, config, req, Mutation::None, progress)
}

/// [`reconstruct`] with one rule broken on purpose (the tests' mutations).
#[cfg(test)]
pub(crate) fn reconstruct_with(
    store: &Store,
    config: &EngineConfig,
    req: &ReconstructRequest,
    mutation: Mutation,
) -> Result<ReconstructResult> {
    run(store, config, req, mutation, &Progress::none())
}

fn run(
    store: &Store,
    config: &EngineConfig,
    req: &ReconstructRequest,
    mutation: Mutation,
    progress: &Progress<'_>,
) -> Result<ReconstructResult> {
    const PHASES: u64 = 3;
    let reconstruct_config: ReconstructConfig = match req.mode {
        Some(mode) => mode.config(config.reconstruct),
        None => config.reconstruct,
    };
    let window = window::resolve_with(&reconstruct_config, req.count, mutation);
    let top_k = candidate_limit_with(&reconstruct_config, req.top_k, window.effective, mutation);
    let started = Instant::now();
    let query = RecallQuery {
        agent_id: req.agent_id.clone(),
        project_id: req.project_id.clone(),
        channel: req.channel.clone(),
        query: req.query.clone(),
        limit: top_k,
        deep: req.deep,
        full_content: false,
        trace: false,
        time_cue: req.time_cue,
        source_id: req.source_id.clone(),
        now_ms: req.now_ms,
        ..RecallQuery::default()
    };
    progress.report(0, Some(PHASES), "recalling candidates");
    let recall = crate::recall::answer(store, config, &query)?;
    progress.check("reconstruct, after its recall")?;
    progress.report(1, Some(PHASES), "recalled; reading deeper for pro's places");
    // Pro's depth places read the same recall ranked deeper (reference §3.10 (8)).
    let deeper = match req.mode {
        Some(ReconstructMode::Pro) if window.effective > 0 => {
            Some(crate::recall::answer(
                store,
                config,
                &RecallQuery {
                    limit: places::DEPTH,
                    // The stages: the gate's refusals feed the keyword places.
                    trace: true,
                    ..query
                },
            )?)
        }
        _ => None,
    };
    let recall_ms = ms(started);
    progress.check("reconstruct, before assembling")?;
    progress.report(2, Some(PHASES), "assembling items");
    let started = Instant::now();
    let scope = Scope::read(
        Some(&req.agent_id),
        req.project_id.as_deref(),
        req.channel.as_deref(),
    );
    let mut advisories = recall.advisories;
    let query_vector = recall
        .query_vector
        .as_deref()
        .filter(|_| mutation != Mutation::BlocksIgnored);
    let (response, mode) = store.read(|conn| {
        // Recall's rows are last-is-best: the pool is best first.
        let mut candidates = Vec::with_capacity(recall.response.messages.len());
        for message in recall.response.messages.iter().rev() {
            // A row gone since recall read it has no provenance left: it is excluded.
            let mut row =
                read_candidate(conn, &scope, message.r#ref, query_vector)?.unwrap_or_default();
            row.reserved = is_held_place(message.match_reason.admission);
            candidates.push(row);
        }
        let pro_places = match &deeper {
            Some(deeper) => {
                let (rows, report) =
                    pro_place_rows(conn, &scope, &req.query, deeper, &candidates, query_vector)?;
                candidates.extend(rows);
                Some(report)
            }
            None => None,
        };
        let pool: BTreeSet<Ref> = candidates.iter().filter_map(|c| c.r#ref).collect();
        let links = read_links(conn, &scope, &pool)?;
        let (graph, graph_cut) = read_graph(conn, &scope)?;
        if graph_cut {
            advisories.push(format!(
                "the declared relation graph holds more than {GRAPH_ROW_CAP} rows in scope; \
                 the walk read the newest {GRAPH_ROW_CAP}"
            ));
        }
        let mut cache: BTreeMap<Ref, Option<Candidate>> = BTreeMap::new();
        let mut failure = None;
        let mut fetch = |r: Ref| -> Option<Candidate> {
            cache
                .entry(r)
                .or_insert_with(|| match read_candidate(conn, &scope, r, query_vector) {
                    Ok(row) => row,
                    Err(err) => {
                        failure.get_or_insert(err);
                        None
                    }
                })
                .clone()
        };
        let request = Request {
            query: &req.query,
            count: req.count,
            budget: req.budget,
            top_k,
            // A mode skips the walk (reference §4.2 step 6).
            max_hops: match req.mode {
                Some(_) => 0,
                None => req.max_hops.unwrap_or(reconstruct_config.max_hops),
            }
            .min(ReconstructConfig::MAX_HOPS_CEILING),
            max_evidence: req
                .max_evidence
                .unwrap_or(reconstruct_config.max_evidence)
                .clamp(1, ReconstructConfig::MAX_EVIDENCE_CEILING),
            trace: req.trace,
            gate_fallback: recall.response.gate_fallback,
            mode_budget: req.mode.map(|m| m.default_budget(&reconstruct_config)),
            piece_limit: None,
        };
        let mut build = |attempt: Attempt| {
            let request = Request {
                max_evidence: attempt.max_evidence,
                piece_limit: attempt.limit,
                ..request.clone()
            };
            assemble_with(
                &reconstruct_config,
                &request,
                candidates.clone(),
                &links,
                &graph,
                &mut fetch,
                mutation,
            )
        };
        let out = match req.mode {
            // The trace keeps the full shape and is never cut (reference §4.2 step 11).
            Some(mode) if req.trace => {
                let response = build(Attempt {
                    limit: None,
                    max_evidence: request.max_evidence,
                });
                let mut report = mode_report(mode, None, Compacted::default(), pro_places);
                report.token_cap_skipped = Some("trace");
                report.shape = "full";
                (response, Some(report))
            }
            Some(mode) => {
                let shaped = |response: &ReconstructResponse, cut: Option<TokenCapCut>| {
                    shape(mode, response.clone(), cut, pro_places, |body| {
                        wire_body(
                            body.0,
                            &advisories,
                            recall.response.time_cue.as_ref(),
                            Some(body.1),
                            req.wire_advisory.as_ref(),
                        )
                    })
                };
                let fitted = fit_to_cap(
                    mode.token_cap(),
                    request.max_evidence,
                    &mut build,
                    |r, cut| {
                        let (response, report, tokens) = shaped(r, cut);
                        (tokens, (response, report))
                    },
                );
                match fitted {
                    Ok(((response, report), _)) => (response, Some(report)),
                    Err(small) => {
                        return Err(Error::CapBelowMinimum {
                            mode: mode.name(),
                            cap: mode.token_cap(),
                            minimum: small.minimum,
                        });
                    }
                }
            }
            None => (
                build(Attempt {
                    limit: None,
                    max_evidence: request.max_evidence,
                }),
                None,
            ),
        };
        match failure {
            Some(err) => Err(err),
            None => Ok(out),
        }
    })?;
    progress.report(PHASES, Some(PHASES), "done");
    Ok(ReconstructResult {
        response,
        advisories,
        time_cue: recall.response.time_cue,
        mode,
        wire_advisory: req.wire_advisory.clone(),
        recall_ms,
        assemble_ms: ms(started),
    })
}
