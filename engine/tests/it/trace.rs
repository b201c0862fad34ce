//! The recall trace, offline replay and the failure taxonomy end to end: a trace saved as
//! JSON replays to the original response byte for byte, a changed depth or limit replays to
//! what a fresh recall under that setting returns, and each code the taxonomy can assign
//! from a single-pass trace is constructed once.

use cpersona_engine::recall::stages::fusion_weights::AdaptiveFusion;
use cpersona_engine::refs::Ref;
use cpersona_engine::replay::{ReplayChanges, replay};
use cpersona_engine::taxonomy::{FailureCode, attribute};
use cpersona_engine::trace::{ExclusionReason, RecallTrace};
use cpersona_engine::{Engine, EngineConfig, RecallQuery, RecallResult};
use serde_json::Value;

use crate::common::{DIM, Fixture, fixture, store};

const WORDS: &[&str] = &[
    "apple", "river", "stone", "cloud", "engine", "garden", "winter", "copper", "signal", "harbor",
    "lantern", "meadow", "violet", "falcon", "pepper", "saddle",
];

/// 80 rows of agent `a`, 5 of agent `b`: more than the depth of the small-depth engine.
fn corpus(f: &Fixture) {
    for i in 0..80 {
        let words: Vec<&str> = (0..3 + i % 3)
            .map(|j| WORDS[(i * 5 + j * 3 + i / 7) % WORDS.len()])
            .collect();
        store(f, "a", &format!("{} item{i}", words.join(" ")));
    }
    for i in 0..5 {
        store(f, "b", &format!("apple river secret{i}"));
    }
}

fn query(text: &str, limit: usize) -> RecallQuery {
    RecallQuery {
        agent_id: "a".into(),
        query: text.into(),
        limit,
        trace: true,
        session_key: COMPARE.into(),
        ..RecallQuery::default()
    }
}

/// A recall credits the memories it returns (`recall_count`, which the confidence report
/// reads), so a second recall on the same store sees other confidence inputs than the first.
/// The replay tests compare a replay of the first recall's trace with a second recall: they
/// pause `engine` for the queries' session, and a paused session gives no credit, so both
/// recalls read the store as the corpus left it.
fn without_credit(engine: &Engine) {
    engine.pause_persistence(Some(3_600), COMPARE);
}

const COMPARE: &str = "compare";

fn engine_with_depth(f: &Fixture, depth: usize) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.recall.depth.floor = config.recall.depth.floor.min(depth);
    config.recall.depth.default = depth;
    Engine::open(config, f.embedder.clone()).unwrap()
}

/// The trace through its JSON text, as `--trace-out` and `replay` see it.
fn saved(result: &RecallResult) -> RecallTrace {
    let text = serde_json::to_string_pretty(&result.trace().unwrap()).unwrap();
    RecallTrace::from_json(&text).unwrap()
}

/// A response as the trace saves it: without the rows' text.
fn body(result_response: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(result_response).unwrap();
    cpersona_engine::trace::without_text(value).to_string()
}

fn set(pairs: &[&str]) -> ReplayChanges {
    ReplayChanges::parse_all(pairs.iter().copied()).unwrap()
}

#[test]
fn a_saved_trace_replays_to_the_same_response_byte_for_byte() {
    let f = fixture();
    corpus(&f);
    for (text, limit) in [("apple river", 10), ("copper signal item3", 3), ("", 5)] {
        let result = f.engine.recall(&query(text, limit)).unwrap();
        assert!(!result.response.messages.is_empty(), "{text:?}");
        let trace = saved(&result);
        let out = replay(&trace, &ReplayChanges::default()).unwrap();
        assert_eq!(body(&out.response), body(&result.response), "{text:?}");
        assert!(out.unchanged && out.exact, "{text:?}: {out:?}");
        // In memory (no float parsing) every stage comes back bit for bit.
        let direct = replay(&result.trace().unwrap(), &ReplayChanges::default()).unwrap();
        assert_eq!(Some(&direct.stages), result.stages.as_ref(), "{text:?}");
    }
}

