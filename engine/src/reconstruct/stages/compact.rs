//! The shortened response shape of a reconstruct `mode` (reference cpersona-2.6.14 §4.2 step
//! 11: "Both omit `ranges`, `bounds`, `effective_budget`/`used_budget`, `reserved_omitted`; an
//! item whose only claim is its head carries `as_of` instead of `claims`").
//!
//! Pure: it rewrites an assembled response and returns what it took out, so the caller can
//! still say which fields went and which bounds cut ([`Compacted`]). It must never drop an
//! item, an excerpt, a quote or a cut count (`claims_omitted`, `excerpts_omitted`,
//! `shortfall_reason`, `reserved_count` stay), and never run under `trace` (the trace is the
//! full shape).

use serde::Serialize;

use super::assemble::ReconstructResponse;

/// What the mode's shape took out of a response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Compacted {
    /// Fields the shape dropped that the full response would have carried, in the order
    /// `ranges`, `bounds`, `effective_budget`, `used_budget`, `reserved_omitted`, `claims` (an
    /// item's lone head claim, given as the item's `as_of`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub omitted_fields: Vec<&'static str>,
    /// The bounds that cut something, carried over from the dropped `bounds.omitted` and
    /// `effective_budget` (`budget`): the shape drops the detail, never the fact.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_by: Vec<&'static str>,
}

/// Rewrites `response` into the mode's shape and reports what went.
pub fn compact(response: &mut ReconstructResponse) -> Compacted {
    let mut out = Compacted::default();
    let mut ranges = false;
    let mut claims = false;
    for item in &mut response.items {
        ranges |= !item.ranges.is_empty();
        item.ranges.clear();
        let lone_head = matches!(
            item.claims.as_slice(),
            [claim] if Some(claim.r#ref) == item.head_ref && claim.why.is_none()
                && claim.hops.is_none() && claim.roles.is_empty()
        );
        if lone_head {
            item.as_of = item.claims.pop().and_then(|claim| claim.as_of);
            claims = true;
        }
    }
    if ranges {
        out.omitted_fields.push("ranges");
    }
    if let Some(bounds) = response.bounds.take() {
        out.omitted_fields.push("bounds");
        out.cut_by.extend(bounds.omitted);
    }
    if response.effective_budget.take().is_some() {
        out.omitted_fields.push("effective_budget");
        out.cut_by.push("budget");
    }
    if response.used_budget.take().is_some() {
        out.omitted_fields.push("used_budget");
    }
    if response.reserved_omitted.take().is_some() {
        out.omitted_fields.push("reserved_omitted");
    }
    if claims {
        out.omitted_fields.push("claims");
    }
    out
}
