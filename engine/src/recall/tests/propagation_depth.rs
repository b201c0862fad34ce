//! The propagation seat's second pass runs at Recall Depth 100 per arm (design §4; CPersona's
//! `DEPTH`), not the configured first-pass depth, held within the operator's maximum, and the
//! seat says the depth it ran at.

use std::sync::Arc;

use crate::recall::stages::propagation::DEPTH;
use crate::recall::stages::select::RecallDepth;
use crate::recall::stages::shape::Signal;

fn seat_depth(depth: RecallDepth) -> Option<usize> {
    let dir = tempfile::tempdir().unwrap();
    let mut config = crate::EngineConfig::new(dir.path().join("p.db"));
    config.propagation_seat = true;
    config.recall.depth = depth;
    let embedder = Arc::new(crate::embed::hash::HashEmbedder::new());
    let engine = crate::Engine::open(config, embedder).unwrap();
    for i in 0..12 {
        engine
            .store(&crate::StoreRequest {
                agent_id: "a".into(),
                content: format!("harbor lantern story part {i} meadow"),
                ..crate::StoreRequest::default()
            })
            .unwrap();
    }
    let r = engine
        .recall(&crate::RecallQuery {
            agent_id: "a".into(),
            query: "harbor lantern".into(),
            limit: 3,
            ..crate::RecallQuery::default()
        })
        .unwrap();
    let seat = r.response.messages.first()?;
    assert_eq!(seat.match_reason.signal, Signal::Propagation);
    // The first pass keeps its configured depth.
    assert_eq!(r.response.depth, Some(depth.per_arm()));
    seat.match_reason.depth
}

#[test]
fn the_second_pass_runs_at_depth_100_within_the_operators_maximum() {
    assert_eq!(DEPTH, 100);
    assert_eq!(seat_depth(RecallDepth::default()), Some(DEPTH));
    assert_eq!(
        seat_depth(RecallDepth::new(10, 20, 60).unwrap()),
        Some(60),
        "bounded by the configured maximum"
    );
}
