//! The pure part of `get_contents`: parse and validate the requested refs (`mem:<id>`,
//! `ep:<id>`, optionally `{ref, span: [start, end]}` in characters), fetch each through the
//! caller's scoped fetcher, cut spans, and spend the character budget. A ref that does not
//! resolve in the caller's scope is reported, never served from anywhere else.
//!
//! Limits as CPersona ships them: at most 20 refs, 40,000 characters counted over each
//! item's content plus its other serialized fields, the first item always admitted and every
//! later one deferred once the budget would be exceeded.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::candidate::{Ref, RefKind};
use super::error::RecallError;

/// The most refs one call serves.
pub const MAX_REFS: usize = 20;
/// The character budget of one call.
pub const BUDGET_CHARS: usize = 40_000;
/// The label CPersona puts before an episode's summary when it serves the whole text.
pub const EPISODE_LABEL: &str = "[Episode] ";

/// A row as the store holds it, read within the caller's scope.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredContent {
    /// The stored text: memory `content`, or episode `summary` without the label. Span
    /// offsets index into it.
    pub text: String,
    /// The row's `source`.
    pub source: Option<Value>,
    /// The row's timestamp.
    pub timestamp: Option<String>,
    /// The caller's message id.
    pub msg_id: Option<String>,
    /// Episodes: whether resolved.
    pub resolved: Option<bool>,
}

/// Why a ref came back unresolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnresolvedReason {
    /// Not `mem:<id>`/`ep:<id>`, or an entry of the wrong shape.
    InvalidRef,
    /// No such row in the caller's scope (absent, deleted, or another agent's: the answer
    /// does not say which).
    NotFound,
    /// A malformed range: not two non-negative integers with `start ≤ end`, or more than
    /// one of `span`/`node`/`block`.
    InvalidRange,
    /// The span starts at or past the end of the text.
    SpanOutOfRange,
    /// A node range was asked; this store keeps no node set.
    NoCurrentNodes,
    /// A block range was asked; this store keeps no block set.
    NoCurrentBlocks,
    /// The `revision` does not match the stored text.
    StaleRevision,
}

/// One unresolved entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unresolved {
    /// The ref as sent (or the entry, when it had no ref string).
    #[serde(rename = "ref")]
    pub r#ref: String,
    /// Why.
    pub reason: UnresolvedReason,
}

/// The range served.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServedRange {
    /// `[start, end]` in characters, end clamped to the text.
    pub span: [usize; 2],
    /// The stored text's length in characters.
    pub content_len: usize,
}

/// One served item.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentItem {
    /// The ref.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// The whole content, or the span's text.
    pub content: String,
    /// The row's `source`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
    /// The row's timestamp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The caller's message id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Episodes: whether resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<bool>,
    /// Present when a span was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<ServedRange>,
}

/// The `get_contents` response.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ContentsResponse {
    /// Served items, in request order.
    pub items: Vec<ContentItem>,
    /// Refs that did not resolve to a row of the caller (CPersona's field, kept for agents
    /// that read it).
    pub missing: Vec<String>,
    /// `items.len()`.
    pub count: usize,
    /// Every unresolved entry with its reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<Unresolved>,
    /// Entries as sent that the budget left for a later call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deferred: Vec<Value>,
    /// The budget, present when it deferred something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_chars: Option<usize>,
}

/// A parsed, valid request entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentRequest {
    /// The entry as sent (returned under `deferred`).
    pub sent: Value,
    /// The ref.
    pub r#ref: Ref,
    /// The span asked, `[start, end)` in characters.
    pub span: Option<(usize, usize)>,
    /// The revision asked (`sha256(text)[:12]`, hex).
    pub revision: Option<String>,
}

/// Parses the `refs` argument: checks 1..=20 entries, then each entry; a bad entry becomes
/// an [`Unresolved`] rather than failing the call.
pub fn parse_requests(
    refs: &[Value],
) -> Result<Vec<Result<ContentRequest, Unresolved>>, RecallError> {
    if refs.is_empty() {
        return Err(RecallError::NoRefs);
    }
    if refs.len() > MAX_REFS {
        return Err(RecallError::TooManyRefs {
            given: refs.len(),
            max: MAX_REFS,
        });
    }
    Ok(refs.iter().map(parse_entry).collect())
}

