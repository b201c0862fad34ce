//! The pure part of `get_contents`: parse and validate the requested refs (`mem:<id>`,
//! `ep:<id>`, optionally `{ref, span: [start, end]}` in characters, `{ref, node: i | [a, b]}`
//! or `{ref, block: i | [a, b]}`, inclusive indices into the record's derived sets), fetch
//! each through the caller's scoped fetcher, cut the range exactly, and spend the character
//! budget. A node or block range is served only when the stored set partitions the text
//! exactly; otherwise it is listed as unresolved with the reason. A ref that does not
//! resolve in the caller's scope is reported, never served from anywhere else.
//!
//! Limits as CPersona ships them: at most 20 refs, 40,000 characters counted over each
//! item's content plus its other serialized fields, the first item always admitted and every
//! later one deferred once the budget would be exceeded.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::RecallError;
use crate::refs::{Ref, RefKind};

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
    /// The overflow nodes' `[start, end)` character offsets, in node order (empty: none).
    pub nodes: Vec<(usize, usize)>,
    /// The blocks' `[start, end)` character offsets, in block order (empty: none).
    pub blocks: Vec<(usize, usize)>,
}

/// Why a ref came back unresolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
    /// A node range was asked; the record has no node set that partitions its text (it fits
    /// the window, or its nodes are not built yet).
    NoCurrentNodes,
    /// The node range runs past the record's last node.
    NodeOutOfRange,
    /// A block range was asked; the record has no block set that partitions its text (one
    /// block only, or not divided yet).
    NoCurrentBlocks,
    /// The block range runs past the record's last block.
    BlockOutOfRange,
    /// The `revision` does not match the stored text.
    StaleRevision,
}

/// One unresolved entry.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Unresolved {
    /// The ref as sent (or the entry, when it had no ref string).
    #[serde(rename = "ref")]
    pub r#ref: String,
    /// Why.
    pub reason: UnresolvedReason,
}

/// The range served.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ServedRange {
    /// `[start, end]` in characters, end clamped to the text.
    pub span: [usize; 2],
    /// The stored text's length in characters.
    pub content_len: usize,
    /// The inclusive node range served, when a node range was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<[usize; 2]>,
    /// The inclusive block range served, when a block range was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<[usize; 2]>,
    /// How many nodes or blocks the record has, with `node`/`block`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<usize>,
}

/// The range a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeAsked {
    /// `[start, end)` in characters.
    Span(usize, usize),
    /// Inclusive node indices.
    Node(usize, usize),
    /// Inclusive block indices.
    Block(usize, usize),
}

/// One served item.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
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
    /// The range asked.
    pub range: Option<RangeAsked>,
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
    let mut range = None;
    let mut revision = None;
    if let Some(map) = object {
        let asked: Vec<&str> = ["span", "node", "block"]
            .into_iter()
            .filter(|k| map.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        if asked.len() > 1 {
            return Err(range_error(UnresolvedReason::InvalidRange));
        }
        if let Some(&key) = asked.first() {
            let value = &map[key];
            let parsed = match key {
                "span" => parse_span(value).map(|(a, b)| RangeAsked::Span(a, b)),
                "node" => parse_indices(value).map(|(a, b)| RangeAsked::Node(a, b)),
                _ => parse_indices(value).map(|(a, b)| RangeAsked::Block(a, b)),
            };
            range = Some(parsed.ok_or_else(|| range_error(UnresolvedReason::InvalidRange))?);
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
        range,
        revision,
    })
}

/// One index, or an inclusive `[first, last]` pair with `first ≤ last`.
fn parse_indices(value: &Value) -> Option<(usize, usize)> {
    if let Some(index) = value.as_u64() {
        let index = usize::try_from(index).ok()?;
        return Some((index, index));
    }
    parse_span(value)
}

/// The character range of parts `first..=last` of `set`, when `set` partitions a text of
/// `len` characters exactly (contiguous, from 0 to `len`).
fn set_range(
    set: &[(usize, usize)],
    len: usize,
    first: usize,
    last: usize,
    none: UnresolvedReason,
    out_of_range: UnresolvedReason,
) -> Result<(usize, usize), UnresolvedReason> {
    let partitions = !set.is_empty()
        && set[0].0 == 0
        && set.last().is_some_and(|p| p.1 == len)
        && set.windows(2).all(|w| w[0].1 == w[1].0)
        && set.iter().all(|p| p.0 < p.1);
    if !partitions {
        return Err(none);
    }
    if last >= set.len() {
        return Err(out_of_range);
    }
    Ok((set[first].0, set[last].1))
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
    let content_len = stored.text.chars().count();
    let (start, end, node, block, of) = match request.range {
        None => (0, 0, None, None, None),
        Some(RangeAsked::Span(start, end)) => {
            if start >= content_len {
                return Err(UnresolvedReason::SpanOutOfRange);
            }
            (start, end.min(content_len), None, None, None)
        }
        Some(RangeAsked::Node(first, last)) => {
            let (start, end) = set_range(
                &stored.nodes,
                content_len,
                first,
                last,
                UnresolvedReason::NoCurrentNodes,
                UnresolvedReason::NodeOutOfRange,
            )?;
            (
                start,
                end,
                Some([first, last]),
                None,
                Some(stored.nodes.len()),
            )
        }
        Some(RangeAsked::Block(first, last)) => {
            let (start, end) = set_range(
                &stored.blocks,
                content_len,
                first,
                last,
                UnresolvedReason::NoCurrentBlocks,
                UnresolvedReason::BlockOutOfRange,
            )?;
            (
                start,
                end,
                None,
                Some([first, last]),
                Some(stored.blocks.len()),
            )
        }
    };
    let (content, range) = match request.range {
        Some(_) => {
            let text: String = stored.text.chars().skip(start).take(end - start).collect();
            (
                text,
                Some(ServedRange {
                    span: [start, end],
                    content_len,
                    node,
                    block,
                    of,
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
