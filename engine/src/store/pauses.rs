//! Session controls: `pause_persistence`, `resume_persistence`, `persistence_status`. While a
//! pause is active every write tool answers CPersona's skipped shape and writes nothing. The
//! state is per process (keyed by `session_key`, `""` = the process bucket) and never stored.
//! The server decides who shares a bucket: over HTTP it refuses a keyless pause, so the process
//! bucket belongs to stdio's one client and a keyed pause skips only writes with that key.

use serde::Serialize;

use crate::config::{DEFAULT_PAUSE_TTL_SECS, MAX_PAUSE_TTL_SECS};
use crate::store::{Store, lock};
use crate::time::{format_ms, now_ms};

/// The fields a paused write adds to its normal body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct NoPersist {
    /// Always false.
    pub persisted: bool,
    /// Always true.
    pub dry_run: bool,
    /// CPersona's sentence, naming the tool and the minutes left.
    pub reason: String,
}

/// `pause_persistence`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PauseOutcome {
    /// True.
    pub paused: bool,
    /// RFC 3339 UTC.
    pub expires_at: String,
    /// The TTL applied (after clamping to 1..=86400).
    pub ttl_seconds: u64,
    /// `"process"` (no key) or `"session"`.
    pub scope: &'static str,
}

/// `resume_persistence`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ResumeOutcome {
    /// False.
    pub paused: bool,
    /// Whether a pause was active.
    pub was_active: bool,
    /// See [`PauseOutcome::scope`].
    pub scope: &'static str,
}

/// `persistence_status`'s response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PersistenceStatus {
    /// Whether writes are paused.
    pub paused: bool,
    /// When the pause ends (`null` when not paused).
    pub expires_at: Option<String>,
    /// Seconds left (0 when not paused).
    pub ttl_remaining_seconds: u64,
    /// See [`PauseOutcome::scope`].
    pub scope: &'static str,
}

fn scope_word(session_key: &str) -> &'static str {
    if session_key.is_empty() {
        "process"
    } else {
        "session"
    }
}

impl Store {
    /// `pause_persistence`: `ttl_seconds` `None` = 1800; clamped to 1..=86400.
    pub fn pause_persistence(&self, ttl_seconds: Option<u64>, session_key: &str) -> PauseOutcome {
        let ttl = ttl_seconds
            .unwrap_or(DEFAULT_PAUSE_TTL_SECS)
            .clamp(1, MAX_PAUSE_TTL_SECS);
        let expires = now_ms() + (ttl as i64) * 1000;
        lock(&self.pauses).insert(session_key.to_owned(), expires);
        PauseOutcome {
            paused: true,
            expires_at: format_ms(expires),
            ttl_seconds: ttl,
            scope: scope_word(session_key),
        }
    }

    /// `resume_persistence`.
    pub fn resume_persistence(&self, session_key: &str) -> ResumeOutcome {
        let was = lock(&self.pauses).remove(session_key);
        ResumeOutcome {
            paused: false,
            was_active: was.is_some_and(|expires| expires > now_ms()),
            scope: scope_word(session_key),
        }
    }

    /// `persistence_status`.
    pub fn persistence_status(&self, session_key: &str) -> PersistenceStatus {
        match self.pause_expiry(session_key) {
            Some(expires) => PersistenceStatus {
                paused: true,
                expires_at: Some(format_ms(expires)),
                ttl_remaining_seconds: ((expires - now_ms()).max(0) / 1000) as u64,
                scope: scope_word(session_key),
            },
            None => PersistenceStatus {
                paused: false,
                expires_at: None,
                ttl_remaining_seconds: 0,
                scope: scope_word(session_key),
            },
        }
    }

    /// The skipped-shape fields when `tool` must not write now.
    pub(crate) fn no_persist(&self, tool: &str, session_key: &str) -> Option<NoPersist> {
        let expires = self.pause_expiry(session_key)?;
        let minutes_left = ((expires - now_ms()).max(0) + 59_999) / 60_000;
        Some(NoPersist {
            persisted: false,
            dry_run: true,
            reason: format!(
                "session no-persist mode active ({minutes_left}m left) — `{tool}` skipped. \
                 Call `resume_persistence` to write again."
            ),
        })
    }

    pub(crate) fn pause_expiry(&self, session_key: &str) -> Option<i64> {
        let mut pauses = lock(&self.pauses);
        let expires = *pauses.get(session_key)?;
        if expires <= now_ms() {
            pauses.remove(session_key);
            return None;
        }
        Some(expires)
    }
}
