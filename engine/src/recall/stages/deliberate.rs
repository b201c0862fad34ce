//! The Deliberative loop (design §1) in its shipped form: the Dynamic Retrieval Envelope starts
//! at the cue's period widened by its confidence; the store is fetched from at most twice per
//! recall (the ordinary arms, then one envelope fetch aimed at the widest period the loop can
//! reach); every later stage re-filters the pool already held. Hard limits (stages, candidates
//! considered, milliseconds) are checked before sufficiency, and the one revision widens one
//! confidence step when the envelope is not sufficient. Sufficiency needs cue coverage (the
//! envelope holds rows) and one of three rules, judged in this order on the envelope's rows:
//! score separation (the best cosine leads the second by [`SEPARATION`]), gate outcome (the
//! best cosine passes the recall's gate threshold) and candidate count (the envelope holds
//! enough rows to fill the cue's held places). [`LoopReport::stopped_by`] names what ended it.
//!
//! This module is pure: the store hands in the fetched pool and a clock reading. It must never
//! fetch, never widen isolation (it has no access to it), and never drop a row from the
//! answer: what it decides is a [`Prior`](super::prior::Prior) and a number of held places.

use serde::{Deserialize, Serialize};

use super::cue::{CueConfidence, POLICY, Period, PeriodText};
use crate::refs::Ref;

/// The cosine lead of the envelope's best row over its second that makes the envelope
/// sufficient by score separation (the same lead makes a hit strong for cue propagation).
pub const SEPARATION: f64 = 0.05;

/// What sufficiency is judged against, beside the envelope's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sufficiency {
    /// The recall's gate threshold (cosine); `None` when the gate is off, so the gate rule
    /// never holds.
    pub gate_threshold: Option<f64>,
}

/// The sufficiency rule that held for a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SufficiencyRule {
    /// The best envelope row's cosine leads the second's by at least [`SEPARATION`].
    Separation,
    /// The best envelope row's cosine passes the gate threshold.
    Gate,
    /// The envelope holds at least as many rows as the cue holds places.
    Count,
}

/// What ended the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopRule {
    /// Sufficient by score separation.
    Separation,
    /// Sufficient by gate outcome.
    Gate,
    /// Sufficient by candidate count.
    Count,
    /// Not sufficient, and `max_ms` had passed (hard limit).
    Milliseconds,
    /// Not sufficient, and `max_stages` were used (hard limit).
    Stages,
    /// Not sufficient, and `vague` has no wider period.
    NoWiderPeriod,
}

impl From<SufficiencyRule> for StopRule {
    fn from(rule: SufficiencyRule) -> StopRule {
        match rule {
            SufficiencyRule::Separation => StopRule::Separation,
            SufficiencyRule::Gate => StopRule::Gate,
            SufficiencyRule::Count => StopRule::Count,
        }
    }
}

/// Judges one stage's envelope rows (cue order, best first): `None` when not sufficient.
/// Coverage is necessary (no rows: never sufficient); then separation, gate, count.
pub fn judge(found: &[CueRow], seats: usize, sufficiency: &Sufficiency) -> Option<SufficiencyRule> {
    let best = found.first()?;
    let second = found.get(1).and_then(|r| r.cosine);
    if let (Some(a), Some(b)) = (best.cosine, second)
        && a - b >= SEPARATION
    {
        return Some(SufficiencyRule::Separation);
    }
    if let (Some(cosine), Some(threshold)) = (best.cosine, sufficiency.gate_threshold)
        && cosine >= threshold
    {
        return Some(SufficiencyRule::Gate);
    }
    (found.len() >= seats.max(1)).then_some(SufficiencyRule::Count)
}

/// The loop's bounds (reported when one acts).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CueConfig {
    /// Rows of the envelope ranked for the cue (shipped `DEPTH = 50`), independent of count.
    pub depth: usize,
    /// Rows the envelope fetch reads at most (newest first in the period); the candidates
    /// considered bound. CPersona's scan window size.
    pub row_cap: usize,
    /// Stages at most (the first and one revision, as shipped).
    pub max_stages: usize,
    /// Milliseconds of the recall after which no revision starts (shipped
    /// `CPERSONA_RECALL_CUE_TIME_LIMIT_MS = 1000`).
    pub max_ms: f64,
}

impl Default for CueConfig {
    fn default() -> CueConfig {
        CueConfig {
            depth: 50,
            row_cap: 10_000,
            max_stages: 2,
            max_ms: 1000.0,
        }
    }
}

/// One row of the envelope fetch.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CueRow {
    /// The row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// Its event time (UTC ms).
    pub at_ms: i64,
    /// Its cosine to the query, when both have a vector of the store's model.
    pub cosine: Option<f64>,
}

/// Why a stage ended the loop or revised the envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageOutcome {
    /// Sufficient (the stage's `sufficient` says by which rule).
    Found,
    /// Not sufficient; the next stage widens the envelope one step.
    Widened,
    /// Not sufficient and `vague` has no wider period.
    NoWiderPeriod,
    /// Not sufficient and a hard limit stopped the revision.
    LimitHit,
}

/// A hard limit that acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LoopLimit {
    /// `max_stages` reached.
    Stages,
    /// `row_cap` cut the envelope fetch.
    Candidates,
    /// `max_ms` passed.
    Milliseconds,
}

/// One stage, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageReport {
    /// 0-based.
    pub stage: usize,
    /// The confidence the envelope was widened by.
    pub confidence: CueConfidence,
    /// The envelope.
    pub envelope: PeriodText,
    /// Whether this stage fetched (false: re-filtered the held pool).
    pub fetched: bool,
    /// Rows of the held pool inside the envelope.
    pub found: usize,
    /// The sufficiency rule that held, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sufficient: Option<SufficiencyRule>,
    /// What the stage decided.
    pub outcome: StageOutcome,
}

