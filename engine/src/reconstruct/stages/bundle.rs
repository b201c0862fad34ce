//! Bundling (design §7 "Processing"; reference §4.2 steps 4–6): candidates clustered by
//! deterministic keys only, in this order, the first key that joins a row being its `why`:
//! same message id in the same stored project; a memory inside an episode's time span in the
//! same project and channel; an adjacency burst of the same source type and id in the same
//! project and channel that fits the interval as a whole; a declared record→record relation;
//! the same overflow chain. Then a walk over declared entity relations, bounded by hops.
//!
//! Must never judge semantic sameness, join rows across projects or channels on time, or
//! put one row in two items.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::Mutation;
use crate::refs::{Ref, RefKind};

/// One candidate row with what the keys read. Candidates are handed in best first; a
/// candidate's index is its rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidate {
    /// `mem:<id>` or `ep:<id>`.
    pub r#ref: Option<Ref>,
    /// Stored project ('' = global pool).
    pub project: String,
    /// Stored channel ('' = channel-less).
    pub channel: String,
    /// The caller's message id (memories; '' = none).
    pub msg_id: String,
    /// The row's time in UTC milliseconds (memory timestamp, episode start), if known.
    pub ts_ms: Option<i64>,
    /// The row's time as stored (`as_of`).
    pub as_of: Option<String>,
    /// `(source.type, source.id)` when both are present (memories).
    pub source: Option<(String, String)>,
    /// An episode's `[start, end]` in UTC milliseconds.
    pub span: Option<(i64, i64)>,
    /// The stored text quoted from (memory content, episode summary).
    pub text: String,
    /// The record's blocks ranked against the query vector, when it has a rankable set
    /// (quotes then pick blocks; else the text heuristic).
    pub blocks: Option<crate::derived::blocks::BlockChoice>,
    /// Recall admitted the row to a held place (a cue seat, an association or propagation
    /// seat), not by rank: its cluster becomes a held item unless a ranked row shares it.
    pub reserved: bool,
}

/// Why a row is in its item.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// The row that started the cluster (said by absence on the wire).
    Seed,
    /// Same message id in the same project.
    MsgId,
    /// Inside an episode's span, same project and channel.
    Episode,
    /// Same source burst inside the adjacency interval.
    Adjacent,
    /// A declared record→record relation with that predicate.
    Relation(String),
    /// Reached by the walk over declared entity relations.
    Walk(String),
}

impl Why {
    /// The wire form (`cluster:msg_id`, `relation:<predicate>`, …).
    pub fn label(&self) -> String {
        match self {
            Why::Seed => "seed".into(),
            Why::MsgId => "cluster:msg_id".into(),
            Why::Episode => "cluster:episode".into(),
            Why::Adjacent => "cluster:adjacent".into(),
            Why::Relation(p) | Why::Walk(p) => format!("relation:{p}"),
        }
    }

    /// Strength for `independence_reason`: the strongest key among an item's members.
    fn strength(&self) -> usize {
        match self {
            Why::MsgId => 5,
            Why::Episode => 4,
            Why::Adjacent => 3,
            Why::Relation(_) => 2,
            Why::Walk(_) => 1,
            Why::Seed => 0,
        }
    }
}

/// A declared relation between two records (`relations` rows whose ends are both records).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredLink {
    /// Subject record.
    pub from: Ref,
    /// Object record.
    pub to: Ref,
    /// The predicate (a role word is read as that role).
    pub predicate: String,
}

/// One cluster: candidate indices, best first, with each member's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// Indices into the candidate list, ascending (best first).
    pub members: Vec<usize>,
}

impl Cluster {
    /// The strongest key among the members' reasons, `None` for a singleton.
    pub fn independence_reason(&self, whys: &[Why]) -> Option<String> {
        self.members
            .iter()
            .map(|&m| &whys[m])
            .filter(|w| **w != Why::Seed)
            .max_by_key(|w| w.strength())
            .map(|w| match w {
                Why::Relation(_) | Why::Walk(_) => "cluster:relation".to_owned(),
                other => other.label(),
            })
    }
}

