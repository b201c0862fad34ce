//! `get_contents`: parsing, scope, spans, revision and the character budget.

use std::collections::HashMap;
use std::convert::Infallible;

use serde_json::{Value, json};

use crate::recall::RecallError;
use crate::recall::stages::contents::{
    StoredContent, UnresolvedReason, get_contents, parse_requests, revision,
};
use crate::refs::Ref;

/// The caller's scope: only these rows exist for it.
fn store() -> HashMap<Ref, StoredContent> {
    let mut rows = HashMap::new();
    rows.insert(
        Ref::mem(1),
        StoredContent {
            text: "hello world".into(),
            msg_id: Some("m1".into()),
            ..Default::default()
        },
    );
    rows.insert(
        Ref::ep(2),
        StoredContent {
            text: "a summary".into(),
            resolved: Some(true),
            ..Default::default()
        },
    );
    rows.insert(
        Ref::mem(3),
        StoredContent {
            text: "x".repeat(30_000),
            ..Default::default()
        },
    );
    rows.insert(
        Ref::mem(4),
        StoredContent {
            text: "y".repeat(15_000),
            ..Default::default()
        },
    );
    rows
}

fn serve(refs: Value) -> crate::recall::stages::contents::ContentsResponse {
    let rows = store();
    let refs = refs.as_array().expect("array").clone();
    let requests = parse_requests(&refs).expect("valid");
    get_contents(requests, 40_000, |r| {
        Ok::<_, Infallible>(rows.get(&r).cloned())
    })
    .expect("served")
}

#[test]
fn whole_rows_spans_and_episode_label() {
    let got = serve(json!(["mem:1", "ep:2", {"ref": "mem:1", "span": [6, 99]}]));
    assert_eq!(got.count, 3);
    assert_eq!(got.items[0].content, "hello world");
    assert_eq!(got.items[1].content, "[Episode] a summary");
    assert_eq!(got.items[2].content, "world");
    let range = got.items[2].range.as_ref().expect("range");
    assert_eq!((range.span, range.content_len), ([6, 11], 11));
    assert!(got.missing.is_empty() && got.unresolved.is_empty());
}

#[test]
fn foreign_missing_and_malformed_refs_are_unresolved_with_reasons() {
    let got = serve(
        json!(["mem:999", "bogus", 17, {"ref": "ep:2", "span": [5, 2]}, {"ref": "mem:1", "span": [11, 12]},
        {"ref": "mem:1", "node": 1}, {"ref": "mem:1", "block": [0, 1]}, {"ref": "mem:1", "span": [0, 1], "block": 0},
        {"ref": "mem:1", "revision": "000000000000"}, {"ref": "mem:1", "revision": revision("hello world")}]),
    );
    let reasons: Vec<(String, UnresolvedReason)> = got
        .unresolved
        .iter()
        .map(|u| (u.r#ref.clone(), u.reason))
        .collect();
    use UnresolvedReason::*;
    assert_eq!(
        reasons,
        vec![
            ("mem:999".into(), NotFound),
            ("bogus".into(), InvalidRef),
            ("17".into(), InvalidRef),
            ("ep:2".into(), InvalidRange),
            ("mem:1".into(), SpanOutOfRange),
            ("mem:1".into(), NoCurrentNodes),
            ("mem:1".into(), NoCurrentBlocks),
            ("mem:1".into(), InvalidRange),
            ("mem:1".into(), StaleRevision),
        ]
    );
    assert_eq!(got.missing, vec!["mem:999", "bogus", "17"]);
    assert_eq!(got.count, 1);
}

#[test]
fn budget_admits_the_first_and_defers_the_rest_as_sent() {
    let got = serve(json!(["mem:3", {"ref": "mem:4"}, "mem:1"]));
    assert_eq!(got.items.len(), 1);
    assert_eq!(got.deferred, vec![json!({"ref": "mem:4"}), json!("mem:1")]);
    assert_eq!(got.budget_chars, Some(40_000));
    let got = serve(json!(["mem:4", "mem:4"]));
    assert_eq!((got.items.len(), got.deferred.len()), (2, 0));
    let got = serve(json!(["mem:4", "mem:4", "mem:4"]));
    assert_eq!((got.items.len(), got.deferred.len()), (2, 1));
}

#[test]
fn ref_count_limits() {
    assert_eq!(parse_requests(&[]), Err(RecallError::NoRefs));
    let many: Vec<Value> = (1..=21).map(|i| json!(format!("mem:{i}"))).collect();
    assert_eq!(
        parse_requests(&many),
        Err(RecallError::TooManyRefs { given: 21, max: 20 })
    );
    assert!(parse_requests(&many[..20]).is_ok());
}

#[test]
fn a_fetch_error_is_returned() {
    let requests = parse_requests(&[json!("mem:1")]).expect("valid");
    let got = get_contents(requests, 40_000, |_| {
        Err::<Option<StoredContent>, _>("db down")
    });
    assert_eq!(got, Err("db down"));
}

#[test]
fn node_and_block_ranges_need_an_exact_partition() {
    let text = "alpha beta gamma";
    let rows: HashMap<Ref, StoredContent> = [
        (
            Ref::mem(1),
            StoredContent {
                text: text.into(),
                nodes: vec![(0, 6), (6, 16)],
                blocks: vec![(0, 5), (5, 10), (10, 16)],
                ..Default::default()
            },
        ),
        (
            // A gap between blocks: not a partition, so not served.
            Ref::mem(2),
            StoredContent {
                text: text.into(),
                nodes: vec![(0, 6)],
                blocks: vec![(0, 5), (6, 16)],
                ..Default::default()
            },
        ),
    ]
    .into_iter()
    .collect();
    let refs = json!([{"ref": "mem:1", "node": 1}, {"ref": "mem:1", "block": [0, 1]},
        {"ref": "mem:1", "block": 3}, {"ref": "mem:2", "block": 0}, {"ref": "mem:2", "node": 0},
        {"ref": "mem:1", "node": [1, 0]}, {"ref": "mem:1", "block": "x"}]);
    let requests = parse_requests(refs.as_array().expect("array")).expect("valid");
    let got = get_contents(requests, 40_000, |r| {
        Ok::<_, Infallible>(rows.get(&r).cloned())
    })
    .expect("served");
    let contents: Vec<&str> = got.items.iter().map(|i| i.content.as_str()).collect();
    assert_eq!(contents, vec!["beta gamma", "alpha beta"]);
    let range = got.items[1].range.as_ref().expect("range");
    assert_eq!(
        (range.span, range.block, range.of),
        ([0, 10], Some([0, 1]), Some(3))
    );
    let reasons: Vec<UnresolvedReason> = got.unresolved.iter().map(|u| u.reason).collect();
    use UnresolvedReason::*;
    assert_eq!(
        reasons,
        vec![
            BlockOutOfRange,
            NoCurrentBlocks,
            NoCurrentNodes,
            InvalidRange,
            InvalidRange
        ]
    );
}
