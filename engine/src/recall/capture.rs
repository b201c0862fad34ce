//! What a traced recall captures beside its result: the inputs the pure pass saw that the
//! result does not carry (the query, the settings, the gate's input, the embedder, every
//! fused candidate's row, the confidence inputs, the cue's plan and request) and the held
//! places added after the window. `trace/` turns it into the saved `RecallTrace`. It is
//! captured last, after the held places, so a trace shows every row the recall returned.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::error::Result;
use crate::recall::facts::ConfidenceContext;
use crate::recall::read::hydrate;

use crate::recall::stages::config::RecallConfig;

use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::gate::GateInput;
use crate::recall::stages::pipeline::RecallStages;
use crate::recall::stages::shape::{Hydrated, RecallMessage};
use crate::recall::types::{Capture, RecallQuery, TraceCueRequest, TraceEmbedder};
use crate::refs::Ref;
use crate::scope::Scope;
use crate::store::VectorTarget;

/// What the window pass saw that a capture keeps.
pub(crate) struct Seen<'a> {
    pub(crate) query: &'a RecallQuery,
    pub(crate) config: &'a RecallConfig,
    pub(crate) gate_input: GateInput,
    pub(crate) stages: &'a RecallStages,
    /// The rows the pass hydrated, as it saw them.
    pub(crate) hydrated: &'a [(Ref, Option<Hydrated>)],
    pub(crate) confidence: Option<&'a ConfidenceContext>,
    pub(crate) cue: Option<CuePlan>,
    pub(crate) cue_request: Option<TraceCueRequest>,
}

/// Completes a capture: the rows the pass hydrated plus every other fused candidate and the
/// held rows, read in `scope` now.
pub(crate) fn capture(
    conn: &Connection,
    scope: &Scope,
    target: &VectorTarget,
    seen: Seen<'_>,
    held: &[RecallMessage],
) -> Result<Capture> {
    let started = std::time::Instant::now();
    let known: HashMap<Ref, Option<Hydrated>> = seen.hydrated.iter().cloned().collect();
    let stages = seen.stages;
    let mut pool = Vec::with_capacity(stages.fusion.len() + held.len());
    for candidate in &stages.fusion {
        let r = candidate.r#ref;
        let row = match known.get(&r) {
            Some(row) => row.clone(),
            None => hydrate(conn, scope, r)?,
        };
        pool.push((r, row));
    }
    // The cue's seated rows are not fused candidates; a replay shapes them from the pool.
    for r in stages.cue.iter().flat_map(|c| &c.seated) {
        if let Some(row) = known.get(r) {
            pool.push((*r, row.clone()));
        }
    }
    for message in held {
        if !pool.iter().any(|(r, _)| *r == message.r#ref) {
            pool.push((message.r#ref, hydrate(conn, scope, message.r#ref)?));
        }
    }
    let confidence = match seen.confidence {
        Some(context) => {
            let mut inputs = HashMap::new();
            for candidate in &stages.fusion {
                if let Some(input) = context.input_of(conn, candidate.r#ref)? {
                    inputs.insert(candidate.r#ref, input);
                }
            }
            Some((context.params(), inputs))
        }
        None => None,
    };
    Ok(Capture {
        query: seen.query.clone(),
        config: *seen.config,
        gate_input: seen.gate_input,
        embedder: TraceEmbedder {
            model_id: target.model_id.clone(),
            dim: target.dim,
            matches_store: target.embedder_matches,
            vector_arm_ran: stages.arms.iter().any(|l| l.arm.is_vector()),
        },
        pool,
        confidence,
        capture_ms: started.elapsed().as_secs_f64() * 1000.0,
        cue: seen.cue,
        cue_request: seen.cue_request,
        held: held.to_vec(),
    })
}