/// Drops candidates without a ref (no provenance: `excluded_without_provenance`) and later
/// duplicates of a ref already held; returns the kept rows and how many lacked a ref.
pub fn dedup(candidates: Vec<Candidate>) -> (Vec<Candidate>, usize) {
    dedup_with(candidates, Mutation::None)
}

pub(crate) fn dedup_with(
    candidates: Vec<Candidate>,
    mutation: Mutation,
) -> (Vec<Candidate>, usize) {
    let mut seen = BTreeSet::new();
    let mut excluded = 0;
    let mut kept = Vec::with_capacity(candidates.len());
    for c in candidates {
        let Some(r) = c.r#ref else {
            excluded += 1;
            continue;
        };
        if seen.insert(r) || mutation == Mutation::DedupDisabled {
            kept.push(c);
        }
    }
    (kept, excluded)
}

struct UnionFind(Vec<usize>);

impl UnionFind {
    fn find(&mut self, mut x: usize) -> usize {
        while self.0[x] != x {
            self.0[x] = self.0[self.0[x]];
            x = self.0[x];
        }
        x
    }

    /// Joins `b` into `a`'s cluster; the lower index is the representative.
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        self.0[hi] = lo;
        true
    }
}

/// Clusters `candidates` (best first) and returns the clusters ordered by their best rank,
/// plus each candidate's reason. `adjacency_ms` bounds a whole burst.
pub fn bundle(
    candidates: &[Candidate],
    links: &[DeclaredLink],
    adjacency_ms: i64,
) -> (Vec<Cluster>, Vec<Why>) {
    let n = candidates.len();
    let mut uf = UnionFind((0..n).collect());
    let mut whys = vec![Why::Seed; n];
    let join = |uf: &mut UnionFind, whys: &mut Vec<Why>, a: usize, b: usize, why: Why| {
        let (lo, hi) = (a.min(b), a.max(b));
        if uf.union(lo, hi) && whys[hi] == Why::Seed {
            whys[hi] = why;
        }
    };
    let is = |c: &Candidate, kind: RefKind| c.r#ref.is_some_and(|r| r.kind == kind);

    // Same message id in the same stored project.
    let mut by_msg: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if is(c, RefKind::Mem) && !c.msg_id.is_empty() {
            match by_msg.get(&(c.project.as_str(), c.msg_id.as_str())) {
                Some(&first) => join(&mut uf, &mut whys, first, i, Why::MsgId),
                None => {
                    by_msg.insert((&c.project, &c.msg_id), i);
                }
            }
        }
    }
    // A memory inside an episode's span, same project and channel.
    for (e, ep) in candidates.iter().enumerate() {
        let Some((start, end)) = ep.span.filter(|_| is(ep, RefKind::Ep)) else {
            continue;
        };
        for (m, mem) in candidates.iter().enumerate() {
            if is(mem, RefKind::Mem)
                && mem.project == ep.project
                && mem.channel == ep.channel
                && mem.ts_ms.is_some_and(|t| start <= t && t <= end)
            {
                join(&mut uf, &mut whys, e, m, Why::Episode);
            }
        }
    }
    // Adjacency bursts: same source and context, the whole burst inside the interval.
    // (source type, source id, project, channel) → (time, index) of its rows.
    type BurstKey<'k> = (&'k str, &'k str, &'k str, &'k str);
    let mut bursts: BTreeMap<BurstKey<'_>, Vec<(i64, usize)>> = BTreeMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if let (Some((kind, id)), Some(ts)) = (&c.source, c.ts_ms) {
            bursts
                .entry((kind, id, &c.project, &c.channel))
                .or_default()
                .push((ts, i));
        }
    }
    for rows in bursts.values_mut() {
        rows.sort_unstable();
        let mut anchor: Option<(i64, usize)> = None;
        for &(ts, i) in rows.iter() {
            match anchor {
                Some((anchor_ts, a)) if ts - anchor_ts <= adjacency_ms => {
                    join(&mut uf, &mut whys, a, i, Why::Adjacent);
                }
                _ => anchor = Some((ts, i)),
            }
        }
    }
    // Declared record→record relations with both ends in the pool.
    let index: BTreeMap<Ref, usize> = candidates
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.r#ref.map(|r| (r, i)))
        .rev()
        .collect();
    for link in links {
        if let (Some(&a), Some(&b)) = (index.get(&link.from), index.get(&link.to)) {
            join(
                &mut uf,
                &mut whys,
                a,
                b,
                Why::Relation(link.predicate.clone()),
            );
        }
    }
    // Same overflow chain: the nodes of `record_nodes` are parts of one record, and the pool
    // holds records, never nodes, so no two candidates share a chain and this key is the
    // identity (as in the shipped line, reference §4.2: "declared, never fires").

    let mut clusters: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        let root = uf.find(i);
        clusters.entry(root).or_default().push(i);
    }
    // A root is its cluster's lowest index, so BTreeMap order is best-rank order.
    let clusters = clusters
        .into_values()
        .map(|members| Cluster { members })
        .collect();
    (clusters, whys)
}

