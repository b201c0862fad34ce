//! Structuring and quoting (design §7 "Output"; reference §4.2 steps 7–8): each cluster
//! becomes one item with its head claim quoted verbatim in `content` (the head record's best
//! passages — its stored blocks ranked against the query vector, else by query trigrams —
//! filled while they fit the quote size, shown in text order and joined by " … "), its other retained claims as preview-tier excerpts, most relevant first,
//! and one claim per retained row, newest first, with `as_of`, `why` and `roles`.
//!
//! Must never write a sentence that is not stored, take an excerpt from outside the item's
//! own claims, or let a role point to a claim the evidence bound dropped.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::Mutation;
use super::bundle::{Candidate, Cluster, DeclaredLink, Walked, Why};
pub use super::quote::{ELLIPSIS, Quote, QuoteBasis, excerpt_quote, head_quote};
use crate::refs::{Ref, RefKind};

/// The role words a declared predicate may carry (design §7's fixed vocabulary).
pub const ROLE_WORDS: [&str; 6] = [
    "supports",
    "supersedes",
    "corrects",
    "qualifies",
    "contradicts",
    "temporal_predecessor",
];

/// What a referenced row is to a claim.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct Role {
    /// The referenced row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// `supports`, `supersedes`, … (a reader ignores a role it does not know).
    pub role: String,
}

/// One retained row of an item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Claim {
    /// The row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// Its time as stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Why it is here; absent = `seed` (spelled out under trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Hops of the relation walk that reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<usize>,
    /// Other claims of the item and what they are to this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<Role>,
}

/// A quoted other claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ItemExcerpt {
    /// The claim quoted.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// Verbatim text of it.
    pub content: String,
    /// The stored text's length, when the excerpt is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_len: Option<usize>,
    /// Where `content` is in the claim's record, `[start, end)`, when the excerpt is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[usize; 2]>,
    /// How the excerpt was chosen, when it is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote_basis: Option<QuoteBasis>,
}

/// Rows with the same message id and timestamp: both kept, marked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The rows.
    pub refs: Vec<Ref>,
    /// Always `same_msg_id_same_timestamp` in this line.
    pub reason: &'static str,
    /// The shared message id.
    pub msg_id: String,
}

/// The `get_contents` argument that reads on from a cut quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Expand {
    /// The quoted row.
    #[serde(rename = "ref")]
    pub r#ref: Ref,
    /// The characters to read, `[start, end)`.
    pub span: [usize; 2],
}

/// One recall item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Item {
    /// The head claim's best passages, verbatim, joined by " … ".
    pub content: String,
    /// How `content` was chosen: `whole`, `blocks`, `bits` or `text`.
    pub quote_basis: QuoteBasis,
    /// The head record's length when `content` is cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_len: Option<usize>,
    /// Where `content`'s passages are in the head record (a mode's shape drops them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<[usize; 2]>,
    /// The claim `content` quotes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_ref: Option<Ref>,
    /// Other retained claims quoted, most relevant first, within the budget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excerpts: Vec<ItemExcerpt>,
    /// Retained claims whose text the budget did not carry.
    #[serde(skip_serializing_if = "is_zero")]
    pub excerpts_omitted: usize,
    /// One per retained row, newest first (a mode gives `as_of` for a lone head claim).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
    /// The lone head claim's `as_of`, under a mode's shape (`compact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Rows the evidence bound dropped.
    #[serde(skip_serializing_if = "is_zero")]
    pub claims_omitted: usize,
    /// Why this is a separate item; absent = `singleton` (spelled out under trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub independence_reason: Option<String>,
    /// Versions that disagree, kept both.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
    /// The read that continues a cut head quote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expand: Option<Expand>,
    /// `reservation` for a held item (after the window, from a held place of recall).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<&'static str>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A row of an item: a pool candidate or a walked record.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// The row.
    pub row: &'a Candidate,
    /// Relevance order: pool rank, walked rows after the pool.
    pub rank: usize,
    /// Why it is here.
    pub why: Why,
    /// Walk hops, for walked rows.
    pub hops: Option<usize>,
}

