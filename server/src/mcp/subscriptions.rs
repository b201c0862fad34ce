//! `resources/subscribe` (issue 21): a client subscribed to a row's URI is sent
//! `notifications/resources/updated` when the row changes (its text or any fact `resources/read`
//! shows in `_meta`: its source, its timestamp) or goes away. The subscribed rows are read again every
//! [`POLL`]: a client subscribes to a handful of rows, so this costs a few point reads a second
//! and needs no hook in any write path. Only a session with a stream to the client subscribes
//! (stdio); stateless HTTP has none, and does not advertise it.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};

use crate::mcp::backend::{ResourceBody, ToolBackend};
use crate::mcp::resources;

/// How often the subscribed rows are read again.
pub(crate) const POLL: Duration = Duration::from_millis(500);

/// One session's subscriptions: URI → the fingerprint of the row as last seen (`None`: gone).
#[derive(Clone, Default)]
pub(crate) struct Subscriptions(Arc<Mutex<Watch>>);

#[derive(Default)]
struct Watch {
    rows: HashMap<String, Option<u64>>,
    watching: bool,
}

fn fingerprint(body: &Option<ResourceBody>) -> Option<u64> {
    body.as_ref().map(|body| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.text.hash(&mut hasher);
        body.meta.to_string().hash(&mut hasher);
        hasher.finish()
    })
}

/// The row `uri` names as it reads now (`None`: no such row, or a URI of no row).
fn current(backend: &dyn ToolBackend, uri: &str) -> Option<u64> {
    let (agent, kind, id) = resources::parse(uri)?;
    let body = backend.read_resource(&agent, kind, id).ok()?;
    fingerprint(&body)
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Watches `uri` (already checked readable by the caller) for `peer`, from the row as it
    /// reads now; the first subscription starts the session's watcher.
    pub(crate) async fn subscribe(
        &self,
        backend: Arc<dyn ToolBackend>,
        peer: Peer<RoleServer>,
        uri: String,
    ) {
        let seen = read_now(&backend, vec![uri.clone()])
            .await
            .into_iter()
            .next()
            .flatten();
        let start = {
            let mut watch = self.lock();
            watch.rows.insert(uri, seen);
            !std::mem::replace(&mut watch.watching, true)
        };
        if start {
            tokio::spawn(self.clone().watch(backend, peer));
        }
    }

    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.lock().rows.remove(uri);
    }

    /// Reads the subscribed rows every [`POLL`] and tells `peer` of each that changed, until
    /// the client is gone.
    async fn watch(self, backend: Arc<dyn ToolBackend>, peer: Peer<RoleServer>) {
        loop {
            tokio::time::sleep(POLL).await;
            let (uris, seen): (Vec<String>, Vec<Option<u64>>) = self
                .lock()
                .rows
                .iter()
                .map(|(uri, seen)| (uri.clone(), *seen))
                .unzip();
            let now = read_now(&backend, uris.clone()).await;
            for ((uri, seen), now) in uris.into_iter().zip(seen).zip(now) {
                if now == seen {
                    continue;
                }
                {
                    let mut watch = self.lock();
                    // Unsubscribed meanwhile: nothing to tell.
                    let Some(entry) = watch.rows.get_mut(&uri) else {
                        continue;
                    };
                    *entry = now;
                }
                let param = ResourceUpdatedNotificationParam::new(uri);
                if peer.notify_resource_updated(param).await.is_err() {
                    tracing::debug!("resource subscriptions: the client is gone");
                    return;
                }
            }
        }
    }
}

/// What each of `uris` reads as now, all on one blocking thread (the backend is synchronous);
/// empty if that thread failed, so a failed poll tells no one of a change.
async fn read_now(backend: &Arc<dyn ToolBackend>, uris: Vec<String>) -> Vec<Option<u64>> {
    let backend = Arc::clone(backend);
    tokio::task::spawn_blocking(move || {
        uris.iter()
            .map(|uri| current(backend.as_ref(), uri))
            .collect()
    })
    .await
    .unwrap_or_default()
}
