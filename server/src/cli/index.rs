//! `cpersona index rebuild [--table T]`, `index flush`, `index merge` and `index status`:
//! build, refresh and fold the index segments from the database (progress on stderr) and
//! report them as JSON on stdout. The index is derived data; these commands never change a
//! row. `serve` flushes and merges in the background, so none of them is needed to keep
//! recall fast; they are for operators who schedule the work (`CPERSONA_INDEX_AUTO_MERGE`).
//! `cpersona reembed` lives here too: it rewrites the vectors the index is built from.

use cpersona_engine::{Engine, IndexTable};
use indicatif::{ProgressBar, ProgressStyle};

use crate::cli::{RunError, Table, admin};
use crate::config::Config;

/// `index rebuild`: each table (or the one asked for), one progress bar each.
pub(crate) fn rebuild(config: &Config, table: Option<Table>) -> Result<(), RunError> {
    let engine = admin::open_engine(config)?;
    let tables: Vec<IndexTable> = match table {
        Some(Table::Memories) => vec![IndexTable::Memories],
        Some(Table::Episodes) => vec![IndexTable::Episodes],
        Some(Table::Blocks) => vec![IndexTable::Blocks],
        None => IndexTable::ALL.to_vec(),
    };
    let style = ProgressStyle::with_template("{prefix:>9} [{bar:40}] {pos}/{len} rows {elapsed}")
        .map_err(anyhow::Error::from)?
        .progress_chars("=> ");
    let mut outcomes = Vec::new();
    for table in tables {
        let bar = ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        bar.set_style(style.clone());
        bar.set_prefix(table.name());
        let outcome = engine.rebuild_index(table, &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        });
        bar.finish();
        outcomes.push(outcome.map_err(anyhow::Error::from)?);
    }
    admin::print_json(&outcomes)
}

/// `index status`.
pub(crate) fn status(config: &Config) -> Result<(), RunError> {
    let engine = admin::open_engine(config)?;
    let status = engine.index_status().map_err(anyhow::Error::from)?;
    admin::print_json(&status)
}

/// `index flush`: until every table is up to the change log (a long backlog takes several).
pub(crate) fn flush(config: &Config) -> Result<(), RunError> {
    let engine = admin::open_engine(config)?;
    admin::print_json(&flush_all(&engine)?)
}

fn flush_all(engine: &Engine) -> Result<Vec<cpersona_engine::FlushOutcome>, RunError> {
    let mut outcomes = Vec::new();
    for table in IndexTable::ALL {
        while let Some(outcome) = engine.flush_index(table).map_err(anyhow::Error::from)? {
            let raced = outcome.raced;
            outcomes.push(outcome);
            if raced {
                break;
            }
        }
    }
    Ok(outcomes)
}

/// `index merge`: every merge the policy picks, until none is left.
pub(crate) fn merge(config: &Config) -> Result<(), RunError> {
    let engine = admin::open_engine(config)?;
    let mut merges = Vec::new();
    for table in IndexTable::ALL {
        while let Some(merge) = engine.merge_index(table).map_err(anyhow::Error::from)? {
            merges.push(merge);
        }
    }
    admin::print_json(&merges)
}

/// Rows one `reembed` step embeds: one short transaction each, as the background task does.
const REEMBED_STEP_ROWS: usize = 64;

/// `reembed`: adopts the configured embedder when the store holds another model's vectors
/// (even over a real model, even with `CPERSONA_AUTO_REEMBED=false`), re-embeds every row of
/// another model with a progress bar on stderr, embeds the rows the queue still owes a
/// vector, flushes the index so recall searches them from segments at once, and prints the
/// final progress as JSON. Safe to interrupt: a later
/// run, or `serve`, resumes.
pub(crate) fn reembed(config: &Config) -> Result<(), RunError> {
    let engine = admin::open_engine(config)?;
    let start = engine.start_reembed().map_err(anyhow::Error::from)?;
    if let Some(reason) = &start.blocked {
        return Err(anyhow::anyhow!("cannot re-embed: {reason}").into());
    }
    let style =
        ProgressStyle::with_template("reembed [{bar:40}] {pos}/{len} rows {per_sec} eta {eta}")
            .map_err(anyhow::Error::from)?
            .progress_chars("=> ");
    let bar =
        ProgressBar::with_draw_target(Some(start.rows), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(style);
    bar.set_position(start.done);
    let mut idle_steps = 0;
    loop {
        let step = engine
            .reembed_step(REEMBED_STEP_ROWS)
            .map_err(anyhow::Error::from)?;
        bar.set_length(step.progress.rows);
        bar.set_position(step.progress.done);
        if let Some(reason) = step.failed {
            bar.abandon();
            return Err(anyhow::anyhow!(
                "re-embedding stopped ({reason}); {} rows remain, run it again to resume",
                step.progress.remaining
            )
            .into());
        }
        let worked = step.embedded + step.derived > 0;
        if !step.progress.active && (step.finished || !worked) {
            break;
        }
        // A step without work restarts a pass at the first row; two in a row mean rows that
        // cannot be re-embedded.
        idle_steps = if worked { 0 } else { idle_steps + 1 };
        if idle_steps > 2 {
            bar.abandon();
            return Err(anyhow::anyhow!(
                "re-embedding made no progress: {} rows of another model remain",
                step.progress.remaining
            )
            .into());
        }
    }
    bar.finish();
    // Rows that never had a vector (queued while the embedder was down, or imported without
    // one) are owed one too: the queue drains with the same embedder.
    loop {
        let drained = engine
            .drain_embedding_queue_now(REEMBED_STEP_ROWS)
            .map_err(anyhow::Error::from)?;
        if let Some(reason) = drained.last_error {
            return Err(anyhow::anyhow!(
                "re-embedded; {} queued rows still wait for a vector ({reason})",
                drained.remaining
            )
            .into());
        }
        if drained.remaining == 0 || drained.embedded == 0 {
            break;
        }
    }
    flush_all(&engine)?;
    admin::print_json(&engine.reembed_progress().map_err(anyhow::Error::from)?)
}
