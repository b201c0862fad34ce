//! The screen every incoming message passes before rmcp sees it (a stdio line or an HTTP
//! body), so that every request gets an answer: rmcp drops what does not parse without a
//! word, answers other malformed input with an error that has no `id` member, and routes a
//! known method with params of the wrong shape to "method not found".
//!
//! # The rule (JSON-RPC 2.0, MCP 2025-06-18 and later)
//! - What does not parse as JSON (not UTF-8, a syntax error, nesting past serde_json's 128
//!   levels, a number no `f64` holds such as `1e309`, a lone UTF-16 surrogate) is answered
//!   **-32700 Parse error**. The id is the top-level object's `id` when a forgiving scan of
//!   the bytes can read one (so the client can match the answer to its call), else `null`.
//! - Valid JSON that is no message is answered **-32600 Invalid Request**: anything but an
//!   object (a batch, empty or not: MCP 2025-06-18 removed batching), `jsonrpc` other than
//!   `"2.0"`, a `method` that is no string, an `id` that is no string or integer (MCP forbids
//!   `null`), `params` that is no structured value, neither `method` nor exactly one of
//!   `result` and `error`. The id is echoed when it is a valid id, else `null`.
//! - A request (a `method` and an `id`) whose params do not fit is answered **-32602
//!   Invalid params** with its id: params that are an array (MCP names every parameter), or
//!   the params of a method rmcp knows that do not decode as that method's (`arguments`
//!   given as an array). A tool's own arguments are judged later by the tool
//!   (`mcp/validate.rs`, `ok: false`).
//! - A notification (a `method`, no `id`) and a response (no `method`, one of `result` and
//!   `error`) are **never answered**, as JSON-RPC says, however odd their method or params:
//!   one rmcp cannot read is not passed on (rmcp would answer it, or end the stdio session
//!   when it comes before `initialize`). Over HTTP, where every POST gets a status, such a
//!   message gets 400 with the error and a null id, as the transport allows.
//! - A blank line is no message and gets no answer (stdio only; an empty HTTP body is a
//!   parse error).
//!
//! Nothing refused here reaches a tool, so a refusal can write nothing.

mod scan;

use std::borrow::Cow;

// Logging and resource subscriptions are deprecated in rmcp, yet it still routes them: the
// screen must know their params as rmcp does.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CancelTaskRequest, ClientJsonRpcMessage, ClientRequest, CompleteRequest,
    ConstString, DiscoverRequest, GetMeta, GetPromptRequest, GetSkillRequest, GetTaskRequest,
    InitializeRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest,
    ListSkillsRequest, ListToolsRequest, PingRequest, ProtocolVersion,
    ReadResourceDirectoryRequest, ReadResourceRequest, Request, RequestId, RequestNoParam,
    RequestOptionalParam, SetLevelRequest, SubscribeRequest, SubscriptionsListenRequest,
    UnsubscribeRequest, UpdateTaskRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};

/// JSON-RPC's parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's invalid params.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// What the screen made of one message.
#[derive(Debug)]
pub(crate) enum Screened {
    /// Nothing but white space: no message, no answer.
    Blank,
    /// A message rmcp reads as it is.
    Pass(Passed),
    /// Answered here with this error; never passed on.
    Refuse(Refusal),
    /// A notification or response rmcp cannot read: JSON-RPC answers neither, so stdio drops
    /// it (logged); HTTP, which must give a status, answers 400 with this error.
    Unserved(Refusal),
}

/// A message passed on, and what it is.
#[derive(Debug)]
pub(crate) struct Passed {
    pub(crate) kind: Kind,
    /// A request that starts rmcp's session: `initialize`, or a request whose inline
    /// metadata names a version this server serves (MCP 2026-07-28's lifecycle).
    pub(crate) opens_session: bool,
}

/// The three kinds of JSON-RPC message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Request,
    Notification,
    Response,
}

/// A JSON-RPC error answer written by the screen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) id: Value,
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl Refusal {
    pub(crate) fn new(id: Value, code: i64, message: impl Into<String>) -> Refusal {
        Refusal {
            id,
            code,
            message: message.into(),
        }
    }

    /// The JSON-RPC error response.
    pub(crate) fn to_json(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }

    /// The response as one stdio frame (a line ending in `\n`).
    pub(crate) fn to_line(&self) -> Vec<u8> {
        let mut line = self.to_json().to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

/// Screens `bytes` (one stdio line without its newline, or one HTTP body). `supported` is
/// what the server's handler serves, to tell which request opens rmcp's session.
pub(crate) fn screen(bytes: &[u8], supported: &[ProtocolVersion]) -> Screened {
    // rmcp ignores a UTF-8 byte order mark and a carriage return before the newline.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Screened::Blank;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = e.valid_up_to();
            return Screened::Refuse(Refusal::new(
                read_id(bytes),
                PARSE_ERROR,
                format!(
                    "Parse error: the message is not UTF-8 text (byte {:#04x} at offset {at}); \
                     nothing was run. Send UTF-8 JSON.",
                    bytes[at]
                ),
            ));
        }
    };
    match serde_json::from_str::<Value>(text) {
        Ok(value) => envelope(value, supported),
        Err(e) => {
            let found = scan::scan(bytes);
            let id = found.id.clone().map_or(Value::Null, valid_id);
            Screened::Refuse(Refusal::new(id, PARSE_ERROR, why_no_parse(found, &e)))
        }
    }
}

