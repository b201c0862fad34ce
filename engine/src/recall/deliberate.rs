//! The Deliberative loop (design §1) in its shipped form: the Dynamic Retrieval Envelope starts
//! at the cue's period widened by its confidence; the store is fetched from at most twice per
//! recall (the ordinary arms, then one envelope fetch aimed at the widest period the loop can
//! reach); every later stage re-filters the pool already held. Hard limits (stages, candidates
//! considered, milliseconds) are checked before sufficiency (the envelope holds rows), and the
//! one revision widens one confidence step when the period holds nothing.
//!
//! This module is pure: the store hands in the fetched pool and a clock reading. It must never
//! fetch, never widen isolation (it has no access to it), and never drop a row from the
//! answer: what it decides is a [`Prior`](super::prior::Prior) and a number of held places.

use serde::{Deserialize, Serialize};

use super::candidate::Ref;
use super::cue::{CueConfidence, POLICY, Period, PeriodText};

/// Fetches of the store per recall, at most: the arms, and the envelope fetch.
pub const MAX_FETCHES: usize = 2;

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
    /// Sufficient: the envelope holds rows.
    Found,
    /// The envelope held nothing; the next stage widens it one step.
    Widened,
    /// The envelope held nothing and `vague` has no wider period.
    NoWiderPeriod,
    /// The envelope held nothing and a hard limit stopped the revision.
    LimitHit,
}

/// A hard limit that acted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// What the stage decided.
    pub outcome: StageOutcome,
}

/// The loop as it ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopReport {
    /// The policy version.
    pub policy: &'static str,
    /// Fetches of the store (≤ [`MAX_FETCHES`]).
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

/// The envelope the single fetch is aimed at: the period widened by the widest confidence a
/// revision may reach, so every later stage is a re-filter of what was fetched.
pub fn fetch_envelope(period: Period, confidence: CueConfidence) -> Period {
    period.widen(confidence.wider().unwrap_or(confidence))
}

/// Cue order: cosine descending (rows without one after), newer first, then ref.
fn cue_order(a: &CueRow, b: &CueRow) -> std::cmp::Ordering {
    let ca = a.cosine.unwrap_or(f64::NEG_INFINITY);
    let cb = b.cosine.unwrap_or(f64::NEG_INFINITY);
    cb.total_cmp(&ca)
        .then(b.at_ms.cmp(&a.at_ms))
        .then(a.r#ref.cmp(&b.r#ref))
}

/// Runs the stages over `pool` (the envelope fetch, already cut to `row_cap`; `pool_cut`
/// says whether the cap acted). `elapsed_ms` reads the recall's clock; it is checked before a
/// revision starts.
pub fn run(
    config: &CueConfig,
    period: Period,
    confidence: CueConfidence,
    pool: &[CueRow],
    pool_cut: bool,
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
        let mut report = StageReport {
            stage,
            confidence: current,
            envelope: envelope.text(),
            fetched: stage == 0,
            found: held,
            outcome: StageOutcome::Found,
        };
        let next = if held > 0 {
            None
        } else if stage + 1 >= config.max_stages.max(1) {
            limits.push(LoopLimit::Stages);
            report.outcome = StageOutcome::LimitHit;
            None
        } else if elapsed_ms() > config.max_ms {
            limits.push(LoopLimit::Milliseconds);
            report.outcome = StageOutcome::LimitHit;
            None
        } else {
            match current.wider() {
                Some(wider) => {
                    report.outcome = StageOutcome::Widened;
                    Some(wider)
                }
                None => {
                    report.outcome = StageOutcome::NoWiderPeriod;
                    None
                }
            }
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
                        fetches: MAX_FETCHES,
                        fetch_envelope: fetch_envelope(period, confidence).text(),
                        candidates: pool.len(),
                        stages,
                        limits,
                        elapsed_ms: elapsed_ms(),
                    },
                };
            }
        }
    }
}

/// The `time_cue` block of a recall response.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CueResponse {
    /// The policy version.
    pub policy: &'static str,
    /// The final stage's envelope (the period widened by `confidence`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<PeriodText>,
    /// The final confidence (one step wider than asked when revised).
    pub confidence: CueConfidence,
    /// True when the envelope was widened once because the period held nothing.
    pub revised: bool,
    /// Rows of the answer the cue moved up.
    pub moved: usize,
    /// Rows held beyond the count for the cue (listed first, lowest relevance).
    pub seated: usize,
    /// Why the cue was not used: `recent_only` (the period starts within the last 24 h, which
    /// an uncued recall already favours) or `empty_scope` (no dated rows to aim at).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<&'static str>,
    /// Hard limits that acted in the loop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<LoopLimit>,
}
