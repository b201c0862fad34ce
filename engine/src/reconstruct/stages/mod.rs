//! Reconstructive Recall (design §7; reference cpersona-2.6.14 §4, policy `"v1"`): recall's
//! candidate rows bundled by deterministic keys into items, each traceable to the stored rows
//! that support it, quoted verbatim and cut to a payload budget.
//!
//! The stages are pure and never touch SQLite: [`window`] resolves the count, [`bundle`]
//! clusters candidates and walks declared relations, [`items`] structures and quotes each
//! item, [`budget`] resolves the payload budget and allocates quoted text as one fixed
//! sequence. `Engine::reconstruct` (`reconstruct/mod.rs`) reads the rows and chains them.
//!
//! Must never: compose text (content is a quotation of stored text), let the count move the
//! candidate pool, fill a short window with duplicates, or let the budget reorder anything.

pub mod assemble;
pub mod budget;
pub mod bundle;
pub mod compact;
pub mod config;
pub mod items;
pub mod places;
pub mod quote;
pub mod window;

#[cfg(test)]
mod held_tests;
#[cfg(test)]
mod tests;

pub use assemble::{Bounds, ReconstructResponse, Report, Request, Trace, assemble};
pub use budget::{BudgetPolicy, BudgetResolution, Piece, Slot};
pub use bundle::{Candidate, Cluster, DeclaredLink, EntityGraph, Walked, Why};
pub use items::{Claim, Conflict, Expand, Item, ItemExcerpt, Quote, QuoteBasis, Role};
pub use window::{CountPolicy, CountSource, Window};

/// The policy version the trace reports.
pub const POLICY_VERSION: &str = "v1";

/// One deliberate break of one invariant (design §9's mutations), fed to the pure stages by
/// tests to show that each invariant's test turns red. Production code passes
/// [`Mutation::None`] only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum Mutation {
    /// The real behaviour.
    #[default]
    None,
    /// The default count moved up by one (the design's "default 1 → 2").
    DefaultPlusOne,
    /// `effective = base`: the maximum no longer caps the count.
    MaxRemoved,
    /// `requested ?? forced ?? default`: the caller wins over the operator.
    ForcedRequestedSwapped,
    /// The candidate limit follows the count again.
    CandidateLimitFromCount,
    /// A row may appear in more than one item.
    DedupDisabled,
    /// Items lose the refs that tie their text to stored rows.
    ProvenanceDropped,
    /// `returned_count` always equals `effective_count`.
    ReturnedIsEffective,
    /// Each item's excerpts are allocated right after its head, before later heads.
    ExcerptsBeforeHeads,
    /// An item's excerpts come from the whole pool, not its own claims.
    ExcerptOutsideItem,
    /// A tight budget reorders the sequence (smallest pieces first) to fit more.
    AllocationByBudget,
    /// Quotes ignore the records' stored blocks (the text heuristic everywhere).
    BlocksIgnored,
}
