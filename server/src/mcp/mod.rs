//! The MCP server: the tool routers of every family summed into one handler, the `initialize`
//! instructions, and the one path every tool call takes (check → decode → backend on a
//! blocking thread → one JSON text content). No ranking or storage logic lives here.

pub mod backend;
mod completion;
pub mod content_limit;
mod context_gate;
pub mod engine;
mod guard;
pub mod logging;
pub mod output;
mod progress;
mod prompts;
mod resources;
mod subscriptions;
mod tools;
mod update;
pub(crate) mod validate;
pub mod wire;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, GetPromptRequestParams, GetPromptResponse, Implementation, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, MetaObject,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, tool_handler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use self::backend::{ToolBackend, ToolError, ToolResult};
use self::guard::Guarded;
use self::validate::CrossCheck;
use crate::access::Acl;
use cpersona_engine::progress::Progress;

/// What `initialize` tells an agent about when to use which tool.
pub const SERVER_INSTRUCTIONS: &str = "\
cpersona is your long-term memory: one store per agent_id that outlives this conversation.
- At the start of a session, and whenever the user refers to something from an earlier \
session, call `recall` with what you need (the LAST message in the result is the most \
relevant; rows cut to a preview carry a `ref`: pass refs to `get_contents` for whole text). \
`reconstruct` returns the same evidence bundled into items with provenance (quoted, never composed).
- Call `store` for durable facts, decisions, preferences and commitments worth having in a \
later session, one self-contained statement each; do not store small talk or what is \
already stored.
- At the end of a session call `archive_episode` with a short summary you write yourself.
- Use `update_memory` to correct a fact (the old text is replaced), `lock_memory` to protect \
one, `delete_memory` when the user asks to forget.
- Results are JSON; a failure is {\"ok\": false, \"error\": \"...\"} with a reason you can act on.";

/// The MCP handler: a backend plus the routers of every tool family.
#[derive(Clone)]
pub struct McpServer {
    backend: Arc<dyn ToolBackend>,
    tool_router: ToolRouter<McpServer>,
    /// Served over streamable HTTP, where every request stands alone (no MCP session ties
    /// one client's calls together) and many clients share the process: a pause must name its
    /// `session_key` there (see `tools/persistence.rs`).
    over_http: bool,
    /// ACL mode: every call is checked against the grants of its principal (`guard.rs`).
    acl: Option<Arc<Acl>>,
    /// The level this client set with `logging/setLevel` (`logging.rs`).
    log_level: logging::ClientLevel,
    /// The resources this client subscribed to (`subscriptions.rs`).
    subscriptions: subscriptions::Subscriptions,
    /// The operating context (`crate::operating`): instructions, the project gate and
    /// `get_operating_context`; `None` serves without one.
    operating: Option<Arc<crate::operating::Loader>>,
}

/// Runs `f` on a blocking thread (the backend is synchronous), a panic becoming an internal
/// error.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ErrorData> + Send + 'static,
) -> Result<T, ErrorData> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|err| Err(ErrorData::internal_error(err.to_string(), None)))
}

impl McpServer {
    /// Who may read which agent's rows in this request (`guard::reader`).
    fn reader(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> impl Fn(&str) -> bool + Send + 'static {
        guard::reader(self.acl.clone(), self.over_http, context)
    }

    /// A server answering every registered tool with `backend`, its stored text arguments
    /// advertising and checked against the backend's content limit.
    pub fn new(backend: Arc<dyn ToolBackend>) -> McpServer {
        let mut tool_router = McpServer::all_tools();
        content_limit::apply(&mut tool_router, backend.content_limit());
        output::apply(&mut tool_router);
        McpServer {
            backend,
            tool_router,
            over_http: false,
            acl: None,
            log_level: logging::ClientLevel::default(),
            subscriptions: subscriptions::Subscriptions::default(),
            operating: None,
        }
    }

    /// The same server with the operating context read from `loader`.
    pub fn with_operating_context(self, loader: Arc<crate::operating::Loader>) -> McpServer {
        McpServer {
            operating: Some(loader),
            ..self
        }
    }

    /// `initialize`'s instructions: ours, then the operator's summary when there is one.
    fn instructions(&self) -> String {
        match self
            .operating
            .as_deref()
            .and_then(crate::operating::Loader::summary)
        {
            Some(summary) => format!("{SERVER_INSTRUCTIONS}\n\n{summary}"),
            None => SERVER_INSTRUCTIONS.to_owned(),
        }
    }

    /// The same server in ACL mode: each call runs only when its principal's grants cover
    /// what the tool demands (`access::decide`).
    pub fn with_acl(self, acl: Arc<Acl>) -> McpServer {
        McpServer {
            acl: Some(acl),
            ..self
        }
    }

    /// The same server as the HTTP transport serves it (many clients, stateless requests).
    pub fn over_http(self) -> McpServer {
        McpServer {
            over_http: true,
            ..self
        }
    }

