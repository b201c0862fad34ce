//! The time cue's part of a trace: the plan the Deliberative loop handed the pure pass (the
//! prior with its final envelope, what it knew per row, the envelope's rows in cue order,
//! the seats and what cue propagation may follow), so that a replay re-applies the cue's
//! re-order, propagation and held seats exactly as the recall did.
//!
//! It holds event times, cue ranks, cosines and source ids: never a vector, never text.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::recall::stages::cue::Period;
use crate::recall::stages::cue_plan::CuePlan;
use crate::recall::stages::cue_plan::PoolContext;
use crate::recall::stages::deliberate::CueRow;
use crate::recall::stages::prior::{Prior, PriorRow};
use crate::refs::Ref;
use crate::refs::ref_serde;

/// What the prior knew about one row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceCueRow {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// The prior's inputs for it.
    #[serde(flatten)]
    pub prior: PriorRow,
}

/// One envelope row in cue order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceFoundRow {
    /// The row.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// Its event time, UTC ms.
    pub at_ms: i64,
    /// Its cosine to the query, if any.
    pub cosine: Option<f64>,
}

/// An episode span propagation may follow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceEpisodeSpan {
    /// The episode.
    #[schemars(with = "String")]
    #[serde(rename = "ref", with = "ref_serde")]
    pub r#ref: Ref,
    /// Its span.
    pub span: Period,
}

/// The cue plan as saved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceCue {
    /// The prior (the loop's final envelope, lift and depth).
    pub prior: Prior,
    /// What the prior knew per row, by ref.
    pub rows: Vec<TraceCueRow>,
    /// The envelope's rows in cue order (the seat candidates).
    pub found: Vec<TraceFoundRow>,
    /// Held places beyond the count.
    pub seats: usize,
    /// Known rows' `source.id`, by ref text.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Episode spans meeting the envelope.
    #[serde(default)]
    pub episodes: Vec<TraceEpisodeSpan>,
    /// Declared record relations (subject, object) with an end among the fetched rows, as
    /// ref text; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<[String; 2]>,
    /// True when the relation cap cut the relations read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relations_cut: bool,
    /// The envelope fetch's rows (newest first) with cosines, for confidence replays.
    #[serde(default)]
    pub fetched: Vec<TraceFoundRow>,
    /// The envelope the fetch was aimed at.
    #[serde(default)]
    pub fetch_envelope: Option<Period>,
    /// True when the row cap cut the fetch.
    #[serde(default)]
    pub fetch_cut: bool,
}

fn found_row(row: &CueRow) -> TraceFoundRow {
    TraceFoundRow {
        r#ref: row.r#ref,
        at_ms: row.at_ms,
        cosine: row.cosine,
    }
}

fn cue_row(row: &TraceFoundRow) -> CueRow {
    CueRow {
        r#ref: row.r#ref,
        at_ms: row.at_ms,
        cosine: row.cosine,
    }
}

impl TraceCue {
    /// The saved form of a plan (rows sorted by ref, so the same plan gives the same bytes).
    pub fn of(plan: &CuePlan) -> TraceCue {
        let mut rows: Vec<TraceCueRow> = plan
            .rows
            .iter()
            .map(|(r, prior)| TraceCueRow {
                r#ref: *r,
                prior: *prior,
            })
            .collect();
        rows.sort_by_key(|row| row.r#ref);
        TraceCue {
            prior: plan.prior,
            rows,
            found: plan.found.iter().map(found_row).collect(),
            seats: plan.seats,
            sources: plan
                .context
                .sources
                .iter()
                .map(|(r, s)| (r.to_string(), s.clone()))
                .collect(),
            episodes: plan
                .context
                .episodes
                .iter()
                .map(|(r, span)| TraceEpisodeSpan {
                    r#ref: *r,
                    span: *span,
                })
                .collect(),
            relations: plan
                .context
                .relations
                .iter()
                .map(|(a, b)| [a.to_string(), b.to_string()])
                .collect(),
            relations_cut: plan.context.relations_cut,
            fetched: plan.fetched.iter().map(found_row).collect(),
            fetch_envelope: plan.fetch_envelope,
            fetch_cut: plan.fetch_cut,
        }
    }

    /// The plan back.
    pub fn to_plan(&self) -> CuePlan {
        CuePlan {
            prior: self.prior,
            rows: self.rows.iter().map(|row| (row.r#ref, row.prior)).collect(),
            found: self.found.iter().map(cue_row).collect(),
            fetched: self.fetched.iter().map(cue_row).collect(),
            fetch_envelope: self.fetch_envelope,
            fetch_cut: self.fetch_cut,
            seats: self.seats,
            propagate: true,
            context: PoolContext {
                sources: self
                    .sources
                    .iter()
                    .filter_map(|(r, s)| Some((r.parse().ok()?, s.clone())))
                    .collect(),
                episodes: self.episodes.iter().map(|e| (e.r#ref, e.span)).collect(),
                relations: self
                    .relations
                    .iter()
                    .filter_map(|[a, b]| Some((a.parse().ok()?, b.parse().ok()?)))
                    .collect(),
                relations_cut: self.relations_cut,
            },
        }
    }
}
