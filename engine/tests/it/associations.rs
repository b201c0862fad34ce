//! Declared associations end to end: declare, retract, traverse bounds, isolation between
//! agents, purge, the association cue and the propagation seat in recall, off by default, and
//! the empty registry as a byte-identical no-op.

use cpersona_engine::{
    DeclareRequest, EngineConfig, EntityInput, IndexTable, RecallQuery, RelationInput,
    StoreRequest, TraverseRequest,
};

use crate::common::{Fixture, conn};

fn fixture_with(associations: bool, propagation: bool) -> Fixture {
    crate::common::fixture_with(|config| {
        config.associations_enabled = associations;
        config.propagation_seat = propagation;
    })
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

fn entity(name: &str, aliases: &[&str]) -> EntityInput {
    EntityInput {
        name: name.into(),
        aliases: aliases.iter().map(|a| (*a).into()).collect(),
    }
}

fn relation(s: &str, p: &str, o: &str) -> RelationInput {
    RelationInput {
        subject: s.into(),
        predicate: p.into(),
        object: o.into(),
    }
}

fn declare(agent: &str) -> DeclareRequest {
    DeclareRequest {
        agent_id: agent.into(),
        ..DeclareRequest::default()
    }
}

fn walk(agent: &str, entity: &str, hops: usize, limit: usize) -> TraverseRequest {
    TraverseRequest {
        agent_id: agent.into(),
        entity: entity.into(),
        max_hops: hops,
        limit,
        ..TraverseRequest::default()
    }
}

fn count(f: &Fixture, table: &str) -> i64 {
    conn(f)
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn switched_off_refuses_and_names_the_setting() {
    let f = fixture_with(false, false);
    let mut req = declare("a");
    req.entities.push(entity("Alice", &[]));
    let err = f.engine.declare_associations(&req).unwrap_err();
    assert!(err.is_user_error());
    assert!(
        err.to_string().contains("CPERSONA_ASSOCIATIONS_ENABLED"),
        "{err}"
    );
    let err = f.engine.traverse(&walk("a", "Alice", 1, 20)).unwrap_err();
    assert!(err.to_string().contains("CPERSONA_ASSOCIATIONS_ENABLED"));
    assert_eq!(count(&f, "entities"), 0);
    // The default configuration has them on, as CPersona ships them; the seat stays off.
    assert!(EngineConfig::new("x.db").associations_enabled);
    assert!(!EngineConfig::new("x.db").propagation_seat);
}

#[test]
fn declare_aliases_mentions_relations_and_retract() {
    let f = fixture_with(true, false);
    let m1 = store(&f, "a", "Alice joined Acme in March");
    let mut req = declare("a");
    req.entities = vec![
        entity("Alice", &["Ally", "ＡＬＩＣＥ"]),
        entity("Acme", &[]),
    ];
    req.relations = vec![relation("alice", "Works At", "ACME")];
    req.anchor_ref = format!("mem:{m1}");
    let out = f.engine.declare_associations(&req).unwrap();
    assert_eq!(out.result, "declared");
    assert_eq!(out.entities.len(), 2);
    assert!(out.entities.iter().all(|e| e.created));
    assert_eq!(out.mentions, 2);
    assert_eq!(out.relations.len(), 1);
    assert!(out.dropped.is_empty(), "{:?}", out.dropped);
    // Declaring again finds the same rows (exact match after normalisation).
    let again = f.engine.declare_associations(&req).unwrap();
    assert!(again.entities.iter().all(|e| !e.created));
    assert_eq!(again.entities[0].id, out.entities[0].id);
    assert_eq!(again.mentions, 0);
    assert_eq!(again.relations, out.relations);
    assert_eq!(count(&f, "entities"), 2);
    // An alias another entity holds is dropped, not moved.
    let mut clash = declare("a");
    clash.entities = vec![entity("Bob", &["ally"])];
    let out2 = f.engine.declare_associations(&clash).unwrap();
    assert_eq!(out2.dropped.len(), 1);
    assert_eq!(out2.dropped[0].reason, "alias_taken");
    // Traverse by alias, full-width folded.
    let t = f.engine.traverse(&walk("a", "ally", 1, 20)).unwrap();
    assert_eq!(t.entities[0].name, "Alice");
    assert_eq!(t.entities[0].mentions, vec![format!("mem:{m1}")]);
    assert_eq!(t.relations.len(), 1);
    assert_eq!(t.relations[0].predicate, "works at");
    assert_eq!(t.relations[0].object, "Acme");
    // Retract the relation and one mention.
    let mut retract = declare("a");
    retract.retract_relations = out.relations.clone();
    retract.retract_mentions = vec![(out.entities[0].id, format!("mem:{m1}"))];
    let r = f.engine.declare_associations(&retract).unwrap();
    let retracted = r.retracted.unwrap();
    assert_eq!((retracted.relations, retracted.mentions), (1, 1));
    let t = f.engine.traverse(&walk("a", "Alice", 1, 20)).unwrap();
    assert!(t.relations.is_empty());
    assert!(t.entities[0].mentions.is_empty());
    assert_eq!(t.entities.len(), 1);
}

#[test]
fn bad_input_writes_nothing() {
    let f = fixture_with(true, false);
    let theirs = store(&f, "b", "a row of agent b");
    let mut req = declare("a");
    req.entities = vec![entity("Alice", &[])];
    req.anchor_ref = format!("mem:{theirs}");
    assert!(
        f.engine
            .declare_associations(&req)
            .unwrap_err()
            .is_user_error()
    );
    req.anchor_ref = "mem:x".into();
    assert!(f.engine.declare_associations(&req).is_err());
    req.anchor_ref.clear();
    req.entities = (0..65).map(|i| entity(&format!("e{i}"), &[])).collect();
    assert!(f.engine.declare_associations(&req).is_err());
    req.entities = vec![entity(&"x".repeat(257), &[])];
    assert!(f.engine.declare_associations(&req).is_err());
    assert_eq!(count(&f, "entities"), 0);
    assert!(f.engine.traverse(&walk("a", "x", 6, 20)).is_err());
    assert!(f.engine.traverse(&walk("a", "x", 1, 0)).is_err());
    assert!(f.engine.traverse(&walk("a", "x", 1, 101)).is_err());
}

/// A chain e0 - e1 - e2 - e3 - e4 - e5.
fn chain(f: &Fixture, agent: &str) {
    let mut req = declare(agent);
    req.relations = (0..5)
        .map(|i| relation(&format!("e{i}"), "next", &format!("e{}", i + 1)))
        .collect();
    f.engine.declare_associations(&req).unwrap();
}

#[test]
fn traverse_reports_the_bounds_that_cut() {
    let f = fixture_with(true, false);
    chain(&f, "a");
    let t = f.engine.traverse(&walk("a", "e0", 2, 20)).unwrap();
    let names: Vec<&str> = t.entities.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, vec!["e0", "e1", "e2"]);
    assert_eq!(t.entities[2].hops, 2);
    assert_eq!(t.bounds.unwrap().omitted, vec!["max_hops"]);
    assert_eq!(t.relations.len(), 2);

    let t = f.engine.traverse(&walk("a", "e0", 5, 3)).unwrap();
    assert_eq!(t.entities.len(), 3);
    assert_eq!(t.entities_omitted, Some(3));
    assert_eq!(t.bounds.unwrap().omitted, vec!["limit"]);

    let t = f.engine.traverse(&walk("a", "e0", 5, 20)).unwrap();
    assert_eq!(t.entities.len(), 6);
    assert!(t.bounds.is_none());

    let t = f.engine.traverse(&walk("a", "e0", 0, 20)).unwrap();
    assert_eq!(t.entities.len(), 1);
    assert_eq!(t.bounds.unwrap().omitted, vec!["max_hops"]);

    let t = f.engine.traverse(&walk("a", "nobody", 1, 20)).unwrap();
    assert_eq!(t.reason, Some("no_such_entity"));
    assert!(t.entities.is_empty());
}

#[test]
fn another_agents_entities_are_never_visible_and_purge_removes_them() {
    let f = fixture_with(true, false);
    chain(&f, "b");
    let mb = store(&f, "b", "Alice secret of b");
    let mut req = declare("b");
    req.entities = vec![entity("Alice", &[])];
    req.anchor_ref = format!("mem:{mb}");
    f.engine.declare_associations(&req).unwrap();
    let t = f.engine.traverse(&walk("a", "e0", 5, 20)).unwrap();
    assert_eq!(t.reason, Some("no_such_entity"));
    let t = f.engine.traverse(&walk("a", "Alice", 5, 20)).unwrap();
    assert_eq!(t.reason, Some("no_such_entity"));
    // Agent a's own Alice is another entity, and b's ids retract nothing for a.
    let ma = store(&f, "a", "Alice of a");
    let mut mine = declare("a");
    mine.entities = vec![entity("Alice", &[])];
    mine.anchor_ref = format!("mem:{ma}");
    let out = f.engine.declare_associations(&mine).unwrap();
    assert!(out.entities[0].created);
    let theirs = f.engine.traverse(&walk("b", "e0", 1, 20)).unwrap();
    let mut steal = declare("a");
    steal.retract_relations = theirs.relations.iter().map(|r| r.id).collect();
    let r = f.engine.declare_associations(&steal).unwrap();
    assert_eq!(r.retracted.unwrap().relations, 0);
    // a's recall naming Alice never holds b's row.
    let recall = f
        .engine
        .recall(&RecallQuery {
            agent_id: "a".into(),
            query: "what about alice".into(),
            limit: 10,
            ..RecallQuery::default()
        })
        .unwrap();
    let body = serde_json::to_string(&recall.response).unwrap();
    assert!(!body.contains("secret"), "{body}");

    let before_a = count(&f, "entities");
    f.engine.delete_agent_data("b", "").unwrap();
    assert_eq!(count(&f, "entities"), before_a - 7);
    let c = conn(&f);
    let left: i64 = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM relations WHERE agent_id = 'b') + \
             (SELECT COUNT(*) FROM entities WHERE agent_id = 'b') + \
             (SELECT COUNT(*) FROM entity_mentions WHERE ref = ?1)",
            [format!("mem:{mb}")],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    let t = f.engine.traverse(&walk("a", "Alice", 1, 20)).unwrap();
    assert_eq!(t.entities.len(), 1);
}