#[test]
fn a_trace_without_trace_is_none_and_holds_no_embedding() {
    let f = fixture();
    corpus(&f);
    let mut q = query("apple river", 10);
    q.trace = false;
    assert!(f.engine.recall(&q).unwrap().trace().is_none());
    let trace = f
        .engine
        .recall(&query("apple river", 10))
        .unwrap()
        .trace()
        .unwrap();
    fn longest_number_array(v: &Value) -> usize {
        match v {
            Value::Array(items) => items
                .iter()
                .map(longest_number_array)
                .max()
                .unwrap_or(0)
                .max(items.iter().filter(|x| x.is_number()).count()),
            Value::Object(map) => map.values().map(longest_number_array).max().unwrap_or(0),
            _ => 0,
        }
    }
    let json = serde_json::to_value(&trace).unwrap();
    assert!(
        longest_number_array(&json) < DIM,
        "a vector leaked into the trace"
    );
    assert_eq!(trace.counts.pool, trace.fusion.len());
    assert_eq!(trace.config.hash, trace.config.compute_hash());
    // No stored text travels in the trace: not in the pool, not in the saved response.
    let text = json.to_string();
    let result = f.engine.recall(&query("apple river", 10)).unwrap();
    for message in &result.response.messages {
        assert!(message.content.len() > 8);
        assert!(
            !text.contains(&message.content),
            "{} leaked into the trace",
            message.r#ref
        );
    }
    assert_eq!(trace.scope.agent_id, "a");
}

#[test]
fn replay_with_a_smaller_depth_equals_a_recall_at_that_depth() {
    let f = fixture();
    corpus(&f);
    without_credit(&f.engine);
    let deep = f.engine.recall(&query("apple river stone", 10)).unwrap();
    let trace = saved(&deep);
    let shallow = engine_with_depth(&f, 3)
        .recall(&query("apple river stone", 10))
        .unwrap();
    let out = replay(&trace, &set(&["depth=3"])).unwrap();
    assert_eq!(body(&out.response), body(&shallow.response));
    assert!(out.exact);
    assert_ne!(
        body(&out.response),
        body(&deep.response),
        "depth 3 must change something"
    );
}

#[test]
fn replay_beyond_the_fetched_depth_says_the_arms_must_be_rerun() {
    let f = fixture();
    corpus(&f);
    let result = engine_with_depth(&f, 10)
        .recall(&query("apple river", 10))
        .unwrap();
    let trace = saved(&result);
    assert!(trace.arms.iter().any(|a| !a.exhausted));
    let out = replay(&trace, &set(&["depth=60"])).unwrap();
    assert!(!out.exact);
    assert_eq!(out.rerun[0].stage, "arms");
}

#[test]
fn replay_with_a_larger_limit_equals_a_recall_with_it() {
    let f = fixture();
    corpus(&f);
    without_credit(&f.engine);
    let small = f.engine.recall(&query("meadow violet", 2)).unwrap();
    let large = f.engine.recall(&query("meadow violet", 12)).unwrap();
    let out = replay(&saved(&small), &set(&["limit=12"])).unwrap();
    assert_eq!(body(&out.response), body(&large.response));
    assert!(out.response.messages.len() > 2);
}

