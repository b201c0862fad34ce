//! Console sessions: a browser posts the token once (`POST /console/login`) and gets a
//! random 256-bit session id in an HttpOnly, SameSite=Strict, `Path=/console` cookie; the
//! token itself is never stored in the browser nor echoed. Each session has its own CSRF
//! token and keeps its last few recall traces (the trace pages read them by id). Sessions
//! live in memory, at most [`MAX_SESSIONS`] (the oldest goes first) for [`SESSION_TTL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use cpersona_engine::trace::RecallTrace;
use maud::html;
use rand::RngCore;
use serde::Deserialize;

use super::csrf::{self, SMALL_FORM_BYTES};
use super::layout::{self, Refusal};
use super::{COOKIE, Caller, Shared};
use crate::access::Principal;
use crate::transport::http::Gate;

/// Sessions kept at once; a new one past this ends the oldest.
pub(super) const MAX_SESSIONS: usize = 256;
/// How long a session lasts from its login.
pub(super) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Traces a session keeps (its latest searches and uploads).
pub(super) const TRACES_KEPT: usize = 16;

/// One logged-in browser (or one bearer request, never stored).
pub(crate) struct Session {
    pub(super) id: String,
    pub(super) csrf: String,
    pub(super) principal: Option<Principal>,
    created: Instant,
    traces: Mutex<Vec<(String, Arc<RecallTrace>)>>,
}

impl Session {
    pub(super) fn new(principal: Option<Principal>) -> Session {
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

/// 32 random bytes from the OS-seeded generator, as hex.
fn random_hex() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The live sessions.
#[derive(Default)]
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new session for `principal`.
    pub(super) fn open(&self, principal: Option<Principal>) -> Arc<Session> {
        let session = Arc::new(Session::new(principal));
        let mut map = self.map();
        map.retain(|_, s| s.created.elapsed() < SESSION_TTL);
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map.values().min_by_key(|s| s.created).map(|s| s.id.clone())
        {
            map.remove(&oldest);
        }
        map.insert(session.id.clone(), Arc::clone(&session));
        session
    }

    fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map()
            .get(id)
            .filter(|s| s.created.elapsed() < SESSION_TTL)
            .cloned()
    }

    fn close(&self, id: &str) {
        self.map().remove(id);
    }
}

/// The session the request's cookie names, if it is live.
pub(super) fn from_cookie(headers: &HeaderMap, sessions: &Sessions) -> Option<Arc<Session>> {
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
pub(super) fn cookie_for(session: &Session) -> HeaderValue {
    let value = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={}",
        session.id,
        SESSION_TTL.as_secs()
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The login page with `status` and a line saying why it is shown.
pub(super) fn login_page(status: StatusCode, why: &str) -> Response {
    let body = html! {
        h1 { "cpersona console" }
        p.why { (why) }
        form.login method="post" action="/console/login" {
            label for="token" { "Token (CPERSONA_AUTH_TOKEN, or your client's token in the ACL file)" }
            input #token type="password" name="token" autocomplete="current-password" autofocus;
            button type="submit" { "Log in" }
        }
        p.note { "The token is checked once; the browser keeps only a random session id." }
    };
    (status, layout::page("Log in", None, body)).into_response()
}

/// `GET /console/login`.
pub(super) async fn login_form(State(state): State<Shared>) -> Response {
    if matches!(state.gate, Gate::Open) {
        return Redirect::to("/console").into_response();
    }
    login_page(StatusCode::OK, "Log in with the server's token.")
}

#[derive(Deserialize)]
pub(super) struct LoginForm {
    #[serde(default)]
    token: String,
}

/// `POST /console/login`: the token checked as HTTP checks it; a session on success.
pub(super) async fn login(State(state): State<Shared>, request: Request) -> Response {
    let form: LoginForm = match csrf::read_form(request, SMALL_FORM_BYTES).await {
        Ok(form) => form,
        Err(refusal) => return refusal.into_response(),
    };
    let Some(principal) = state.gate.admit(form.token.trim()) else {
        tracing::warn!("console: a login with a token that is not accepted");
        return login_page(StatusCode::UNAUTHORIZED, "That token is not accepted.");
    };
    let session = state.sessions.open(principal);
    let mut response = Redirect::to("/console").into_response();
    response
        .headers_mut()
        .append(header::SET_COOKIE, cookie_for(&session));
    response
}

#[derive(Deserialize)]
pub(super) struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /console/logout`: ends the session and clears the cookie.
pub(super) async fn logout(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    request: Request,
) -> Response {
    let form: LogoutForm = match csrf::read_form(request, SMALL_FORM_BYTES).await {
        Ok(form) => form,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = csrf::check_token(&caller, &form.csrf) {
        return refusal.into_response();
    }
    state.sessions.close(&caller.session.id);
    let mut response = login_page(StatusCode::OK, "Logged out.");
    response.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "cpersona_console=; HttpOnly; SameSite=Strict; Path=/console; Max-Age=0",
        ),
    );
    response
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
