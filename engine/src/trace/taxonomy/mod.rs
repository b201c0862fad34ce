//! The failure taxonomy (design §8): given a saved [`RecallTrace`] and the ref that should
//! have come back, assign one code mechanically, by reading where the ref stopped and by
//! replaying the trace with one thing changed ([`crate::trace::replay`]).
//!
//! Codes this module can assign from a single-pass trace: `CAPTURE_MISS`,
//! `REPRESENTATION_MISS` (both need [`RowFacts`] from the store), `CANDIDATE_MISS`,
//! `RANKING_MISS`, `FILTER_DROP`, `SYSTEM_DEGRADED` and `UNATTRIBUTED`. The others are listed
//! so a report can name them; they need an answer model or a reconstruction, which a recall
//! trace does not hold, and this module must never guess them.
//!
//! The recall loop's codes (`WINDOW_TOO_NARROW`, `WINDOW_TOO_WIDE`, `WIDENING_PREMATURE`,
//! `WIDENING_INSUFFICIENT`, `PRIOR_IGNORED`, `PRIOR_DOMINANCE`, `INTENT_NORMALIZATION_ERROR`,
//! `INTENT_MISLEADING`) are tried first for a missed ref of a cued recall, by one-change
//! replays of the cue; their rules are in [`loop_codes`].

use serde::Serialize;

use crate::error::Result;
use crate::refs::{Ref, RefKind};
use crate::scope::Scope;
use crate::store::Store;
use crate::trace::replay::{ReplayChanges, replay, trace_refs_best_first};
use crate::trace::{ExclusionReason, RecallTrace};

pub mod loop_codes;
pub use loop_codes::{EnvelopeFetch, LoopInputs};

/// One failure code (design §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailureCode {
    /// The information was never stored (or is stored outside this recall's scope).
    CaptureMiss,
    /// Stored, but not in a searchable form (no vector for the store's model).
    RepresentationMiss,
    /// The answer never entered any arm's candidates.
    CandidateMiss,
    /// A candidate, but ranked below the return cut.
    RankingMiss,
    /// Removed by a filter, threshold or budget.
    FilterDrop,
    /// Buried by evidence that should not have been selected.
    EvidenceNoise,
    /// Lost while bundling or structuring.
    ReconstructionLoss,
    /// Content appeared that no evidence supports.
    ReconstructionUnsupported,
    /// Old or contradicted information won.
    StaleConflict,
    /// The right memory came back and the agent misused it.
    AgentMisuse,
    /// A fault, timeout or misconfiguration lowered quality.
    SystemDegraded,
    /// Not yet attributable.
    Unattributed,
    /// Recall loop: the intent misled the stage order.
    IntentMisleading,
    /// Recall loop: the window was too narrow.
    WindowTooNarrow,
    /// Recall loop: the window was too wide.
    WindowTooWide,
    /// Recall loop: widened before the stage was exhausted.
    WideningPremature,
    /// Recall loop: widening did not reach the answer.
    WideningInsufficient,
    /// Recall loop: the prior outweighed the evidence.
    PriorDominance,
    /// Recall loop: the prior was ignored.
    PriorIgnored,
    /// Recall loop: the intent was normalised wrongly.
    IntentNormalizationError,
}

/// What the store says about the expected row (read in and out of the recall's scope).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RowFacts {
    /// The row exists at all.
    pub exists: bool,
    /// The row is inside the recall's scope.
    pub in_scope: bool,
    /// The row holds a vector of the store's model and dimension.
    pub embedded: bool,
    /// Its event time, UTC ms (a memory's timestamp, an episode's start), when it has one.
    pub at_ms: Option<i64>,
}

/// One counterfactual tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Counterfactual {
    /// The one change.
    pub change: String,
    /// True when the expected ref comes back under it.
    pub returned: bool,
    /// Its 0-based position best first, when returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// True when the pool answered it exactly.
    pub exact: bool,
}

/// The attribution of one expected ref.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    /// The ref expected.
    #[serde(
        rename = "expected",
        serialize_with = "crate::refs::ref_serde::serialize"
    )]
    pub expected: Ref,
    /// True when it came back.
    pub found: bool,
    /// Its 0-based position best first, when found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<usize>,
    /// The code, `None` when found.
    pub code: Option<FailureCode>,
    /// The stage it stopped at.
    pub stage: &'static str,
    /// What the code rests on.
    pub evidence: Vec<String>,
    /// The one-change replays tried, in order.
    pub counterfactuals: Vec<Counterfactual>,
}

