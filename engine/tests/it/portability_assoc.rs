//! Declared associations through export/import (`portability/assoc.rs`): an export carries
//! `entity` / `relation` lines, an import into a fresh store restores them with every ref
//! remapped to the rows it wrote, so `traverse` answers the same; re-importing adds nothing;
//! a line naming a row the file does not hold is dropped and reported.

use cpersona_engine::*;
use serde_json::{Value, json};

use crate::common::{Fixture, conn, store};

fn fixture_assoc() -> Fixture {
    crate::common::fixture_with(|config| config.associations_enabled = true)
}

fn declare(f: &Fixture, names: &[(&str, &[&str])], rels: &[(&str, &str, &str)], anchor: String) {
    let out = f
        .engine
        .declare_associations(&DeclareRequest {
            agent_id: "a".into(),
            entities: names
                .iter()
                .map(|(n, aliases)| EntityInput {
                    name: (*n).into(),
                    aliases: aliases.iter().map(|a| (*a).into()).collect(),
                })
                .collect(),
            relations: rels
                .iter()
                .map(|(s, p, o)| RelationInput {
                    subject: (*s).into(),
                    predicate: (*p).into(),
                    object: (*o).into(),
                })
                .collect(),
            anchor_ref: anchor,
            ..DeclareRequest::default()
        })
        .unwrap();
    assert_eq!(out.result, "declared", "{out:?}");
}

/// `traverse` from `entity` with ids dropped and every `mem:<id>` replaced by its content, so
/// two stores whose ids differ can be compared.
fn walk(f: &Fixture, entity: &str) -> Value {
    let out = f
        .engine
        .traverse(&TraverseRequest {
            agent_id: "a".into(),
            entity: entity.into(),
            max_hops: 3,
            limit: 20,
            ..TraverseRequest::default()
        })
        .unwrap();
    let c = conn(f);
    let content = |r: &str| -> String {
        match r.strip_prefix("mem:").and_then(|id| id.parse::<i64>().ok()) {
            Some(id) => c
                .query_row("SELECT content FROM memories WHERE id = ?", [id], |row| {
                    row.get(0)
                })
                .unwrap(),
            None => r.to_owned(),
        }
    };
    let entities: Vec<Value> = out
        .entities
        .iter()
        .map(|e| {
            json!({"name": e.name, "hops": e.hops, "aliases": e.aliases,
                   "mentions": e.mentions.iter().map(|m| content(m)).collect::<Vec<_>>()})
        })
        .collect();
    let relations: Vec<Value> = out
        .relations
        .iter()
        .map(|r| {
            json!({"subject": content(&r.subject), "predicate": r.predicate,
                   "object": content(&r.object), "declared_by": r.declared_by,
                   "declared_at": r.declared_at,
                   "anchor": r.anchor_ref.as_deref().map(content)})
        })
        .collect();
    json!({"entities": entities, "relations": relations, "reason": out.reason})
}

fn import(f: &Fixture, path: &std::path::Path) -> ImportOutcome {
    f.engine
        .import_memories(&ImportRequest {
            input_path: path.to_owned(),
            ..ImportRequest::default()
        })
        .unwrap()
}

fn assoc_rows(f: &Fixture) -> Vec<i64> {
    let c = conn(f);
    ["entities", "entity_aliases", "entity_mentions", "relations"]
        .iter()
        .map(|t| {
            c.query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        })
        .collect()
}

#[test]
fn export_then_import_restores_what_traverse_answers() {
    let src = fixture_assoc();
    // Agent b's rows interleave, so the exported ids differ from the ones an import writes.
    store(&src, "b", "someone else's note");
    let m1 = store(&src, "a", "Alice joined Acme in March");
    store(&src, "b", "Alice is also b's friend");
    let m2 = store(&src, "a", "Acme opened a Lisbon office");
    declare(
        &src,
        &[("Alice", &["Ally"]), ("Acme", &[])],
        &[("alice", "works at", "acme")],
        format!("mem:{m1}"),
    );
    declare(
        &src,
        &[("Lisbon", &["Lisboa"])],
        &[
            ("acme", "has office in", "lisbon"),
            ("lisbon", "described by", &format!("mem:{m2}")),
        ],
        format!("mem:{m2}"),
    );
    let before = walk(&src, "ally");
    assert_eq!(before["entities"].as_array().unwrap().len(), 3, "{before}");

    let path = src.dir.path().join("export.jsonl");
    let out = src
        .engine
        .export_memories(
            &ExportRequest {
                agent_id: "a".into(),
                output_path: path.clone(),
                include_embeddings: false,
                overwrite: false,
            },
            &cpersona_engine::progress::Progress::none(),
        )
        .unwrap();
    assert_eq!((out.memories, out.entities, out.relations), (2, 3, 3));
    let text = std::fs::read_to_string(&path).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            header["entity_count"].as_u64(),
            header["relation_count"].as_u64()
        ),
        (Some(3), Some(3))
    );
    assert!(!text.contains("someone else"), "only agent a is exported");

    let dst = fixture_assoc();
    store(&dst, "c", "a row that shifts every id");
    let first = import(&dst, &path);
    assert_eq!(
        (
            first.imported_memories,
            first.imported_entities,
            first.imported_relations
        ),
        (2, 3, 3)
    );
    assert_eq!(first.dropped_associations, 0, "{first:?}");
    assert_eq!(walk(&dst, "ally"), before);
    assert_eq!(walk(&dst, "Lisboa"), walk(&src, "Lisboa"));

    // Idempotent: a second import skips every row and adds no association.
    let rows = assoc_rows(&dst);
    let second = import(&dst, &path);
    assert_eq!(
        (
            second.skipped_memories,
            second.imported_entities,
            second.imported_relations
        ),
        (2, 0, 0)
    );
    assert_eq!(assoc_rows(&dst), rows);
    assert_eq!(walk(&dst, "ally"), before);
}

#[test]
fn an_association_naming_a_row_outside_the_file_is_dropped_and_reported() {
    let dst = fixture_assoc();
    let path = dst.dir.path().join("in.jsonl");
    let lines = [
        json!({"_type": "header", "version": "cpersona-export/1.0", "agent_id": "a",
               "memory_count": 1, "episode_count": 0, "profile_count": 0}),
        json!({"_type": "memory", "id": 4, "agent_id": "a", "msg_id": "", "content": "kept row",
               "source": "{\"type\": \"User\"}", "timestamp": "2025-05-01T12:00:00+09:00",
               "metadata": {}, "created_at": "2025-05-01 03:00:00", "project_id": "",
               "channel": "", "locked": 0, "recall_count": 0, "last_recalled_at": null}),
        json!({"_type": "entity", "id": 1, "agent_id": "a", "name": "Bob",
               "aliases": ["Robert"], "mentions": [{"ref": "mem:4"}, {"ref": "mem:99"}]}),
        json!({"_type": "relation", "agent_id": "a", "subject": "entity:1",
               "predicate": "wrote", "object": "mem:99"}),
        json!({"_type": "relation", "agent_id": "a", "subject": "entity:1",
               "predicate": "wrote", "object": "mem:4"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    let out = import(&dst, &path);
    assert_eq!(
        (
            out.imported_memories,
            out.imported_entities,
            out.imported_relations
        ),
        (1, 1, 1)
    );
    assert_eq!(out.dropped_associations, 2, "{out:?}");
    assert_eq!(out.errors.len(), 2, "{out:?}");
    let bob = walk(&dst, "robert");
    assert_eq!(bob["entities"][0]["mentions"], json!(["kept row"]), "{bob}");
    assert_eq!(bob["relations"][0]["object"], "kept row", "{bob}");
}
