//! `cpersona recall --agent A QUERY [--limit N] [--time-cue JSON] [--trace-out FILE]`: one recall against the
//! database from the command line. The response goes to stdout as JSON; with `--trace-out`
//! the replayable trace (`cpersona_engine::trace`) is written to FILE for `cpersona replay`.
//! It reads only: it never writes a row.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use cpersona_engine::{RecallQuery, TimeCue};
use serde_json::json;

use crate::cli::{RunError, admin};
use crate::config::Config;

/// What `cpersona recall` was asked.
#[derive(Debug, clap::Args)]
pub struct RecallArgs {
    /// The agent whose memories are searched.
    #[arg(long = "agent", value_name = "AGENT_ID")]
    pub agent_id: String,
    /// The query (blank: the recency listing).
    pub query: String,
    /// Rows returned (1..=100).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub limit: u16,
    /// Project filter (`""` = the global pool only).
    #[arg(long, value_name = "PROJECT_ID")]
    pub project: Option<String>,
    /// Channel filter.
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    /// Halve the gate.
    #[arg(long)]
    pub deep: bool,
    /// Whole rows within the full-content budget.
    #[arg(long)]
    pub full_content: bool,
    /// A time cue as the `recall` tool takes it, as JSON, e.g.
    /// `{"ago": {"unit": "weeks", "value": 2}, "confidence": "likely"}`.
    #[arg(long, value_name = "JSON")]
    pub time_cue: Option<String>,
    /// Save the recall's trace here (JSON) for `cpersona replay`.
    #[arg(long, value_name = "FILE")]
    pub trace_out: Option<PathBuf>,
}

/// Runs the recall and prints `{response, advisories, trace_out}`.
pub(crate) fn run(config: &Config, args: RecallArgs) -> Result<(), RunError> {
    if args.agent_id.is_empty() {
        return Err(RunError::config(anyhow::anyhow!(
            "--agent must name an agent"
        )));
    }
    let time_cue = match &args.time_cue {
        Some(text) => {
            let value: serde_json::Value = serde_json::from_str(text).map_err(|err| {
                RunError::config(anyhow::anyhow!("--time-cue is not JSON: {err}"))
            })?;
            Some(
                TimeCue::from_json(&value)
                    .map_err(|err| RunError::config(anyhow::anyhow!("--time-cue: {err}")))?,
            )
        }
        None => None,
    };
    let engine = admin::open_engine(config)?;
    let query = RecallQuery {
        agent_id: args.agent_id,
        project_id: args.project,
        channel: args.channel.filter(|c| !c.is_empty()),
        query: args.query,
        limit: usize::from(args.limit),
        deep: args.deep,
        full_content: args.full_content,
        trace: args.trace_out.is_some(),
        time_cue,
        ..RecallQuery::default()
    };
    let result = engine.recall(&query).context("recall failed")?;
    if let Some(path) = &args.trace_out {
        let trace = result
            .trace()
            .context("the recall returned no trace capture")?;
        let mut file = std::fs::File::create(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        serde_json::to_writer_pretty(&mut file, &trace)?;
        writeln!(file)?;
        file.sync_all()?;
    }
    admin::print_json(&json!({
        "response": result.response,
        "advisories": result.advisories,
        "trace_out": args.trace_out,
    }))
}
