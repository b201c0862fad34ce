//! The payload budget (design §7 "Breadth before depth"): characters of quoted text (head
//! quotes and excerpts; refs, times and roles are not counted). The budget resolves as
//! `min(forced ?? requested ?? default(count), max)`, and the response is the longest prefix
//! of one fixed sequence — every head in item order, then each item's first excerpt in item
//! order, then each second one, … — that fits. The sequence never depends on the budget, so
//! raising the budget alone never removes an item or an excerpt.

use serde::Serialize;

use super::Mutation;
use super::window::CountSource;
use crate::reconstruct::stages::config::ReconstructConfig;

/// The head quote size of the item at `position` (0-based): `quote_chars` for the first
/// `full_quotes` items, `tail_quote_chars` after them; the preview tier's size when head
/// filling is off (`quote_chars == 0`).
pub fn head_cap(config: &ReconstructConfig, position: usize) -> usize {
    if config.quote_chars == 0 {
        config.excerpt_chars
    } else if position < config.full_quotes {
        config.quote_chars
    } else {
        config.tail_quote_chars
    }
}

/// What the server did with the budget (`budget_policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct BudgetPolicy {
    /// Who set the base.
    pub source: CountSource,
    /// True when the maximum lowered the base.
    pub clamped: bool,
    /// `forced_budget_set`, `budget_requested`, `budget_omitted`, `default_fits_the_window`,
    /// `mode_default` or `raised_to_one_excerpt`.
    pub reason: &'static str,
}

/// A resolved budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetResolution {
    /// Characters of quoted text the response may carry.
    pub effective: usize,
    /// The caller's budget, as asked.
    pub requested: Option<usize>,
    /// How it was resolved.
    pub policy: BudgetPolicy,
    /// True when the budget was forced, clamped or raised: the response restates it.
    pub differs_from_request: bool,
}

/// Resolves the budget for a window of `count` items.
pub fn resolve(
    config: &ReconstructConfig,
    requested: Option<usize>,
    count: usize,
) -> BudgetResolution {
    resolve_in_mode(config, requested, count, None)
}

/// [`resolve`] under a `mode` whose default budget (`mode_default`) replaces the server
/// default: `forced ?? requested ?? mode default`, capped and floored as ever.
pub fn resolve_in_mode(
    config: &ReconstructConfig,
    requested: Option<usize>,
    count: usize,
    mode_default: Option<usize>,
) -> BudgetResolution {
    let window_heads: usize = (0..count).map(|p| head_cap(config, p)).sum();
    let (base, source, mut reason, mut raised) = match (config.forced_budget, requested) {
        (None, None) if mode_default.is_some() => (
            mode_default.unwrap_or(config.default_budget),
            CountSource::ServerDefault,
            "mode_default",
            true,
        ),
        (Some(forced), _) => (
            forced,
            CountSource::OperatorForced,
            "forced_budget_set",
            false,
        ),
        (None, Some(asked)) => (asked, CountSource::Caller, "budget_requested", false),
        (None, None) if window_heads > config.default_budget => (
            window_heads,
            CountSource::ServerDefault,
            "default_fits_the_window",
            true,
        ),
        (None, None) => (
            config.default_budget,
            CountSource::ServerDefault,
            "budget_omitted",
            false,
        ),
    };
    let mut effective = base.min(config.max_budget);
    let clamped = effective < base;
    let floor = head_cap(config, 0);
    if effective < floor {
        effective = floor;
        reason = "raised_to_one_excerpt";
        raised = true;
    }
    BudgetResolution {
        effective,
        requested,
        policy: BudgetPolicy {
            source,
            clamped,
            reason,
        },
        differs_from_request: clamped || raised || source == CountSource::OperatorForced,
    }
}

/// Which text of an item a piece is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    /// The head quote (`content`).
    Head,
    /// The item's n-th excerpt (0 = most relevant).
    Excerpt(usize),
}

/// One piece of quoted text in the allocation sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The item's position.
    pub item: usize,
    /// Which of its texts.
    pub slot: Slot,
    /// Its size in characters.
    pub chars: usize,
}

/// The fixed sequence over items given as `(head chars, excerpt chars most relevant first)`.
pub fn sequence(items: &[(usize, Vec<usize>)]) -> Vec<Piece> {
    sequence_with(items, usize::MAX, Mutation::None)
}

/// `budget` is read only by the [`Mutation::AllocationByBudget`] mutation.
pub(crate) fn sequence_with(
    items: &[(usize, Vec<usize>)],
    budget: usize,
    mutation: Mutation,
) -> Vec<Piece> {
    let heads: usize = items.iter().map(|(h, _)| h).sum();
    let total: usize = heads + items.iter().flat_map(|(_, e)| e).sum::<usize>();
    // The mutation spends a generous budget on depth first: a budget-shaped order.
    let depth_first = mutation == Mutation::ExcerptsBeforeHeads
        || (mutation == Mutation::AllocationByBudget && budget >= 2 * heads && budget < total);
    let mut out = Vec::new();
    if depth_first {
        for (item, (head, excerpts)) in items.iter().enumerate() {
            out.push(Piece {
                item,
                slot: Slot::Head,
                chars: *head,
            });
            for (n, &chars) in excerpts.iter().enumerate() {
                out.push(Piece {
                    item,
                    slot: Slot::Excerpt(n),
                    chars,
                });
            }
        }
        return out;
    }
    for (item, (head, _)) in items.iter().enumerate() {
        out.push(Piece {
            item,
            slot: Slot::Head,
            chars: *head,
        });
    }
    let rounds = items.iter().map(|(_, e)| e.len()).max().unwrap_or(0);
    for n in 0..rounds {
        for (item, (_, excerpts)) in items.iter().enumerate() {
            if let Some(&chars) = excerpts.get(n) {
                out.push(Piece {
                    item,
                    slot: Slot::Excerpt(n),
                    chars,
                });
            }
        }
    }
    out
}

/// The longest prefix of `sequence` that fits `budget`: `(pieces taken, characters used)`.
/// The first piece is always taken (the budget is never below one head quote).
pub fn allocate(sequence: &[Piece], budget: usize) -> (usize, usize) {
    let mut used = 0usize;
    for (n, piece) in sequence.iter().enumerate() {
        if n > 0 && used + piece.chars > budget {
            return (n, used);
        }
        used += piece.chars;
    }
    (sequence.len(), used)
}