    /// Every registered tool, in all families.
    pub fn all_tools() -> ToolRouter<McpServer> {
        McpServer::memory_router()
            + McpServer::recall_router()
            + McpServer::reconstruct_router()
            + McpServer::episode_router()
            + McpServer::profile_router()
            + McpServer::portability_router()
            + McpServer::quality_router()
            + McpServer::health_router()
            + McpServer::persistence_router()
            + McpServer::associations_router()
    }

    /// The one path of every tool call: check and decode `args` as `T`, run `op` on a
    /// blocking thread, and encode the outcome as one JSON text content.
    pub(crate) async fn call<T, F>(
        &self,
        tool: &'static str,
        args: JsonObject,
        op: F,
    ) -> CallToolResult
    where
        T: JsonSchema + DeserializeOwned + CrossCheck + Send + 'static,
        F: FnOnce(&dyn ToolBackend, T) -> ToolResult + Send + 'static,
    {
        self.call_inner(tool, args, None, move |backend, args, _| op(backend, args))
            .await
    }

    /// [`McpServer::call`] for a long call: `op` reports progress to the client when it sent
    /// a progress token, and sees its cancellation (`progress.rs`).
    pub(crate) async fn call_watched<T, F>(
        &self,
        tool: &'static str,
        args: JsonObject,
        context: &RequestContext<RoleServer>,
        op: F,
    ) -> CallToolResult
    where
        T: JsonSchema + DeserializeOwned + CrossCheck + Send + 'static,
        F: FnOnce(&dyn ToolBackend, T, &Progress<'_>) -> ToolResult + Send + 'static,
    {
        self.call_inner(tool, args, Some(context), op).await
    }

    async fn call_inner<T, F>(
        &self,
        tool: &'static str,
        args: JsonObject,
        context: Option<&RequestContext<RoleServer>>,
        op: F,
    ) -> CallToolResult
    where
        T: JsonSchema + DeserializeOwned + CrossCheck + Send + 'static,
        F: FnOnce(&dyn ToolBackend, T, &Progress<'_>) -> ToolResult + Send + 'static,
    {
        // The served schema, which carries the configured content limit.
        let schema = self
            .tool_router
            .get(tool)
            .map(|t| Arc::clone(&t.input_schema));
        let decoded = match validate::decode::<T>(args, schema) {
            Ok(decoded) => decoded,
            Err(message) => {
                tracing::debug!(tool, %message, "refused arguments");
                return refusal(tool, &message);
            }
        };
        let backend = Arc::clone(&self.backend);
        let mut watch = context.map(progress::Watch::of);
        let handle = watch.as_mut().map(progress::Watch::handle);
        let joined = tokio::task::spawn_blocking(move || match handle {
            Some(handle) => handle.run(|progress| op(backend.as_ref(), decoded, progress)),
            None => op(backend.as_ref(), decoded, &Progress::none()),
        })
        .await;
        if let Some(watch) = watch {
            watch.finish().await;
        }
        match joined {
            // A body that says `ok: false` (set_recall_precision kept the old precision) is a
            // refusal whatever its other fields: `isError` agrees with it.
            Ok(Ok(body)) => {
                let content = vec![ContentBlock::text(body.to_string())];
                let mut result = if body["ok"] == false {
                    CallToolResult::error(content)
                } else {
                    CallToolResult::success(content)
                };
                // The body as it is, so `call_tool` need not parse the text back.
                if body.is_object() {
                    result.structured_content = Some(body);
                }
                result
            }
            Ok(Err(ToolError::User { message })) => refusal(tool, &message),
            Ok(Err(ToolError::Internal { message })) => {
                tracing::error!(tool, %message, "tool failed");
                refusal(tool, &format!("internal error: {message}"))
            }
            Err(join_error) => {
                tracing::error!(tool, %join_error, "tool panicked");
                refusal(
                    tool,
                    "internal error: the tool stopped unexpectedly; see the server log",
                )
            }
        }
    }
}

/// `{"ok": false, "error": message}` plus the empty collection CPersona's refusal of this tool
/// carries, so an agent that reads `messages` or `result` keeps working.
pub(crate) fn refusal_body(tool: &str, message: &str) -> Value {
    let mut body = json!({ "ok": false, "error": message });
    let extra = match tool {
        "store" => json!({ "result": "rejected", "reason": message }),
        "recall" | "recall_with_context" => json!({ "messages": [] }),
        "list_memories" => json!({ "memories": [], "count": 0 }),
        "list_episodes" => json!({ "episodes": [], "count": 0 }),
        "archive_episode" => json!({ "episode_id": null }),
        "reconstruct" => json!({ "items": [], "returned_count": 0 }),
        _ => json!({}),
    };
    if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
        body.extend(extra);
    }
    body
}

fn refusal(tool: &str, message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        refusal_body(tool, message).to_string(),
    )])
}

/// `result` with its JSON body also as `structuredContent`, for clients that read structured
/// output; the text content stays byte for byte what clients that read text parse. A tool's
/// own answer has it already (`call`); refusals and denials get it here from their text.
fn with_structured_content(mut result: CallToolResult) -> CallToolResult {
    if result.structured_content.is_none()
        && let [ContentBlock::Text(text)] = result.content.as_slice()
        && let Ok(body @ Value::Object(_)) = serde_json::from_str::<Value>(&text.text)
    {
        result.structured_content = Some(body);
    }
    result
}

