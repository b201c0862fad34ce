//! The login form (`GET`/`POST /console/login`): the token is checked as HTTP checks it and a
//! session opened; `POST /console/logout` ends it. The sessions themselves are `session.rs`.

use axum::Extension;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::csrf::{self, SMALL_FORM_BYTES};
use super::layout;
use super::session::{Caller, cookie_for};
use super::state::Shared;
use crate::transport::http::Gate;

/// The login page with `status` and a line saying why it is shown.
pub(crate) fn login_page(status: StatusCode, why: &str) -> Response {
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
pub(crate) async fn login_form(State(state): State<Shared>) -> Response {
    if matches!(state.gate, Gate::Open) {
        return Redirect::to("/console").into_response();
    }
    login_page(StatusCode::OK, "Log in with the server's token.")
}

#[derive(Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    token: String,
}

/// `POST /console/login`: the token checked as HTTP checks it; a session on success.
pub(crate) async fn login(State(state): State<Shared>, request: Request) -> Response {
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
pub(crate) struct LogoutForm {
    #[serde(default)]
    csrf: String,
}

/// `POST /console/logout`: ends the session and clears the cookie.
pub(crate) async fn logout(
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