/// The id of the message `bytes` begins, as a forgiving scan reads it (`null` when none is
/// readable or it is no valid id): what does not parse can still be matched to its call.
pub(crate) fn read_id(bytes: &[u8]) -> Value {
    scan::scan(bytes).id.map_or(Value::Null, valid_id)
}

/// What to tell a client whose message did not parse.
fn why_no_parse(found: scan::Findings, e: &serde_json::Error) -> String {
    if found.lone_surrogate {
        return "Parse error: the request spells a lone UTF-16 surrogate (a \\ud800-\\udfff \
                escape without its pair), which is not text; nothing was run. Send valid \
                Unicode."
            .to_owned();
    }
    if let Some((path, number)) = found.out_of_range {
        let at = if path.is_empty() {
            "the message".to_owned()
        } else {
            format!("`{path}`")
        };
        return format!(
            "Parse error: {at} is {number}, a number beyond what a 64-bit float holds \
             (about ±1.8e308); nothing was run. Send a number in range."
        );
    }
    if e.to_string().contains("recursion limit") {
        return "Parse error: the message nests arrays and objects too deep (more than 128 \
                levels); nothing was run."
            .to_owned();
    }
    format!("Parse error: {e}; nothing was run. Send one JSON-RPC message per line.")
}

/// `id` as rmcp reads it (a string, or an integer also in float form such as `1.0`), or
/// `null` when it is no valid id.
fn valid_id(id: Value) -> Value {
    RequestId::deserialize(&id).map_or(Value::Null, |id| id.into_json_value())
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Judges a parsed message by the rule in the module doc.
fn envelope(value: Value, supported: &[ProtocolVersion]) -> Screened {
    let invalid =
        |id: Value, message: String| Screened::Refuse(Refusal::new(id, INVALID_REQUEST, message));
    let Value::Object(map) = &value else {
        let message = match &value {
            Value::Array(items) if items.is_empty() => {
                "Invalid Request: an empty batch ([]) holds no message".to_owned()
            }
            Value::Array(_) => "Invalid Request: JSON-RPC batches are not served (MCP \
                                2025-06-18 removed them); send one message at a time"
                .to_owned(),
            other => format!(
                "Invalid Request: a message is a JSON object; got {}",
                type_of(other)
            ),
        };
        return invalid(Value::Null, message);
    };
    let id = map.get("id").cloned().map_or(Value::Null, valid_id);
    if map.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid(
            id,
            format!(
                "Invalid Request: `jsonrpc` must be \"2.0\"; got {}",
                map.get("jsonrpc")
                    .map_or("nothing".to_owned(), Value::to_string)
            ),
        );
    }
    let has_result = map.contains_key("result");
    let has_error = map.contains_key("error");
    let Some(method) = map.get("method") else {
        if has_result != has_error {
            return response(&value);
        }
        return invalid(
            if has_result { Value::Null } else { id },
            "Invalid Request: a message names a `method` (a request or notification) or \
             carries exactly one of `result` and `error` (a response)"
                .to_owned(),
        );
    };
    let Some(method) = method.as_str() else {
        return invalid(
            id,
            format!(
                "Invalid Request: `method` must be a string; got {}",
                type_of(method)
            ),
        );
    };
    if has_result || has_error {
        return invalid(
            id,
            "Invalid Request: a request or notification carries no `result` or `error`".to_owned(),
        );
    }
    let params = map.get("params").filter(|p| !p.is_null());
    if let Some(params) = params.filter(|p| !p.is_object() && !p.is_array()) {
        return invalid(
            if map.contains_key("id") {
                id
            } else {
                Value::Null
            },
            format!(
                "Invalid Request: `params` must be an object; got {}",
                type_of(params)
            ),
        );
    }
    let Some(raw_id) = map.get("id") else {
        return notification(&value, method, params);
    };
    if id.is_null() {
        return invalid(
            Value::Null,
            format!(
                "Invalid Request: `id` must be a string or an integer (MCP forbids null); got {}",
                if raw_id.is_number() {
                    format!("the number {raw_id}")
                } else {
                    type_of(raw_id).to_owned()
                }
            ),
        );
    }
    if params.is_some_and(Value::is_array) {
        return Screened::Refuse(Refusal::new(
            id,
            INVALID_PARAMS,
            format!(
                "Invalid params: the params of `{method}` are an object of named params; got an array"
            ),
        ));
    }
    request(&value, id, method, supported)
}

