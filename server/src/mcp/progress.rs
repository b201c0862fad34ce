//! Progress and cancellation of the long tool calls (`import_memories`, `export_memories`,
//! `merge_memories`, `check_health`): a call whose `_meta` carries a `progressToken` gets
//! `notifications/progress` as the engine reports its steps, and `notifications/cancelled`
//! (rmcp cancels the request's token) sets the flag the engine reads at the points where
//! stopping leaves nothing half-written (`cpersona_engine::progress`). The engine runs on a
//! blocking thread; its reports cross to the async side over a channel, and every report is
//! sent before the call's answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cpersona_engine::progress::{Progress, Step};
use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One call's link to its client: the cancel flag and, with a progress token, the sender
/// whose reports become notifications.
pub(crate) struct Watch {
    cancelled: Arc<AtomicBool>,
    reports: Option<mpsc::UnboundedSender<Step>>,
    forwarder: Option<JoinHandle<()>>,
    canceller: JoinHandle<()>,
}

impl Watch {
    /// Watches the call of `context`.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Watch {
        let cancelled = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&cancelled);
        let token = context.ct.clone();
        let canceller = tokio::spawn(async move {
            token.cancelled().await;
            flag.store(true, Ordering::Release);
        });
        let (reports, forwarder) = match context.meta.get_progress_token() {
            Some(progress_token) => {
                let (sender, mut receiver) = mpsc::unbounded_channel::<Step>();
                let peer = context.peer.clone();
                let forwarder = tokio::spawn(async move {
                    while let Some(step) = receiver.recv().await {
                        let mut param = ProgressNotificationParam::new(
                            progress_token.clone(),
                            step.done as f64,
                        );
                        param.total = step.total.map(|t| t as f64);
                        param.message = Some(step.message);
                        if let Err(err) = peer.notify_progress(param).await {
                            tracing::debug!(%err, "progress notification not sent");
                            return;
                        }
                    }
                });
                (Some(sender), Some(forwarder))
            }
            None => (None, None),
        };
        Watch {
            cancelled,
            reports,
            forwarder,
            canceller,
        }
    }

    /// What the blocking side needs: the report sender and the cancel flag.
    pub(crate) fn handle(&mut self) -> WatchHandle {
        WatchHandle {
            cancelled: Arc::clone(&self.cancelled),
            reports: self.reports.take(),
        }
    }

    /// Waits until every report sent so far is out (the handle must be dropped first), so
    /// none arrives after the answer.
    pub(crate) async fn finish(mut self) {
        self.canceller.abort();
        if let Some(forwarder) = self.forwarder.take() {
            let _ = forwarder.await;
        }
    }
}

/// The blocking side of a [`Watch`].
pub(crate) struct WatchHandle {
    cancelled: Arc<AtomicBool>,
    reports: Option<mpsc::UnboundedSender<Step>>,
}

impl WatchHandle {
    /// Runs `f` with a [`Progress`] over this handle.
    pub(crate) fn run<R>(self, f: impl FnOnce(&Progress<'_>) -> R) -> R {
        let send = |step: Step| {
            if let Some(reports) = &self.reports {
                let _ = reports.send(step);
            }
        };
        let progress = Progress::new(Some(&send), Some(&self.cancelled));
        f(&progress)
    }
}
