//! `merge_memories` carries declared associations: mentions and relations that named a source
//! row follow it to its survivor in the target (its copy, or the duplicate it was skipped
//! for), deduplicated, so `traverse` in the target answers as it did in the source.

use cpersona_engine::{
    DeclareRequest, EntityInput, MergeMode, MergeRequest, RelationInput, StoreRequest,
    TraverseOutcome, TraverseRequest,
};

use crate::common::{Fixture, conn};

fn fixture() -> Fixture {
    crate::common::fixture_with(|config| config.associations_enabled = true)
}

fn store(f: &Fixture, agent: &str, content: &str) -> i64 {
    crate::common::store_request(
        f,
        &StoreRequest {
            agent_id: agent.into(),
            content: content.into(),
            timestamp: Some("2026-01-01T00:00:00+00:00".into()),
            ..StoreRequest::default()
        },
    )
}

fn declare(f: &Fixture, anchor: i64, entities: &[(&str, &[&str])], relations: &[[&str; 3]]) {
    let out = f
        .engine
        .declare_associations(&DeclareRequest {
            agent_id: "src".into(),
            entities: entities
                .iter()
                .map(|(name, aliases)| EntityInput {
                    name: (*name).into(),
                    aliases: aliases.iter().map(|a| (*a).into()).collect(),
                })
                .collect(),
            relations: relations
                .iter()
                .map(|[s, p, o]| RelationInput {
                    subject: (*s).into(),
                    predicate: (*p).into(),
                    object: (*o).into(),
                })
                .collect(),
            anchor_ref: format!("mem:{anchor}"),
            ..DeclareRequest::default()
        })
        .unwrap();
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
}

fn walk(f: &Fixture, agent: &str) -> TraverseOutcome {
    f.engine
        .traverse(&TraverseRequest {
            agent_id: agent.into(),
            entity: "ally".into(),
            max_hops: 2,
            limit: 20,
            ..TraverseRequest::default()
        })
        .unwrap()
}

/// The walk with every `mem:<id>` replaced by the row's content, so answers over different
/// ids compare: `(entity, hops, sorted mentions)` and `(subject, predicate, object, anchor)`.
type Shape = (Vec<(String, usize, Vec<String>)>, Vec<[String; 4]>);

fn shape(f: &Fixture, t: &TraverseOutcome) -> Shape {
    assert_eq!(t.reason, None, "the entity must resolve");
    let c = conn(f);
    let text = |r: &str| -> String {
        match r.strip_prefix("mem:") {
            Some(id) => c
                .query_row("SELECT content FROM memories WHERE id = ?", [id], |row| {
                    row.get(0)
                })
                .unwrap(),
            None => r.to_owned(),
        }
    };
    let entities = t
        .entities
        .iter()
        .map(|e| {
            let mut m: Vec<String> = e.mentions.iter().map(|r| text(r)).collect();
            m.sort();
            (e.name.clone(), e.hops, m)
        })
        .collect();
    let mut relations: Vec<[String; 4]> = t
        .relations
        .iter()
        .map(|r| {
            [
                text(&r.subject),
                r.predicate.clone(),
                text(&r.object),
                text(r.anchor_ref.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    relations.sort();
    (entities, relations)
}

/// `src` holds m1 and m2 with Alice (alias Ally) and Acme mentioned by m1, `alice works at
/// acme` anchored on m1, and `m2 follows m1`; with `dup`, the target already holds m1's text.
/// Returns `(dup, m1, m2, the source's walk)`.
fn setup(f: &Fixture, dup: bool) -> (Option<i64>, i64, i64, Shape) {
    let dup = dup.then(|| store(f, "dst", "Alice joined Acme in March"));
    let m1 = store(f, "src", "Alice joined Acme in March");
    let m2 = store(f, "src", "Alice left Acme in May");
    declare(
        f,
        m1,
        &[("Alice", &["Ally"]), ("Acme", &[])],
        &[["alice", "works at", "acme"]],
    );
    declare(
        f,
        m2,
        &[("Alice", &[])],
        &[[&format!("mem:{m2}"), "follows", &format!("mem:{m1}")]],
    );
    let before = shape(f, &walk(f, "src"));
    assert!(!before.1.is_empty() && before.0[0].2.len() == 2);
    (dup, m1, m2, before)
}

fn merge(mode: MergeMode) -> MergeRequest {
    MergeRequest {
        source_agent_id: "src".into(),
        target_agent_id: "dst".into(),
        mode,
        ..MergeRequest::default()
    }
}

#[test]
fn merged_rows_keep_their_mentions_and_relations_on_the_survivor() {
    let f = fixture();
    // m1 is skipped for the target's duplicate: its survivor has another id.
    let (dup, m1, _, before) = setup(&f, true);
    let dup = dup.unwrap();
    assert_ne!(dup, m1);
    let out = f
        .engine
        .merge_memories(
            &merge(MergeMode::Copy),
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!((out.merged_memories, out.skipped_memories), (1, 1));
    assert_eq!((out.merged_entities, out.merged_relations), (2, 2));
    assert_eq!(out.dropped_associations, 0);
    let after = walk(&f, "dst");
    assert_eq!(shape(&f, &after), before);
    // The skipped row's links point at the target's duplicate, never at the source row.
    let refs: Vec<&String> = after.entities.iter().flat_map(|e| &e.mentions).collect();
    assert!(refs.contains(&&format!("mem:{dup}")), "{refs:?}");
    assert!(!refs.contains(&&format!("mem:{m1}")), "{refs:?}");
    let record_link: i64 = conn(&f)
        .query_row(
            "SELECT COUNT(*) FROM relations WHERE agent_id = 'dst' AND subject_kind = 'mem' \
             AND object_kind = 'mem' AND object_id = ?",
            [dup],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        record_link, 1,
        "the record relation follows m1 to its survivor"
    );
    // Carrying again adds nothing.
    let again = f
        .engine
        .merge_memories(
            &merge(MergeMode::Copy),
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!(
        (
            again.merged_entities,
            again.merged_mentions,
            again.merged_relations
        ),
        (0, 0, 0)
    );
}

#[test]
fn a_move_carries_before_it_deletes_and_leaves_no_orphan_entity() {
    let f = fixture();
    let (_, _, _, before) = setup(&f, false);
    let moved = f
        .engine
        .merge_memories(
            &merge(MergeMode::Move),
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!(moved.source_deleted, Some(2));
    assert_eq!(moved.source_entities_deleted, Some(2));
    assert_eq!(shape(&f, &walk(&f, "dst")), before);
    assert_eq!(walk(&f, "src").reason, Some("no_such_entity"));
    let left: i64 = conn(&f)
        .query_row(
            "SELECT COUNT(*) FROM relations WHERE agent_id = 'src'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}
