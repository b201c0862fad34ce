//! Rows as MCP resources over the engine: pages of `list_memories` / `list_episodes` across
//! every agent (the caller filters by grant), and one row's full text through
//! `get_contents` (memories, episodes) or `get_profile`, read in the row's own agent scope.

use cpersona_engine::{ListEpisodesRequest, ListMemoriesRequest};
use serde_json::{Value, json};

use crate::mcp::backend::{ResourceBody, ResourceEntry, ResourceKind, ToolError};
use crate::mcp::engine::backend::EngineBackend;
use crate::mcp::engine::convert::{encode, engine_error};

/// Characters of a row's text its listed title keeps.
const TITLE_CHARS: usize = 80;

fn title(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if title.chars().count() < text.chars().count() {
        title.push('…');
    }
    title
}

pub(crate) fn page(
    backend: &EngineBackend,
    kind: ResourceKind,
    offset: usize,
    limit: usize,
) -> Result<Vec<ResourceEntry>, ToolError> {
    let engine = backend.engine();
    Ok(match kind {
        ResourceKind::Memory => engine
            .list_memories(&ListMemoriesRequest {
                agent_id: String::new(),
                limit,
                offset,
                project_id: None,
                ..Default::default()
            })
            .map_err(engine_error)?
            .memories
            .into_iter()
            .map(|m| ResourceEntry {
                title: title(&m.content),
                agent_id: m.agent_id,
                kind,
                id: Some(m.id),
            })
            .collect(),
        ResourceKind::Episode => engine
            .list_episodes(&ListEpisodesRequest {
                agent_id: String::new(),
                limit,
                offset,
                project_id: None,
            })
            .map_err(engine_error)?
            .episodes
            .into_iter()
            .map(|e| ResourceEntry {
                title: title(&e.summary),
                agent_id: e.agent_id,
                kind,
                id: Some(e.id),
            })
            .collect(),
        // Profiles are read through their template, one per agent; they are not listed.
        ResourceKind::Profile => Vec::new(),
    })
}

pub(crate) fn read(
    backend: &EngineBackend,
    agent_id: &str,
    kind: ResourceKind,
    id: Option<i64>,
) -> Result<Option<ResourceBody>, ToolError> {
    let engine = backend.engine();
    let reference = match (kind, id) {
        (ResourceKind::Profile, _) => {
            let profile = engine.get_profile(agent_id).map_err(engine_error)?.profile;
            return Ok((!profile.is_empty()).then(|| ResourceBody {
                text: profile,
                meta: json!({"agent_id": agent_id}),
            }));
        }
        (ResourceKind::Memory, Some(id)) => format!("mem:{id}"),
        (ResourceKind::Episode, Some(id)) => format!("ep:{id}"),
        (_, None) => return Ok(None),
    };
    let contents = engine
        .get_contents(agent_id, None, None, &[json!({"ref": reference})])
        .map_err(engine_error)?;
    let Some(item) = contents.items.into_iter().next() else {
        return Ok(None);
    };
    let mut meta = encode(&item)?;
    let text = match meta.as_object_mut().and_then(|m| m.remove("content")) {
        Some(Value::String(text)) => text,
        _ => return Err(ToolError::internal("a served item without its text")),
    };
    if let Some(object) = meta.as_object_mut() {
        object.insert("agent_id".to_owned(), json!(agent_id));
    }
    Ok(Some(ResourceBody { text, meta }))
}