/// Inputs shared by every item of one response.
pub struct ItemContext<'a> {
    /// The query the quotes are chosen for.
    pub query: &'a str,
    /// Claims retained per item.
    pub max_evidence: usize,
    /// The preview tier's size.
    pub excerpt_chars: usize,
    /// Declared record→record relations (role words become roles).
    pub links: &'a [DeclaredLink],
    /// Spell out default reasons.
    pub trace: bool,
    /// The whole pool, read only by [`Mutation::ExcerptOutsideItem`].
    pub pool: &'a [Candidate],
}

fn msg_key(c: &Candidate) -> Option<(&str, &str)> {
    (c.r#ref.is_some_and(|r| r.kind == RefKind::Mem) && !c.msg_id.is_empty())
        .then_some((c.project.as_str(), c.msg_id.as_str()))
}

fn row_ref(c: &Candidate) -> Ref {
    // Candidates without a ref never reach an item (bundle::dedup drops them).
    c.r#ref.unwrap_or(Ref::mem(0))
}

/// Members of `cluster` (pool rows) followed by `walked` rows, as [`Member`]s.
pub fn members<'a>(
    cluster: &Cluster,
    pool: &'a [Candidate],
    whys: &[Why],
    walked: &'a [(Walked, Candidate)],
) -> Vec<Member<'a>> {
    let mut out: Vec<Member<'a>> = cluster
        .members
        .iter()
        .map(|&i| Member {
            row: &pool[i],
            rank: i,
            why: whys[i].clone(),
            hops: None,
        })
        .collect();
    out.extend(walked.iter().enumerate().map(|(n, (w, c))| Member {
        row: c,
        rank: pool.len() + n,
        why: Why::Walk(w.predicate.clone()),
        hops: Some(w.hops),
    }));
    out
}

