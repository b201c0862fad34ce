//! Recall Depth never depends on `limit` (design §4): through the recall's own path, the set
//! of candidate ids fusion considered is the same whatever the count asked, and the
//! recoupling mutation (`candidate depth = limit`), switched on in that same path, breaks it.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::recall::pass::Mutation;
use crate::refs::Ref;

fn engine() -> (tempfile::TempDir, crate::Engine) {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::EngineConfig::new(dir.path().join("d.db"));
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine = crate::Engine::open(config, embedder).unwrap();
    // More matching rows than the default depth (50) so a depth that followed the count
    // would see a different set.
    for i in 0..120 {
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("harbor lantern note {i} about stones {}", i % 7),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    (dir, engine)
}

/// The candidate ids fusion considered for `limit`, through the recall entry.
fn considered(engine: &crate::Engine, limit: usize, mutation: Mutation) -> BTreeSet<Ref> {
    let q = crate::RecallQuery {
        agent_id: "a".into(),
        query: "harbor lantern stones".into(),
        limit,
        trace: true,
        ..crate::RecallQuery::default()
    };
    let result =
        crate::recall::answer_with(engine.store_handle(), engine.config(), &q, mutation).unwrap();
    let stages = result.stages.expect("traced");
    stages.fusion.iter().map(|c| c.r#ref).collect()
}

#[test]
fn changing_limit_alone_keeps_the_candidate_set() {
    let (_dir, engine) = engine();
    let base = considered(&engine, 1, Mutation::None);
    assert!(
        base.len() > 50,
        "the arms must fill the depth: {}",
        base.len()
    );
    for limit in [2, 5, 10, 30, 50, 100] {
        assert_eq!(
            considered(&engine, limit, Mutation::None),
            base,
            "limit {limit}"
        );
    }
}

#[test]
fn the_recoupling_mutation_is_caught() {
    let (_dir, engine) = engine();
    let small = considered(&engine, 5, Mutation::DepthFromLimit);
    let large = considered(&engine, 50, Mutation::DepthFromLimit);
    assert_ne!(
        small, large,
        "a depth that follows the count changes the candidate set"
    );
}
