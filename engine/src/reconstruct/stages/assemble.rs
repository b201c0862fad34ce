//! The four stages chained over one candidate pool, with no SQLite: window → dedup → bundle
//! → select → walk → structure and quote → budget allocation → the response with its
//! compact rule (reference §4.3: a field appears only when it has something to say, or under
//! `trace`).
//!
//! Must never read the count when building the pool or the clusters, nor the budget when
//! ordering the allocation sequence.

use std::collections::BTreeSet;

use serde::Serialize;

use super::Mutation;
use super::budget::{self, BudgetPolicy, Slot};
use super::bundle::{self, Candidate, DeclaredLink, EntityGraph, Walked};
use super::items::{self, Item, ItemContext};
use super::window::{self, CountPolicy};
use crate::reconstruct::stages::config::ReconstructConfig;
use crate::refs::Ref;

/// One call's inputs beside the pool.
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    /// The query quotes are chosen for.
    pub query: &'a str,
    /// The caller's count.
    pub count: Option<usize>,
    /// The caller's budget.
    pub budget: Option<usize>,
    /// The candidate bound recall was asked for.
    pub top_k: usize,
    /// Relation hops.
    pub max_hops: usize,
    /// Claims per item.
    pub max_evidence: usize,
    /// The full audit.
    pub trace: bool,
    /// Recall admitted its rows by gate fallback.
    pub gate_fallback: bool,
    /// The default budget of the caller's `mode`, when one was asked.
    pub mode_budget: Option<usize>,
    /// Pieces of the allocation sequence allowed beside the budget (a mode's token cap
    /// searches over these; `None` = the budget alone decides). At least the first head.
    pub piece_limit: Option<usize>,
}

/// Bounds that acted (`bounds`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Bounds {
    /// Candidate rows asked of recall.
    pub top_k: usize,
    /// Relation hops allowed.
    pub max_hops: usize,
    /// Claims per item allowed.
    pub max_evidence: usize,
    /// Bounds only met (`top_k`: recall returned as many rows as allowed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reached: Vec<&'static str>,
    /// Bounds that dropped rows the tool held (`max_evidence`, `max_hops`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<&'static str>,
}

/// `reconstruction`: present when rows were excluded, in full under trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// The policy version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<&'static str>,
    /// Candidates recall handed over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_count: Option<usize>,
    /// Clusters the keys formed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_count: Option<usize>,
    /// Clusters the window selected, held items included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected_count: Option<usize>,
    /// Candidates dropped for lack of a `mem:`/`ep:` ref (or vanished before they were read).
    pub excluded_without_provenance: usize,
}

/// The trace: candidate refs and cluster membership, without text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Trace {
    /// The pool, best first.
    pub candidate_refs: Vec<Ref>,
    /// Each cluster's refs, clusters in best-rank order.
    pub clusters: Vec<Vec<Ref>>,
    /// The allocation sequence, as `[item, slot]` (`slot` 0 = head, n = excerpt n-1), and
    /// how many of its pieces the budget took.
    pub sequence: Vec<[usize; 2]>,
    /// Pieces taken.
    pub taken: usize,
}

/// The `reconstruct` response body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReconstructResponse {
    /// The items, best first.
    pub items: Vec<Item>,
    /// The window.
    pub effective_count: usize,
    /// Items returned.
    pub returned_count: usize,
    /// The caller's count, when the server did something else with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_count: Option<usize>,
    /// What the server did with the count (clamped or forced; always under trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count_policy: Option<CountPolicy>,
    /// The caller's budget, when the server did something else with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_budget: Option<usize>,
    /// What the server did with the budget (clamped, raised or forced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_policy: Option<BudgetPolicy>,
    /// The budget, when it withheld an item or an excerpt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_budget: Option<usize>,
    /// Characters of quoted text carried, when the budget withheld something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_budget: Option<usize>,
    /// Bounds that acted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Bounds>,
    /// Held items returned (after the window, `admission: "reservation"`), when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_count: Option<usize>,
    /// Held items the budget did not carry, when any (a mode's shape drops the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_omitted: Option<usize>,
    /// Rows excluded, and the counts under trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconstruction: Option<Report>,
    /// Why fewer items than the window came back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortfall_reason: Option<&'static str>,
    /// Recall's rows came by gate fallback.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gate_fallback: bool,
    /// The audit, under trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// Pieces of the allocation sequence kept (what a mode's token cap searches over).
    #[serde(skip)]
    pub pieces_kept: usize,
}

