//! `list_memories`' filters beyond CPersona's arguments (the console's: channel, source,
//! creation time and one id, in SQL so paging is exact), and `migrate_channel_axis`.

use cpersona_engine::*;

#[test]
fn list_memories_filters_by_channel_source_time_and_id_in_sql() {
    let f = crate::common::fixture();
    let row = |content: &str, channel: &str, name: &str| {
        crate::common::store_request(
            &f,
            &StoreRequest {
                agent_id: "a".into(),
                content: content.into(),
                channel: channel.into(),
                source: Some(serde_json::json!({"type": "User", "id": "u", "name": name})),
                ..StoreRequest::default()
            },
        )
    };
    let first = row("kettle on the stove", "kitchen", "Ann");
    let second = row("garden hose leaks", "garden", "Bob");
    let global = row("the house key is blue", "", "Ann");
    let ids = |req: ListMemoriesRequest| -> Vec<i64> {
        f.engine
            .list_memories(&ListMemoriesRequest {
                agent_id: "a".into(),
                ..req
            })
            .unwrap()
            .memories
            .iter()
            .map(|m| m.id)
            .collect()
    };
    // A channel reads that bucket plus the global one, as every scope does.
    assert_eq!(
        ids(ListMemoriesRequest {
            channel: Some("kitchen".into()),
            ..Default::default()
        }),
        vec![global, first]
    );
    assert_eq!(
        ids(ListMemoriesRequest {
            source_contains: Some("bOB".into()),
            ..Default::default()
        }),
        vec![second]
    );
    assert_eq!(
        ids(ListMemoriesRequest {
            memory_id: Some(second),
            ..Default::default()
        }),
        vec![second]
    );
    let now = cpersona_engine::time::now_ms();
    assert!(
        ids(ListMemoriesRequest {
            created_from_ms: Some(now + 60_000),
            ..Default::default()
        })
        .is_empty()
    );
    assert_eq!(
        ids(ListMemoriesRequest {
            created_before_ms: Some(now + 60_000),
            ..Default::default()
        })
        .len(),
        3
    );
}

#[test]
fn migrate_channel_axis_rechannels_bridge_rows_and_leaves_associated_ones() {
    let f = crate::common::fixture_with(|c| c.associations_enabled = true);
    let row = |content: &str, metadata: serde_json::Value| {
        crate::common::store_request(
            &f,
            &StoreRequest {
                agent_id: "a".into(),
                content: content.into(),
                channel: "discord".into(),
                metadata: Some(metadata),
                ..StoreRequest::default()
            },
        )
    };
    let bridged = row(
        "the standup moved",
        serde_json::json!({"session_id": "555:u1:0"}),
    );
    let shared = row(
        "lunch at noon",
        serde_json::json!({"session_id": "777:shared"}),
    );
    let lost = row("no session here", serde_json::json!({}));
    let named = row(
        "Alice runs the standup",
        serde_json::json!({"session_id": "555:u2:0"}),
    );
    f.engine
        .declare_associations(&DeclareRequest {
            agent_id: "a".into(),
            channel: "discord".into(),
            entities: vec![EntityInput {
                name: "Alice".into(),
                aliases: vec![],
            }],
            anchor_ref: format!("mem:{named}"),
            ..DeclareRequest::default()
        })
        .unwrap();
    let req = |dry_run: bool| ChannelAxisRequest {
        agent_id: "a".into(),
        dry_run,
        globalize_unrecoverable: true,
        session_key: String::new(),
    };
    let report = f.engine.migrate_channel_axis(&req(true)).unwrap();
    assert_eq!(report.recoverable_total, 3);
    assert_eq!(report.unrecoverable_total, 1);
    assert_eq!(report.left_with_associations, 1);
    assert_eq!(report.migrated, 0);
    let channel = |id: i64| -> String {
        crate::common::conn(&f)
            .query_row("SELECT channel FROM memories WHERE id = ?", [id], |r| {
                r.get(0)
            })
            .unwrap()
    };
    assert_eq!(channel(bridged), "discord", "a dry run writes nothing");
    let done = f.engine.migrate_channel_axis(&req(false)).unwrap();
    assert_eq!((done.migrated, done.globalized), (2, 1));
    assert_eq!(
        [
            channel(bridged),
            channel(shared),
            channel(lost),
            channel(named)
        ],
        ["555", "777", "", "discord"]
    );
}
