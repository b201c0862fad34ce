//! The time cue's step of a window pass: the cue resolved against the scope's dated span,
//! the envelope fetch (the pass's second and last fetch) and the Deliberative loop, giving
//! the pipeline its plan and the response its `time_cue` block. A cue that resolves to the
//! last day (`recent_only`) or an empty scope is reported as ignored and fetches nothing.

use std::time::Instant;

use rusqlite::Connection;

use crate::error::Result;
use crate::recall::arms::envelope::{self, QueryVector};
use crate::recall::stages::cue::{POLICY, Resolution, TimeCue};
use crate::recall::stages::cue_plan::{self, CuePlan};
use crate::recall::stages::deliberate::{self, CueConfig, LoopReport, Sufficiency};
use crate::recall::stages::pipeline::CueResponse;
use crate::recall::types::TraceCueRequest;
use crate::scope::Scope;
use crate::store::VectorTarget;

/// The cue's part of one pass: the plan (absent when the cue was ignored), the response
/// block, the loop's report and the cue as given.
#[derive(Clone, Debug)]
pub(crate) struct Cued {
    pub(crate) plan: Option<CuePlan>,
    pub(crate) response: CueResponse,
    pub(crate) report: Option<LoopReport>,
    pub(crate) request: TraceCueRequest,
}

/// What the cue step reads besides the cue.
pub(crate) struct CueInputs<'a> {
    pub(crate) config: &'a CueConfig,
    /// Declared record relations are read for propagation (associations on).
    pub(crate) relations: bool,
    pub(crate) target: &'a VectorTarget,
    pub(crate) query_vector: Option<&'a [f32]>,
    pub(crate) sufficiency: Sufficiency,
    /// The clock a relative cue is resolved against; `None` = the system clock.
    pub(crate) now_ms: Option<i64>,
    /// When the recall started (the loop's millisecond limit counts from it).
    pub(crate) started: Instant,
}

/// Resolves `cue`, runs the envelope fetch and the loop.
pub(crate) fn plan(
    conn: &Connection,
    scope: &Scope,
    cue: &TimeCue,
    inputs: &CueInputs<'_>,
) -> Result<Cued> {
    let now = inputs.now_ms.unwrap_or_else(crate::time::now_ms);
    let span = envelope::span(conn, scope)?;
    let request = TraceCueRequest {
        given: *cue,
        now_ms: now,
        span,
    };
    let mut response = CueResponse {
        policy: POLICY.into(),
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
    let unused = |response| Cued {
        plan: None,
        response,
        report: None,
        request,
    };
    let period = match cue.resolve(now, span) {
        Resolution::Period(period) => period,
        Resolution::RecentOnly(period) => {
            response.period = Some(period.text());
            response.ignored = Some("recent_only".into());
            return Ok(unused(response));
        }
        Resolution::EmptyScope => {
            response.ignored = Some("empty_scope".into());
            return Ok(unused(response));
        }
    };
    let query = inputs.query_vector.map(|vector| QueryVector {
        vector,
        model_id: &inputs.target.model_id,
        dim: inputs.target.dim,
    });
    let fetched = envelope::fetch(
        conn,
        scope,
        deliberate::fetch_envelope(period, cue.confidence),
        query.as_ref(),
        inputs.config.row_cap,
        inputs.relations,
    )?;
    let (plan, outcome) = cue_plan::plan(
        inputs.config,
        period,
        cue.confidence,
        fetched,
        &inputs.sufficiency,
        || inputs.started.elapsed().as_secs_f64() * 1000.0,
    );
    response.period = Some(outcome.envelope.text());
    response.confidence = outcome.confidence;
    response.revised = outcome.report.stages.len() > 1;
    response.limits = outcome.report.limits.clone();
    response.stopped_by = Some(outcome.report.stopped_by);
    Ok(Cued {
        plan: Some(plan),
        response,
        report: Some(outcome.report),
        request,
    })
}
