//! Counterfactual replay: re-runs the pure recall pass ([`crate::recall::stages::run`]) over a saved
//! [`RecallTrace`] with one or more conditions changed (depth, gate threshold, one arm alone,
//! a fusion weight or mode, adaptive fusion on or off, limit, the full-content budget,
//! `deep`, the cue), using only the trace's arm lists, gate input and pool: no store, no
//! index, no embedder. A trace of a cued recall also holds the cue's plan; the replay
//! re-applies its re-order, propagation and held seats (`cue=off` drops them), and rebuilds
//! the response's `time_cue` block.
//!
//! When the saved pool cannot answer a change exactly (a depth beyond what the arms were
//! asked for, a row the pool does not hold), the replay still runs on what it has and says
//! which stage must be re-run (`rerun`). It must never pretend a partial replay is exact.
//!
//! A preview excerpt picked by stored blocks (`excerpt_basis` `blocks`/`bits`) depends only on
//! the row, the query vector and the excerpt size, none of which a replay changes; the trace
//! does not hold the blocks, so a replayed row that is cut takes the trace's excerpt of that
//! same row.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::recall::stages::cue::{CueConfidence, Period};
use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::pipeline::CueResponse;
use crate::recall::stages::pipeline::RecallStages;
use crate::recall::{Arm, RecallRequest, RecallResponse, run_cued};
use crate::refs::Ref;
use crate::trace::{RecallTrace, arm_lists, arm_name, arm_named, fusion_named};

/// The conditions a replay changes; `None` keeps the trace's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayChanges {
    /// Per-arm depth.
    pub depth: Option<usize>,
    /// The gate's final cosine threshold (after any `deep` factor).
    pub threshold: Option<f64>,
    /// Gate on or off.
    pub gate: Option<bool>,
    /// Keep this arm's list only.
    pub arm_alone: Option<Arm>,
    /// Drop these arms' lists.
    pub arm_off: Vec<Arm>,
    /// Fusion weights to override.
    pub weights: BTreeMap<Arm, f64>,
    /// Fusion mode.
    pub fusion: Option<crate::recall::stages::fusion::FusionMode>,
    /// RRF's k.
    pub rrf_k: Option<f64>,
    /// `adaptive=off` (the configured weights as they are) or `adaptive=on` (the rule's
    /// defaults when the trace had none).
    pub adaptive: Option<bool>,
    /// Adaptive fusion's floor (turns the rule on).
    pub adaptive_floor: Option<f64>,
    /// Adaptive fusion's power (turns the rule on).
    pub adaptive_power: Option<f64>,
    /// Rows returned.
    pub limit: Option<usize>,
    /// The full-content budget (characters).
    pub budget: Option<usize>,
    /// `full_content`.
    pub full_content: Option<bool>,
    /// `deep`.
    pub deep: Option<bool>,
    /// `cue=off`: the cue's re-order, propagation and seats are not applied.
    pub cue_off: bool,
    /// `cue.confidence=sure|likely|vague`: the cue's period widened by another confidence
    /// (lift and seats follow it).
    pub cue_confidence: Option<CueConfidence>,
    /// `cue.propagation=off`: the cue's plan as saved, without cue propagation (no strong
    /// hit narrows the period or names context rows).
    pub cue_propagation_off: bool,
    /// A whole cue plan in place of the trace's (set by the failure taxonomy, not by a
    /// `key=value`): a cue resolved another way, the cue the caller meant, or an ignored cue
    /// applied. Its envelope rows come from the saved fetch or a re-run of it.
    pub cue_plan: Option<CuePlan>,
    /// The changes as given, for the report.
    pub given: Vec<String>,
}

fn bad(reason: String) -> Error {
    Error::InvalidInput {
        field: "replay --set",
        reason,
    }
}

fn parse<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|_| bad(format!("{key}={value}: not a valid value for {key}")))
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(bad(format!("{key}={value}: expected on|off|true|false"))),
    }
}