#[test]
fn replay_changes_reach_their_stage() {
    let f = fixture();
    corpus(&f);
    let trace = saved(&f.engine.recall(&query("apple river", 10)).unwrap());
    let alone = replay(&trace, &set(&["arm=memory_keyword"])).unwrap();
    assert!(alone.stages.arms.iter().all(|l| l.arm.is_lexical()));
    assert!(
        alone.response.messages.iter().all(|m| m
            .match_reason
            .arms
            .iter()
            .all(|a| a.arm.is_lexical()))
    );
    let strict = replay(&trace, &set(&["threshold=0.99"])).unwrap();
    assert!((strict.stages.gate.threshold - 0.99).abs() < 1e-12);
    assert!(!strict.unchanged);
    let cue = replay(&trace, &set(&["cue=off"])).unwrap();
    assert!(cue.unchanged && cue.notes[0].contains("no cue in this trace"));
    let rsf = replay(&trace, &set(&["fusion=rsf", "weight.vector_near=0"])).unwrap();
    assert_eq!(rsf.changes, vec!["fusion=rsf", "weight.vector_near=0"]);
    for bad in [
        "depth=0",
        "nope=1",
        "weight.sideways=1",
        "threshold=-1",
        "limit",
    ] {
        assert!(ReplayChanges::parse_all([bad]).is_err(), "{bad}");
    }
}

fn engine_with_adaptive(f: &Fixture, floor: Option<f64>) -> Engine {
    let mut config = EngineConfig::new(f.dir.path().join("store.db"));
    config.recall.adaptive = floor.map(|floor| AdaptiveFusion {
        floor,
        ..AdaptiveFusion::default()
    });
    Engine::open(config, f.embedder.clone()).unwrap()
}

#[test]
fn adaptive_fusion_names_its_weights_in_the_trace_and_a_replay_can_turn_it_off() {
    let f = fixture();
    corpus(&f);
    without_credit(&f.engine);
    let adaptive = engine_with_adaptive(&f, Some(0.0));
    let fixed = engine_with_adaptive(&f, None);
    let mut changed = 0;
    for text in ["apple river", "copper signal item3", "meadow violet falcon"] {
        let result = adaptive.recall(&query(text, 10)).unwrap();
        let trace = saved(&result);
        let chosen = trace
            .fusion_weights
            .as_ref()
            .expect("adaptive weights traced");
        assert!(!chosen.lexical.is_empty(), "{text:?}: {chosen:?}");
        assert!(chosen.lexical.iter().all(|c| !c.reason.is_empty()));
        assert_eq!(trace.config.adaptive.map(|a| a.floor), Some(0.0));
        // The saved trace replays to the same answer, the rule re-run on the saved lists.
        let same = replay(&trace, &ReplayChanges::default()).unwrap();
        assert_eq!(body(&same.response), body(&result.response), "{text:?}");
        assert!(same.unchanged && same.exact);
        // Off: what an engine with fixed weights answers, and no weights in the stages.
        let off = replay(&trace, &set(&["adaptive=off"])).unwrap();
        let plain = fixed.recall(&query(text, 10)).unwrap();
        assert_eq!(body(&off.response), body(&plain.response), "{text:?}");
        assert!(off.stages.weights.is_none());
        assert!(saved(&plain).fusion_weights.is_none());
        if chosen.lexical.iter().any(|c| c.factor < 1.0) && !off.unchanged {
            changed += 1;
        }
    }
    assert!(changed > 0, "no query moved when the rule was turned off");
    for bad in ["adaptive=maybe", "adaptive.floor=2", "adaptive.floor=-0.5"] {
        assert!(ReplayChanges::parse_all([bad]).is_err(), "{bad}");
    }
}

#[test]
fn a_trace_of_another_version_is_refused() {
    let f = fixture();
    corpus(&f);
    let trace = f
        .engine
        .recall(&query("apple", 5))
        .unwrap()
        .trace()
        .unwrap();
    let mut json = serde_json::to_value(&trace).unwrap();
    json["trace_version"] = Value::from(99);
    assert!(RecallTrace::from_json(&json.to_string()).is_err());
    assert!(RecallTrace::from_json("{}").is_err());
}

fn code_of(
    trace: &RecallTrace,
    r: Ref,
    facts: Option<cpersona_engine::taxonomy::RowFacts>,
) -> Option<FailureCode> {
    attribute(trace, r, facts).unwrap().code
}

