//! `cpersona index rebuild [--table T]`, `index flush`, `index merge` and `index status`:
//! build, refresh and fold the index segments from the database (progress on stderr) and
//! report them as JSON on stdout. The index is derived data; these commands never change a
//! row. `serve` flushes and merges in the background, so none of them is needed to keep
//! recall fast; they are for operators who schedule the work (`CPERSONA_INDEX_AUTO_MERGE`).

use cpersona_engine::IndexTable;
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
    admin::print_json(&outcomes)
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
