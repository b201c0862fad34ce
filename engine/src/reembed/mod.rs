//! Re-embedding: after the store adopted a new embedder (`store/target.rs`), every memory,
//! episode, overflow node and block still carrying another model's vector gets one of the
//! target's, in bounded steps the server's background task (or `cpersona reembed`) repeats.
//!
//! - **Bounded**: a step embeds at most `max_rows` rows, outside the writer lock, then writes
//!   them in one short transaction (compare-and-swap on the text: an edit meanwhile was
//!   embedded by its own write), so requests interleave between steps.
//! - **Resumable and crash-safe**: the work is "rows whose vector is not the target's", read
//!   from the rows themselves, so a restart (or kill -9) resumes where the last committed step
//!   left off; the cursor only saves rescans.
//! - **Never mixed**: recall searches only rows carrying the target's vector (the index and
//!   its live tail filter by model), so rows not yet done are missing from the vector arm,
//!   never compared with a query of the other model; recall says what share it covered.
//! - **Finished**: when no row of another model is left, the store's recorded identity moves
//!   to the target and the adoption's `meta` keys go.

mod read;

use serde::Serialize;

use crate::derived::refresh_derived;
use crate::error::Result;
use crate::store::queue::QueueStatus;
use crate::store::reembed::ReembedProgress;
use crate::store::target::record_identity;
use crate::store::{Store, lock};

/// What one step did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReembedStep {
    /// Memories and episodes that got the target's vector.
    pub embedded: usize,
    /// Records whose nodes and blocks were divided and embedded again.
    pub derived: usize,
    /// Why the step stopped early (the embedder failed); the rows stay for the next step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// True when this step finished the re-embedding (the store's identity moved).
    pub finished: bool,
    /// Where the re-embedding stands after the step.
    pub progress: ReembedProgress,
}

impl ReembedStep {
    /// True when a next step has work (it did some and more remains, without failing).
    pub fn more(&self) -> bool {
        self.failed.is_none() && self.progress.active && self.embedded + self.derived > 0
    }
}

/// Counts the store against its target and keeps the count for recall's note.
pub(crate) fn progress(store: &Store) -> Result<ReembedProgress> {
    let target = store.vector_target();
    let counts = store.read(|conn| read::counts(conn, &target.model_id, target.dim))?;
    let remaining = counts.rows - counts.done.min(counts.rows);
    let progress = ReembedProgress {
        active: remaining + counts.derived_other > 0,
        from_model: target.reembed_from.as_ref().map(|(model, _)| model.clone()),
        to_model: target.model_id.clone(),
        to_dim: target.dim,
        rows: counts.rows,
        done: counts.done,
        remaining,
        derived_remaining: counts.derived_other,
        share_covered: share(counts.done, counts.rows),
        blocked: (!target.embedder_matches).then(|| blocked_reason(store)),
    };
    lock(&store.reembed).progress = Some(progress.clone());
    Ok(progress)
}

/// The last counted progress when a re-embedding is under way (no rows are counted here:
/// recall calls it on every query).
pub(crate) fn under_way(store: &Store) -> Option<ReembedProgress> {
    lock(&store.reembed)
        .progress
        .clone()
        .filter(|progress| progress.active)
}

fn share(done: u64, rows: u64) -> f64 {
    if rows == 0 {
        1.0
    } else {
        done as f64 / rows as f64
    }
}

fn blocked_reason(store: &Store) -> String {
    let identity = store.embedder.identity();
    let target = store.vector_target();
    format!(
        "the embedder {} ({} dims) does not produce the store's vectors {} ({} dims); \
         `cpersona reembed` re-embeds the store with it",
        identity.model_id, identity.dim, target.model_id, target.dim
    )
}

/// `get_queue_status`, with the re-embedding's progress while one is under way or blocked.
pub(crate) fn queue_status(store: &Store) -> Result<QueueStatus> {
    let mut status = store.get_queue_status()?;
    let target = store.vector_target();
    if target.reembed_from.is_some() || !target.embedder_matches || under_way(store).is_some() {
        status.reembed = Some(progress(store)?);
    }
    Ok(status)
}

/// An operator's start: adopts the configured embedder when the store's target is another
/// model's (see `store/target.rs`), then counts.
pub(crate) fn start(store: &Store) -> Result<ReembedProgress> {
    if !store.vector_target().embedder_matches {
        store.adopt_embedder()?;
        lock(&store.reembed).cursors = [0, 0];
    }
    progress(store)
}

/// One bounded step: up to `max_rows` memories and episodes of another model get the
/// target's vector, then up to `max_rows` records' nodes and blocks; when nothing of
/// another model is left, the store's identity moves to the target.
pub(crate) fn step(store: &Store, max_rows: usize) -> Result<ReembedStep> {
    let target = store.vector_target();
    let mut done = ReembedStep {
        embedded: 0,
        derived: 0,
        failed: None,
        finished: false,
        progress: ReembedProgress::default(),
    };
    if !target.embedder_matches {
        done.progress = progress(store)?;
        return Ok(done);
    }
    let format = store.settings.embedding_format.tag();
    let mut budget = max_rows.max(1);
    let mut exhausted = true;
    for (slot, table) in read::TABLES.into_iter().enumerate() {
        if budget == 0 {
            exhausted = false;
            break;
        }
        let cursor = lock(&store.reembed).cursors[slot];
        let batch = store.read(|conn| {
            read::next_batch(conn, table, cursor, &target.model_id, target.dim, budget)
        })?;
        if batch.len() == budget {
            exhausted = false;
        }
        let Some(&(last_id, _)) = batch.last() else {
            continue;
        };
        let texts: Vec<&str> = batch.iter().map(|(_, text)| text.as_str()).collect();
        let blobs = match store.embed_for_store(&texts) {
            Ok(blobs) => blobs,
            Err(reason) => {
                done.failed = Some(reason);
                done.progress = progress(store)?;
                return Ok(done);
            }
        };
        let landed = store.write(|tx| {
            let mut landed = 0;
            for ((id, text), blob) in batch.iter().zip(&blobs) {
                let identity = (target.model_id.as_str(), target.dim, format);
                if read::write_vector(tx, table, *id, text, blob, identity)? {
                    landed += 1;
                }
            }
            Ok(landed)
        })?;
        lock(&store.reembed).cursors[slot] = last_id;
        done.embedded += landed;
        budget = budget.saturating_sub(batch.len());
    }
    // Nodes and blocks: each record is divided again (the new model counts tokens its own
    // way) and its derived rows replaced, embedded outside the writer lock.
    let owed = store.read(|conn| read::derived_of_other_model(conn, &target.model_id, max_rows))?;
    for r in owed {
        let report = refresh_derived(store, r)?;
        if let Some(reason) = report.derived_queued {
            done.failed = Some(reason);
            break;
        }
        done.derived += 1;
    }
    let mut progress = progress(store)?;
    if exhausted && done.failed.is_none() {
        if progress.active {
            // A pass reached the end of both tables with rows left (written behind the cursor
            // by an adoption reverted and taken again): the next pass starts over.
            lock(&store.reembed).cursors = [0, 0];
        } else if target.reembed_from.is_some() {
            store.write(|tx| record_identity(tx, &target.model_id, target.dim))?;
            lock(&store.vectors).reembed_from = None;
            done.finished = true;
            progress.from_model = None;
            lock(&store.reembed).progress = Some(progress.clone());
        }
    }
    done.progress = progress;
    Ok(done)
}