#[test]
fn taxonomy_found_ranking_miss_filter_drop_and_unattributed() {
    let f = fixture();
    corpus(&f);
    let result = f.engine.recall(&query("apple river", 2)).unwrap();
    let trace = saved(&result);
    let returned: Ref = trace.response["messages"][0]["ref"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let found = attribute(&trace, returned, None).unwrap();
    assert!(found.found && found.code.is_none());

    let cut = trace
        .exclusions
        .iter()
        .find(|e| e.reason == ExclusionReason::CountCut)
        .expect("limit 2 must cut gated rows");
    let att = attribute(&trace, cut.r#ref, None).unwrap();
    assert_eq!(att.code, Some(FailureCode::RankingMiss), "{att:?}");
    assert!(
        att.counterfactuals
            .iter()
            .any(|c| c.returned && c.change.starts_with("limit="))
    );

    // The gate refuses vector-only rows below its threshold; a larger limit puts the
    // first refused row within the count, so lifting the gate alone returns it.
    let wide = saved(&f.engine.recall(&query("apple river", 100)).unwrap());
    let refused = wide
        .exclusions
        .iter()
        .find(|e| e.reason == ExclusionReason::Gate)
        .expect("the gate must refuse some vector-only row");
    assert_eq!(
        code_of(&wide, refused.r#ref, None),
        Some(FailureCode::FilterDrop)
    );

    // At limit 1 the same row needs the gate lifted and the count raised: two causes.
    let narrow = saved(&f.engine.recall(&query("apple river", 1)).unwrap());
    let twice = narrow
        .exclusions
        .iter()
        .find(|e| e.reason == ExclusionReason::Gate && e.fused_rank > 1)
        .expect("a refused row below position 1");
    assert_eq!(
        code_of(&narrow, twice.r#ref, None),
        Some(FailureCode::Unattributed)
    );
}

#[test]
fn taxonomy_capture_representation_candidate_and_degraded() {
    let f = fixture();
    corpus(&f);
    let engine = engine_with_depth(&f, 3);
    // Stored while the embedder is down: no vector, and no lexical overlap with the query.
    f.embedder
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let unembedded = Ref::mem(store(&f, "a", "zebra quartz nomad"));
    f.embedder
        .down
        .store(false, std::sync::atomic::Ordering::SeqCst);

    let trace = saved(&engine.recall(&query("apple river", 10)).unwrap());
    let facts = |r: Ref| Some(engine.row_facts("a", None, None, r).unwrap());

    let absent = Ref::mem(999_999);
    assert_eq!(
        code_of(&trace, absent, facts(absent)),
        Some(FailureCode::CaptureMiss)
    );
    let other_agent = Ref::mem(81);
    assert!(facts(other_agent).unwrap().exists);
    assert_eq!(
        code_of(&trace, other_agent, facts(other_agent)),
        Some(FailureCode::CaptureMiss)
    );
    assert_eq!(
        code_of(&trace, unembedded, facts(unembedded)),
        Some(FailureCode::RepresentationMiss)
    );
    let in_fusion: Vec<Ref> = trace.fusion.iter().map(|c| c.r#ref).collect();
    let missed = (1..=80)
        .map(Ref::mem)
        .find(|r| !in_fusion.contains(r))
        .expect("depth 3 leaves rows out");
    assert_eq!(
        code_of(&trace, missed, facts(missed)),
        Some(FailureCode::CandidateMiss)
    );
    assert_eq!(
        code_of(&trace, missed, None),
        Some(FailureCode::CandidateMiss)
    );

    f.embedder
        .down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    // A query not asked before: the vector of one already asked would come from the
    // query-vector cache, and the arm would run without the embedder.
    let degraded = saved(&engine.recall(&query("river apple", 10)).unwrap());
    let lexical: Vec<Ref> = degraded.fusion.iter().map(|c| c.r#ref).collect();
    let semantic = (1..=80)
        .map(Ref::mem)
        .find(|r| !lexical.contains(r))
        .unwrap();
    assert_eq!(
        code_of(&degraded, semantic, facts(semantic)),
        Some(FailureCode::SystemDegraded)
    );
}
