//! The three sets of issue 23, kept apart: development (where failures are looked at),
//! validation (where fixes are chosen between) and a frozen holdout (opened once, at the end).
//! The assignment is a pure function of the task's name and its units, fixed before any tuning
//! (`scale/RESULTS.md`, "The three sets"), so no later run can move a query between sets:
//!
//! - a whole task named in [`HOLDOUT_TASKS`] is holdout only (a corpus kind no tuning sees);
//! - a task with [`MIN_GROUPS`] or more candidate sets (LoCoMo's conversations, TMD's logs) is
//!   split by set, so a conversation's rows and questions stay in one split;
//! - any other task (a BEIR folder: one corpus) keeps its whole corpus and splits its queries,
//!   within each subtask so every subtask is in every split.
//!
//! Units are ordered by FNV-1a 64 of `cpersona-split-v1 NUL task NUL unit` (the task's name
//! without a `+dated` suffix, so a variant splits as its base task does); the first 40% are
//! development, the next 30% validation, the rest holdout (each cut rounded to nearest).

use std::collections::{BTreeMap, HashSet};

use super::Dataset;

/// Tasks held out whole (by [`base_task`] name).
pub const HOLDOUT_TASKS: &[&str] = &["pyfaq"];
/// A task with at least this many candidate sets is split by set.
pub const MIN_GROUPS: usize = 6;
/// Cumulative shares: development up to 0.4, validation up to 0.7, holdout the rest.
const CUTS: (f64, f64) = (0.4, 0.7);

/// One of the three sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Split {
    /// Where failures are looked at.
    Dev,
    /// Where fixes are chosen between.
    Validation,
    /// Opened once, at the end.
    Holdout,
}

impl Split {
    /// The name the harness and the report use.
    pub fn name(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Validation => "val",
            Split::Holdout => "holdout",
        }
    }

    /// Parses `dev`, `val` (or `validation`), `holdout`.
    pub fn parse(s: &str) -> Option<Split> {
        match s {
            "dev" => Some(Split::Dev),
            "val" | "validation" => Some(Split::Validation),
            "holdout" => Some(Split::Holdout),
            _ => None,
        }
    }
}

/// A task's name without a `+dated` suffix, lower-cased.
pub fn base_task(task: &str) -> String {
    task.strip_suffix("+dated").unwrap_or(task).to_lowercase()
}

fn unit_hash(task: &str, unit: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in "cpersona-split-v1"
        .bytes()
        .chain([0])
        .chain(task.bytes())
        .chain([0])
        .chain(unit.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Assigns `units` (distinct) to the three sets: ordered by hash, cut at 40% and 70%.
pub fn assign<'a>(task: &str, units: &[&'a str]) -> Vec<(&'a str, Split)> {
    let mut ordered: Vec<&str> = units.to_vec();
    ordered.sort_by_key(|u| (unit_hash(task, u), *u));
    let n = ordered.len() as f64;
    let dev_end = (CUTS.0 * n).round() as usize;
    let val_end = (CUTS.1 * n).round() as usize;
    ordered
        .into_iter()
        .enumerate()
        .map(|(i, u)| {
            let split = if i < dev_end {
                Split::Dev
            } else if i < val_end {
                Split::Validation
            } else {
                Split::Holdout
            };
            (u, split)
        })
        .collect()
}

/// How a task is split (for the report and `RESULTS.md`).
pub fn rule(ds: &Dataset) -> &'static str {
    let task = base_task(&ds.task);
    if HOLDOUT_TASKS.contains(&task.as_str()) {
        "whole task holdout"
    } else if group_count(ds) >= MIN_GROUPS {
        "by candidate set"
    } else {
        "by query within subtask"
    }
}

fn group_count(ds: &Dataset) -> usize {
    ds.docs
        .iter()
        .map(|d| d.group.as_str())
        .collect::<HashSet<_>>()
        .len()
}

/// The part of `ds` in `split` (task renamed `<task> [split]`); empty when none of it is.
pub fn select(ds: &Dataset, split: Split) -> Dataset {
    let task = base_task(&ds.task);
    let mut out = ds.clone();
    out.task = format!("{} [{}]", ds.task, split.name());
    if HOLDOUT_TASKS.contains(&task.as_str()) {
        if split != Split::Holdout {
            out.docs.clear();
            out.queries.clear();
        }
        return out;
    }
    if group_count(ds) >= MIN_GROUPS {
        let mut groups: Vec<&str> = Vec::new();
        for d in &ds.docs {
            if !groups.contains(&d.group.as_str()) {
                groups.push(&d.group);
            }
        }
        let kept: HashSet<String> = assign(&task, &groups)
            .into_iter()
            .filter(|(_, s)| *s == split)
            .map(|(g, _)| g.to_owned())
            .collect();
        out.docs.retain(|d| kept.contains(&d.group));
        out.queries.retain(|q| kept.contains(&q.group));
        return out;
    }
    let mut by_subtask: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for q in &ds.queries {
        by_subtask.entry(&q.subtask).or_default().push(&q.id);
    }
    let mut kept: HashSet<String> = HashSet::new();
    for (subtask, ids) in by_subtask {
        let scope = format!("{task}\u{0}{subtask}");
        kept.extend(
            assign(&scope, &ids)
                .into_iter()
                .filter(|(_, s)| *s == split)
                .map(|(id, _)| id.to_owned()),
        );
    }
    out.queries.retain(|q| kept.contains(&q.id));
    out
}