fn try_change(trace: &RecallTrace, expected: Ref, pair: &str) -> Result<Counterfactual> {
    let changes = ReplayChanges::parse_all([pair])?;
    let out = replay(trace, &changes)?;
    let position = out.refs_best_first().iter().position(|r| *r == expected);
    Ok(Counterfactual {
        change: pair.to_owned(),
        returned: position.is_some(),
        position,
        exact: out.exact,
    })
}

/// Assigns a code to `expected` under `trace`; `facts` (from the store) separates capture
/// and representation misses from candidate misses. The loop's codes that aim the cue
/// elsewhere need [`attribute_with`]'s inputs when the saved envelope fetch does not cover
/// the new envelope.
pub fn attribute(
    trace: &RecallTrace,
    expected: Ref,
    facts: Option<RowFacts>,
) -> Result<Attribution> {
    attribute_with(trace, expected, facts, &LoopInputs::default())
}

/// [`attribute`] with what the loop's codes may use beside the trace: the cue the caller
/// meant and a re-run of the envelope fetch against the store ([`loop_codes`]).
pub fn attribute_with(
    trace: &RecallTrace,
    expected: Ref,
    facts: Option<RowFacts>,
    inputs: &LoopInputs<'_>,
) -> Result<Attribution> {
    let mut att = Attribution {
        expected,
        found: false,
        position: None,
        code: None,
        stage: "output",
        evidence: Vec::new(),
        counterfactuals: Vec::new(),
    };
    if let Some(position) = trace_refs_best_first(trace)
        .iter()
        .position(|r| *r == expected)
    {
        att.found = true;
        att.position = Some(position);
        att.evidence
            .push(format!("returned at position {position} (best first)"));
        return Ok(att);
    }
    if let Some(code) = loop_codes::loop_code(trace, expected, facts, inputs, &mut att)? {
        att.code = Some(code);
        att.stage = "cue";
        return Ok(att);
    }
    let fused = trace.fusion.iter().find(|c| c.r#ref == expected);
    let Some(fused) = fused else {
        return Ok(not_a_candidate(trace, att, facts));
    };
    let exclusion = trace.exclusions.iter().find(|e| e.r#ref == expected);
    att.evidence.push(format!(
        "fused at position {} of {} (score {:.6}{})",
        fused.fused_rank,
        trace.fusion.len(),
        fused.score,
        fused
            .cosine
            .map(|c| format!(", cosine {c:.4}"))
            .unwrap_or_default()
    ));
    let Some(exclusion) = exclusion else {
        att.code = Some(FailureCode::Unattributed);
        att.stage = "output";
        att.evidence
            .push("a candidate with no recorded exclusion that is not returned".into());
        return Ok(att);
    };
    let wide = trace.fusion.len().max(1);
    let mut singles = vec!["gate=off".to_owned(), format!("limit={wide}")];
    for arm in &trace.arms {
        singles.push(format!("arm={}", arm.arm));
    }
    singles.push(format!(
        "fusion={}",
        if trace.config.fusion == "rrf" {
            "rsf"
        } else {
            "rrf"
        }
    ));
    for pair in &singles {
        att.counterfactuals.push(try_change(trace, expected, pair)?);
    }
    let fixes = |prefix: &str| {
        att.counterfactuals
            .iter()
            .any(|c| c.returned && c.change.starts_with(prefix))
    };
    match exclusion.reason {
        ExclusionReason::Gate => {
            att.stage = "gate";
            att.evidence.push(format!(
                "the gate refused it (threshold {:.4}, origin {})",
                trace.gate.threshold, trace.gate.origin
            ));
            att.code = Some(if fixes("gate=") {
                FailureCode::FilterDrop
            } else {
                att.evidence
                    .push("gate=off alone does not return it: more than one cause".into());
                FailureCode::Unattributed
            });
        }
        ExclusionReason::CountCut => {
            att.stage = "count_cut";
            att.evidence.push(format!(
                "gated but below the count cut (limit {})",
                trace.request.limit
            ));
            att.code = Some(if fixes("limit=") || fixes("arm=") || fixes("fusion=") {
                FailureCode::RankingMiss
            } else {
                FailureCode::Unattributed
            });
        }
        ExclusionReason::Vanished => {
            att.stage = "hydrate";
            att.evidence
                .push("deleted between the arms and hydration".into());
            att.code = Some(FailureCode::Unattributed);
        }
        ExclusionReason::Filtered => {
            att.stage = "server_filter";
            att.evidence
                .push("dropped by the caller's exclude_contents / source_id filter".into());
            att.code = Some(FailureCode::FilterDrop);
        }
        ExclusionReason::DepthCut => {
            att.stage = "depth";
            att.code = Some(FailureCode::RankingMiss);
        }
    }
    Ok(att)
}

fn not_a_candidate(
    trace: &RecallTrace,
    mut att: Attribution,
    facts: Option<RowFacts>,
) -> Attribution {
    att.stage = "candidates";
    att.evidence.push("in no arm's candidate list".to_owned());
    let vector_expected = !trace.query.blank;
    if vector_expected && !trace.embedder.vector_arm_ran {
        att.code = Some(FailureCode::SystemDegraded);
        att.evidence.push(format!(
            "the vector arm did not run (embedder {} {}d, matches the store: {}){}",
            trace.embedder.model_id,
            trace.embedder.dim,
            trace.embedder.matches_store,
            trace
                .advisories
                .first()
                .map(|a| format!(": {a}"))
                .unwrap_or_default()
        ));
        return att;
    }
    match facts {
        Some(f) if !f.exists => {
            att.stage = "capture";
            att.code = Some(FailureCode::CaptureMiss);
            att.evidence.push("the store holds no such row".into());
        }
        Some(f) if !f.in_scope => {
            att.stage = "capture";
            att.code = Some(FailureCode::CaptureMiss);
            att.evidence.push(
                "stored outside this recall's scope (agent / project / channel): never \
                 captured for this caller"
                    .into(),
            );
        }
        Some(f) if !f.embedded => {
            att.stage = "representation";
            att.code = Some(FailureCode::RepresentationMiss);
            att.evidence.push(format!(
                "stored in scope without a {} vector (queued or another model); only the \
                 lexical arms could find it and did not",
                trace.embedder.model_id
            ));
        }
        _ => {
            att.code = Some(FailureCode::CandidateMiss);
            if facts.is_none() {
                att.evidence.push(
                    "the store was not consulted: capture and representation are not ruled out"
                        .into(),
                );
            }
            let full: Vec<String> = trace
                .arms
                .iter()
                .filter(|a| !a.exhausted)
                .map(|a| a.arm.clone())
                .collect();
            if !full.is_empty() {
                att.evidence.push(format!(
                    "{} filled depth {}: re-run the arms deeper to test a depth miss",
                    full.join(", "),
                    trace.config.depth.per_arm
                ));
            }
        }
    }
    att
}

/// What the store holds about `r` for a caller in (`agent_id`, `project_id`, `channel`).
pub(crate) fn row_facts(
    store: &Store,
    agent_id: &str,
    project_id: Option<&str>,
    channel: Option<&str>,
    r: Ref,
) -> Result<RowFacts> {
    let table = match r.kind {
        RefKind::Mem => "memories",
        RefKind::Ep => "episodes",
    };
    let time = match r.kind {
        RefKind::Mem => "timestamp_ms",
        RefKind::Ep => "start_ms",
    };
    let target = store.vector_target();
    let scope = Scope::read(Some(agent_id), project_id, channel);
    store.read(|conn| {
        let found: Option<(bool, Option<i64>)> = conn
            .query_row(
                &format!(
                    "SELECT embedding IS NOT NULL AND embedding_model = ?2 \
                     AND embedding_dim = ?3, {time} FROM {table} WHERE id = ?1"
                ),
                rusqlite::params![r.id, target.model_id, target.dim as i64],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map(Some)
            .or_else(|err| match err {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                err => Err(err),
            })?;
        let in_scope = match found {
            None => false,
            Some(_) => crate::recall::read::read_scoped(conn, &scope, r)?.is_some(),
        };
        Ok(RowFacts {
            exists: found.is_some(),
            in_scope,
            embedded: found.is_some_and(|f| f.0),
            at_ms: found.and_then(|f| f.1),
        })
    })
}
