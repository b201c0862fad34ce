//! `EngineBackend`: the engine, its embedder (for health and advisories) and the
//! process-wide recall settings the tool handlers read. Data and accessors only.

use std::sync::Arc;

use cpersona_engine::Engine;
use cpersona_engine::embed::Embedder;

use crate::config::{RecallSettings, UnhonouredSetting};
use crate::mcp::engine::convert::embedder_advisory;
use crate::mcp::wire;

/// Answers every tool from one [`Engine`].
pub struct EngineBackend {
    pub(super) engine: Arc<Engine>,
    pub(super) embedder: Arc<dyn Embedder>,
    pub(super) recall: RecallSettings,
    /// Set `CPERSONA_*` variables without effect here, for `check_health`.
    pub(super) unhonoured: Vec<UnhonouredSetting>,
}

impl EngineBackend {
    /// A backend over `engine`, whose embedder is `embedder` (kept for health and advisories),
    /// with the process-wide recall settings.
    pub fn new(
        engine: Arc<Engine>,
        embedder: Arc<dyn Embedder>,
        recall: RecallSettings,
    ) -> EngineBackend {
        EngineBackend {
            engine,
            embedder,
            recall,
            unhonoured: Vec::new(),
        }
    }

    /// The backend with the start-up list of set but unhonoured settings, which
    /// `check_health` reports.
    pub fn with_unhonoured_settings(mut self, list: Vec<UnhonouredSetting>) -> EngineBackend {
        self.unhonoured = list;
        self
    }

    /// The set but unhonoured settings.
    pub(crate) fn unhonoured_settings(&self) -> &[UnhonouredSetting] {
        &self.unhonoured
    }

    /// The engine this backend serves.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// CPersona's `advisory` object when semantic recall is degraded, else `None`.
    /// The degraded-embedder advisory a recall carries, unless the operator turned it off
    /// (`CPERSONA_DEGRADED_ADVISORY=false`, as CPersona).
    pub(crate) fn advisory(&self) -> Option<wire::Advisory> {
        if !self.recall.degraded_advisory {
            return None;
        }
        self.embedder_degraded()
    }

    /// The embedder's degradation, whatever the advisory setting (the console's health page).
    pub(crate) fn embedder_degraded(&self) -> Option<wire::Advisory> {
        embedder_advisory(self.embedder.as_ref())
    }
}

impl EngineBackend {
    /// The process-wide recall settings (for `check_health`).
    pub(crate) fn recall_settings(&self) -> &RecallSettings {
        &self.recall
    }
}
