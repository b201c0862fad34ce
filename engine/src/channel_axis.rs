//! `migrate_channel_axis`: CPersona's one-time repair of Discord bridge rows. A bridge filed
//! memories under the bridge type (`channel = 'discord'`) instead of the concrete channel; the
//! channel id is recoverable from `metadata.session_id` (`"{channel_id}:{user_id}:{chunk}"` or
//! `"{channel_id}:shared"`). Only the `channel` column changes; a dry run (the default) reports
//! and writes nothing, and so does a paused bucket. Rows that cannot be recovered stay, or with
//! `globalize_unrecoverable` move to the global channel `""`.
//!
//! One difference from CPersona, on purpose: CPersona moves the declarations filed in
//! `'discord'` about a re-channelled memory along with it; here a memory that any declared
//! association names is left in `'discord'` and counted in `left_with_associations`, so no
//! association is ever separated from its row (moving them is a later change).

use rusqlite::{Connection, params_from_iter, types::Value};
use serde::Serialize;

use crate::error::Result;
use crate::scope::Scope;
use crate::store::Store;
use crate::text::check_agent;

/// `metadata.session_id` when the metadata is JSON.
const SESSION_ID: &str =
    "(CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.session_id') END)";
/// A session id that starts with a channel snowflake.
const SNOWFLAKE: &str = "'[0-9]*:*'";
/// Memories that a declared association names (a mention, a relation's end or its anchor).
const NAMED_BY_ASSOCIATION: &str = "(EXISTS (SELECT 1 FROM entity_mentions m \
     WHERE m.ref = 'mem:' || memories.id) OR EXISTS (SELECT 1 FROM relations r WHERE \
     (r.subject_kind = 'mem' AND r.subject_id = memories.id) OR \
     (r.object_kind = 'mem' AND r.object_id = memories.id) OR r.anchor_ref = 'mem:' || memories.id))";

/// `migrate_channel_axis`' arguments.
#[derive(Clone, Debug)]
pub struct ChannelAxisRequest {
    /// The agent; `""` = every agent.
    pub agent_id: String,
    /// Report only (CPersona's default).
    pub dry_run: bool,
    /// Move the rows that cannot be recovered to the global channel.
    pub globalize_unrecoverable: bool,
    /// Pause bucket: a paused one forces a dry run.
    pub session_key: String,
}

/// A recovered channel and its rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ChannelCount {
    /// The concrete channel id.
    pub channel: String,
    /// Rows recoverable into it.
    pub count: usize,
}

/// A recoverable row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ChannelSample {
    /// The memory.
    pub id: i64,
    /// Its concrete channel.
    pub recovered_channel: String,
    /// The session id it came from.
    pub session_id: String,
}

/// `migrate_channel_axis`' answer, CPersona's keys plus `left_with_associations`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ChannelAxisOutcome {
    /// The agent ("" = all).
    pub agent_id: String,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Rows whose channel is recoverable.
    pub recoverable_total: usize,
    /// The same per recovered channel, largest first.
    pub recoverable_by_channel: Vec<ChannelCount>,
    /// `'discord'` rows without a recoverable session id.
    pub unrecoverable_total: usize,
    /// Of those, rows whose metadata is not JSON.
    pub invalid_metadata_total: usize,
    /// Their ids, at most 10.
    pub invalid_metadata_ids: Vec<i64>,
    /// As asked.
    pub globalize_unrecoverable: bool,
    /// Rows re-channelled.
    pub migrated: usize,
    /// Rows moved to the global channel.
    pub globalized: usize,
    /// Rows left in `'discord'` because a declared association names them.
    pub left_with_associations: usize,
    /// Up to 5 recoverable rows.
    pub samples: Vec<ChannelSample>,
    /// Present (true) when a pause forced the dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repairs_skipped: Option<bool>,
}

