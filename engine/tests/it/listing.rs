//! `list_memories`' filters beyond CPersona's arguments (the console's): channel, source,
//! creation time and one id, applied in SQL so paging is exact.

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
