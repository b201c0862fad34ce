//! A test-only in-memory backend: a Vec of rows, enough to drive store, recall, get_contents,
//! update, delete, lock, export and import end to end through a real client. It ranks by
//! substring only and must never be mistaken for the engine.

use cpersona_engine::progress::Progress;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use cpersona_server::mcp::backend::{ToolBackend, ToolError, ToolResult};
use cpersona_server::mcp::wire;
use serde_json::{Value, json};

#[derive(Clone, Debug)]
struct Row {
    id: i64,
    agent_id: String,
    content: String,
    locked: bool,
}

/// The fake store. `calls` counts backend calls, so tests can prove a refusal never reached it.
#[derive(Default)]
pub(crate) struct FakeBackend {
    rows: Mutex<Vec<Row>>,
    next_id: Mutex<i64>,
    pub(crate) calls: AtomicUsize,
    /// The session and health tools' decoded arguments, in call order: what reached the
    /// backend after the MCP layer applied its defaults.
    pub(crate) received: Mutex<Vec<(&'static str, Value)>>,
}

impl FakeBackend {
    /// Rows currently stored.
    pub(crate) fn len(&self) -> usize {
        self.rows.lock().unwrap().len()
    }

    fn touch(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
    }

    fn receive(&self, tool: &'static str, args: &impl serde::Serialize) {
        let args = serde_json::to_value(args).expect("wire arguments serialise");
        self.received.lock().unwrap().push((tool, args));
    }

    fn insert(&self, agent_id: &str, content: &str) -> i64 {
        let mut next = self.next_id.lock().unwrap();
        *next += 1;
        self.rows.lock().unwrap().push(Row {
            id: *next,
            agent_id: agent_id.to_owned(),
            content: content.to_owned(),
            locked: false,
        });
        *next
    }

    fn with_row<T>(
        &self,
        id: i64,
        agent: &str,
        f: impl FnOnce(&mut Vec<Row>, usize) -> T,
    ) -> Result<T, ToolError> {
        let mut rows = self.rows.lock().unwrap();
        // As the engine: another agent's row reads exactly as a missing one.
        let Some(pos) = rows.iter().position(|r| r.id == id && r.agent_id == agent) else {
            return Err(ToolError::user(format!("memory {id} not found")));
        };
        Ok(f(&mut rows, pos))
    }
}

fn unsupported(tool: &str) -> ToolResult {
    Err(ToolError::user(format!(
        "{tool} is not in the fake backend"
    )))
}

impl ToolBackend for FakeBackend {
    fn store(&self, args: wire::StoreArgs) -> ToolResult {
        self.touch();
        let content = args
            .content
            .or(args.message.map(|m| m.content))
            .unwrap_or_default();
        if content.trim().is_empty() {
            return Ok(json!({"ok": false, "result": "rejected", "reason": "empty content"}));
        }
        if let Some(existing) = self
            .rows
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.agent_id == args.agent_id && r.content == content)
        {
            return Ok(
                json!({"ok": true, "result": "skipped", "reason": "duplicate content", "id": existing.id}),
            );
        }
        let id = self.insert(&args.agent_id, &content);
        Ok(json!({"ok": true, "result": "stored", "id": id, "embedded": false}))
    }

    fn recall(&self, args: wire::RecallArgs) -> ToolResult {
        self.touch();
        let query = args.query.to_lowercase();
        let rows = self.rows.lock().unwrap();
        let mut hits: Vec<&Row> = rows
            .iter()
            .filter(|r| r.agent_id == args.agent_id)
            .filter(|r| {
                query
                    .split_whitespace()
                    .any(|w| r.content.to_lowercase().contains(w))
            })
            .collect();
        hits.truncate(args.limit as usize);
        // Last is best: the first match goes last.
        hits.reverse();
        let messages: Vec<Value> = hits
            .iter()
            .map(|r| json!({"content": r.content, "ref": format!("mem:{}", r.id)}))
            .collect();
        Ok(json!({ "messages": messages }))
    }

