//! The recall-count bump (CPersona 2.5 §5.8): after a recall that returned memory rows, each
//! returned memory gets `recall_count + 1` and `last_recalled_at_ms = now`, which the
//! confidence report reads on later recalls.
//!
//! It runs only when confidence is on, the recall is not `deep`, the gate did not fall back
//! (rescued rows get no credit) and persistence is not paused for the caller's session. It
//! must never fail the recall (a failure becomes an advisory), never touch another agent's
//! rows (the UPDATE is keyed by the caller's agent as well as the ids), and never enter the
//! change log: `memories_log_au` fires only on content/vector columns, so a bump leaves index
//! generations and the live tail as they were.
//!
//! The credit is recorded in the store and written by the next upkeep pass
//! (`store/credits.rs` says why and what that costs); the confidence report reads it from
//! there meanwhile, so every recall sees the credit of the recalls before it.

use crate::recall::stages::config::RecallConfig;
use crate::recall::types::{RecallQuery, RecallResult};
use crate::refs::RefKind;
use crate::store::Store;

/// True when this recall gives no credit (confidence off, deep, gate fallback, paused).
fn skipped(store: &Store, config: &RecallConfig, q: &RecallQuery, result: &RecallResult) -> bool {
    !config.report_confidence
        || q.deep
        || result.response.gate_fallback
        || store.pause_expiry(&q.session_key).is_some()
}

/// Credits the memories `result` returned; reports a failure as an advisory on `result`.
pub(crate) fn credit_recall(
    store: &Store,
    config: &RecallConfig,
    q: &RecallQuery,
    result: &mut RecallResult,
) {
    if skipped(store, config, q, result) {
        return;
    }
    let ids: Vec<i64> = result
        .response
        .messages
        .iter()
        .filter(|m| m.r#ref.kind == RefKind::Mem)
        .map(|m| m.r#ref.id)
        .collect();
    if ids.is_empty() {
        return;
    }
    let now = q.now_ms.unwrap_or_else(crate::time::now_ms);
    if let Err(err) = store.credit_later(&q.agent_id, &ids, now) {
        result.advisories.push(format!(
            "recall count not updated ({err}); the recall is unaffected"
        ));
    }
}