/// Serves parsed requests through `fetch`, which must read the row by ref **within the
/// caller's scope** (agent and isolation axes) and return `None` otherwise.
pub fn get_contents<E>(
    requests: Vec<Result<ContentRequest, Unresolved>>,
    budget_chars: usize,
    mut fetch: impl FnMut(Ref) -> Result<Option<StoredContent>, E>,
) -> Result<ContentsResponse, E> {
    let mut response = ContentsResponse::default();
    let mut used = 0usize;
    for request in requests {
        let request = match request {
            Ok(request) => request,
            Err(unresolved) => {
                if unresolved.reason == UnresolvedReason::InvalidRef {
                    response.missing.push(unresolved.r#ref.clone());
                }
                response.unresolved.push(unresolved);
                continue;
            }
        };
        let sent_ref = request.r#ref.to_string();
        let Some(stored) = fetch(request.r#ref)? else {
            response.missing.push(sent_ref.clone());
            response.unresolved.push(Unresolved {
                r#ref: sent_ref,
                reason: UnresolvedReason::NotFound,
            });
            continue;
        };
        let item = match serve(&request, stored) {
            Ok(item) => item,
            Err(reason) => {
                response.unresolved.push(Unresolved {
                    r#ref: sent_ref,
                    reason,
                });
                continue;
            }
        };
        let cost = item_cost(&item);
        if !response.items.is_empty()
            && (!response.deferred.is_empty() || used + cost > budget_chars)
        {
            response.deferred.push(request.sent);
            continue;
        }
        used += cost;
        response.items.push(item);
    }
    response.count = response.items.len();
    if !response.deferred.is_empty() {
        response.budget_chars = Some(budget_chars);
    }
    Ok(response)
}

/// `sha256(text.utf8)`, first 12 hex digits: the revision of a stored text.
pub fn revision(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

fn parse_entry(entry: &Value) -> Result<ContentRequest, Unresolved> {
    let invalid = |text: String| Unresolved {
        r#ref: text,
        reason: UnresolvedReason::InvalidRef,
    };
    let (ref_text, object) = match entry {
        Value::String(text) => (text.as_str(), None),
        Value::Object(map) => match map.get("ref") {
            Some(Value::String(text)) => (text.as_str(), Some(map)),
            _ => return Err(invalid(entry.to_string())),
        },
        _ => return Err(invalid(entry.to_string())),
    };
    let r#ref: Ref = ref_text.parse().map_err(|_| invalid(ref_text.to_owned()))?;
    let range_error = |reason| Unresolved {
        r#ref: ref_text.to_owned(),
        reason,
    };
    let mut span = None;
    let mut revision = None;
    if let Some(map) = object {
        let asked: Vec<&str> = ["span", "node", "block"]
            .into_iter()
            .filter(|k| map.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        if asked.len() > 1 {
            return Err(range_error(UnresolvedReason::InvalidRange));
        }
        match asked.first().copied() {
            Some("node") => return Err(range_error(UnresolvedReason::NoCurrentNodes)),
            Some("block") => return Err(range_error(UnresolvedReason::NoCurrentBlocks)),
            Some(_) => {
                span = Some(
                    parse_span(&map["span"])
                        .ok_or_else(|| range_error(UnresolvedReason::InvalidRange))?,
                )
            }
            None => {}
        }
        match map.get("revision") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => revision = Some(text.clone()),
            Some(_) => return Err(range_error(UnresolvedReason::InvalidRange)),
        }
    }
    Ok(ContentRequest {
        sent: entry.clone(),
        r#ref,
        span,
        revision,
    })
}

fn parse_span(value: &Value) -> Option<(usize, usize)> {
    let pair = value.as_array().filter(|a| a.len() == 2)?;
    let start = usize::try_from(pair[0].as_u64()?).ok()?;
    let end = usize::try_from(pair[1].as_u64()?).ok()?;
    (start <= end).then_some((start, end))
}

fn serve(request: &ContentRequest, stored: StoredContent) -> Result<ContentItem, UnresolvedReason> {
    if let Some(asked) = &request.revision
        && *asked != revision(&stored.text)
    {
        return Err(UnresolvedReason::StaleRevision);
    }
    let (content, range) = match request.span {
        Some((start, end)) => {
            let content_len = stored.text.chars().count();
            if start >= content_len {
                return Err(UnresolvedReason::SpanOutOfRange);
            }
            let end = end.min(content_len);
            let text: String = stored.text.chars().skip(start).take(end - start).collect();
            (
                text,
                Some(ServedRange {
                    span: [start, end],
                    content_len,
                }),
            )
        }
        None if request.r#ref.kind == RefKind::Ep => {
            (format!("{EPISODE_LABEL}{}", stored.text), None)
        }
        None => (stored.text, None),
    };
    Ok(ContentItem {
        r#ref: request.r#ref,
        content,
        source: stored.source,
        timestamp: stored.timestamp,
        id: stored.msg_id,
        resolved: stored.resolved,
        range,
    })
}

/// Characters an item costs: its content plus its other fields as serialized.
fn item_cost(item: &ContentItem) -> usize {
    let rest = ContentItem {
        content: String::new(),
        ..item.clone()
    };
    let rest_chars = serde_json::to_string(&rest).map_or(0, |s| s.chars().count());
    item.content.chars().count() + rest_chars
}