fn response(value: &Value) -> Screened {
    match ClientJsonRpcMessage::deserialize(value) {
        Ok(_) => Screened::Pass(Passed {
            kind: Kind::Response,
            opens_session: false,
        }),
        Err(e) => Screened::Unserved(Refusal::new(
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid Request: a response the server cannot read: {e}"),
        )),
    }
}

fn notification(value: &Value, method: &str, params: Option<&Value>) -> Screened {
    let readable =
        !params.is_some_and(Value::is_array) && ClientJsonRpcMessage::deserialize(value).is_ok();
    if readable {
        return Screened::Pass(Passed {
            kind: Kind::Notification,
            opens_session: false,
        });
    }
    Screened::Unserved(Refusal::new(
        Value::Null,
        INVALID_PARAMS,
        format!(
            "Invalid params: the notification `{method}` carries params the server cannot read (an object of named params)"
        ),
    ))
}

fn request(value: &Value, id: Value, method: &str, supported: &[ProtocolVersion]) -> Screened {
    let bad_params =
        |message: String| Screened::Refuse(Refusal::new(id.clone(), INVALID_PARAMS, message));
    let message = match ClientJsonRpcMessage::deserialize(value) {
        Ok(message) => message,
        Err(e) => return bad_params(format!("Invalid params: `{method}`: {e}")),
    };
    let ClientJsonRpcMessage::Request(request) = message else {
        return bad_params(format!(
            "Invalid params: `{method}` was not read as a request"
        ));
    };
    if let ClientRequest::CustomRequest(_) = &request.request
        && let Some(reason) = typed_error(method, value)
    {
        return bad_params(reason);
    }
    Screened::Pass(Passed {
        kind: Kind::Request,
        opens_session: opens_session(&request.request, supported),
    })
}

/// Mirrors rmcp's handshake loop: `initialize` opens the session; so does a request other
/// than `ping` and `server/discover` whose inline metadata is whole and names a supported
/// version. Every other request before the session is answered and the loop goes on.
fn opens_session(request: &ClientRequest, supported: &[ProtocolVersion]) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|v| supported.contains(&v))
        }
    }
}

/// The method name a typed rmcp request is read under.
trait MethodName {
    const METHOD: &'static str;
}

impl<M: ConstString, P> MethodName for Request<M, P> {
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString, P> MethodName for RequestOptionalParam<M, P> {
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString> MethodName for RequestNoParam<M> {
    const METHOD: &'static str = M::VALUE;
}

/// Why `value` does not decode as the typed request rmcp knows for `method`, or `None` when
/// rmcp knows no such method (it answers "method not found" itself).
#[allow(deprecated)]
fn typed_error(method: &str, value: &Value) -> Option<String> {
    macro_rules! known {
        ($($ty:ty),* $(,)?) => {
            $(
                if method == <$ty as MethodName>::METHOD {
                    return <$ty>::deserialize(value).err().map(|e| params_message(method, value, &e));
                }
            )*
        };
    }
    known!(
        PingRequest,
        InitializeRequest,
        DiscoverRequest,
        CompleteRequest,
        SetLevelRequest,
        GetPromptRequest,
        ListPromptsRequest,
        ListResourcesRequest,
        ListResourceTemplatesRequest,
        ReadResourceRequest,
        SubscriptionsListenRequest,
        SubscribeRequest,
        UnsubscribeRequest,
        CallToolRequest,
        ListToolsRequest,
        GetTaskRequest,
        UpdateTaskRequest,
        CancelTaskRequest,
        ListSkillsRequest,
        GetSkillRequest,
        ReadResourceDirectoryRequest,
    );
    None
}

/// The -32602 message: for `tools/call` the member at fault by name, else serde's reason.
fn params_message(method: &str, value: &Value, e: &serde_json::Error) -> String {
    let params = &value["params"];
    if method == "tools/call" {
        let name: Cow<'_, str> = match params.get("name") {
            Some(Value::String(_)) => "".into(),
            Some(other) => format!(
                "`params.name` must be the tool's name, a string; got {}",
                type_of(other)
            )
            .into(),
            None => "`params.name` (the tool to call) is missing".into(),
        };
        if !name.is_empty() {
            return format!("Invalid params: {name}");
        }
        if let Some(arguments) = params
            .get("arguments")
            .filter(|a| !a.is_object() && !a.is_null())
        {
            return format!(
                "Invalid params: `params.arguments` must be an object of the tool's named \
                 arguments; got {}",
                type_of(arguments)
            );
        }
    }
    format!("Invalid params: the params of `{method}` do not fit it: {e}")
}

#[cfg(test)]
mod tests;
