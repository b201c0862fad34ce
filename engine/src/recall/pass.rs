//! One window pass of a recall, as named steps: embed the query, run the arms (the pass's
//! first fetch), apply the caller's row filters, read the gate's and confidence's inputs,
//! plan the time cue (its envelope fetch, the second and last), then the pure pipeline with
//! hydration. Every read is within the caller's `Scope`. A pass adds no held place and
//! gives no credit: the entry (`recall/mod.rs`) does, once, after its passes.

use std::collections::HashMap;
use std::time::Instant;

use rusqlite::Connection;

use crate::config::EngineConfig;
use crate::error::Result;
use crate::recall::arms::lexical::{self, CapActed};
use crate::recall::arms::vector::{self, VectorReport};
use crate::recall::cue::{self, CueInputs, Cued};
use crate::recall::facts::{ConfidenceContext, row_facts};
use crate::recall::read;
use crate::recall::stages::candidate::ArmList;
use crate::recall::stages::config::RecallConfig;
use crate::recall::stages::deliberate::Sufficiency;
use crate::recall::stages::filters::{FilterReport, RowFilters};
use crate::recall::stages::gate::{self, GateInput};
use crate::recall::stages::pipeline::{RecallOutcome, RecallRequest, try_run_cued};
use crate::recall::stages::select::RecallDepth;
use crate::recall::stages::shape::Hydrated;
use crate::recall::types::{RecallQuery, RecallTimings};
use crate::refs::Ref;
use crate::scope::Scope;
use crate::store::{Store, VectorTarget};

/// What one window pass produced, before the held places.
pub(crate) struct Pass {
    /// The caller's scope.
    pub(crate) scope: Scope,
    /// The stage settings this pass ran with (its Recall Depth included).
    pub(crate) config: RecallConfig,
    /// The pure pipeline's response and stages.
    pub(crate) outcome: RecallOutcome,
    /// How the arms ran.
    pub(crate) arms: ArmsReport,
    /// What degraded or cut, in words.
    pub(crate) advisories: Vec<String>,
    pub(crate) timings: RecallTimings,
    /// Hits the caller's filters removed before fusion.
    pub(crate) filtered: FilterReport,
    /// The query's vector, when the vector arm ran.
    pub(crate) query_vector: Option<Vec<f32>>,
    pub(crate) gate_input: GateInput,
    /// Confidence's scope-wide inputs, when confidence is reported.
    pub(crate) confidence: Option<ConfidenceContext>,
    /// The time cue's step, when the query had a cue.
    pub(crate) cue: Option<Cued>,
    /// The rows the pipeline hydrated, as it saw them (kept only for a trace).
    pub(crate) hydrated: Vec<(Ref, Option<Hydrated>)>,
    /// Index and store fetches this pass made: the arms, and the cue's envelope.
    pub(crate) fetches: usize,
}

/// How the arms of a pass ran, beside their lists.
#[derive(Default)]
pub(crate) struct ArmsReport {
    pub(crate) vector: VectorReport,
    /// True when the memories arm came from the keyword pass.
    pub(crate) keyword_fallback: bool,
    /// The FTS tables on which the lexical cap acted.
    pub(crate) lexical_capped: Vec<CapActed>,
}

/// One deliberate break of an invariant, fed by the tests that must catch it (design §9's
/// mutations); the recall passes [`Mutation::None`] only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Mutation {
    /// The real behaviour.
    #[default]
    None,
    /// `candidate depth = limit`: the Recall Depth follows the response count again.
    DepthFromLimit,
}

