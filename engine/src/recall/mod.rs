//! `Engine::recall`, `Engine::get_contents` and `Engine::calibrate_threshold`: the pure recall
//! stages joined to the store and the index. Every row read here goes through the caller's
//! `Scope`; a row of another agent must never be hydrated, served or counted.

use std::cell::RefCell;
use std::time::Instant;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension};

use crate::config::EngineConfig;
use crate::error::{Error, Result};
use crate::recall::arms::envelope::{self, QueryVector};
use crate::recall::arms::{lexical, vector};
use crate::recall::facts::{ConfidenceContext, row_facts};
use crate::recall::stages::contents::{
    BUDGET_CHARS, ContentsResponse, StoredContent, parse_requests,
};
use crate::recall::stages::cue::Resolution;
use crate::recall::stages::deliberate::{self, LoopReport};
use crate::recall::stages::pipeline::CueResponse;
use crate::recall::stages::filters::RowFilters;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::prior::{CuePrior, Prior};
use crate::scope::Scope;
use crate::store::Store;
use crate::trace::TraceCueRequest;

pub use crate::recall::arms::vector::{MAX_MEMORIES, PREFILTER_MIN_ROWS, VectorReport};

/// The version of the scoring a stored calibration applies to; a row with another value is
/// ignored (int8 cosine of the vector arm, gate on cosine only).
pub const SCORING_VERSION: &str = "cosine-int8-v1";

/// The pool (rows in scope) is counted up to this many rows per table: the gate's heuristic
/// saturates at 499 rows (`ln(pool+1)/ln 500` reaches 1), so a larger count changes nothing
/// but costs a scan (10 ms at 100K rows). The trace's `gate.pool` shows the capped count.
pub const POOL_COUNT_CAP: usize = 1_000;

/// Rows sampled per agent for a calibration, newest first.
pub const CALIBRATION_SAMPLE_ROWS: usize = 5_000;

pub mod arms;
pub(crate) mod calibration;
pub(crate) mod credit;
pub(crate) mod facts;
pub(crate) mod seats;
pub mod stages;
#[cfg(test)]
mod tests;
mod types;

pub use stages::{
    Arm, ArmHit, ArmList, CueConfidence, FusedCandidate, Period, RecallConfig, RecallError,
    RecallOutcome, RecallRequest, RecallResponse, Ref, RefKind, TimeCue, Vote, run, run_cued,
};
pub use types::{CalibrationOutcome, RecallQuery, RecallResult, RecallTimings};

/// The cue's part of one recall: the plan (absent when the cue was ignored), the response
/// block and the loop's trace.
struct Cued {
    plan: Option<CuePlan>,
    response: CueResponse,
    report: Option<LoopReport>,
    request: TraceCueRequest,
}

impl Cued {
    fn unused(response: CueResponse, request: TraceCueRequest) -> Cued {
        Cued {
            plan: None,
            response,
            report: None,
            request,
        }
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

pub(crate) fn parse_json(text: &str) -> Option<serde_json::Value> {
    serde_json::from_str(text).ok()
}

/// Reads one row by ref within `scope`; `None` when absent or outside it.
pub(crate) fn read_scoped(
    conn: &Connection,
    scope: &Scope,
    r: Ref,
) -> Result<Option<StoredContent>> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(r.id));
    let row = match r.kind {
        RefKind::Mem => conn
            .prepare_cached(&format!(
                "SELECT content, source, timestamp, msg_id FROM memories WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                let msg_id: String = row.get(3)?;
                Ok(StoredContent {
                    text: row.get(0)?,
                    source: parse_json(&row.get::<_, String>(1)?),
                    timestamp: Some(row.get(2)?),
                    msg_id: (!msg_id.is_empty()).then_some(msg_id),
                    resolved: None,
                    ..StoredContent::default()
                })
            })
            .optional()?,
        RefKind::Ep => conn
            .prepare_cached(&format!(
                "SELECT summary, start_time, resolved FROM episodes WHERE {pred} AND id = ?"
            ))?
            .query_row(rusqlite::params_from_iter(params), |row| {
                Ok(StoredContent {
                    text: row.get(0)?,
                    source: Some(serde_json::json!({"System": "episode"})),
                    timestamp: row.get(1)?,
                    msg_id: None,
                    resolved: Some(row.get::<_, i64>(2)? != 0),
                    ..StoredContent::default()
                })
            })
            .optional()?,
    };
    Ok(row)
}

fn read_scope(agent_id: &str, project_id: Option<&str>, channel: Option<&str>) -> Scope {
    Scope::read(Some(agent_id), project_id, channel)
}