    fn recall_with_context(&self, _args: wire::RecallWithContextArgs) -> ToolResult {
        self.touch();
        unsupported("recall_with_context")
    }

    fn get_contents(&self, args: wire::GetContentsArgs) -> ToolResult {
        self.touch();
        let rows = self.rows.lock().unwrap();
        let (mut items, mut missing) = (Vec::new(), Vec::new());
        for r in &args.refs {
            let reference = match r {
                wire::RefArg::Plain(s) => s.clone(),
                wire::RefArg::Ranged(r) => r.reference.clone(),
            };
            let row = reference
                .strip_prefix("mem:")
                .and_then(|id| id.parse::<i64>().ok())
                .and_then(|id| {
                    rows.iter()
                        .find(|r| r.id == id && r.agent_id == args.agent_id)
                });
            match row {
                Some(row) => items.push(json!({"ref": reference, "content": row.content})),
                None => missing.push(Value::String(reference)),
            }
        }
        let count = items.len();
        Ok(json!({"items": items, "missing": missing, "count": count}))
    }

    fn archive_episode(&self, _args: wire::ArchiveEpisodeArgs) -> ToolResult {
        self.touch();
        unsupported("archive_episode")
    }

    fn update_memory(&self, args: wire::UpdateMemoryArgs) -> ToolResult {
        self.touch();
        self.with_row(args.memory_id, &args.agent_id, |rows, pos| {
            if rows[pos].locked {
                return Err(ToolError::user(format!(
                    "Memory {} is locked and cannot be edited",
                    args.memory_id
                )));
            }
            rows[pos].content = args.content.clone();
            Ok(json!({"ok": true, "updated_id": args.memory_id}))
        })?
    }