/// Builds one item from its members (most relevant first) with the head quote cap `cap`.
/// Returns the item with every excerpt present (the budget cuts later) and whether the
/// evidence bound dropped rows.
pub fn build(members: &[Member<'_>], cap: usize, ctx: &ItemContext<'_>) -> (Item, bool) {
    build_with(members, cap, ctx, Mutation::None)
}

pub(crate) fn build_with(
    members: &[Member<'_>],
    cap: usize,
    ctx: &ItemContext<'_>,
    mutation: Mutation,
) -> (Item, bool) {
    // The head: the most relevant row, or the newest version of its record in the item.
    let mut head = 0;
    if let Some(key) = members.first().and_then(|m| msg_key(m.row)) {
        for (n, m) in members.iter().enumerate() {
            if msg_key(m.row) == Some(key) && m.row.ts_ms > members[head].row.ts_ms {
                head = n;
            }
        }
    }
    let mut retained: Vec<&Member<'_>> = vec![&members[head]];
    retained.extend(
        members
            .iter()
            .enumerate()
            .filter(|&(n, _)| n != head)
            .map(|(_, m)| m),
    );
    let cut = retained.len() > ctx.max_evidence;
    let claims_omitted = retained.len().saturating_sub(ctx.max_evidence);
    retained.truncate(ctx.max_evidence);
    let held: BTreeSet<Ref> = retained.iter().map(|m| row_ref(m.row)).collect();

    let head_row = retained[0].row;
    let quote = head_quote(&head_row.text, ctx.query, cap, head_row.blocks.as_ref());

    // Excerpts: the other retained claims, most relevant first.
    let excerpt_rows: Vec<&Candidate> = if mutation == Mutation::ExcerptOutsideItem {
        ctx.pool
            .iter()
            .filter(|c| c.r#ref.is_some_and(|r| !held.contains(&r)))
            .take(retained.len().max(2) - 1)
            .collect()
    } else {
        retained[1..].iter().map(|m| m.row).collect()
    };
    let excerpts = excerpt_rows
        .into_iter()
        .map(|row| {
            let q = excerpt_quote(&row.text, ctx.query, ctx.excerpt_chars, row.blocks.as_ref());
            let cut = q.is_cut();
            ItemExcerpt {
                r#ref: row_ref(row),
                content_len: cut.then_some(q.len),
                range: cut.then(|| q.ranges.first().copied()).flatten(),
                quote_basis: cut.then_some(q.basis),
                content: q.text,
            }
        })
        .collect();

    // Roles, on the claim they describe.
    let mut roles: BTreeMap<Ref, BTreeSet<Role>> = BTreeMap::new();
    let mut versions: BTreeMap<(&str, &str), Vec<&Candidate>> = BTreeMap::new();
    for m in &retained {
        if let Some(key) = msg_key(m.row) {
            versions.entry(key).or_default().push(m.row);
        }
    }
    let mut conflicts = Vec::new();
    for ((_, msg_id), rows) in versions.iter_mut() {
        rows.sort_by_key(|c| (c.ts_ms, row_ref(c)));
        for pair in rows.windows(2) {
            if pair[0].ts_ms != pair[1].ts_ms {
                roles.entry(row_ref(pair[0])).or_default().insert(Role {
                    r#ref: row_ref(pair[1]),
                    role: "supersedes".into(),
                });
            }
        }
        let mut by_ts: BTreeMap<Option<i64>, Vec<Ref>> = BTreeMap::new();
        for c in rows.iter() {
            by_ts.entry(c.ts_ms).or_default().push(row_ref(c));
        }
        for refs in by_ts.into_values().filter(|r| r.len() > 1) {
            conflicts.push(Conflict {
                refs,
                reason: "same_msg_id_same_timestamp",
                msg_id: (*msg_id).to_owned(),
            });
        }
    }
    for ep in retained.iter().map(|m| m.row) {
        let (Some(span), true) = (ep.span, ep.r#ref.is_some_and(|r| r.kind == RefKind::Ep)) else {
            continue;
        };
        for mem in retained.iter().map(|m| m.row) {
            if mem.r#ref.is_some_and(|r| r.kind == RefKind::Mem)
                && mem.project == ep.project
                && mem.channel == ep.channel
                && mem.ts_ms.is_some_and(|t| span.0 <= t && t <= span.1)
            {
                roles.entry(row_ref(mem)).or_default().insert(Role {
                    r#ref: row_ref(ep),
                    role: "supports".into(),
                });
            }
        }
    }
    for link in ctx.links {
        if ROLE_WORDS.contains(&link.predicate.as_str())
            && held.contains(&link.from)
            && held.contains(&link.to)
        {
            roles.entry(link.to).or_default().insert(Role {
                r#ref: link.from,
                role: link.predicate.clone(),
            });
        }
    }

    // Claims newest first: undated last, memories before episodes, then rank, then id.
    let mut ordered: Vec<&Member<'_>> = retained.clone();
    ordered.sort_by_key(|m| {
        let r = row_ref(m.row);
        (
            m.row.ts_ms.is_none(),
            std::cmp::Reverse(m.row.ts_ms),
            r.kind,
            m.rank,
            r.id,
        )
    });
    let mut claims: Vec<Claim> = ordered
        .iter()
        .map(|m| {
            let r = row_ref(m.row);
            Claim {
                r#ref: r,
                as_of: m.row.as_of.clone(),
                why: (ctx.trace || m.why != Why::Seed).then(|| m.why.label()),
                hops: m.hops,
                roles: roles
                    .remove(&r)
                    .map(|s| s.into_iter().collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    let whys: Vec<Why> = retained.iter().map(|m| m.why.clone()).collect();
    let reason = Cluster {
        members: (0..whys.len()).collect(),
    }
    .independence_reason(&whys)
    .or_else(|| ctx.trace.then(|| "singleton".to_owned()));
    let head_ref = row_ref(head_row);
    let mut head_ref = Some(head_ref);
    if mutation == Mutation::ProvenanceDropped {
        head_ref = None;
        claims.clear();
    }
    let item = Item {
        content_len: quote.is_cut().then_some(quote.len),
        quote_basis: quote.basis,
        expand: quote.expand.map(|span| Expand {
            r#ref: row_ref(head_row),
            span,
        }),
        content: quote.text,
        ranges: quote.ranges,
        head_ref,
        excerpts,
        excerpts_omitted: 0,
        claims,
        as_of: None,
        claims_omitted,
        independence_reason: reason,
        conflicts,
        admission: None,
    };
    (item, cut)
}