/// The calibrated cosine threshold for `agent_id` (else the global one) that matches the
/// store's embedder and scoring, if any.
fn calibrated_threshold(store: &Store, conn: &Connection, agent_id: &str) -> Result<Option<f64>> {
    let target = store.vector_target();
    let mut stmt = conn.prepare_cached(
        "SELECT payload FROM calibration WHERE agent_id IN (?1, '') AND embedding_model = ?2 \
         AND embedding_dim = ?3 AND scoring_version = ?4 ORDER BY agent_id = '' LIMIT 1",
    )?;
    let payload: Option<String> = stmt
        .query_row(
            rusqlite::params![
                agent_id,
                target.model_id,
                target.dim as i64,
                SCORING_VERSION
            ],
            |row| row.get(0),
        )
        .optional()?;
    Ok(payload
        .and_then(|p| parse_json(&p))
        .and_then(|v| v.get("threshold")?.as_f64()))
}

/// Resolves the cue, runs the envelope fetch (the recall's second and last fetch) and the
/// loop, and returns the plan the pipeline applies plus the response block and trace.
#[allow(clippy::too_many_arguments)]
fn cue_plan(
    store: &Store,
    config: &EngineConfig,
    conn: &Connection,
    scope: &Scope,
    cue: &TimeCue,
    now_ms: Option<i64>,
    query_vector: Option<&[f32]>,
    sufficiency: &deliberate::Sufficiency,
    recall_started: Instant,
) -> Result<Cued> {
    let cue_config = config.recall.cue;
    let now = now_ms.unwrap_or_else(crate::time::now_ms);
    let span = envelope::span(conn, scope)?;
    let request = TraceCueRequest {
        given: *cue,
        now_ms: now,
        span,
    };
    let mut response = CueResponse {
        policy: crate::recall::stages::cue::POLICY.into(),
        period: None,
        confidence: cue.confidence,
        revised: false,
        moved: 0,
        seated: 0,
        ignored: None,
        limits: Vec::new(),
        stopped_by: None,
        propagated: None,
    };
    let period = match cue.resolve(now, span) {
        Resolution::Period(period) => period,
        Resolution::RecentOnly(period) => {
            response.period = Some(period.text());
            response.ignored = Some("recent_only".into());
            return Ok(Cued::unused(response, request));
        }
        Resolution::EmptyScope => {
            response.ignored = Some("empty_scope".into());
            return Ok(Cued::unused(response, request));
        }
    };
    let target = store.vector_target();
    let query = query_vector.map(|vector| QueryVector {
        vector,
        model_id: &target.model_id,
        dim: target.dim,
    });
    let fetched = envelope::fetch(
        conn,
        scope,
        deliberate::fetch_envelope(period, cue.confidence),
        query.as_ref(),
        cue_config.row_cap,
        config.associations_enabled,
    )?;
    let outcome = deliberate::run(
        &cue_config,
        period,
        cue.confidence,
        &fetched.rows,
        fetched.cut,
        sufficiency,
        || ms(recall_started),
    );
    let rows = outcome.prior_rows(&fetched.rows);
    response.period = Some(outcome.envelope.text());
    response.confidence = outcome.confidence;
    response.revised = outcome.report.stages.len() > 1;
    response.limits = outcome.report.limits.clone();
    response.stopped_by = Some(outcome.report.stopped_by);
    let plan = CuePlan {
        prior: Prior::cued(CuePrior {
            envelope: outcome.envelope,
            max_up: outcome.confidence.lift(),
            depth: cue_config.depth,
            context_up: 0,
        }),
        rows,
        found: outcome.found,
        seats: outcome.confidence.seats(),
        context: fetched.context,
        fetched: fetched.rows,
        fetch_envelope: Some(deliberate::fetch_envelope(period, cue.confidence)),
        fetch_cut: fetched.cut,
        propagate: true,
    };
    Ok(Cued {
        plan: Some(plan),
        response,
        report: Some(outcome.report),
        request,
    })
}

/// `recall`: embeds the query, runs the vector and lexical arms in the caller's scope,
/// then depth → fusion → gate → count cut → hydration → shape. An embedder failure
/// degrades to the lexical arms with an advisory; a blank query is the recency listing.
/// The memories returned are then credited (`recall_count + 1`, `recall_credit.rs`).
pub(crate) fn recall(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
) -> Result<RecallResult> {
    let mut result = recall_pass(store, config, q)?;
    crate::recall::credit::credit_recall(store, &config.recall, q, &mut result);
    Ok(result)
}

