//! Console sessions: a browser posts the token once (`POST /console/login`) and gets a
//! random 256-bit session id in an HttpOnly, SameSite=Strict, `Path=/console` cookie; the
//! token itself is never stored in the browser nor echoed. Each session has its own CSRF
//! token and keeps its last few recall traces (the trace pages read them by id). Sessions
//! live in memory, at most [`MAX_SESSIONS`] (the oldest goes first) for [`SESSION_TTL`].
//! The login form and its handlers are `login.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use cpersona_engine::trace::RecallTrace;
use rand::RngCore;

use super::layout::{Nav, Refusal};
use crate::access::Principal;

/// Sessions kept at once; a new one past this ends the oldest.
pub(crate) const MAX_SESSIONS: usize = 256;
/// How long a session lasts from its login.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Traces a session keeps (its latest searches and uploads).
pub(crate) const TRACES_KEPT: usize = 16;

/// One logged-in browser (or one bearer request, never stored).
pub(crate) struct Session {
    pub(crate) id: String,
    pub(crate) csrf: String,
    pub(crate) principal: Option<Principal>,
    created: Instant,
    traces: Mutex<Vec<(String, Arc<RecallTrace>)>>,
}

impl Session {
    pub(crate) fn new(principal: Option<Principal>) -> Session {
        Session {
            id: random_hex(),
            csrf: random_hex(),
            principal,
            created: Instant::now(),
            traces: Mutex::new(Vec::new()),
        }
    }

    fn traces(&self) -> MutexGuard<'_, Vec<(String, Arc<RecallTrace>)>> {
        self.traces
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `trace` and returns its id (the oldest kept one goes past [`TRACES_KEPT`]).
    pub(crate) fn keep_trace(&self, trace: RecallTrace) -> String {
        let id = random_hex()[..16].to_owned();
        let mut traces = self.traces();
        if traces.len() >= TRACES_KEPT {
            traces.remove(0);
        }
        traces.push((id.clone(), Arc::new(trace)));
        id
    }

    /// The kept trace `id`.
    pub(crate) fn trace(&self, id: &str) -> Option<Arc<RecallTrace>> {
        self.traces()
            .iter()
            .find(|(kept, _)| kept == id)
            .map(|(_, trace)| Arc::clone(trace))
    }
}

/// The name of the session cookie.
pub(crate) const COOKIE: &str = "cpersona_console";

/// Who is asking: a browser session (cookie) or a bearer-token request.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) session: Arc<Session>,
    /// True for `Authorization: Bearer`: a browser never attaches that header by itself, so
    /// such a request cannot be forged cross-site and needs no CSRF token.
    pub(crate) bearer: bool,
}

impl Caller {
    pub(crate) fn principal(&self) -> Option<&Principal> {
        self.session.principal.as_ref()
    }

    /// The CSRF token this caller's forms carry.
    pub(crate) fn csrf(&self) -> &str {
        &self.session.csrf
    }

    /// What the page shell needs: the log-out form's token (none for bearer requests).
    pub(crate) fn nav(&self) -> Nav<'_> {
        Nav {
            csrf: self.csrf(),
            logout: !self.bearer,
        }
    }
}

/// 32 random bytes from the OS-seeded generator, as hex.
fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The live sessions.
#[derive(Default)]
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new session for `principal`.
    pub(crate) fn open(&self, principal: Option<Principal>) -> Arc<Session> {
        let session = Arc::new(Session::new(principal));
        let mut map = self.map();
        map.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.values().min_by_key(|s| s.created).map(|s| s.id.clone())
        {
            // Said in the operator log: that browser finds itself at the login page.
            tracing::info!(
                sessions = MAX_SESSIONS,
                "console: the oldest session ended to make room for a new login"
            );
            map.remove(&oldest);
        }
        map.insert(session.id.clone(), Arc::clone(&session));
        session
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map()
            .get(id)
            .filter(|s| s.created.elapsed() < SESSION_TTL)
            .cloned()
    }

    pub(crate) fn close(&self, id: &str) {
        self.map().remove(id);
    }
}

/// The session the request's cookie names, if it is live.
pub(crate) fn from_cookie(headers: &HeaderMap, sessions: &Sessions) -> Option<Arc<Session>> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE)
        .find_map(|(_, id)| sessions.get(id))
}

/// The `Set-Cookie` value that hands `session` to the browser.
pub(crate) fn cookie_for(session: &Session) -> HeaderValue {
    let value = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={}",
        session.id,
        SESSION_TTL.as_secs()
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A refusal for a trace id this session does not hold.
pub(crate) fn no_trace(id: &str) -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        "No such trace",
        format!(
            "this session holds no trace {id:?} (a session keeps its last {TRACES_KEPT} \
             searches and uploads; run the search again or upload the saved file)"
        ),
    )
}
