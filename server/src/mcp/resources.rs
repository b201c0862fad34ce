//! MCP resources (issue 21): an agent's memories, episodes and profile as
//! `cpersona://agents/{agent_id}/memories/{id}`, `.../episodes/{id}` and `.../profile`.
//! `resources/list` pages every agent's memories then episodes (newest first; profiles are
//! read through their template), `resources/read` returns the full stored text with what is
//! known about it in `_meta`. In ACL mode a row is listed and read only where the caller could
//! call `get_contents` on its agent; a row it may not read answers exactly as a missing one.

use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, MetaObject, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};

use crate::mcp::backend::{ResourceKind, ToolBackend, ToolError};

/// The scheme and the agents' root.
const ROOT: &str = "cpersona://agents/";
/// Rows per `resources/list` page.
pub(crate) const PAGE_ROWS: usize = 100;

/// The templates, for `resources/templates/list`.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    let template = |path: &str, name: &str, description: &str| {
        ResourceTemplate::new(format!("{ROOT}{{agent_id}}/{path}"), name)
            .with_description(description)
    };
    ListResourceTemplatesResult::with_all_items(vec![
        template(
            "memories/{id}",
            "memory",
            "One stored memory, its whole text.",
        ),
        template(
            "episodes/{id}",
            "episode",
            "One archived episode, its whole summary.",
        ),
        template("profile", "profile", "The agent's profile."),
    ])
}

/// The URI of a row.
pub(crate) fn uri(agent_id: &str, kind: ResourceKind, id: Option<i64>) -> String {
    let agent = encode(agent_id);
    match (kind, id) {
        (ResourceKind::Memory, Some(id)) => format!("{ROOT}{agent}/memories/{id}"),
        (ResourceKind::Episode, Some(id)) => format!("{ROOT}{agent}/episodes/{id}"),
        _ => format!("{ROOT}{agent}/profile"),
    }
}

/// The row a URI names, or `None` for anything else.
pub(crate) fn parse(uri: &str) -> Option<(String, ResourceKind, Option<i64>)> {
    let rest = uri.strip_prefix(ROOT)?;
    let (agent, path) = rest.split_once('/')?;
    let agent = decode(agent)?;
    if agent.is_empty() {
        return None;
    }
    let row = |kind, id: &str| {
        let id: i64 = id.parse().ok().filter(|id| *id > 0)?;
        Some((agent.clone(), kind, Some(id)))
    };
    match path.split_once('/') {
        Some(("memories", id)) => row(ResourceKind::Memory, id),
        Some(("episodes", id)) => row(ResourceKind::Episode, id),
        None if path == "profile" => Some((agent.clone(), ResourceKind::Profile, None)),
        _ => None,
    }
}

/// Percent-encodes every byte outside RFC 3986's unreserved set, so any agent id (with `/`,
/// `:` or spaces) makes one path segment.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Where a page starts: the kind and the offset into its listing.
fn cursor_of(cursor: Option<&str>) -> Result<(ResourceKind, usize), ErrorData> {
    let invalid = || ErrorData::invalid_params("not a cursor this server gave", None);
    let Some(cursor) = cursor else {
        return Ok((ResourceKind::Memory, 0));
    };
    let (kind, offset) = cursor.split_once(':').ok_or_else(invalid)?;
    let kind = match kind {
        "memories" => ResourceKind::Memory,
        "episodes" => ResourceKind::Episode,
        _ => return Err(invalid()),
    };
    Ok((kind, offset.parse().map_err(|_| invalid())?))
}

/// One `resources/list` page of the rows `may_read` admits (by agent).
pub(crate) fn list(
    backend: &dyn ToolBackend,
    cursor: Option<&str>,
    may_read: impl Fn(&str) -> bool,
) -> Result<ListResourcesResult, ErrorData> {
    let (kind, offset) = cursor_of(cursor)?;
    let rows = backend
        .resource_page(kind, offset, PAGE_ROWS)
        .map_err(ToolError::into_error_data)?;
    let full = rows.len() == PAGE_ROWS;
    let resources: Vec<Resource> = rows
        .into_iter()
        .filter(|row| may_read(&row.agent_id))
        .map(|row| {
            let prefix = match row.kind {
                ResourceKind::Memory => "mem",
                ResourceKind::Episode => "ep",
                ResourceKind::Profile => "profile",
            };
            let name = format!("{prefix}:{}", row.id.unwrap_or_default());
            Resource::new(uri(&row.agent_id, row.kind, row.id), name)
                .with_title(row.title)
                .with_mime_type("text/plain")
        })
        .collect();
    let next = match (kind, full) {
        (ResourceKind::Memory, true) => Some(format!("memories:{}", offset + PAGE_ROWS)),
        (ResourceKind::Memory, false) => Some("episodes:0".to_owned()),
        (ResourceKind::Episode, true) => Some(format!("episodes:{}", offset + PAGE_ROWS)),
        _ => None,
    };
    let mut result = ListResourcesResult::with_all_items(resources);
    result.next_cursor = next;
    Ok(result)
}

/// `resources/read`: the row's whole text, or "not found" (also for a row `may_read` refuses,
/// so a URI says nothing about rows the caller cannot read).
pub(crate) fn read(
    backend: &dyn ToolBackend,
    uri_text: &str,
    may_read: impl Fn(&str) -> bool,
) -> Result<ReadResourceResult, ErrorData> {
    let not_found = || ErrorData::resource_not_found(format!("no resource {uri_text}"), None);
    let (agent, kind, id) = parse(uri_text).ok_or_else(not_found)?;
    if !may_read(&agent) {
        return Err(not_found());
    }
    let body = backend
        .read_resource(&agent, kind, id)
        .map_err(ToolError::into_error_data)?
        .ok_or_else(not_found)?;
    let meta = match body.meta {
        serde_json::Value::Object(map) => Some(MetaObject(map)),
        _ => None,
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: uri_text.to_owned(),
            mime_type: Some("text/plain".to_owned()),
            text: body.text,
            meta,
        },
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_any_agent_id_and_refuse_the_rest() {
        for agent in ["a", "discord:12/x y", "名前", "%41"] {
            for (kind, id) in [
                (ResourceKind::Memory, Some(7)),
                (ResourceKind::Episode, Some(12)),
                (ResourceKind::Profile, None),
            ] {
                let text = uri(agent, kind, id);
                assert_eq!(parse(&text), Some((agent.to_owned(), kind, id)), "{text}");
                assert_eq!(text.matches('/').count(), if id.is_some() { 5 } else { 4 });
            }
        }
        for bad in [
            "cpersona://agents//memories/1",
            "cpersona://agents/a/memories/0",
            "cpersona://agents/a/memories/x",
            "cpersona://agents/a/notes/1",
            "cpersona://agents/a/profile/1",
            "cpersona://agents/%ZZ/profile",
            "file:///etc/passwd",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
