//! The write path against CPersona's contracts: dedup (skip, never upsert), validation that
//! writes nothing, locks, the change log, the embedding queue, pauses and agent purges.

use std::sync::atomic::Ordering;

use cpersona_engine::*;
use serde_json::json;

use crate::common::{conn, counts, fixture};

fn req(agent: &str, content: &str) -> StoreRequest {
    StoreRequest {
        agent_id: agent.into(),
        content: content.into(),
        ..Default::default()
    }
}

fn stored_id(outcome: &StoreOutcome) -> i64 {
    assert_eq!(outcome.result, StoreResult::Stored, "{outcome:?}");
    match outcome.id {
        Some(StoreId::Row(id)) => id,
        _ => panic!("no id in {outcome:?}"),
    }
}

#[test]
fn store_then_duplicates_are_skipped_with_the_existing_id() {
    let f = fixture();
    let first = f
        .engine
        .store(&StoreRequest {
            msg_id: "m1".into(),
            ..req("a", "hello world")
        })
        .unwrap();
    let id = stored_id(&first);
    assert_eq!(first.embedded, Some(true));
    let body = serde_json::to_value(&first).unwrap();
    assert_eq!(
        body,
        json!({"ok": true, "result": "stored", "id": id, "embedded": true})
    );

    let same_msg = f
        .engine
        .store(&StoreRequest {
            msg_id: "m1".into(),
            ..req("a", "other text")
        })
        .unwrap();
    assert_eq!(
        serde_json::to_value(&same_msg).unwrap(),
        json!({"ok": true, "result": "skipped", "reason": format!("duplicate msg_id of memory {id}"), "id": id})
    );
    let same_content = f.engine.store(&req("a", "  hello world ")).unwrap();
    assert_eq!(
        same_content.reason,
        Some(format!("duplicate content of memory {id}"))
    );
    assert_eq!(same_content.id, Some(StoreId::Row(id)));
    // Another agent is another world.
    stored_id(&f.engine.store(&req("b", "hello world")).unwrap());
}

#[test]
fn dedup_follows_the_write_visible_scope() {
    let f = fixture();
    let global = stored_id(&f.engine.store(&req("a", "shared fact")).unwrap());
    // A bucket write collides with an identical global-pool row.
    let in_project = f
        .engine
        .store(&StoreRequest {
            project_id: "p".into(),
            ..req("a", "shared fact")
        })
        .unwrap();
    assert_eq!(in_project.id, Some(StoreId::Row(global)));
    // A project row does not make an identical global write a duplicate.
    let p_only = stored_id(
        &f.engine
            .store(&StoreRequest {
                project_id: "p".into(),
                ..req("a", "project fact")
            })
            .unwrap(),
    );
    let g = stored_id(&f.engine.store(&req("a", "project fact")).unwrap());
    assert_ne!(p_only, g);
    // Channels: a channel row sees channel-less rows, not other channels.
    stored_id(
        &f.engine
            .store(&StoreRequest {
                channel: "c1".into(),
                ..req("a", "chan fact")
            })
            .unwrap(),
    );
    stored_id(
        &f.engine
            .store(&StoreRequest {
                channel: "c2".into(),
                ..req("a", "chan fact")
            })
            .unwrap(),
    );
    let skip = f
        .engine
        .store(&StoreRequest {
            channel: "c1".into(),
            ..req("a", "shared fact")
        })
        .unwrap();
    assert_eq!(skip.result, StoreResult::Skipped);
}

