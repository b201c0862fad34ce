//! Unit tests of the bounded top-k: order, ties and the running floor.

use proptest::prelude::*;

use super::*;

proptest! {
    #[test]
    fn best_k_equals_sorting_and_merge_order_does_not_matter(
        items in proptest::collection::vec((0u32..20, 0i64..50), 0..200),
        k in 0usize..30,
        split in 0usize..200,
    ) {
        let mut sorted = items.clone();
        sorted.sort();
        sorted.truncate(k);

        let mut whole = BestK::new(k);
        for &it in &items {
            whole.push(it);
        }
        let split = split.min(items.len());
        let (left, right) = items.split_at(split);
        let mut a = BestK::new(k);
        let mut b = BestK::new(k);
        left.iter().for_each(|&it| { a.push(it); });
        right.iter().for_each(|&it| { b.push(it); });
        b.merge(a);
        prop_assert_eq!(whole.into_sorted_vec(), sorted.clone());
        prop_assert_eq!(b.into_sorted_vec(), sorted);
    }
}

#[test]
fn hits_rank_by_score_then_id() {
    let mut top = TopHits::new(3);
    for (id, score) in [(5, 0.5), (3, 0.5), (9, 0.9), (1, 0.1), (4, 0.5)] {
        top.push(Ranked(Hit {
            id,
            row: id as u32,
            score,
        }));
    }
    let ids: Vec<i64> = top.into_hits().iter().map(|h| h.id).collect();
    assert_eq!(ids, vec![9, 3, 4]);
}