fn parse_arm(key: &str, value: &str) -> Result<Arm> {
    arm_named(value).ok_or_else(|| {
        bad(format!(
            "{key}={value}: expected one of vector_near, vector_far, episode_fts, memory_keyword"
        ))
    })
}

fn finite(key: &str, value: &str) -> Result<f64> {
    let v: f64 = parse(key, value)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(bad(format!("{key}={value}: must be finite and >= 0")))
    }
}

impl ReplayChanges {
    /// Parses one `key=value`. Keys: `depth`, `threshold`, `gate`, `arm` (one arm alone),
    /// `arm_off`, `weight.<arm>`, `fusion` (rrf|rsf), `rrf_k`, `adaptive` (on|off),
    /// `adaptive.floor`, `adaptive.power`, `limit`, `budget`,
    /// `full_content`, `deep`, `cue` (off), `cue.confidence` (sure|likely|vague),
    /// `cue.propagation` (off).
    pub fn set(&mut self, pair: &str) -> Result<()> {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("{pair:?}: expected key=value")))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "depth" => {
                let d: usize = parse(key, value)?;
                if d == 0 {
                    return Err(bad("depth=0: must be at least 1".into()));
                }
                self.depth = Some(d);
            }
            "threshold" => self.threshold = Some(finite(key, value)?),
            "gate" => self.gate = Some(parse_bool(key, value)?),
            "arm" => self.arm_alone = Some(parse_arm(key, value)?),
            "arm_off" => self.arm_off.push(parse_arm(key, value)?),
            "fusion" | "mode" => {
                self.fusion = Some(
                    fusion_named(value)
                        .ok_or_else(|| bad(format!("{key}={value}: expected rrf or rsf")))?,
                )
            }
            "rrf_k" => self.rrf_k = Some(finite(key, value)?),
            "adaptive" => self.adaptive = Some(parse_bool(key, value)?),
            "adaptive.floor" => {
                let floor = finite(key, value)?;
                if floor > 1.0 {
                    return Err(bad(format!("{key}={value}: must be in 0..=1")));
                }
                self.adaptive_floor = Some(floor);
            }
            "adaptive.power" => self.adaptive_power = Some(finite(key, value)?),
            "limit" | "k" => {
                let n: usize = parse(key, value)?;
                if n == 0 {
                    return Err(bad(format!("{key}=0: must be at least 1")));
                }
                self.limit = Some(n);
            }
            "budget" => self.budget = Some(parse(key, value)?),
            "full_content" => self.full_content = Some(parse_bool(key, value)?),
            "deep" => self.deep = Some(parse_bool(key, value)?),
            "cue.confidence" => {
                self.cue_confidence = Some(match value {
                    "sure" => CueConfidence::Sure,
                    "likely" => CueConfidence::Likely,
                    "vague" => CueConfidence::Vague,
                    _ => {
                        return Err(bad(format!(
                            "{key}={value}: expected sure, likely or vague"
                        )));
                    }
                })
            }
            "cue.propagation" => {
                if parse_bool(key, value)? {
                    return Err(bad(
                        "cue.propagation=on: a replay can only disable propagation".into(),
                    ));
                }
                self.cue_propagation_off = true;
            }
            "cue" => {
                if parse_bool(key, value)? {
                    return Err(bad("cue=on: a replay can only disable a cue".into()));
                }
                self.cue_off = true;
            }
            _ => match key.strip_prefix("weight.") {
                Some(arm) => {
                    let arm = parse_arm(key, arm)?;
                    self.weights.insert(arm, finite(key, value)?);
                }
                None => return Err(bad(format!("unknown key {key:?}"))),
            },
        }
        self.given.push(format!("{key}={value}"));
        Ok(())
    }

    /// Parses every `key=value`.
    pub fn parse_all<'a>(pairs: impl IntoIterator<Item = &'a str>) -> Result<ReplayChanges> {
        let mut changes = ReplayChanges::default();
        for pair in pairs {
            changes.set(pair)?;
        }
        Ok(changes)
    }
}