/// The loop as it ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopReport {
    /// The policy version.
    pub policy: &'static str,
    /// Fetches of the index and the store: the loop records its one envelope fetch (1); the
    /// recall then reports its total (the arms of each pass, the envelope once).
    pub fetches: usize,
    /// The envelope the fetch was aimed at (the widest any stage may use).
    pub fetch_envelope: PeriodText,
    /// Rows the fetch held (after `row_cap`).
    pub candidates: usize,
    /// The stages.
    pub stages: Vec<StageReport>,
    /// Hard limits that acted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<LoopLimit>,
    /// What ended the loop: a sufficiency rule, a hard limit, or no wider period.
    pub stopped_by: StopRule,
    /// Milliseconds the recall had run when the loop ended.
    pub elapsed_ms: f64,
}

/// What the loop decided.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopOutcome {
    /// The final stage's confidence.
    pub confidence: CueConfidence,
    /// The final stage's envelope.
    pub envelope: Period,
    /// Envelope rows in cue order (cosine desc, newest, ref), cut to `depth`.
    pub found: Vec<CueRow>,
    /// The trace.
    pub report: LoopReport,
}

impl LoopOutcome {
    /// Each fetched row's prior inputs: its time, and its cue rank when the loop found it.
    pub fn prior_rows(
        &self,
        pool: &[CueRow],
    ) -> std::collections::HashMap<Ref, super::prior::PriorRow> {
        let mut rows: std::collections::HashMap<Ref, super::prior::PriorRow> = pool
            .iter()
            .map(|r| {
                (
                    r.r#ref,
                    super::prior::PriorRow {
                        at_ms: Some(r.at_ms),
                        ..super::prior::PriorRow::default()
                    },
                )
            })
            .collect();
        for (rank, row) in self.found.iter().enumerate() {
            if let Some(p) = rows.get_mut(&row.r#ref) {
                p.cue_rank = Some(rank);
            }
        }
        rows
    }
}

/// The envelope the single fetch is aimed at: the period widened by the widest confidence a
/// revision may reach, so every later stage is a re-filter of what was fetched.
pub fn fetch_envelope(period: Period, confidence: CueConfidence) -> Period {
    period.widen(confidence.wider().unwrap_or(confidence))
}

/// Cue order: cosine descending (rows without one after), newer first, then ref.
pub fn cue_order(a: &CueRow, b: &CueRow) -> std::cmp::Ordering {
    let ca = a.cosine.unwrap_or(f64::NEG_INFINITY);
    let cb = b.cosine.unwrap_or(f64::NEG_INFINITY);
    cb.total_cmp(&ca)
        .then(b.at_ms.cmp(&a.at_ms))
        .then(a.r#ref.cmp(&b.r#ref))
}

/// Runs the stages over `pool` (the envelope fetch, already cut to `row_cap`; `pool_cut`
/// says whether the cap acted). `elapsed_ms` reads the recall's clock. At the end of each
/// stage the hard limits are checked first (milliseconds, then stages); a limit that holds
/// stops the loop and is reported as acted unless the stage was sufficient anyway; then
/// sufficiency ([`judge`]); an insufficient stage is revised one confidence step.
pub fn run(
    config: &CueConfig,
    period: Period,
    confidence: CueConfidence,
    pool: &[CueRow],
    pool_cut: bool,
    sufficiency: &Sufficiency,
    elapsed_ms: impl Fn() -> f64,
) -> LoopOutcome {
    let mut limits = Vec::new();
    if pool_cut {
        limits.push(LoopLimit::Candidates);
    }
    let mut stages = Vec::new();
    let mut current = confidence;
    loop {
        let envelope = period.widen(current);
        let mut found: Vec<CueRow> = pool
            .iter()
            .filter(|row| envelope.contains(row.at_ms))
            .copied()
            .collect();
        found.sort_by(cue_order);
        let held = found.len();
        let stage = stages.len();
        // Hard limits first: they bound whether another stage may start at all.
        let limit = if elapsed_ms() > config.max_ms {
            Some(LoopLimit::Milliseconds)
        } else if stage + 1 >= config.max_stages.max(1) {
            Some(LoopLimit::Stages)
        } else {
            None
        };
        let sufficient = judge(&found, current.seats(), sufficiency);
        let mut report = StageReport {
            stage,
            confidence: current,
            envelope: envelope.text(),
            fetched: stage == 0,
            found: held,
            sufficient,
            outcome: StageOutcome::Found,
        };
        let (next, stop) = match (sufficient, limit) {
            (Some(rule), _) => (None, StopRule::from(rule)),
            (None, Some(limit)) => {
                limits.push(limit);
                report.outcome = StageOutcome::LimitHit;
                let stop = match limit {
                    LoopLimit::Milliseconds => StopRule::Milliseconds,
                    _ => StopRule::Stages,
                };
                (None, stop)
            }
            (None, None) => match current.wider() {
                Some(wider) => {
                    report.outcome = StageOutcome::Widened;
                    (Some(wider), StopRule::NoWiderPeriod)
                }
                None => {
                    report.outcome = StageOutcome::NoWiderPeriod;
                    (None, StopRule::NoWiderPeriod)
                }
            },
        };
        stages.push(report);
        match next {
            Some(wider) => current = wider,
            None => {
                found.truncate(config.depth);
                return LoopOutcome {
                    confidence: current,
                    envelope,
                    found,
                    report: LoopReport {
                        policy: POLICY,
                        fetches: 1,
                        fetch_envelope: fetch_envelope(period, confidence).text(),
                        candidates: pool.len(),
                        stages,
                        limits,
                        stopped_by: stop,
                        elapsed_ms: elapsed_ms(),
                    },
                };
            }
        }
    }
}
