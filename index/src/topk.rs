//! Bounded best-k selection with a written total order, so per-thread results merge into the
//! same answer whatever the thread count. Never sorts the whole input: each chunk keeps a heap
//! whose worst element is the running threshold.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One search result: a row, its id, and its cosine estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The row's id (the caller's primary key).
    pub id: i64,
    /// Position of the row in the generation (or in the rows handed to an exact scan).
    pub row: u32,
    /// Cosine estimate `dot_i8 · s_q · s_r` (exact f32 cosine for the f32 reference scan).
    pub score: f32,
}

impl Hit {
    /// The result order: score descending, then id ascending, then row ascending.
    pub fn rank_cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.id.cmp(&other.id))
            .then(self.row.cmp(&other.row))
    }
}

/// A [`Hit`] ordered so that smaller is better (the order of [`Hit::rank_cmp`]), for [`BestK`].
#[derive(Clone, Copy, Debug)]
pub struct Ranked(pub Hit);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank_cmp(&other.0)
    }
}

/// Keeps the `k` smallest items seen (smaller is better); the largest kept is the threshold.
#[derive(Clone, Debug)]
pub struct BestK<T: Ord> {
    k: usize,
    heap: BinaryHeap<T>,
}

impl<T: Ord> BestK<T> {
    /// An empty selection of at most `k` items.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Offers `item`; returns whether it was kept.
    #[inline]
    pub fn push(&mut self, item: T) -> bool {
        if self.heap.len() < self.k {
            self.heap.push(item);
            return true;
        }
        match self.heap.peek_mut() {
            Some(mut worst) if item < *worst => {
                *worst = item;
                true
            }
            _ => false,
        }
    }

    /// Whether an item equal to `item` would be kept.
    #[inline]
    pub fn would_keep(&self, item: &T) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|worst| item < worst)
    }

    /// The worst item kept (the threshold once full).
    pub fn worst(&self) -> Option<&T> {
        self.heap.peek()
    }

    /// The most items kept.
    pub fn capacity(&self) -> usize {
        self.k
    }

    /// Number of items kept.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Adds everything `other` kept.
    pub fn merge(&mut self, other: Self) {
        for item in other.heap {
            self.push(item);
        }
    }

    /// The kept items, best first.
    pub fn into_sorted_vec(self) -> Vec<T> {
        self.heap.into_sorted_vec()
    }
}

/// Best-k hits in result order.
pub type TopHits = BestK<Ranked>;

impl TopHits {
    /// The score below which nothing can enter: −∞ until `k` hits are kept, then the worst
    /// kept score (+∞ when k is 0).
    pub fn floor(&self) -> f32 {
        if self.len() < self.capacity() {
            f32::NEG_INFINITY
        } else {
            self.worst().map_or(f32::INFINITY, |w| w.0.score)
        }
    }

    /// The kept hits, best first.
    pub fn into_hits(self) -> Vec<Hit> {
        self.into_sorted_vec().into_iter().map(|r| r.0).collect()
    }
}

#[cfg(test)]
mod tests;