/// Reports, and unless a dry run re-channels, the `'discord'` rows in scope.
pub(crate) fn migrate_channel_axis(
    store: &Store,
    req: &ChannelAxisRequest,
) -> Result<ChannelAxisOutcome> {
    if !req.agent_id.is_empty() {
        check_agent(&req.agent_id)?;
    }
    let paused = store.pause_expiry(&req.session_key).is_some();
    let dry_run = req.dry_run || paused;
    let agent = (!req.agent_id.is_empty()).then_some(req.agent_id.as_str());
    let (pred, values) = Scope::read(agent, None, None).predicate("");
    let recoverable = format!("channel = 'discord' AND {SESSION_ID} GLOB {SNOWFLAKE} AND {pred}");
    let unrecoverable = format!(
        "channel = 'discord' AND ({SESSION_ID} IS NULL OR NOT ({SESSION_ID} GLOB {SNOWFLAKE})) \
         AND {pred}"
    );
    let recovered = format!("substr({SESSION_ID}, 1, instr({SESSION_ID}, ':') - 1)");
    let mut outcome = store.read(|conn| {
        report(
            conn,
            req,
            &values,
            &recoverable,
            &unrecoverable,
            &recovered,
            &pred,
        )
    })?;
    outcome.dry_run = dry_run;
    outcome.repairs_skipped = (paused && !req.dry_run).then_some(true);
    if !dry_run {
        let (migrated, globalized) = store.write(|tx| {
            let migrated = tx.execute(
                &format!(
                    "UPDATE OR IGNORE memories SET channel = {recovered} \
                     WHERE {recoverable} AND NOT {NAMED_BY_ASSOCIATION}"
                ),
                params_from_iter(values.iter()),
            )?;
            let globalized = if req.globalize_unrecoverable {
                tx.execute(
                    &format!(
                        "UPDATE OR IGNORE memories SET channel = '' \
                         WHERE {unrecoverable} AND NOT {NAMED_BY_ASSOCIATION}"
                    ),
                    params_from_iter(values.iter()),
                )?
            } else {
                0
            };
            Ok((migrated, globalized))
        })?;
        outcome.migrated = migrated;
        outcome.globalized = globalized;
    }
    Ok(outcome)
}

fn report(
    conn: &Connection,
    req: &ChannelAxisRequest,
    values: &[Value],
    recoverable: &str,
    unrecoverable: &str,
    recovered: &str,
    pred: &str,
) -> Result<ChannelAxisOutcome> {
    let count = |sql: String| -> Result<usize> {
        let n: i64 = conn.query_row(&sql, params_from_iter(values.iter()), |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    };
    let mut stmt = conn.prepare(&format!(
        "SELECT {recovered} AS ch, count(*) AS n FROM memories WHERE {recoverable} \
         GROUP BY ch ORDER BY n DESC, ch"
    ))?;
    let by_channel = stmt
        .query_map(params_from_iter(values.iter()), |r| {
            Ok(ChannelCount {
                channel: r.get(0)?,
                count: usize::try_from(r.get::<_, i64>(1)?).unwrap_or(0),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut stmt = conn.prepare(&format!(
        "SELECT id, {recovered}, {SESSION_ID} FROM memories WHERE {recoverable} ORDER BY id LIMIT 5"
    ))?;
    let samples = stmt
        .query_map(params_from_iter(values.iter()), |r| {
            Ok(ChannelSample {
                id: r.get(0)?,
                recovered_channel: r.get(1)?,
                session_id: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let invalid = format!("channel = 'discord' AND NOT json_valid(metadata) AND {pred}");
    let mut stmt = conn.prepare(&format!(
        "SELECT id FROM memories WHERE {invalid} ORDER BY id LIMIT 10"
    ))?;
    let invalid_ids = stmt
        .query_map(params_from_iter(values.iter()), |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    let left = count(format!(
        "SELECT count(*) FROM memories WHERE channel = 'discord' AND {pred} \
         AND {NAMED_BY_ASSOCIATION}"
    ))?;
    Ok(ChannelAxisOutcome {
        agent_id: req.agent_id.clone(),
        dry_run: true,
        recoverable_total: by_channel.iter().map(|c| c.count).sum(),
        recoverable_by_channel: by_channel,
        unrecoverable_total: count(format!(
            "SELECT count(*) FROM memories WHERE {unrecoverable}"
        ))?,
        invalid_metadata_total: count(format!("SELECT count(*) FROM memories WHERE {invalid}"))?,
        invalid_metadata_ids: invalid_ids,
        globalize_unrecoverable: req.globalize_unrecoverable,
        migrated: 0,
        globalized: 0,
        left_with_associations: left,
        samples,
        repairs_skipped: None,
    })
}