/// The declared entity graph around the pool: which entities each record mentions, which
/// records mention each entity, and entity↔entity relations with their recency (0 = newest).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityGraph {
    /// record → entities it mentions.
    pub mentions: BTreeMap<Ref, Vec<i64>>,
    /// entity → records that mention it.
    pub mentioned_by: BTreeMap<i64, Vec<Ref>>,
    /// `(a, b, predicate, recency)`, walked in both directions.
    pub edges: Vec<(i64, i64, String, usize)>,
}

/// A record the walk reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Walked {
    /// The record.
    pub r#ref: Ref,
    /// Hops from the item's entities.
    pub hops: usize,
    /// The predicate of the edge that reached its entity.
    pub predicate: String,
}

/// Walks from the entities `seeds` mention, breadth first, up to `max_hops`; returns records
/// reached at hop ≥ 1 not in `taken`, ordered `(hops, recency, kind, id)`, and whether the hop
/// bound stopped an edge that led further.
pub fn walk(
    seeds: &[Ref],
    graph: &EntityGraph,
    max_hops: usize,
    taken: &BTreeSet<Ref>,
) -> (Vec<Walked>, bool) {
    let mut hops_of: BTreeMap<i64, (usize, usize, String)> = BTreeMap::new();
    let mut queue = VecDeque::new();
    for r in seeds {
        for &e in graph.mentions.get(r).into_iter().flatten() {
            if let std::collections::btree_map::Entry::Vacant(slot) = hops_of.entry(e) {
                slot.insert((0, 0, String::new()));
                queue.push_back(e);
            }
        }
    }
    let mut edges: Vec<&(i64, i64, String, usize)> = graph.edges.iter().collect();
    edges.sort_by(|x, y| x.3.cmp(&y.3).then(x.0.cmp(&y.0)).then(x.1.cmp(&y.1)));
    let mut cut = false;
    while let Some(e) = queue.pop_front() {
        let hops = hops_of[&e].0;
        for (a, b, predicate, recency) in edges.iter().map(|x| (x.0, x.1, &x.2, x.3)) {
            let next = if a == e {
                b
            } else if b == e {
                a
            } else {
                continue;
            };
            if hops_of.contains_key(&next) {
                continue;
            }
            if hops == max_hops {
                cut = true;
                continue;
            }
            hops_of.insert(next, (hops + 1, recency, predicate.clone()));
            queue.push_back(next);
        }
    }
    let mut reached: BTreeMap<Ref, (usize, usize, String)> = BTreeMap::new();
    for (entity, (hops, recency, predicate)) in &hops_of {
        if *hops == 0 {
            continue;
        }
        for &r in graph.mentioned_by.get(entity).into_iter().flatten() {
            if taken.contains(&r) || seeds.contains(&r) {
                continue;
            }
            let candidate = (*hops, *recency, predicate.clone());
            match reached.get(&r) {
                Some(best) if (best.0, best.1) <= (candidate.0, candidate.1) => {}
                _ => {
                    reached.insert(r, candidate);
                }
            }
        }
    }
    let mut out: Vec<(usize, usize, Ref, String)> = reached
        .into_iter()
        .map(|(r, (h, rec, p))| (h, rec, r, p))
        .collect();
    out.sort();
    (
        out.into_iter()
            .map(|(hops, _, r, predicate)| Walked {
                r#ref: r,
                hops,
                predicate,
            })
            .collect(),
        cut,
    )
}