/// Reconstructs from `candidates` (best first). `fetch` reads a record the walk reached,
/// within the caller's scope (`None` when it is outside it or gone).
pub fn assemble(
    config: &ReconstructConfig,
    request: &Request<'_>,
    candidates: Vec<Candidate>,
    links: &[DeclaredLink],
    graph: &EntityGraph,
    fetch: &mut dyn FnMut(Ref) -> Option<Candidate>,
) -> ReconstructResponse {
    assemble_with(
        config,
        request,
        candidates,
        links,
        graph,
        fetch,
        Mutation::None,
    )
}

pub(crate) fn assemble_with(
    config: &ReconstructConfig,
    request: &Request<'_>,
    candidates: Vec<Candidate>,
    links: &[DeclaredLink],
    graph: &EntityGraph,
    fetch: &mut dyn FnMut(Ref) -> Option<Candidate>,
    mutation: Mutation,
) -> ReconstructResponse {
    let window = window::resolve_with(config, request.count, mutation);
    let candidate_count = candidates.len();
    let (pool, excluded) = bundle::dedup_with(candidates, mutation);
    let (clusters, whys) = bundle::bundle(&pool, links, config.adjacency_ms);
    // The window: the first `effective` clusters holding a ranked row. Held items: the other
    // clusters holding a row recall admitted to a held place; they follow the window
    // (reference §4.2 step 5) and never take a window place.
    let mut selected: Vec<&bundle::Cluster> = Vec::new();
    let mut held: Vec<&bundle::Cluster> = Vec::new();
    for cluster in &clusters {
        let rows = || cluster.members.iter().map(|&i| &pool[i]);
        if selected.len() < window.effective && rows().any(|c| !c.reserved) {
            selected.push(cluster);
        } else if window.effective > 0 && rows().any(|c| c.reserved) {
            held.push(cluster);
        }
    }
    let window_items = selected.len();
    selected.extend(held);

    // The walk, item by item: a record goes to the first item that reaches it.
    let mut taken: BTreeSet<Ref> = pool.iter().filter_map(|c| c.r#ref).collect();
    let mut hops_cut = false;
    let mut walked: Vec<Vec<(Walked, Candidate)>> = Vec::with_capacity(selected.len());
    for cluster in &selected {
        let seeds: Vec<Ref> = cluster
            .members
            .iter()
            .filter_map(|&i| pool[i].r#ref)
            .collect();
        let (reached, cut) = bundle::walk(&seeds, graph, request.max_hops, &taken);
        hops_cut |= cut;
        let mut rows = Vec::new();
        for w in reached {
            if let Some(row) = fetch(w.r#ref) {
                taken.insert(w.r#ref);
                rows.push((w, row));
            }
        }
        walked.push(rows);
    }

    let ctx = ItemContext {
        query: request.query,
        max_evidence: request.max_evidence,
        excerpt_chars: config.excerpt_chars,
        links,
        trace: request.trace,
        pool: &pool,
    };
    let mut evidence_cut = false;
    let mut built: Vec<Item> = Vec::with_capacity(selected.len());
    for (position, cluster) in selected.iter().enumerate() {
        let members = items::members(cluster, &pool, &whys, &walked[position]);
        let (mut item, cut) =
            items::build_with(&members, budget::head_cap(config, position), &ctx, mutation);
        if position >= window_items {
            item.admission = Some("reservation");
        }
        evidence_cut |= cut;
        built.push(item);
    }

    // The payload budget: the longest prefix of one fixed sequence.
    // The default budget covers the held items' heads too (reference §4.2 step 9).
    let resolved = budget::resolve_in_mode(
        config,
        request.budget,
        window.effective + (selected.len() - window_items),
        request.mode_budget,
    );
    let sizes: Vec<(usize, Vec<usize>)> = built
        .iter()
        .map(|item| {
            (
                item.content.chars().count(),
                item.excerpts
                    .iter()
                    .map(|e| e.content.chars().count())
                    .collect(),
            )
        })
        .collect();
    let sequence = budget::sequence_with(&sizes, resolved.effective, mutation);
    let (by_budget, used_by_budget) = budget::allocate(&sequence, resolved.effective);
    // A piece limit only shortens the budget's prefix (the first head always stays).
    let taken_pieces = match request.piece_limit {
        Some(limit) => by_budget.min(limit.max(1)),
        None => by_budget,
    };
    let used: usize = if taken_pieces == by_budget {
        used_by_budget
    } else {
        sequence[..taken_pieces].iter().map(|p| p.chars).sum()
    };
    let admitted: BTreeSet<(usize, Slot)> = sequence[..taken_pieces]
        .iter()
        .map(|p| (p.item, p.slot))
        .collect();
    // The character budget's own cut; a piece limit's is reported by its caller.
    let budget_cut = by_budget < sequence.len();
    let mut returned: Vec<Item> = Vec::with_capacity(built.len());
    for (n, mut item) in built.into_iter().enumerate() {
        if !admitted.contains(&(n, Slot::Head)) {
            continue;
        }
        let before = item.excerpts.len();
        let mut k = 0;
        item.excerpts.retain(|_| {
            let keep = admitted.contains(&(n, Slot::Excerpt(k)));
            k += 1;
            keep
        });
        item.excerpts_omitted = before - item.excerpts.len();
        returned.push(item);
    }

    let reserved = returned.iter().filter(|i| i.admission.is_some()).count();
    let window_returned = returned.len() - reserved;
    let reserved_omitted = selected.len() - window_items - reserved;
    let returned_count = match mutation {
        Mutation::ReturnedIsEffective => window.effective,
        _ => returned.len(),
    };
    let shortfall_reason = if window.effective == 0 {
        Some("count_zero")
    } else if pool.is_empty() {
        Some("no_relevant_evidence")
    } else if window_returned < window_items {
        Some("budget_exhausted")
    } else if window_returned < window.effective && request.gate_fallback {
        Some("below_quality_threshold")
    } else if window_returned < window.effective {
        Some("exhausted_candidates")
    } else {
        None
    };
    let trace = request.trace;
    let mut reached = Vec::new();
    if candidate_count >= request.top_k {
        reached.push("top_k");
    }
    let mut omitted = Vec::new();
    if evidence_cut {
        omitted.push("max_evidence");
    }
    if hops_cut {
        omitted.push("max_hops");
    }
    let acted = trace || !reached.is_empty() || !omitted.is_empty();
    let bounds = acted.then_some(Bounds {
        top_k: request.top_k,
        max_hops: request.max_hops,
        max_evidence: request.max_evidence,
        reached,
        omitted,
    });
    let restate_count = trace || window.differs_from_request();
    let restate_budget = trace || resolved.differs_from_request;
    let spend = trace || budget_cut;
    ReconstructResponse {
        effective_count: window.effective,
        returned_count,
        requested_count: if restate_count {
            window.requested
        } else {
            None
        },
        count_policy: restate_count.then_some(window.policy),
        requested_budget: if restate_budget {
            resolved.requested
        } else {
            None
        },
        budget_policy: restate_budget.then_some(resolved.policy),
        effective_budget: spend.then_some(resolved.effective),
        used_budget: spend.then_some(used),
        bounds,
        reserved_count: (reserved > 0).then_some(reserved),
        reserved_omitted: (reserved_omitted > 0).then_some(reserved_omitted),
        reconstruction: (trace || excluded > 0).then(|| Report {
            policy: trace.then_some(super::POLICY_VERSION),
            candidate_count: trace.then_some(candidate_count),
            cluster_count: trace.then_some(clusters.len()),
            selected_count: trace.then_some(selected.len()),
            excluded_without_provenance: excluded,
        }),
        shortfall_reason,
        gate_fallback: request.gate_fallback,
        trace: trace.then(|| Trace {
            candidate_refs: pool.iter().filter_map(|c| c.r#ref).collect(),
            clusters: clusters
                .iter()
                .map(|c| c.members.iter().filter_map(|&i| pool[i].r#ref).collect())
                .collect(),
            sequence: sequence
                .iter()
                .map(|p| {
                    [
                        p.item,
                        match p.slot {
                            Slot::Head => 0,
                            Slot::Excerpt(n) => n + 1,
                        },
                    ]
                })
                .collect(),
            taken: taken_pieces,
        }),
        items: returned,
        pieces_kept: taken_pieces,
    }
}