/// Runs one window pass of `q`. `reuse_cue` is the cue step of an earlier pass of the same
/// query (the propagation seat's deeper pass): its plan is applied again instead of
/// fetching the envelope a second time.
pub(crate) fn run(
    store: &Store,
    config: &EngineConfig,
    q: &RecallQuery,
    reuse_cue: Option<&Cued>,
    mutation: Mutation,
) -> Result<Pass> {
    let started = Instant::now();
    let mut recall_config = config.recall;
    if let Some(depth) = q.depth {
        recall_config.depth.default = depth;
    }
    if mutation == Mutation::DepthFromLimit {
        let limit = q.limit.max(1);
        recall_config.depth = RecallDepth {
            floor: 1,
            default: limit,
            max: limit,
        };
    }
    let depth = recall_config.depth.per_arm();
    let scope = Scope::read(
        Some(q.agent_id.as_str()),
        q.project_id.as_deref(),
        q.channel.as_deref(),
    );
    let target = store.vector_target();
    let mut timings = RecallTimings::default();
    let embedded = embed_query(store, &target, q, &mut timings);
    let arms = run_arms(
        store,
        &scope,
        q,
        depth,
        recall_config.lexical_cap,
        config.scan_window,
        embedded,
        &mut timings,
    )?;
    let gate_started = Instant::now();
    store.read(|conn| {
        let mut lists = arms.lists;
        let filtered = filter_arms(conn, q, &mut lists)?;
        let confidence = recall_config
            .report_confidence
            .then(|| {
                let now = q.now_ms.unwrap_or_else(crate::time::now_ms);
                ConfidenceContext::read(conn, &scope, now, q.deep, recall_config.confidence)
                    .map(|context| context.with_pending_credits(store.pending_credits()))
            })
            .transpose()?;
        let gate_input = read::gate_input(
            conn,
            &scope,
            &target,
            &recall_config.gate,
            &q.agent_id,
            q.deep,
        )?;
        timings.gate_input_ms = ms(gate_started);
        let (cue, cue_fetches) = plan_cue(
            conn,
            &scope,
            config,
            &recall_config,
            q,
            &target,
            arms.query_vector.as_deref(),
            &gate_input,
            reuse_cue,
            started,
        )?;
        let ranked = rank(
            conn,
            &scope,
            &recall_config,
            q,
            lists,
            &gate_input,
            cue.as_ref(),
            confidence.as_ref(),
        )?;
        timings.hydrate_ms = ranked.hydrate_ms;
        timings.fusion_ms = (ranked.total_ms - ranked.hydrate_ms).max(0.0);
        let mut outcome = ranked.outcome;
        if let Some(cued) = &cue {
            let applied = outcome.stages.cue.as_ref();
            let mut block = cued.response.clone();
            block.moved = applied.map_or(0, |a| a.moved);
            block.seated = applied.map_or(0, |a| a.seated.len());
            block.propagated = applied.and_then(|a| a.propagated.clone());
            outcome.response.time_cue = Some(block);
            outcome.stages.deliberation = cued.report.clone();
        }
        Ok(Pass {
            scope: scope.clone(),
            config: recall_config,
            outcome,
            arms: ArmsReport {
                vector: arms.vector,
                keyword_fallback: arms.keyword_fallback,
                lexical_capped: arms.lexical_capped,
            },
            advisories: arms.advisories,
            timings,
            filtered,
            query_vector: arms.query_vector,
            gate_input,
            confidence,
            cue,
            hydrated: if q.trace { ranked.hydrated } else { Vec::new() },
            fetches: 1 + cue_fetches,
        })
    })
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

/// The query's vector, or why the vector arm cannot run (`None` for a blank query).
type Embedded = Option<std::result::Result<Vec<f32>, String>>;

/// Embeds a non-blank query with the store's embedder, when it matches the store.
fn embed_query(
    store: &Store,
    target: &VectorTarget,
    q: &RecallQuery,
    timings: &mut RecallTimings,
) -> Embedded {
    if q.query.trim().is_empty() {
        return None;
    }
    let started = Instant::now();
    let embedded = if target.embedder_matches {
        let embed = || {
            store
                .embedder
                .embed(&[q.query.as_str()])
                .map_err(|err| err.to_string())
                .and_then(|mut v| v.pop().ok_or_else(|| "embedder returned nothing".into()))
        };
        store
            .query_vectors
            .get_or_embed(&q.query, &target.model_id, target.dim, embed)
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
    Some(embedded)
}

/// The arms' lists of one pass and what they reported.
struct Arms {
    lists: Vec<ArmList>,
    vector: VectorReport,
    keyword_fallback: bool,
    lexical_capped: Vec<CapActed>,
    advisories: Vec<String>,
    query_vector: Option<Vec<f32>>,
}

/// The vector arm (when the query embedded) and the lexical arms; a blank query is the
/// recency listing.
#[allow(clippy::too_many_arguments)]
fn run_arms(
    store: &Store,
    scope: &Scope,
    q: &RecallQuery,
    depth: usize,
    lexical_cap: Option<usize>,
    scan_window: usize,
    embedded: Embedded,
    timings: &mut RecallTimings,
) -> Result<Arms> {
    let mut arms = Arms {
        lists: Vec::new(),
        vector: VectorReport::default(),
        keyword_fallback: false,
        lexical_capped: Vec::new(),
        advisories: Vec::new(),
        query_vector: None,
    };
    let Some(embedded) = embedded else {
        let started = Instant::now();
        arms.lists
            .push(store.read(|conn| read::recency(conn, scope, depth))?);
        timings.lexical_ms = ms(started);
        return Ok(arms);
    };
    match embedded {
        Ok(query_vector) => {
            let started = Instant::now();
            let lists = vector::search(store, scope, &query_vector, depth, scan_window)?;
            timings.vector_ms = ms(started);
            arms.lists.push(lists.near);
            arms.lists.push(lists.far);
            arms.vector = lists.report;
            arms.query_vector = Some(query_vector);
            if let Some(reembed) = crate::reembed::under_way(store) {
                arms.advisories.push(format!(
                    "re-embedding to {} under way: the vector arm covered {} of {} rows \
                     ({:.1}%); the others are reached by the lexical arms only",
                    reembed.to_model,
                    reembed.done,
                    reembed.rows,
                    reembed.share_covered * 100.0
                ));
            }
        }
        Err(reason) => arms.advisories.push(format!(
            "vector arm skipped ({reason}); results come from the lexical arms only"
        )),
    }
    let started = Instant::now();
    let lexical = store.read(|conn| lexical::search(conn, scope, &q.query, depth, lexical_cap))?;
    timings.lexical_ms = ms(started);
    arms.keyword_fallback = lexical.keyword_fallback;
    arms.lexical_capped = lexical.capped;
    arms.advisories.extend(lexical.notes);
    arms.lists.push(lexical.episodes);
    arms.lists.push(lexical.memories);
    if arms.vector.tables.iter().any(|t| t.window_cut) {
        arms.advisories.push(format!(
            "vector scan window ({scan_window} newest rows per table) cut older rows to the far \
             list"
        ));
    }
    Ok(arms)
}

/// The caller's `exclude_contents`, `source_id` and `min_similarity`, applied to the arms'
/// lists before fusion so the count cut still fills `limit`.
fn filter_arms(conn: &Connection, q: &RecallQuery, lists: &mut [ArmList]) -> Result<FilterReport> {
    let filters = RowFilters::new(
        &q.exclude_contents,
        &q.source_id,
        q.min_similarity,
        q.channel.as_deref().is_some_and(|c| !c.is_empty()),
    );
    let mut known = HashMap::new();
    for r in filters.rows_to_read(lists) {
        known.insert(r, row_facts(conn, r)?);
    }
    Ok(filters.apply_known(lists, &known))
}

/// The cue step of this pass, and how many fetches it made (0 or 1).
#[allow(clippy::too_many_arguments)]
fn plan_cue(
    conn: &Connection,
    scope: &Scope,
    config: &EngineConfig,
    recall_config: &RecallConfig,
    q: &RecallQuery,
    target: &VectorTarget,
    query_vector: Option<&[f32]>,
    gate_input: &GateInput,
    reuse: Option<&Cued>,
    started: Instant,
) -> Result<(Option<Cued>, usize)> {
    let Some(time_cue) = &q.time_cue else {
        return Ok((None, 0));
    };
    if let Some(earlier) = reuse {
        return Ok((Some(earlier.clone()), 0));
    }
    let inputs = CueInputs {
        config: &recall_config.cue,
        relations: config.associations_enabled,
        target,
        query_vector,
        sufficiency: Sufficiency {
            gate_threshold: recall_config
                .gate
                .enabled
                .then(|| gate::threshold(&recall_config.gate, gate_input).0),
        },
        now_ms: q.now_ms,
        started,
    };
    let cued = cue::plan(conn, scope, time_cue, &inputs)?;
    let fetched = usize::from(cued.plan.is_some());
    Ok((Some(cued), fetched))
}

/// The pipeline's outcome with the rows it hydrated.
struct Ranked {
    outcome: RecallOutcome,
    hydrated: Vec<(Ref, Option<Hydrated>)>,
    hydrate_ms: f64,
    total_ms: f64,
}

/// Depth → fusion → gate → count cut with hydration → cue → shape.
#[allow(clippy::too_many_arguments)]
fn rank(
    conn: &Connection,
    scope: &Scope,
    recall_config: &RecallConfig,
    q: &RecallQuery,
    lists: Vec<ArmList>,
    gate_input: &GateInput,
    cue: Option<&Cued>,
    confidence: Option<&ConfidenceContext>,
) -> Result<Ranked> {
    let request = RecallRequest {
        query: &q.query,
        limit: q.limit,
        deep: q.deep,
        full_content: q.full_content,
    };
    let mut hydrated = Vec::new();
    let mut hydrate_ms = 0.0;
    let started = Instant::now();
    let outcome = try_run_cued(
        recall_config,
        &request,
        lists,
        gate_input,
        cue.and_then(|c| c.plan.as_ref()),
        |r| {
            let t = Instant::now();
            let row = read::hydrate(conn, scope, r)?;
            hydrate_ms += ms(t);
            hydrated.push((r, row.clone()));
            Ok(row)
        },
        |candidate| match confidence {
            Some(context) => context.of(conn, candidate),
            None => Ok(None),
        },
    )?;
    let total_ms = ms(started);
    Ok(Ranked {
        outcome,
        hydrated,
        hydrate_ms,
        total_ms,
    })
}
