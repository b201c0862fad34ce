//! `cpersona replay TRACE --set depth=100 [--set k=v ...] [--expect mem:12] [--store]`:
//! re-scores a saved recall trace offline with conditions changed (`cpersona_engine::replay`)
//! and prints the rows before and after, what had to be re-run, and with `--expect` the
//! failure code (`cpersona_engine::taxonomy`). Offline by default: no embedder, no database;
//! `--store` reads the expected row's facts from the database (read only) and lets the
//! recall loop's codes re-run the envelope fetch (the trace's query embedded again);
//! `--intended-cue JSON` names the cue the caller meant (`INTENT_MISLEADING`).

use std::path::PathBuf;

use anyhow::Context;
use cpersona_engine::recall::Period;
use cpersona_engine::taxonomy::Attribution;
use cpersona_engine::{Engine, TimeCue};

use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, ReplayOutcome, replay};
use cpersona_engine::taxonomy::{EnvelopeFetch, LoopInputs, attribute_with};
use cpersona_engine::trace::RecallTrace;
use serde_json::{Value, json};

use crate::cli::{RunError, admin};
use crate::config::Config;

/// What `cpersona replay` was asked.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// A trace written by `cpersona recall --trace-out` (or a `recall` tool's `trace`).
    pub trace: PathBuf,
    /// One changed condition, `key=value`: depth, threshold, gate=on|off, arm=ARM (alone),
    /// arm_off=ARM, weight.ARM=W, fusion=rrf|rsf, rrf_k, adaptive=on|off, adaptive.floor,
    /// adaptive.power, limit, budget, full_content, deep, cue=off,
    /// cue.confidence=sure|likely|vague, cue.propagation=off. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// The ref that should have come back (`mem:12`): prints its failure code.
    #[arg(long, value_name = "REF")]
    pub expect: Option<String>,
    /// With --expect: read the expected row's facts from the database (capture and
    /// representation misses need them).
    #[arg(long)]
    pub store: bool,
    /// With --expect: the time cue the caller meant, as the `time_cue` argument's JSON
    /// (`{"after": "2024-05-01", "before": "2024-05-02", "confidence": "sure"}`).
    #[arg(long, value_name = "JSON")]
    pub intended_cue: Option<String>,
}

/// Rows best first: position, ref, fused score.
fn rows(messages: impl DoubleEndedIterator<Item = (String, Value)>) -> Vec<Value> {
    messages
        .rev()
        .enumerate()
        .map(|(position, (r, score))| json!({"position": position, "ref": r, "score": score}))
        .collect()
}

/// The replayed rows: the recorded held places, then the replayed window (the console
/// shows the same rows).
pub(crate) fn response_rows(out: &ReplayOutcome) -> Vec<Value> {
    let held = out.held.iter().map(|m| {
        (
            m["ref"].as_str().unwrap_or_default().to_owned(),
            m["score"].clone(),
        )
    });
    let window = out
        .response
        .messages
        .iter()
        .map(|m| (m.r#ref.to_string(), json!(m.score)));
    rows(held.chain(window))
}

/// The trace's own rows, best first.
pub(crate) fn trace_rows(trace: &RecallTrace) -> Vec<Value> {
    let messages = trace.response["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    rows(messages.into_iter().map(|m| {
        (
            m["ref"].as_str().unwrap_or_default().to_owned(),
            m["score"].clone(),
        )
    }))
}

/// Runs the replay and prints the report.
pub(crate) fn run(config: &Config, args: ReplayArgs) -> Result<(), RunError> {
    let text = std::fs::read_to_string(&args.trace)
        .with_context(|| format!("cannot read {}", args.trace.display()))?;
    let trace = RecallTrace::from_json(&text)
        .with_context(|| format!("{} is not a recall trace", args.trace.display()))
        .map_err(RunError::config)?;
    let changes =
        ReplayChanges::parse_all(args.sets.iter().map(String::as_str)).map_err(RunError::config)?;
    let expected: Option<Ref> = args
        .expect
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(RunError::config)?;
    if args.store && expected.is_none() {
        return Err(RunError::config(anyhow::anyhow!("--store needs --expect")));
    }
    let intended = args
        .intended_cue
        .as_deref()
        .map(|text| -> anyhow::Result<TimeCue> {
            if expected.is_none() {
                anyhow::bail!("--intended-cue needs --expect");
            }
            let value: Value = serde_json::from_str(text).context("--intended-cue is not JSON")?;
            Ok(TimeCue::from_json(&value)?)
        })
        .transpose()
        .map_err(RunError::config)?;
    let out = replay(&trace, &changes).context("replay failed")?;
    let mut report = json!({
        "trace": args.trace,
        "changes": out.changes,
        "exact": out.exact,
        "rerun": out.rerun,
        "notes": out.notes,
        "unchanged": out.unchanged,
        "before": trace_rows(&trace),
        "after": response_rows(&out),
    });
    if let Some(expected) = expected {
        let engine = if args.store {
            Some(admin::open_engine(config)?)
        } else {
            None
        };
        let attribution = attribute(engine.as_deref(), &trace, expected, intended)?;
        report["attribution"] = serde_json::to_value(&attribution)?;
        report["after_expected"] = json!(out.refs_best_first().iter().position(|r| *r == expected));
    }
    admin::print_json(&report)
}

/// The failure code of `expected` under `trace`; with `engine`, the row's facts are read
/// from the store (read only) and the loop's codes may re-run the envelope fetch. The
/// console's "why did this not come back" form runs the same.
pub(crate) fn attribute(
    engine: Option<&Engine>,
    trace: &RecallTrace,
    expected: Ref,
    intended: Option<TimeCue>,
) -> anyhow::Result<Attribution> {
    let facts = match engine {
        Some(engine) => {
            let s = &trace.scope;
            Some(
                engine
                    .row_facts(
                        &s.agent_id,
                        s.project_id.as_deref(),
                        s.channel.as_deref(),
                        expected,
                    )
                    .context("cannot read the expected row")?,
            )
        }
        None => None,
    };
    let refetch = |period: Period| -> cpersona_engine::Result<EnvelopeFetch> {
        match engine {
            Some(engine) => engine.refetch_envelope(trace, period),
            None => Ok(EnvelopeFetch::default()),
        }
    };
    let inputs = LoopInputs {
        intended,
        refetch: engine
            .is_some()
            .then_some(&refetch as &dyn Fn(Period) -> cpersona_engine::Result<EnvelopeFetch>),
    };
    attribute_with(trace, expected, facts, &inputs).context("attribution failed")
}
