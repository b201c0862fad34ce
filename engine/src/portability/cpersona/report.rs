//! A conversion's request and report: what was carried per kind, what was regenerated, what
//! has no place here and why, the refused rows with their reasons, and the stamp of the
//! original a later start compares. Only data and its small helpers; nothing here reads or
//! writes a store.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::portability::record::MAX_LISTED_ERRORS;
use crate::time::{now_ms, parse_iso8601_ms};

/// A conversion's arguments.
#[derive(Clone, Debug, Default)]
pub struct ConvertRequest {
    /// The CPersona SQLite file (opened read-only).
    pub source: PathBuf,
    /// Run every write in a transaction that is rolled back: the report says what would be
    /// carried, the target keeps nothing.
    pub dry_run: bool,
}

/// The CPersona file as it was when converted; a later start compares it to warn when the
/// original has changed since (the converted store does not follow it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceStamp {
    /// Canonical path.
    pub path: String,
    /// Bytes of the database file.
    pub size: u64,
    /// Its modification time, UTC ms.
    pub mtime_ms: i64,
    /// Bytes of its write-ahead log (`-wal`; 0 when none).
    pub wal_size: u64,
    /// CPersona's `schema_version`.
    pub schema_version: i64,
    /// Row counts, highest ids and the recall counters' sum.
    pub counts: BTreeMap<String, i64>,
}

impl SourceStamp {
    /// What differs from `later`, one phrase each; empty when nothing does.
    pub fn changes_to(&self, later: &SourceStamp) -> Vec<String> {
        let mut changes = Vec::new();
        if self.size != later.size || self.wal_size != later.wal_size {
            changes.push(format!(
                "size {}+{} bytes (db+wal) was {}+{}",
                later.size, later.wal_size, self.size, self.wal_size
            ));
        }
        if self.mtime_ms != later.mtime_ms {
            changes.push("modification time moved".into());
        }
        for (key, now) in &later.counts {
            let then = self.counts.get(key).copied().unwrap_or(0);
            if then != *now {
                changes.push(format!("{key} {now} was {then}"));
            }
        }
        changes
    }
}

/// Counts carried, per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Carried {
    pub memories: usize,
    pub episodes: usize,
    pub profiles: usize,
    /// Memories carried locked.
    pub locked: usize,
    /// Memories carried with a recall count above zero (their `last_recalled_at` with them).
    pub recall_counters: usize,
    /// Rows whose CPersona vector was kept (as the embedder's, or for re-embedding).
    pub vectors: usize,
    /// Rows written without a vector, queued for embedding.
    pub queued_for_embedding: usize,
    pub entities: usize,
    pub aliases: usize,
    pub mentions: usize,
    pub relations: usize,
}

/// A table (or file) of the original that has no place here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotCarried {
    pub what: String,
    pub rows: i64,
    pub reason: String,
}

/// A conversion's report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ConvertOutcome {
    pub ok: bool,
    pub dry_run: bool,
    /// The original, as read.
    pub source: Option<SourceStamp>,
    /// The store written.
    pub target: String,
    pub carried: Carried,
    /// Each group of vectors and what became of it.
    pub vectors: Vec<VectorGroup>,
    /// Derived tables rebuilt here rather than copied, with the original's row counts.
    pub regenerated: Vec<NotCarried>,
    /// What has no place here.
    pub not_carried: Vec<NotCarried>,
    /// Rows or associations refused, each with its reason (at most 100 listed).
    pub refused: Vec<String>,
    /// Refusals beyond the listed ones.
    pub refused_omitted: usize,
    /// Mentions, aliases and relations dropped with a row or entity that was not carried.
    pub dropped_associations: usize,
    /// Values carried with a change (an unreadable timestamp), and other remarks.
    pub notes: Vec<String>,
}

impl ConvertOutcome {
    pub(super) fn refuse(&mut self, message: String) {
        if self.refused.len() < MAX_LISTED_ERRORS {
            self.refused.push(message);
        } else {
            self.refused_omitted += 1;
        }
    }

    pub(super) fn note(&mut self, message: String) {
        if self.notes.len() < MAX_LISTED_ERRORS {
            self.notes.push(message);
        }
    }
}

/// `text` as UTC ms; now (with a note) when it is missing or unreadable.
pub(super) fn instant_or(text: Option<&str>, outcome: &mut ConvertOutcome, what: &str) -> i64 {
    match text.filter(|t| !t.trim().is_empty()) {
        Some(t) => match parse_iso8601_ms(t) {
            Ok(ms) => ms,
            Err(_) => {
                outcome.note(format!(
                    "{what} {t:?} is not a timestamp; the conversion time is used"
                ));
                now_ms()
            }
        },
        None => now_ms(),
    }
}

/// One group of CPersona vectors and what the conversion does with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VectorGroup {
    /// `memories` or `episodes`.
    pub table: &'static str,
    /// CPersona's `embedding_model` label (`""`: none recorded).
    pub label: String,
    /// Floats per vector (bytes / 4).
    pub dim: usize,
    /// Rows in the group.
    pub rows: i64,
    /// `kept` (the embedder's vectors, no re-embedding), `kept_for_reembedding` (another
    /// model's, replaced in the background) or `queued` (unusable, embedded afresh).
    pub verdict: &'static str,
    /// The model id the rows carry here.
    pub model_id: String,
    /// Why.
    pub reason: String,
}