#[test]
fn bad_input_is_rejected_and_writes_nothing() {
    let f = fixture();
    stored_id(&f.engine.store(&req("a", "seed")).unwrap());
    let before = counts(&f);
    let cases = [
        req("a", ""),
        req("a", "   "),
        req("a", "[Memory from bob] "),
        req("a", "nul\0inside"),
        req("", "no agent"),
        StoreRequest {
            timestamp: Some("yesterday at noon".into()),
            ..req("a", "x")
        },
        StoreRequest {
            metadata: Some(json!({"big": "x".repeat(9000)})),
            ..req("a", "x")
        },
        StoreRequest {
            channel: "c".repeat(300),
            ..req("a", "x")
        },
    ];
    for case in &cases {
        let outcome = f.engine.store(case).unwrap();
        assert_eq!(outcome.result, StoreResult::Rejected, "{case:?}");
        assert!(!outcome.ok);
        assert!(outcome.reason.is_some());
    }
    let err = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: 999,
            content: "x".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, Error::MemoryNotFound { id: 999 }) && err.is_user_error());
    let err = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: 1,
            content: " ".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(err.is_user_error());
    let err = f
        .engine
        .delete_memory(&MemoryIdRequest {
            memory_id: 1,
            agent_id: "b".into(),
            ..Default::default()
        })
        .unwrap_err();
    // Another agent's memory reads exactly as a missing one (no existence oracle).
    assert!(matches!(err, Error::MemoryNotFound { id: 1 }), "{err}");
    assert_eq!(err.to_string(), "memory 1 not found");
    let err = f
        .engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "s".into(),
            history: vec![json!({"timestamp": "not a time"})],
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidTimestamp { .. }));
    assert!(
        f.engine
            .delete_episode(&DeleteEpisodeRequest {
                episode_id: 5,
                agent_id: "a".into(),
                ..Default::default()
            })
            .unwrap_err()
            .is_user_error()
    );
    assert_eq!(counts(&f), before);
}