    fn delete_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        self.touch();
        self.with_row(args.memory_id, &args.agent_id, |rows, pos| {
            if rows[pos].locked {
                return Err(ToolError::user(format!(
                    "Memory {} is locked and cannot be deleted",
                    args.memory_id
                )));
            }
            rows.remove(pos);
            Ok(json!({"ok": true, "deleted_id": args.memory_id}))
        })?
    }

    fn delete_episode(&self, _args: wire::EpisodeIdArgs) -> ToolResult {
        self.touch();
        unsupported("delete_episode")
    }

    fn lock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        self.touch();
        self.with_row(args.memory_id, &args.agent_id, |rows, pos| {
            rows[pos].locked = true;
            json!({"ok": true, "locked_id": args.memory_id})
        })
    }

    fn unlock_memory(&self, args: wire::MemoryIdArgs) -> ToolResult {
        self.touch();
        self.with_row(args.memory_id, &args.agent_id, |rows, pos| {
            rows[pos].locked = false;
            json!({"ok": true, "unlocked_id": args.memory_id})
        })
    }

    fn get_profile(&self, _args: wire::AgentArgs) -> ToolResult {
        self.touch();
        Ok(json!({"profile": ""}))
    }

    fn update_profile(&self, _args: wire::UpdateProfileArgs) -> ToolResult {
        self.touch();
        unsupported("update_profile")
    }

    fn list_memories(&self, args: wire::ListMemoriesArgs) -> ToolResult {
        self.touch();
        let rows = self.rows.lock().unwrap();
        let memories: Vec<Value> = rows
            .iter()
            .rev()
            .filter(|r| args.agent_id.is_empty() || r.agent_id == args.agent_id)
            .take(args.limit as usize)
            .map(|r| json!({"id": r.id, "agent_id": r.agent_id, "content": r.content, "locked": r.locked}))
            .collect();
        let count = memories.len();
        Ok(json!({"memories": memories, "count": count}))
    }

    fn list_episodes(&self, _args: wire::ListEpisodesArgs) -> ToolResult {
        self.touch();
        Ok(json!({"episodes": [], "count": 0}))
    }

    fn delete_agent_data(&self, args: wire::DeleteAgentDataArgs) -> ToolResult {
        self.touch();
        let mut rows = self.rows.lock().unwrap();
        let before = rows.len();
        rows.retain(|r| r.agent_id != args.agent_id);
        Ok(json!({"ok": true, "agent_id": args.agent_id, "deleted_memories": before - rows.len()}))
    }

    fn export_memories(&self, args: wire::ExportArgs, _: &Progress<'_>) -> ToolResult {
        self.touch();
        let rows = self.rows.lock().unwrap();
        let mut out = String::new();
        let mut n = 0;
        for r in rows
            .iter()
            .filter(|r| args.agent_id.is_empty() || r.agent_id == args.agent_id)
        {
            out.push_str(
                &json!({"_type": "memory", "agent_id": r.agent_id, "content": r.content})
                    .to_string(),
            );
            out.push('\n');
            n += 1;
        }
        std::fs::write(&args.output_path, out).map_err(|e| ToolError::internal(e.to_string()))?;
        Ok(
            json!({"ok": true, "path": args.output_path, "memories": n, "episodes": 0, "profiles": 0}),
        )
    }

    fn import_memories(&self, args: wire::ImportArgs, _: &Progress<'_>) -> ToolResult {
        self.touch();
        let text = std::fs::read_to_string(&args.input_path)
            .map_err(|e| ToolError::user(format!("cannot read {}: {e}", args.input_path)))?;
        let (mut imported, mut skipped) = (0, 0);
        for line in text.lines() {
            let v: Value =
                serde_json::from_str(line).map_err(|e| ToolError::user(e.to_string()))?;
            let agent = if args.target_agent_id.is_empty() {
                v["agent_id"].as_str().unwrap_or_default().to_owned()
            } else {
                args.target_agent_id.clone()
            };
            let content = v["content"].as_str().unwrap_or_default();
            let exists = self
                .rows
                .lock()
                .unwrap()
                .iter()
                .any(|r| r.agent_id == agent && r.content == content);
            if exists {
                skipped += 1;
            } else {
                if !args.dry_run {
                    self.insert(&agent, content);
                }
                imported += 1;
            }
        }
        Ok(
            json!({"ok": true, "dry_run": args.dry_run, "imported_memories": imported, "skipped_memories": skipped}),
        )
    }

    fn merge_memories(&self, _args: wire::MergeArgs, _: &Progress<'_>) -> ToolResult {
        self.touch();
        unsupported("merge_memories")
    }

    fn calibrate_threshold(&self, _args: wire::CalibrateArgs) -> ToolResult {
        self.touch();
        Err(ToolError::internal("the fake backend has no embeddings"))
    }

    fn set_recall_precision(&self, _args: wire::SetPrecisionArgs) -> ToolResult {
        self.touch();
        unsupported("set_recall_precision")
    }

    fn get_recall_precision(&self, _args: wire::AgentArgs) -> ToolResult {
        self.touch();
        unsupported("get_recall_precision")
    }

    fn check_health(&self, args: wire::CheckHealthArgs, _: &Progress<'_>) -> ToolResult {
        self.touch();
        self.receive("check_health", &args);
        Ok(
            json!({"status": "healthy", "issues": [], "total_memories": self.rows.lock().unwrap().len()}),
        )
    }

    fn get_queue_status(&self, _args: wire::NoArgs) -> ToolResult {
        self.touch();
        Ok(json!({"enabled": false, "pending": 0}))
    }

    fn pause_persistence(&self, args: wire::PauseArgs) -> ToolResult {
        self.touch();
        self.receive("pause_persistence", &args);
        Ok(json!({"paused": true, "ttl_seconds": args.ttl_seconds, "scope": "process"}))
    }

    fn resume_persistence(&self, args: wire::SessionArgs) -> ToolResult {
        self.touch();
        self.receive("resume_persistence", &args);
        Ok(json!({"paused": false, "was_active": false, "scope": "process"}))
    }

    fn persistence_status(&self, args: wire::SessionArgs) -> ToolResult {
        self.touch();
        self.receive("persistence_status", &args);
        Ok(json!({"paused": false, "scope": "process"}))
    }
}