/// One recall without the credit: for passes whose rows are not what the caller is
/// handed (the propagation seat's deeper pass, reconstruct's candidate pool).
pub(crate) fn recall_pass(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
) -> Result<RecallResult> {
    let recall_started = Instant::now();
    let mut recall_config = config.recall;
    if let Some(depth) = q.depth {
        recall_config.depth.default = depth;
    }
    let depth = recall_config.depth.per_arm();
    let scope = read_scope(&q.agent_id, q.project_id.as_deref(), q.channel.as_deref());
    let mut timings = RecallTimings::default();
    let mut advisories = Vec::new();
    let blank = q.query.trim().is_empty();
    let mut arms: Vec<ArmList> = Vec::new();
    let mut report = VectorReport::default();
    let mut keyword_fallback = false;
    let mut lexical_capped = Vec::new();
    let mut query_vector: Option<Vec<f32>> = None;

    if !blank {
        let started = Instant::now();
        let target = store.vector_target();
        let embedded = if target.embedder_matches {
            store
                .embedder
                .embed(&[q.query.as_str()])
                .map_err(|err| err.to_string())
                .and_then(|mut v| v.pop().ok_or_else(|| "embedder returned nothing".into()))
                .and_then(|v| {
                    if v.len() == target.dim {
                        Ok(v)
                    } else {
                        Err(format!(
                            "embedder returned {} dims, store holds {}",
                            v.len(),
                            target.dim
                        ))
                    }
                })
        } else {
            Err("the embedder does not match the store's vectors".to_owned())
        };
        timings.embed_ms = ms(started);
        match embedded {
            Ok(vector) => {
                query_vector = Some(vector.clone());
                let started = Instant::now();
                let lists = vector::search(store, &scope, &vector, depth, config.scan_window)?;
                timings.vector_ms = ms(started);
                arms.push(lists.near);
                arms.push(lists.far);
                report = lists.report;
            }
            Err(reason) => advisories.push(format!(
                "vector arm skipped ({reason}); results come from the lexical arms only"
            )),
        }
        let started = Instant::now();
        let lexical = store.read(|conn| {
            lexical::search(conn, &scope, &q.query, depth, recall_config.lexical_cap)
        })?;
        timings.lexical_ms = ms(started);
        keyword_fallback = lexical.keyword_fallback;
        lexical_capped = lexical.capped;
        advisories.extend(lexical.notes);
        arms.push(lexical.episodes);
        arms.push(lexical.memories);
    } else {
        let started = Instant::now();
        arms.push(store.read(|conn| recency(conn, &scope, depth))?);
        timings.lexical_ms = ms(started);
    }
    if report.tables.iter().any(|t| t.window_cut) {
        advisories.push(format!(
            "vector scan window ({} newest rows per table) cut older rows to the far list",
            config.scan_window
        ));
    }

    let filters = RowFilters::new(
        &q.exclude_contents,
        &q.source_id,
        q.min_similarity,
        q.channel.as_deref().is_some_and(|c| !c.is_empty()),
    );
    let gate_started = Instant::now();
    let outcome = store.read(|conn| {
        let failure: RefCell<Option<Error>> = RefCell::new(None);
        let mut arms = arms;
        let filtered = filters.apply(&mut arms, |r| {
            row_facts(conn, r).unwrap_or_else(|err| {
                failure.borrow_mut().get_or_insert(err);
                None
            })
        });
        let confidence = recall_config
            .report_confidence
            .then(|| {
                ConfidenceContext::read(
                    conn,
                    &scope,
                    q.now_ms.unwrap_or_else(crate::time::now_ms),
                    q.deep,
                    recall_config.confidence,
                )
            })
            .transpose()?;
        let (pred, params) = scope.predicate("");
        // Never below the pool size at which a configured heuristic saturates.
        let cap =
            POOL_COUNT_CAP.max(recall_config.gate.heuristic_pool.ceil().max(0.0) as usize + 1);
        let pool: i64 = conn.query_row(
            &format!(
                "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM memories WHERE {pred} LIMIT {cap})) + \
                 (SELECT COUNT(*) FROM (SELECT 1 FROM episodes WHERE {pred} LIMIT {cap}))"
            ),
            rusqlite::params_from_iter(params.iter().chain(params.iter())),
            |row| row.get(0),
        )?;
        let gate_input = GateInput {
            calibrated: calibrated_threshold(store, conn, &q.agent_id)?,
            pool: pool.max(0) as u64,
            deep: q.deep,
        };
        let request = RecallRequest {
            query: &q.query,
            limit: q.limit,
            deep: q.deep,
            full_content: q.full_content,
        };
        let gate_input_ms = ms(gate_started);
        let cued = match &q.time_cue {
            Some(cue) => Some(cue_plan(
                store,
                config,
                conn,
                &scope,
                cue,
                q.now_ms,
                query_vector.as_deref(),
                &deliberate::Sufficiency {
                    gate_threshold: recall_config.gate.enabled.then(|| {
                        crate::recall::stages::gate::threshold(&recall_config.gate, &gate_input).0
                    }),
                },
                recall_started,
            )?),
            None => None,
        };
        let seen = RefCell::new(Vec::new());
        let mut hydrate_ms = 0.0;
        let started = Instant::now();
        let mut outcome = run_cued(
            &recall_config,
            &request,
            arms,
            &gate_input,
            cued.as_ref().and_then(|c| c.plan.as_ref()),
            |r| {
                let t = Instant::now();
                let row = match read_scoped(conn, &scope, r) {
                    Ok(row) => row,
                    Err(err) => {
                        failure.borrow_mut().get_or_insert(err);
                        None
                    }
                };
                hydrate_ms += ms(t);
                let row = row.map(|s| crate::trace::hydrated(r, s));
                if q.trace {
                    seen.borrow_mut().push((r, row.clone()));
                }
                row
            },
            |candidate| {
                let context = confidence.as_ref()?;
                context.of(conn, candidate).unwrap_or_else(|err| {
                    failure.borrow_mut().get_or_insert(err);
                    None
                })
            },
        );
        let total = ms(started);
        if let Some(err) = failure.into_inner() {
            return Err(err);
        }
        let traced_plan = q
            .trace
            .then(|| cued.as_ref().and_then(|c| c.plan.clone()))
            .flatten();
        let traced_request = cued.as_ref().map(|c| c.request);
        if let Some(cued) = cued {
            let applied = outcome.stages.cue.as_ref();
            let mut block = cued.response;
            block.moved = applied.map_or(0, |a| a.moved);
            block.seated = applied.map_or(0, |a| a.seated.len());
            block.propagated = applied.and_then(|a| a.propagated.clone());
            outcome.response.time_cue = Some(block);
            outcome.stages.deliberation = cued.report;
        }
        let capture = if q.trace {
            let seen = seen.into_inner();
            let c = crate::trace::capture(
                store,
                conn,
                &scope,
                q,
                &recall_config,
                gate_input,
                &outcome.stages,
                seen,
                confidence.as_ref(),
                traced_plan,
            )?;
            Some(Box::new(crate::trace::Capture {
                cue_request: traced_request,
                ..c
            }))
        } else {
            None
        };
        Ok((outcome, total, hydrate_ms, gate_input_ms, filtered, capture))
    })?;
    let (mut outcome, total, hydrate_ms, gate_input_ms, filtered, capture) = outcome;
    // Held places (association cue, propagation seat): `associations/seats.rs`.
    crate::recall::seats::held_seats(
        store,
        config,
        q,
        &scope,
        &mut outcome.response,
        &mut advisories,
    )?;
    if let Some(vector) = &query_vector {
        let cap = recall_config.shape.excerpt_chars;
        crate::derived::block_excerpts(store, &scope, &mut outcome.response.messages, vector, cap)?;
    }
    timings.gate_input_ms = gate_input_ms;
    timings.hydrate_ms = hydrate_ms;
    timings.fusion_ms = (total - hydrate_ms).max(0.0);
    Ok(RecallResult {
        response: outcome.response,
        advisories,
        vector: report,
        keyword_fallback,
        lexical_capped,
        stages: q.trace.then_some(outcome.stages),
        timings,
        filtered,
        capture,
        query_vector,
    })
}

