//! The ACL guard every tool call passes before its arguments are even decoded: it finds the
//! call's principal (the HTTP request's, or `local` over stdio), asks `access::decide`, and
//! either refuses with CPersona's `permission_denied` body (nothing runs, so nothing is
//! written) or lets the call run, echoing an agent it filled in as `resolved_agent_id`.
//! Without an ACL file it decides nothing. Tools never see who called.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use serde_json::Value;

use crate::access::{self, Acl, Decision, Principal};

/// What the guard decided for one call.
pub(crate) enum Guarded {
    /// Run it; `Some(agent)` is echoed in the body as `resolved_agent_id`.
    Run(Option<String>),
    /// Answer this instead.
    Refused(CallToolResult),
}

/// Decides `request` for `acl` (see the module doc); may fill in its `agent_id`. The caller
/// has checked that a tool of that name is served.
pub(crate) fn check(
    acl: &Acl,
    over_http: bool,
    request: &mut CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Guarded {
    let principal = principal(over_http, context);
    let args = request.arguments.get_or_insert_with(Default::default);
    match access::decide(acl, principal.as_ref(), &request.name, args) {
        Decision::Allow { resolved_agent_id } => Guarded::Run(resolved_agent_id),
        Decision::Deny(denial) => {
            tracing::warn!(
                client = %denial.client_id,
                tool = %denial.tool,
                agent = denial.agent_id.as_deref().unwrap_or(""),
                required = denial.required.map_or("", |r| r.as_str()),
                "ACL denial"
            );
            Guarded::Refused(CallToolResult::error(vec![ContentBlock::text(
                denial.body(args).to_string(),
            )]))
        }
    }
}

/// Whether this call's principal may read an agent's rows, judged as `get_contents` on that
/// agent would be; always, without an ACL file. Resources are listed and read under this rule.
pub(crate) fn reader(
    acl: Option<Arc<Acl>>,
    over_http: bool,
    context: &RequestContext<RoleServer>,
) -> impl Fn(&str) -> bool + Send + 'static {
    let principal = principal(over_http, context);
    move |agent: &str| {
        let Some(acl) = &acl else {
            return true;
        };
        let mut args = serde_json::Map::new();
        args.insert("agent_id".to_owned(), Value::from(agent));
        matches!(
            access::decide(acl, principal.as_ref(), "get_contents", &mut args),
            Decision::Allow { .. }
        )
    }
}

/// Who is calling: over HTTP the principal the bearer check attached to the request (none is
/// a wiring fault, which `decide` denies); over stdio, `local`.
fn principal(over_http: bool, context: &RequestContext<RoleServer>) -> Option<Principal> {
    if !over_http {
        return Some(Principal::local());
    }
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
}