/// A stage the replay could not answer from the trace alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rerun {
    /// `arms` (candidate generation) or `hydrate`.
    pub stage: &'static str,
    /// Why.
    pub reason: String,
}

/// A replay's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayOutcome {
    /// The changes applied, as given.
    pub changes: Vec<String>,
    /// True when the pool answered every change exactly (`rerun` empty).
    pub exact: bool,
    /// Stages that must be re-run against the store for an exact answer.
    pub rerun: Vec<Rerun>,
    /// What the replay wants the reader to know.
    pub notes: Vec<String>,
    /// The response the changed pass returns, without text (the trace holds none); the held
    /// places lead it in `held`.
    pub response: RecallResponse,
    /// The rows held after the window, as the recall returned them (recorded, not re-run).
    pub held: Vec<serde_json::Value>,
    /// What its stages saw.
    pub stages: RecallStages,
    /// True when `response` equals the trace's response.
    pub unchanged: bool,
}

impl ReplayOutcome {
    /// The returned refs best first.
    pub fn refs_best_first(&self) -> Vec<Ref> {
        let held = self
            .held
            .iter()
            .rev()
            .filter_map(|m| m["ref"].as_str()?.parse().ok());
        self.response
            .messages
            .iter()
            .rev()
            .map(|m| m.r#ref)
            .chain(held)
            .collect()
    }
}

/// The trace's returned refs best first.
pub fn trace_refs_best_first(trace: &RecallTrace) -> Vec<Ref> {
    trace.response["messages"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .rev()
                .filter_map(|m| m["ref"].as_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The plan with its period widened by `to` instead: the period is recovered from the final
/// envelope and lift (`envelope = period ± margin × length`, to the millisecond), the cue
/// rows re-ranked from the saved envelope fetch in the loop's cue order, lift and seats set
/// by `to`. Returns why the saved fetch cannot answer exactly (the new envelope reaches past
/// it, or the row cap cut it), if so.
fn reconfide(plan: &mut CuePlan, to: CueConfidence) -> Option<String> {
    let cue = plan.prior.cue.as_mut()?;
    let from = match cue.max_up {
        3 => CueConfidence::Sure,
        2 => CueConfidence::Likely,
        _ => CueConfidence::Vague,
    };
    let env = cue.envelope;
    let len = (env.end_ms - env.start_ms) as f64 / (1.0 + 2.0 * from.margin());
    let pad = (len * from.margin()).round() as i64;
    let period = Period {
        start_ms: env.start_ms + pad,
        end_ms: env.end_ms - pad,
    };
    let envelope = period.widen(to);
    cue.envelope = envelope;
    cue.max_up = to.lift();
    let depth = cue.depth;
    plan.seats = to.seats();
    // The new envelope's rows in cue order, from the whole fetch (the loop's own order).
    let mut found: Vec<_> = plan
        .fetched
        .iter()
        .filter(|row| envelope.contains(row.at_ms))
        .copied()
        .collect();
    found.sort_by(crate::recall::stages::deliberate::cue_order);
    found.truncate(depth);
    plan.found = found;
    for row in plan.rows.values_mut() {
        row.cue_rank = None;
    }
    for (rank, row) in plan.found.iter().enumerate() {
        if let Some(p) = plan.rows.get_mut(&row.r#ref) {
            p.cue_rank = Some(rank);
        }
    }
    let covered = plan
        .fetch_envelope
        .is_some_and(|f| f.start_ms <= envelope.start_ms && envelope.end_ms <= f.end_ms);
    if !covered {
        Some(format!(
            "cue.confidence={}: the envelope reaches beyond what the loop fetched: re-run the \
             envelope fetch",
            crate::trace::name_of(&to)
        ))
    } else if plan.fetch_cut {
        Some("the envelope fetch was cut by its row cap: re-run it for an exact answer".into())
    } else {
        None
    }
}

/// Re-runs the pure pass over `trace` with `changes`.
pub fn replay(trace: &RecallTrace, changes: &ReplayChanges) -> Result<ReplayOutcome> {
    let mut config = trace.config.to_config()?;
    let mut gate_input = trace.gate_input();
    let mut rerun = Vec::new();
    let mut notes = Vec::new();
    let fetched = trace.config.depth.per_arm;

    if let Some(depth) = changes.depth {
        config.depth.floor = config.depth.floor.min(depth);
        config.depth.max = config.depth.max.max(depth);
        config.depth.default = depth;
        if depth > fetched {
            let short: Vec<String> = trace
                .arms
                .iter()
                .filter(|a| !a.exhausted)
                .map(|a| a.arm.clone())
                .collect();
            if short.is_empty() {
                notes.push(format!(
                    "depth {depth} > {fetched} fetched, but every arm returned fewer hits than \
                     {fetched}: the pool suffices"
                ));
            } else {
                rerun.push(Rerun {
                    stage: "arms",
                    reason: format!(
                        "depth {depth} > {fetched} fetched and {} filled the depth: re-run the \
                         arms at depth {depth} (this replay used the {fetched} saved hits)",
                        short.join(", ")
                    ),
                });
            }
        }
    }
    if let Some(deep) = changes.deep {
        gate_input.deep = deep;
    }
    if let Some(enabled) = changes.gate {
        config.gate.enabled = enabled;
    }
    if let Some(threshold) = changes.threshold {
        // The final threshold exactly: a calibrated base with the deep factor neutralised.
        gate_input.calibrated = Some(threshold);
        config.gate.deep_factor = 1.0;
        config.gate.enabled = changes.gate.unwrap_or(true);
    }
    for (arm, weight) in &changes.weights {
        match arm {
            Arm::VectorNear => config.weights.vector_near = *weight,
            Arm::VectorFar => config.weights.vector_far = *weight,
            Arm::EpisodeFts => config.weights.episode_fts = *weight,
            Arm::MemoryKeyword => config.weights.memory_keyword = *weight,
        }
    }
    if let Some(mode) = changes.fusion {
        config.fusion = mode;
    }
    if let Some(k) = changes.rrf_k {
        config.rrf_k = k;
    }
    match changes.adaptive {
        Some(false) => config.adaptive = None,
        Some(true) => config.adaptive = Some(config.adaptive.unwrap_or_default()),
        None => {}
    }
    if changes.adaptive_floor.is_some() || changes.adaptive_power.is_some() {
        if changes.adaptive == Some(false) {
            notes.push("adaptive=off: adaptive.floor and adaptive.power change nothing".into());
        } else {
            let rule = config.adaptive.get_or_insert_with(Default::default);
            rule.floor = changes.adaptive_floor.unwrap_or(rule.floor);
            rule.power = changes.adaptive_power.unwrap_or(rule.power);
        }
    }
    if let Some(budget) = changes.budget {
        config.shape.full_content_budget_chars = budget;
    }
    let mut plan = if changes.cue_off {
        None
    } else if let Some(plan) = &changes.cue_plan {
        Some(plan.clone())
    } else {
        trace.cue.as_ref().map(crate::trace::TraceCue::to_plan)
    };
    if changes.cue_propagation_off {
        match plan.as_mut() {
            Some(plan) => plan.propagate = false,
            None => notes.push("no cue plan in this trace: cue.propagation changes nothing".into()),
        }
    }
    if let Some(to) = changes.cue_confidence {
        match plan.as_mut() {
            Some(plan) => {
                if let Some(reason) = reconfide(plan, to) {
                    rerun.push(Rerun {
                        stage: "envelope",
                        reason,
                    });
                }
            }
            None => notes.push("no cue plan in this trace: cue.confidence changes nothing".into()),
        }
    }
    // A replaced or re-widened cue is applied as one plan: the loop that revised the saved
    // cue and chose its stop rule is not re-run, so the block must not claim it was.
    let replaced_cue = (changes.cue_plan.is_some() || changes.cue_confidence.is_some())
        .then(|| {
            plan.as_ref()
                .and_then(|p| p.prior.cue)
                .map(|c| c.envelope.text())
        })
        .flatten();
    if replaced_cue.is_some() {
        notes.push(
            "the changed cue is applied as one plan: the loop's revision, limits and stop rule \
             are not re-run (time_cue.revised false, no stopped_by)"
                .into(),
        );
    }
    if changes.cue_off && trace.cue.is_none() && trace.response.get("time_cue").is_none() {
        notes.push(format!(
            "no cue in this trace (process {}): cue=off changes nothing",
            trace.policy.process
        ));
    }

    let mut arms = arm_lists(&trace.arms)?;
    if let Some(alone) = changes.arm_alone {
        arms.retain(|l| l.arm == alone);
        if arms.is_empty() {
            notes.push(format!("{} has no list in this trace", arm_name(alone)));
        }
    }
    arms.retain(|l| !changes.arm_off.contains(&l.arm));

    let limit = changes.limit.unwrap_or(trace.request.limit);
    let request = RecallRequest {
        query: &trace.query.text,
        limit,
        deep: gate_input.deep,
        full_content: changes.full_content.unwrap_or(trace.request.full_content),
    };
    let pool = trace.pool_map();
    let confidence = trace.confidence_inputs();
    let mut missing = Vec::new();
    let mut outcome = run_cued(
        &config,
        &request,
        arms,
        &gate_input,
        plan.as_ref(),
        |r| match pool.get(&r) {
            Some(row) => row.clone(),
            None => {
                missing.push(r);
                None
            }
        },
        |candidate| trace.confidence_of(&confidence, candidate),
    );
    if !missing.is_empty() {
        rerun.push(Rerun {
            stage: "hydrate",
            reason: format!(
                "{} rows are not in the saved pool (shown as vanished): {}",
                missing.len(),
                missing
                    .iter()
                    .map(Ref::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    if !changes.cue_off
        && let Some(block) = trace.response.get("time_cue")
    {
        let mut block: CueResponse =
            serde_json::from_value(block.clone()).map_err(|err| Error::InvalidInput {
                field: "trace.response.time_cue",
                reason: err.to_string(),
            })?;
        if let Some(period) = replaced_cue.filter(|_| !changes.cue_off) {
            block.ignored = None;
            block.period = Some(period);
            if let Some(to) = changes.cue_confidence {
                block.confidence = to;
            }
            block.revised = false;
            block.limits.clear();
            block.stopped_by = None;
        }
        if let Some(applied) = &outcome.stages.cue {
            block.moved = applied.moved;
            block.seated = applied.seated.len();
            block.propagated = applied.propagated.clone();
        }
        outcome.response.time_cue = Some(block);
    }
    // The trace holds no text: the replayed rows carry none either.
    for message in &mut outcome.response.messages {
        message.content.clear();
        message.excerpt = None;
    }
    if !trace.held.is_empty() && !changes.given.is_empty() {
        notes.push(format!(
            "{} held places (association cue, propagation seat) are the recall's, recorded, \
             not re-run",
            trace.held.len()
        ));
    }
    let unchanged = with_held(&trace.held, &outcome.response).as_ref() == Some(&trace.response);
    Ok(ReplayOutcome {
        changes: changes.given.clone(),
        exact: rerun.is_empty(),
        rerun,
        notes,
        response: outcome.response,
        held: trace.held.clone(),
        stages: outcome.stages,
        unchanged,
    })
}

/// The replayed response as the trace saves one: its text-free rows led by the held ones.
fn with_held(held: &[serde_json::Value], response: &RecallResponse) -> Option<serde_json::Value> {
    let mut body = crate::trace::without_text(serde_json::to_value(response).ok()?);
    let rows = body.get_mut("messages")?.as_array_mut()?;
    let mut all = held.to_vec();
    all.append(rows);
    *rows = all;
    Some(body)
}