/// `get_contents`: full text (or a span) of each ref, read within the caller's scope; a
/// ref outside it or absent comes back under `unresolved` (`not_found`).
pub(crate) fn get_contents(
    store: &Store,
    agent_id: &str,
    project_id: Option<&str>,
    channel: Option<&str>,
    refs: &[serde_json::Value],
) -> Result<ContentsResponse> {
    let scope = read_scope(agent_id, project_id, channel);
    let requests = parse_requests(refs)?;
    store.read(|conn| {
        crate::recall::stages::contents::get_contents(requests, BUDGET_CHARS, |r| {
            crate::derived::with_ranges(conn, r, read_scoped(conn, &scope, r)?)
        })
    })
}

/// The blank-query recency listing: the newest memories in scope, as the memories arm.
fn recency(conn: &Connection, scope: &Scope, depth: usize) -> Result<ArmList> {
    let (pred, mut params) = scope.predicate("");
    params.push(Value::Integer(depth as i64));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT id FROM memories WHERE {pred} ORDER BY created_at_ms DESC, id DESC LIMIT ?"
    ))?;
    let ids = stmt
        .query_map(rusqlite::params_from_iter(params), |row| {
            row.get::<_, i64>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ArmList::ranked(
        Arm::MemoryKeyword,
        ids.into_iter().map(|id| (Ref::mem(id), None)),
    ))
}