fn golden_corpus(f: &Fixture) {
    const WORDS: &[&str] = &[
        "apple", "river", "stone", "cloud", "engine", "garden", "winter", "copper", "signal",
        "harbor", "lantern", "meadow",
    ];
    for i in 0..30 {
        let content = (0..3 + i % 4)
            .map(|j| WORDS[(i * 7 + j * 5 + i / 3) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
            + &format!(" note{i}");
        f.engine
            .store(&StoreRequest {
                agent_id: ["a", "b"][i % 2].into(),
                content,
                timestamp: Some(format!("2026-01-{:02}T09:30:00+00:00", i + 1)),
                ..StoreRequest::default()
            })
            .unwrap();
    }
    for table in IndexTable::ALL {
        f.engine.rebuild_index(table, &mut |_, _| {}).unwrap();
    }
}

fn golden_query() -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: "apple river stone".into(),
        limit: 4,
        // The golden's clock (`recall.rs`): confidence reports ages against it.
        now_ms: Some(1_769_904_000_000),
        // A recall credits what it returns (`recall_count`, read by the confidence report);
        // the no-op test compares two recalls on one store, so both run in a paused session,
        // which gives no credit (the engine is paused for it below).
        session_key: "compare".into(),
        ..RecallQuery::default()
    }
}

