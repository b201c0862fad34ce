//! Held items (reference cpersona-2.6.14 §4.2 step 5): rows recall admitted to a held place
//! never take a window place; their clusters follow the window as `admission: "reservation"`
//! items, the default budget covers their heads, the budget cuts them last and says how many
//! (`reserved_omitted`), and a window cut alone is `budget_exhausted`.

use super::assemble::{ReconstructResponse, Request, assemble};
use super::bundle::{Candidate, EntityGraph};
use super::compact::compact;
use crate::reconstruct::stages::config::ReconstructConfig;
use crate::refs::Ref;

fn mem(id: i64, reserved: bool, long: bool) -> Candidate {
    let sentence = format!("Row {id} talks about the lighthouse keeper and the tide. ");
    Candidate {
        r#ref: Some(Ref::mem(id)),
        text: sentence.repeat(if long { 30 } else { 1 }),
        ts_ms: Some(id * 1_000_000),
        as_of: Some(format!("t{id}")),
        reserved,
        ..Candidate::default()
    }
}

/// Six ranked rows, then two from held places (recall appends those last).
fn pool(long: bool) -> Vec<Candidate> {
    (1..=8).map(|id| mem(id, id > 6, long)).collect()
}

fn run(candidates: Vec<Candidate>, count: usize, budget: Option<usize>) -> ReconstructResponse {
    let request = Request {
        query: "lighthouse keeper tide",
        count: Some(count),
        budget,
        top_k: 20,
        max_hops: 2,
        max_evidence: 40,
        ..Request::default()
    };
    assemble(
        &ReconstructConfig::default(),
        &request,
        candidates,
        &[],
        &EntityGraph::default(),
        &mut |_| None,
    )
}

fn heads(r: &ReconstructResponse) -> Vec<(i64, Option<&'static str>)> {
    r.items
        .iter()
        .map(|i| (i.head_ref.map_or(0, |r| r.id), i.admission))
        .collect()
}

#[test]
fn held_rows_follow_the_window_as_reservations() {
    let r = run(pool(false), 3, None);
    let held = Some("reservation");
    assert_eq!(
        heads(&r),
        [(1, None), (2, None), (3, None), (7, held), (8, held)]
    );
    assert_eq!((r.returned_count, r.reserved_count), (5, Some(2)));
    assert_eq!((r.shortfall_reason, r.reserved_omitted), (None, None));
    // A window larger than the ranked rows still never seats a held row in it.
    let r = run(pool(false), 10, None);
    assert_eq!(heads(&r).len(), 8);
    assert!(heads(&r)[..6].iter().all(|(_, a)| a.is_none()));
    assert!(heads(&r)[6..].iter().all(|(_, a)| *a == held));
    assert_eq!(r.shortfall_reason, Some("exhausted_candidates"));
    // No window, no held items.
    let r = run(pool(false), 0, None);
    assert!(r.items.is_empty());
    assert_eq!(r.shortfall_reason, Some("count_zero"));
}

#[test]
fn a_held_row_bundled_with_a_ranked_one_is_a_window_member() {
    let mut rows = pool(false);
    for row in &mut rows {
        row.msg_id = format!("m{}", row.r#ref.map_or(0, |r| r.id));
    }
    // Row 7 (held) is another version of row 2's message.
    rows[6].msg_id = "m2".into();
    let r = run(rows, 3, None);
    // The item of message m2 is in the window, headed by its newest version (row 7).
    assert_eq!(
        heads(&r),
        [(1, None), (7, None), (3, None), (8, Some("reservation"))]
    );
    assert_eq!(r.items[1].claims.len(), 2);
    assert_eq!(r.reserved_count, Some(1));
}

#[test]
fn the_budget_cuts_held_items_last_and_counts_them() {
    // Long rows: every head quote is 800 characters; 1,600 carries the two window heads.
    let r = run(pool(true), 2, Some(1_600));
    assert_eq!(heads(&r), [(1, None), (2, None)]);
    assert_eq!((r.reserved_count, r.reserved_omitted), (None, Some(2)));
    assert_eq!(r.shortfall_reason, None, "no window item was cut");
    // The default budget covers the held heads too: nothing is omitted.
    let r = run(pool(true), 2, None);
    assert_eq!((r.reserved_count, r.reserved_omitted), (Some(2), None));
    // A budget that cuts a window item says so.
    let r = run(pool(true), 2, Some(800));
    assert_eq!(r.shortfall_reason, Some("budget_exhausted"));
    // A mode's shape drops the omitted count and lists it.
    let mut r = run(pool(true), 2, Some(1_600));
    let out = compact(&mut r);
    assert!(out.omitted_fields.contains(&"reserved_omitted"));
    assert_eq!(r.reserved_omitted, None);
}