#[test]
fn timestamps_are_normalised_and_the_caller_text_kept() {
    let f = fixture();
    let id = stored_id(
        &f.engine
            .store(&StoreRequest {
                timestamp: Some("2026-01-31T09:30:00+09:00".into()),
                ..req("a", "t")
            })
            .unwrap(),
    );
    let (text, ms): (String, i64) = conn(&f)
        .query_row(
            "SELECT timestamp, timestamp_ms FROM memories WHERE id = ?",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(text, "2026-01-31T09:30:00+09:00");
    assert_eq!(ms, time::parse_iso8601_ms("2026-01-31T00:30:00Z").unwrap());
    let listed = f
        .engine
        .list_memories(&ListMemoriesRequest {
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.memories[0].timestamp, "2026-01-31T09:30:00+09:00");
    let future = f
        .engine
        .store(&StoreRequest {
            timestamp: Some("2999-01-01T00:00:00Z".into()),
            ..req("a", "future")
        })
        .unwrap();
    assert!(future.timestamp_ahead_of_clock.is_some());
}

#[test]
fn locks_protect_against_update_and_delete() {
    let f = fixture();
    let id = stored_id(&f.engine.store(&req("a", "precious")).unwrap());
    let by_id = MemoryIdRequest {
        memory_id: id,
        agent_id: "a".into(),
        ..Default::default()
    };
    assert_eq!(f.engine.lock_memory(&by_id).unwrap().locked_id, Some(id));
    let err = f.engine.delete_memory(&by_id).unwrap_err();
    assert!(matches!(
        err,
        Error::MemoryLocked {
            action: "deleted",
            ..
        }
    ));
    let err = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: "new".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(
        err,
        Error::MemoryLocked {
            action: "edited",
            ..
        }
    ));
    f.engine.unlock_memory(&by_id).unwrap();
    let updated = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: "new text".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(updated.updated_id, Some(id));
    assert_eq!(f.engine.delete_memory(&by_id).unwrap().deleted_id, Some(id));
    let fts: i64 = conn(&f)
        .query_row(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'new'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(fts, 0);
}

#[test]
fn fts_follows_writes() {
    let f = fixture();
    let id = stored_id(&f.engine.store(&req("a", "東京タワーに行った")).unwrap());
    let hit = |q: &str| -> i64 {
        conn(&f)
            .query_row(
                "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?",
                [q],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(hit("\"タワー\""), 1);
    f.engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: "大阪城を見た".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(hit("\"タワー\""), 0);
    assert_eq!(hit("\"大阪城\""), 1);
}

#[test]
fn every_write_appends_to_the_change_log() {
    let f = fixture();
    let head = |f: &crate::common::Fixture| f.engine.change_log_head().unwrap();
    let id = stored_id(&f.engine.store(&req("a", "one")).unwrap());
    let h1 = head(&f);
    f.engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: "two".into(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    let h2 = head(&f);
    f.engine
        .delete_memory(&MemoryIdRequest {
            memory_id: id,
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    let h3 = head(&f);
    assert!(h1 < h2 && h2 < h3);
    let ops: Vec<String> = conn(&f)
        .prepare("SELECT op FROM change_log ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(ops, ["insert", "update", "delete"]);
}

#[test]
fn embedder_outage_queues_and_drain_fills() {
    let f = fixture();
    f.embedder.down.store(true, Ordering::SeqCst);
    let out = f
        .engine
        .store(&req("a", "written while the embedder is down"))
        .unwrap();
    let id = stored_id(&out);
    assert_eq!(out.embedded, Some(false));
    let ep = f
        .engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a session".into(),
            ..Default::default()
        })
        .unwrap();
    assert!(!ep.embedded);
    assert_eq!(f.engine.get_queue_status().unwrap().pending, 2);
    let failed = f.engine.drain_embedding_queue(10).unwrap();
    assert_eq!(
        (failed.embedded, failed.failed, failed.remaining),
        (0, 2, 2)
    );
    f.embedder.down.store(false, Ordering::SeqCst);
    // The periodic drain waits out the retry delay after a failure; a forced one does not.
    let waiting = f.engine.drain_embedding_queue(10).unwrap();
    assert_eq!(
        (waiting.embedded, waiting.failed, waiting.remaining),
        (0, 0, 2)
    );
    let drained = f.engine.drain_embedding_queue_now(10).unwrap();
    assert_eq!((drained.embedded, drained.remaining), (2, 0), "{drained:?}");
    let (blob, dim): (Vec<u8>, i64) = conn(&f)
        .query_row(
            "SELECT embedding, embedding_dim FROM memories WHERE id = ?",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (blob.len(), dim),
        (4 * crate::common::DIM, crate::common::DIM as i64)
    );
}

#[test]
fn a_store_with_vectors_never_takes_another_width() {
    let f = fixture();
    stored_id(&f.engine.store(&req("a", "first")).unwrap());
    let path = f.dir.path().join("store.db");
    drop(f.engine);
    let other = crate::common::TestEmbedder::new("other-model", 16);
    // Adoption off (with it on, the whole store moves to the new width: `tests/it/reembed.rs`).
    let mut config = EngineConfig::new(&path);
    config.reembed_on_model_change = false;
    let engine = Engine::open(config, other).unwrap();
    let out = engine.store(&req("a", "second")).unwrap();
    assert_eq!(out.embedded, Some(false));
    let drained = engine.drain_embedding_queue_now(10).unwrap();
    assert!(drained.last_error.unwrap().contains("does not match"));
    let dims: Vec<i64> = rusqlite::Connection::open(&path)
        .unwrap()
        .prepare("SELECT DISTINCT embedding_dim FROM memories WHERE embedding IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(dims, [crate::common::DIM as i64]);
}

#[test]
fn pause_skips_every_write() {
    let f = fixture();
    let paused = f.engine.pause_persistence(Some(60), "");
    assert!(paused.paused && paused.ttl_seconds == 60);
    let before = counts(&f);
    let out = f.engine.store(&req("a", "not persisted")).unwrap();
    let body = serde_json::to_value(&out).unwrap();
    assert_eq!(body["id"], "no-persist");
    assert_eq!(body["persisted"], false);
    assert_eq!(
        f.engine
            .update_profile(&UpdateProfileRequest {
                agent_id: "a".into(),
                profile: "p".into(),
                ..Default::default()
            })
            .unwrap()
            .profiles_updated,
        0
    );
    let del = serde_json::to_value(
        f.engine
            .delete_memory(&MemoryIdRequest {
                memory_id: 1,
                agent_id: "a".into(),
                ..Default::default()
            })
            .unwrap(),
    )
    .unwrap();
    assert_eq!(del["deleted_id"], serde_json::Value::Null);
    assert_eq!(counts(&f), before);
    // Another session is not paused.
    stored_id(
        &f.engine
            .store(&StoreRequest {
                session_key: "s2".into(),
                ..req("a", "other session")
            })
            .unwrap(),
    );
    assert!(f.engine.persistence_status("").paused);
    assert!(f.engine.resume_persistence("").was_active);
    stored_id(&f.engine.store(&req("a", "persisted")).unwrap());
}

#[test]
fn profile_and_episode_round_trip() {
    let f = fixture();
    assert_eq!(f.engine.get_profile("a").unwrap().profile, "");
    f.engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "a".into(),
            profile: "likes tea".into(),
            ..Default::default()
        })
        .unwrap();
    f.engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "a".into(),
            profile: "likes coffee".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(f.engine.get_profile("a").unwrap().profile, "likes coffee");
    let empty = f
        .engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "a".into(),
            profile: " ".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(empty.reason.as_deref(), Some("empty profile"));
    let history = vec![
        json!({"timestamp": "2026-01-01T10:00:00+09:00"}),
        json!({"timestamp": "2026-01-01T00:30:00Z"}),
        json!({"role": "user"}),
    ];
    let ep = f
        .engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "we talked".into(),
            history,
            ..Default::default()
        })
        .unwrap();
    let listed = f
        .engine
        .list_episodes(&ListEpisodesRequest {
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.count, 1);
    // 10:00+09:00 is 01:00Z, later than 00:30Z: instants, not strings, decide.
    assert_eq!(
        listed.episodes[0].start_time.as_deref(),
        Some("2026-01-01T00:30:00Z")
    );
    assert_eq!(
        listed.episodes[0].end_time.as_deref(),
        Some("2026-01-01T10:00:00+09:00")
    );
    assert_eq!(
        f.engine
            .delete_episode(&DeleteEpisodeRequest {
                episode_id: ep.episode_id.unwrap(),
                agent_id: "a".into(),
                ..Default::default()
            })
            .unwrap()
            .deleted_id,
        ep.episode_id
    );
}

#[test]
fn list_memories_pages_and_scopes() {
    let f = fixture();
    for i in 0..5 {
        stored_id(
            &f.engine
                .store(&StoreRequest {
                    project_id: if i % 2 == 0 {
                        "p".into()
                    } else {
                        String::new()
                    },
                    ..req("a", &format!("row {i}"))
                })
                .unwrap(),
        );
    }
    stored_id(&f.engine.store(&req("b", "other agent")).unwrap());
    stored_id(
        &f.engine
            .store(&StoreRequest {
                project_id: "q".into(),
                ..req("a", "other project")
            })
            .unwrap(),
    );
    let page = |offset, project: Option<&str>| {
        f.engine
            .list_memories(&ListMemoriesRequest {
                agent_id: "a".into(),
                limit: 2,
                offset,
                project_id: project.map(String::from),
                ..Default::default()
            })
            .unwrap()
    };
    let first = page(0, Some("p"));
    assert_eq!(first.count, 2);
    assert_eq!(first.next_offset, Some(2));
    let mut seen: Vec<i64> = first.memories.iter().map(|m| m.id).collect();
    let mut offset = 2;
    loop {
        let next = page(offset, Some("p"));
        seen.extend(next.memories.iter().map(|m| m.id));
        match next.next_offset {
            Some(o) => offset = o,
            None => break,
        }
    }
    assert_eq!(seen, [5, 4, 3, 2, 1]);
    assert_eq!(
        f.engine
            .list_memories(&ListMemoriesRequest::default())
            .unwrap()
            .count,
        7
    );
}

#[test]
fn delete_agent_data_purges_only_that_agent() {
    let f = fixture();
    f.embedder.down.store(true, Ordering::SeqCst);
    stored_id(&f.engine.store(&req("a", "a1")).unwrap());
    f.embedder.down.store(false, Ordering::SeqCst);
    stored_id(&f.engine.store(&req("a", "a2")).unwrap());
    stored_id(&f.engine.store(&req("b", "b1")).unwrap());
    f.engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "ep".into(),
            ..Default::default()
        })
        .unwrap();
    f.engine
        .update_profile(&UpdateProfileRequest {
            agent_id: "a".into(),
            profile: "p".into(),
            ..Default::default()
        })
        .unwrap();
    let out = f.engine.delete_agent_data("a", "").unwrap();
    assert_eq!(
        (
            out.deleted_memories,
            out.deleted_episodes,
            out.deleted_profiles,
            out.deleted_pending_tasks
        ),
        (2, 1, 1, 1)
    );
    let c = conn(&f);
    let n = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(n("SELECT COUNT(*) FROM memories"), 1);
    assert_eq!(n("SELECT COUNT(*) FROM change_log WHERE agent_id = 'a'"), 0);
    assert_eq!(n("SELECT COUNT(*) FROM change_log WHERE agent_id = 'b'"), 1);
    assert_eq!(
        n("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH '\"a1\"'"),
        0
    );
    assert_eq!(n("SELECT COUNT(*) FROM embedding_queue"), 0);
}

#[test]
fn engine_is_send_and_sync_and_serves_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    let f = fixture();
    std::thread::scope(|s| {
        for t in 0..4 {
            let engine = &f.engine;
            s.spawn(move || {
                for i in 0..10 {
                    stored_id(
                        &engine
                            .store(&req("a", &format!("thread {t} row {i}")))
                            .unwrap(),
                    );
                    engine
                        .list_memories(&ListMemoriesRequest {
                            agent_id: "a".into(),
                            ..Default::default()
                        })
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(
        f.engine
            .list_memories(&ListMemoriesRequest {
                agent_id: "a".into(),
                limit: 500,
                ..Default::default()
            })
            .unwrap()
            .count,
        40
    );
}

// See: issue 18. Content was cut at the limit, so a second long text sharing the first
// 16,000 characters answered `skipped` and was lost. Over the limit is now refused whole, on
// every path that stores memory or episode text, and nothing is written.
#[test]
fn r18_text_over_the_limit_is_refused_whole_never_cut() {
    let f = crate::common::fixture_with(|c| c.max_content_chars = 100);
    let fits = format!("{} one", "H".repeat(96));
    let id = stored_id(&f.engine.store(&req("a", &fits)).unwrap());
    let before = counts(&f);
    let long = format!("{} two", "H".repeat(100));
    let outcome = f.engine.store(&req("a", &long)).unwrap();
    assert_eq!(outcome.result, StoreResult::Rejected);
    let reason = outcome.reason.unwrap_or_default();
    assert!(
        reason.contains("content") && reason.contains("104 characters") && reason.contains("100"),
        "{reason}"
    );
    let err = f
        .engine
        .update_memory(&UpdateMemoryRequest {
            memory_id: id,
            content: long.clone(),
            agent_id: "a".into(),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        err.is_user_error() && err.to_string().contains("104 characters"),
        "{err}"
    );
    for (summary, keywords, field) in [(&long, "", "summary"), (&fits, long.as_str(), "keywords")] {
        let err = f
            .engine
            .archive_episode(&ArchiveEpisodeRequest {
                agent_id: "a".into(),
                summary: summary.clone(),
                keywords: keywords.into(),
                ..Default::default()
            })
            .unwrap_err();
        assert!(err.is_user_error(), "{err}");
        assert!(err.to_string().contains(field), "{err}");
        assert!(err.to_string().contains("over the limit of 100"), "{err}");
    }
    assert_eq!(counts(&f), before);
    // Exactly at the limit is whole, and two texts that differ only past it are both kept.
    let at_limit = |tail: &str| format!("{}{tail}", "H".repeat(100 - tail.len()));
    let a = stored_id(&f.engine.store(&req("a", &at_limit(" six"))).unwrap());
    let b = stored_id(&f.engine.store(&req("a", &at_limit(" ten"))).unwrap());
    assert_ne!(a, b);
}

/// Ownership is never optional: a call on a row id must name the owner, and another agent's
/// row (locked or not) reads exactly as an id that does not exist, so nothing tells which ids
/// exist and nothing changes.
// See: issue 19
#[test]
fn r19_row_ids_need_their_owner_and_other_agents_rows_read_as_missing() {
    let f = fixture();
    let id = stored_id(&f.engine.store(&req("a", "a's locked secret")).unwrap());
    let by = |agent: &str, memory_id: i64| MemoryIdRequest {
        memory_id,
        agent_id: agent.into(),
        ..Default::default()
    };
    f.engine.lock_memory(&by("a", id)).unwrap();
    let episode = f
        .engine
        .archive_episode(&ArchiveEpisodeRequest {
            agent_id: "a".into(),
            summary: "a's session".into(),
            ..Default::default()
        })
        .unwrap()
        .episode_id
        .unwrap();
    let row = |f: &crate::common::Fixture| -> (String, bool) {
        conn(f)
            .query_row(
                "SELECT content, locked FROM memories WHERE id = ?",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    let before = (counts(&f), row(&f));
    let update = |agent: &str, memory_id: i64| UpdateMemoryRequest {
        memory_id,
        content: "rewritten".into(),
        agent_id: agent.into(),
        ..Default::default()
    };
    let missing = 99_999;
    let messages = |agent: &str, memory_id: i64| -> Vec<String> {
        vec![
            f.engine
                .update_memory(&update(agent, memory_id))
                .unwrap_err(),
            f.engine.delete_memory(&by(agent, memory_id)).unwrap_err(),
            f.engine.lock_memory(&by(agent, memory_id)).unwrap_err(),
            f.engine.unlock_memory(&by(agent, memory_id)).unwrap_err(),
        ]
        .into_iter()
        .map(|e| {
            assert!(e.is_user_error());
            e.to_string().replace(&memory_id.to_string(), "N")
        })
        .collect()
    };
    let theirs = messages("b", id);
    assert_eq!(
        theirs,
        messages("b", missing),
        "not yours reads as not found"
    );
    assert!(
        theirs.iter().all(|m| m == "memory N not found"),
        "{theirs:?}"
    );
    for agent in ["", "  "] {
        for message in messages(agent, id) {
            assert!(
                message.contains("agent_id") && message.contains("required"),
                "{message}"
            );
        }
    }
    let delete_episode = |agent: &str, episode_id: i64| {
        f.engine
            .delete_episode(&DeleteEpisodeRequest {
                episode_id,
                agent_id: agent.into(),
                ..Default::default()
            })
            .unwrap_err()
            .to_string()
            .replace(&episode_id.to_string(), "N")
    };
    assert_eq!(delete_episode("b", episode), delete_episode("b", missing));
    assert!(delete_episode("", episode).contains("agent_id"));
    assert_eq!((counts(&f), row(&f)), before);
    // The owner still can.
    f.engine.unlock_memory(&by("a", id)).unwrap();
    assert_eq!(
        f.engine.delete_memory(&by("a", id)).unwrap().deleted_id,
        Some(id)
    );
}