#[test]
fn empty_registry_is_a_byte_identical_no_op() {
    let f = fixture_with(true, false);
    golden_corpus(&f);
    f.engine.pause_persistence(Some(3_600), "compare");
    let r = f.engine.recall(&golden_query()).unwrap();
    let body = serde_json::to_string_pretty(&r.response).unwrap();
    expect_test::expect_file!["recall_golden.json"].assert_eq(&body);
    // Entities the query does not name change nothing either.
    let mut req = declare("a");
    req.entities = vec![entity("Zebra", &["zed"])];
    f.engine.declare_associations(&req).unwrap();
    let r = f.engine.recall(&golden_query()).unwrap();
    assert_eq!(serde_json::to_string_pretty(&r.response).unwrap(), body);
}

#[test]
fn a_named_entity_holds_the_rows_that_mention_it_and_its_neighbours() {
    let f = fixture_with(true, false);
    let alice = store(&f, "a", "Alice moved to Lisbon last spring");
    let acme = store(&f, "a", "The quarterly report of the company was late");
    for i in 0..5 {
        store(&f, "a", &format!("unrelated weather note {i}"));
    }
    let mut req = declare("a");
    req.entities = vec![entity("Alice", &[])];
    req.anchor_ref = format!("mem:{alice}");
    f.engine.declare_associations(&req).unwrap();
    let mut req = declare("a");
    req.entities = vec![entity("Acme", &[])];
    req.relations = vec![relation("Alice", "works_at", "Acme")];
    req.anchor_ref = format!("mem:{acme}");
    f.engine.declare_associations(&req).unwrap();

    let q = RecallQuery {
        agent_id: "a".into(),
        query: "weather for alice".into(),
        limit: 2,
        ..RecallQuery::default()
    };
    let r = f.engine.recall(&q).unwrap();
    let body = serde_json::to_value(&r.response).unwrap();
    let held: Vec<(String, String, u64)> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["match_reason"]["signal"] == "association")
        .map(|m| {
            assert_eq!(m["match_reason"]["admission"], "reservation");
            (
                m["ref"].as_str().unwrap().to_owned(),
                m["match_reason"]["entity"].as_str().unwrap().to_owned(),
                m["match_reason"]["hops"].as_u64().unwrap(),
            )
        })
        .collect();
    let window: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["match_reason"]["signal"] != "association")
        .map(|m| m["ref"].as_str().unwrap())
        .collect();
    assert!(window.len() <= 2);
    for (r, ..) in &held {
        assert!(!window.contains(&r.as_str()), "held twice: {r}");
    }
    let expect_alice = (format!("mem:{alice}"), "Alice".to_owned(), 0);
    let expect_acme = (format!("mem:{acme}"), "Acme".to_owned(), 1);
    if !window.contains(&expect_alice.0.as_str()) {
        assert!(held.contains(&expect_alice), "{body}");
    }
    assert!(held.contains(&expect_acme), "{body}");
    // Held rows come first (ascending relevance): the window's best row stays last.
    let last = body["messages"].as_array().unwrap().last().unwrap();
    assert_ne!(last["match_reason"]["signal"], "association");
}

