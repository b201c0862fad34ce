//! Unit tests of the histogram candidate selection (ties at the threshold, capacity at or above
//! the offered count, empty, zero capacity, merging) and of the block admission mask.

use proptest::prelude::*;

use super::*;

/// A candidate of one part: (distance, id, row).
type One = (u32, i64, u32);
use crate::filter::{CodeSet, RowSet, compact_positions};

fn reference(items: &[One], capacity: usize) -> Vec<One> {
    let mut sorted = items.to_vec();
    sorted.sort_unstable();
    sorted.truncate(capacity);
    sorted
}

/// The ids column of `items`, indexed by their rows (rows must be `0..items.len()`).
fn ids_of(items: &[One]) -> Vec<i64> {
    let mut ids = vec![0; items.len()];
    for c in items {
        ids[c.2 as usize] = c.1;
    }
    ids
}

fn offer(selection: &mut Selection<'_>, c: One) {
    selection.offer(c.0, 0, c.2);
}

fn selected(selection: Selection<'_>) -> Vec<One> {
    let mut kept: Vec<One> = selection
        .into_candidates()
        .into_iter()
        .map(|(d, id, part, row)| {
            assert_eq!(part, 0);
            (d, id, row)
        })
        .collect();
    kept.sort_unstable();
    kept
}

proptest! {
    #[test]
    fn selection_equals_sorting_whatever_the_split(
        raw in proptest::collection::vec((0u32..8, -20i64..20), 0..600),
        capacity in 0usize..120,
        split in 0usize..600,
    ) {
        let items: Vec<One> =
            raw.iter().enumerate().map(|(row, &(d, id))| (d, id, row as u32)).collect();
        let want = reference(&items, capacity);

        let ids = ids_of(&items);

        let parts = [&ids[..]];
        let mut whole = Selection::new(&parts, capacity, 7);
        for &c in &items {
            offer(&mut whole, c);
        }
        prop_assert_eq!(selected(whole), want.clone());

        let split = split.min(items.len());
        let mut left = Selection::new(&parts, capacity, 7);
        let mut right = Selection::new(&parts, capacity, 7);
        for &c in &items[..split] {
            offer(&mut left, c);
        }
        for &c in &items[split..] {
            offer(&mut right, c);
        }
        right.merge(left);
        prop_assert_eq!(selected(right), want);
    }
}

#[test]
fn ties_at_the_threshold_are_broken_by_id_then_row() {
    // 500 candidates at distance 3, 10 at distance 1: the best 100 are the 10 plus the 90
    // smallest ids at distance 3, whatever order they arrive in.
    let mut items: Vec<One> = (0..500u32)
        .map(|row| (3, i64::from((row * 7919) % 500), row))
        .collect();
    items.extend((500..510u32).map(|row| (1, 1000 + i64::from(row), row)));
    let ids = ids_of(&items);
    let parts = [&ids[..]];
    let mut selection = Selection::new(&parts, 100, 384);
    for &c in items.iter().rev() {
        offer(&mut selection, c);
    }
    let kept = selected(selection);
    assert_eq!(kept, reference(&items, 100));
    assert_eq!(kept.iter().filter(|c| c.0 == 1).count(), 10);
    assert!(kept.iter().filter(|c| c.0 == 3).all(|c| c.1 < 90));
}

#[test]
fn capacity_at_or_above_the_offered_count_keeps_everything() {
    let items: Vec<One> = (0..50u32).map(|r| (r % 5, i64::from(r), r)).collect();
    let ids = ids_of(&items);
    let parts = [&ids[..]];
    for capacity in [50, 51, 1000] {
        let mut selection = Selection::new(&parts, capacity, 384);
        for &c in &items {
            offer(&mut selection, c);
        }
        assert_eq!(selected(selection), reference(&items, 50));
    }
}

#[test]
fn empty_and_zero_capacity_keep_nothing() {
    assert!(
        Selection::new(&[&[][..]; 1], 10, 384)
            .into_candidates()
            .is_empty()
    );
    let ids: Vec<i64> = (0..500).collect();
    let parts = [&ids[..]];
    let mut zero = Selection::new(&parts, 0, 384);
    for r in 0..500u32 {
        zero.offer(r % 3, 0, r);
    }
    assert!(zero.into_candidates().is_empty());
}

#[test]
fn distances_above_the_histogram_range_still_select_correctly() {
    let items: Vec<One> = (0..300u32).map(|r| (1000 - r, i64::from(r), r)).collect();
    let ids = ids_of(&items);
    let parts = [&ids[..]];
    let mut selection = Selection::new(&parts, 20, 64);
    for &c in &items {
        offer(&mut selection, c);
    }
    assert_eq!(selected(selection), reference(&items, 20));
}

proptest! {
    #[test]
    fn block_mask_agrees_with_the_per_row_check(
        cols in proptest::collection::vec((0u32..4, 0u32..6, 0u32..3, 0u32..3), 1..400),
        agent in proptest::option::of(0u32..4),
        projects in proptest::option::of(proptest::collection::vec(0u32..6, 0..4)),
        channels in proptest::option::of(proptest::collection::vec(0u32..3, 0..3)),
        exclude in proptest::option::of(proptest::collection::vec(0u32..500, 0..40)),
        start in 0usize..400,
    ) {
        let agent_col: Vec<u32> = cols.iter().map(|c| c.0).collect();
        let project_col: Vec<u32> = cols.iter().map(|c| c.1).collect();
        let channel_col: Vec<u32> = cols.iter().map(|c| c.2).collect();
        let source_col: Vec<u32> = cols.iter().map(|c| c.3).collect();
        let scopes = ScopeColumns {
            agent: &agent_col,
            project: &project_col,
            channel: &channel_col,
            source: &source_col,
        };
        let filter = RowFilter {
            agent,
            projects: projects.map(CodeSet::new),
            channels: channels.map(CodeSet::new),
            exclude: exclude.map(RowSet::new),
            ..RowFilter::default()
        };
        let start = start.min(cols.len() - 1);
        let n = (cols.len() - start).min(BLOCK_ROWS);
        let mut mask = vec![7u8; n];
        let passed = scopes.admit_mask(&filter, start, &mut mask);
        let want: Vec<u32> =
            (start..start + n).filter(|&r| scopes.admits(&filter, r)).map(|r| r as u32).collect();
        prop_assert_eq!(passed, want.len());
        let mut positions = vec![0u32; n];
        let len = compact_positions(start, &mask, &mut positions);
        prop_assert_eq!(&positions[..len], &want[..]);
    }
}