/// `result` with `fields` added to its JSON body, in the text and the structured content
/// alike (what the ACL guard and the operating context's gate add to a tool's answer).
fn with_fields(mut result: CallToolResult, fields: &[(&'static str, Value)]) -> CallToolResult {
    if fields.is_empty() {
        return result;
    }
    let insert = |body: &mut JsonObject| {
        for (key, value) in fields {
            body.insert((*key).to_owned(), value.clone());
        }
    };
    // A tool's answer carries its body as structured content already: the text is that
    // body's serialisation, written again rather than parsed back. A refusal has only text.
    let text = match &mut result.structured_content {
        Some(Value::Object(body)) => {
            insert(body);
            serde_json::to_string(body).ok()
        }
        _ => None,
    };
    for content in &mut result.content {
        if let ContentBlock::Text(block) = content {
            match &text {
                Some(text) => block.text = text.clone(),
                None => {
                    if let Ok(Value::Object(mut body)) = serde_json::from_str(&block.text) {
                        insert(&mut body);
                        block.text = Value::Object(body).to_string();
                    }
                }
            }
        }
    }
    result
}

/// `_meta` that asks clients which defer tool loading to load this tool up front
/// (CPersona sets it on `store`, `archive_episode` and `reconstruct`).
pub(crate) fn always_load() -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert("anthropic/alwaysLoad".to_owned(), Value::Bool(true));
    MetaObject(meta)
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    /// Every call passes the ACL guard before its tool runs (the macro's default otherwise).
    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // A name no tool answers is rmcp's to refuse ("tool not found"), as CPersona's SDK does.
        let guarded = match &self.acl {
            Some(acl) if self.tool_router.has_route(&request.name) => {
                guard::check(acl, self.over_http, &mut request, &context)
            }
            _ => Guarded::Run(None),
        };
        let resolved_agent = match guarded {
            Guarded::Run(resolved_agent) => resolved_agent,
            Guarded::Refused(refusal) => return Ok(with_structured_content(refusal).into()),
        };
        let mut added = match self.operating.as_deref() {
            Some(loader) => match context_gate::check(loader, &mut request) {
                context_gate::Gated::Refused(refusal) => {
                    return Ok(with_structured_content(refusal).into());
                }
                context_gate::Gated::Annotate(added) => added,
                context_gate::Gated::Untouched => Vec::new(),
            },
            None => Vec::new(),
        };
        // CPersona echoes an agent the connection named.
        if let Some(agent) = resolved_agent {
            added.push(("resolved_agent_id", Value::from(agent)));
        }
        let call = ToolCallContext::new(self, request, context);
        Ok(match self.tool_router.call(call).await? {
            CallToolResponse::Complete(result) => {
                with_structured_content(with_fields(result, &added)).into()
            }
            response => response,
        })
    }

    // Logging is deprecated by SEP-2577; served for the clients of earlier revisions.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.set(request.level);
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Stateless HTTP has no stream to carry a message outside a request.
        if !self.over_http {
            logging::forward(context.peer.clone(), self.log_level.clone());
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let backend = Arc::clone(&self.backend);
        let cursor = request.and_then(|r| r.cursor);
        let may_read = self.reader(&context);
        blocking(move || resources::list(backend.as_ref(), cursor.as_deref(), may_read)).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if self.over_http {
            return Err(ErrorData::invalid_request(
                "resource subscriptions need a session with a stream to the client (stdio); \
                 this streamable HTTP server is stateless",
                None,
            ));
        }
        // A row the caller may not read, or none at all: the same "not found" as a read.
        let backend = Arc::clone(&self.backend);
        let may_read = self.reader(&context);
        let uri = request.uri.clone();
        blocking(move || resources::read(backend.as_ref(), &uri, may_read).map(|_| ())).await?;
        self.subscriptions
            .subscribe(Arc::clone(&self.backend), context.peer.clone(), request.uri)
            .await;
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let backend = Arc::clone(&self.backend);
        let may_read = self.reader(&context);
        blocking(move || resources::read(backend.as_ref(), &request.uri, may_read))
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let backend = Arc::clone(&self.backend);
        let may_read = self.reader(&context);
        blocking(move || completion::complete(backend.as_ref(), &request, may_read)).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        prompts::get(&request.name, request.arguments.as_ref())
            .map(Into::into)
            .map_err(|message| ErrorData::invalid_params(message, None))
    }

    #[allow(deprecated)] // `enable_logging`: see `set_level`.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources();
        // Subscriptions need a stream to the client, which stateless HTTP has not.
        let capabilities = if self.over_http {
            capabilities.enable_completions().enable_logging().build()
        } else {
            capabilities
                .enable_resources_subscribe()
                .enable_completions()
                .enable_logging()
                .build()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("cpersona", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }
}