#[test]
fn propagation_seat_adds_one_marked_row_only_when_on() {
    let corpus = |f: &Fixture| {
        for i in 0..12 {
            store(f, "a", &format!("harbor lantern story part {i} meadow"));
        }
    };
    let q = RecallQuery {
        agent_id: "a".into(),
        query: "harbor lantern".into(),
        limit: 3,
        ..RecallQuery::default()
    };
    let off = fixture_with(false, false);
    corpus(&off);
    let base = off.engine.recall(&q).unwrap().response;
    let on = fixture_with(false, true);
    corpus(&on);
    let seated = on.engine.recall(&q).unwrap().response;
    assert_eq!(seated.messages.len(), base.messages.len() + 1);
    assert_eq!(&seated.messages[1..], &base.messages[..]);
    let seat = serde_json::to_value(&seated.messages[0]).unwrap();
    assert_eq!(seat["match_reason"]["signal"], "propagation");
    assert_eq!(seat["match_reason"]["admission"], "reservation");
    assert!(seat["match_reason"]["fused_rank"].as_u64().unwrap() >= 1);
    assert!(seat["match_reason"]["cosine_rank"].as_u64().unwrap() >= 1);
    let held: Vec<_> = base.messages.iter().map(|m| m.r#ref).collect();
    assert!(!held.contains(&seated.messages[0].r#ref));
}

#[test]
fn a_traced_recall_shows_its_held_places_and_replays_them() {
    let f = fixture_with(true, true);
    let alice = store(&f, "a", "Alice moved to Lisbon last spring");
    for i in 0..12 {
        store(&f, "a", &format!("weather note {i} about harbor lanterns"));
    }
    let mut req = declare("a");
    req.entities = vec![entity("Alice", &[])];
    req.anchor_ref = format!("mem:{alice}");
    f.engine.declare_associations(&req).unwrap();
    let q = RecallQuery {
        agent_id: "a".into(),
        query: "weather harbor lanterns alice".into(),
        limit: 2,
        trace: true,
        ..RecallQuery::default()
    };
    let r = f.engine.recall(&q).unwrap();
    let signals: Vec<String> = serde_json::to_value(&r.response).unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["match_reason"]["signal"].as_str().unwrap().to_owned())
        .collect();
    assert!(signals.contains(&"association".to_owned()), "{signals:?}");
    assert!(signals.contains(&"propagation".to_owned()), "{signals:?}");
    let trace = r.trace().unwrap();
    // Every returned row is in the trace's response, the held ones also in `held`, and each
    // held row's facts are in the pool (so it is accounted for, not a row from nowhere).
    let returned: Vec<String> = r
        .response
        .messages
        .iter()
        .map(|m| m.r#ref.to_string())
        .collect();
    let saved: Vec<String> = trace.response["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ref"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(saved, returned);
    let held: Vec<&str> = trace
        .held
        .iter()
        .map(|m| m["ref"].as_str().unwrap())
        .collect();
    let seats = signals
        .iter()
        .filter(|s| *s == "association" || *s == "propagation")
        .count();
    assert_eq!(held.len(), seats);
    for r in &held {
        assert!(
            trace.pool.iter().any(|p| p.r#ref.to_string() == *r),
            "{r} not in the pool"
        );
        assert!(returned.contains(&(*r).to_owned()));
    }
    let out = cpersona_engine::replay::replay(&trace, &Default::default()).unwrap();
    assert!(out.unchanged && out.exact, "{out:?}");
    assert_eq!(out.refs_best_first().len(), returned.len());
}

/// `traverse`'s `source_id` lists only the mentions by memories of that source, read as
/// recall reads it: one id whole (`discord:1` is not `discord:10`), or a namespace.
#[test]
fn traverse_source_id_lists_only_that_sources_mentions() {
    let f = fixture_with(true, false);
    let mut ids = Vec::new();
    for source in ["discord:1", "discord:10", "slack:1"] {
        let id = crate::common::store_request(
            &f,
            &StoreRequest {
                agent_id: "a".into(),
                content: format!("Alice said hello on {source}"),
                source: Some(serde_json::json!({"type": "User", "id": source})),
                timestamp: Some("2026-01-01T00:00:00+00:00".into()),
                ..StoreRequest::default()
            },
        );
        let mut req = declare("a");
        req.entities.push(entity("Alice", &[]));
        req.anchor_ref = format!("mem:{id}");
        f.engine.declare_associations(&req).unwrap();
        ids.push(format!("mem:{id}"));
    }
    let mentions = |source_id: &str| -> Vec<String> {
        let req = TraverseRequest {
            source_id: source_id.into(),
            ..walk("a", "Alice", 0, 20)
        };
        let mut refs = f.engine.traverse(&req).unwrap().entities[0]
            .mentions
            .clone();
        refs.sort();
        refs
    };
    let mut all = ids.clone();
    all.sort();
    assert_eq!(mentions(""), all);
    assert_eq!(mentions("discord:1"), vec![ids[0].clone()]);
    let mut discord = vec![ids[0].clone(), ids[1].clone()];
    discord.sort();
    assert_eq!(mentions("discord:"), discord);
    assert!(mentions("nobody").is_empty());
}
