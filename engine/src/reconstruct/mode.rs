//! A reconstruct `mode` (reference cpersona-2.6.14 §4.2 step 11): its window, its default
//! budget, and its cap on `cl100k_base` tokens of the whole returned JSON (lite 3,000, pro
//! 5,000), with `used_tokens` self-consistent (the count includes the field that states it).
//!
//! Fitting the cap follows the reference: the longest prefix of the allocation sequence
//! whose shaped JSON fits (a binary search over its breakpoints), then fewer claims in the
//! first item, else the call is refused (`cap_below_minimum`). It must never reorder, rewrite
//! or shorten a quote: only whole trailing pieces of the sequence (and, last, the first item's
//! trailing claims) go, and the report says how many.

use serde::Serialize;

use crate::reconstruct::stages::ReconstructResponse;
use crate::reconstruct::stages::compact::{Compacted, compact};
use crate::reconstruct::stages::config::ReconstructConfig;
use crate::reconstruct::stages::places::ProPlaces;
use crate::reconstruct::tokens::cl100k_tokens;

/// A reconstruct `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReconstructMode {
    /// Compact: a 2,800-character default budget, no relation walk, 3,000 tokens at most.
    Lite,
    /// Wide: 15 items (the maximum raised to at least 15), the maximum budget as the
    /// default, no relation walk, 5,000 tokens at most.
    Pro,
}

impl ReconstructMode {
    /// Lite's default budget in characters of quoted text (shipped value).
    pub const LITE_BUDGET: usize = 2_800;
    /// Pro's count (shipped value).
    pub const PRO_COUNT: usize = 15;

    /// The cap on `cl100k_base` tokens of the returned JSON (shipped `MODE_CAPS`).
    pub fn token_cap(self) -> usize {
        match self {
            Self::Lite => 3_000,
            Self::Pro => 5_000,
        }
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lite => "lite",
            Self::Pro => "pro",
        }
    }

    /// The configuration under this mode: pro raises the maximum to at least 15 and makes 15
    /// the default (a forced count still wins).
    pub fn config(self, mut config: ReconstructConfig) -> ReconstructConfig {
        if self == Self::Pro {
            config.max_count = config.max_count.max(Self::PRO_COUNT);
            config.default_count = Self::PRO_COUNT;
        }
        config
    }

    /// The default budget under this mode (`forced ?? requested ?? this`).
    pub fn default_budget(self, config: &ReconstructConfig) -> usize {
        match self {
            Self::Lite => Self::LITE_BUDGET,
            Self::Pro => config.max_budget,
        }
    }
}

/// How the token cap cut a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct TokenCapCut {
    /// Pieces of the allocation sequence (heads, then excerpts round by round) kept.
    pub pieces_kept: usize,
    /// Pieces the character budget alone would have kept.
    pub pieces_before_cap: usize,
    /// Claims per item lowered to this after the first head alone still overran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_evidence: Option<usize>,
}

/// What a `mode` did, reported in the result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ModeReport {
    /// `lite` or `pro`.
    pub mode: &'static str,
    /// The cap on `cl100k_base` tokens of the returned JSON.
    pub token_cap: usize,
    /// Whether the cap was applied (not under `trace`, whose audit is never cut).
    pub token_cap_applied: bool,
    /// Why the cap was not applied, when it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_cap_skipped: Option<&'static str>,
    /// `cl100k_base` tokens of the returned JSON, this field included, when the cap applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_tokens: Option<usize>,
    /// What the cap cut, when it cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_cap_cut: Option<TokenCapCut>,
    /// Pro's keyword and depth places (held items from the same recall ranked at depth 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub places: Option<ProPlaces>,
    /// The relation walk is skipped under a mode.
    pub walk: &'static str,
    /// `compact` (the mode's shortened shape) or `full` (under `trace`, which keeps every
    /// field).
    pub shape: &'static str,
    /// What the compact shape dropped and which bounds cut (`reconstruct/compact.rs`).
    #[serde(flatten)]
    pub compacted: Compacted,
}

/// The smallest response still overran the cap: the first item's head with one claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CapBelowMinimum {
    /// Tokens of that smallest response.
    pub(crate) minimum: usize,
}

/// One attempt: `limit` = pieces of the allocation sequence allowed (`None` = as the budget
/// decides), `max_evidence` = claims per item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// Pieces allowed.
    pub(crate) limit: Option<usize>,
    /// Claims per item.
    pub(crate) max_evidence: usize,
}

/// What one attempt built, as the fitter needs it.
pub(crate) trait Fitting {
    /// Pieces of the allocation sequence the attempt kept.
    fn pieces_kept(&self) -> usize;
}

/// The `used_tokens` value that counts itself: `tokens(n)` is the body's count when the
/// field says `n`. A fixed point is reached in two or three rounds (only the digits of `n`
/// move the count); if it ever oscillates, the larger value is kept (never under-stated).
pub(crate) fn settle_used_tokens(mut tokens: impl FnMut(usize) -> usize) -> usize {
    let mut said = 0;
    let mut seen = Vec::new();
    loop {
        let counted = tokens(said);
        if counted == said {
            return said;
        }
        if seen.contains(&counted) {
            return counted.max(said);
        }
        seen.push(counted);
        said = counted;
    }
}

/// Fits `cap`: `build` assembles an attempt, `measure(built, cut)` shapes it with that cut
/// reported and gives its whole JSON's tokens. Returns the shaped attempt kept with its cut
/// (`None` = no cut), so the winner is never shaped twice, or the smallest response's size
/// when even that overran.
pub(crate) fn fit_to_cap<R: Fitting, S>(
    cap: usize,
    max_evidence: usize,
    mut build: impl FnMut(Attempt) -> R,
    mut measure: impl FnMut(&R, Option<TokenCapCut>) -> (usize, S),
) -> Result<(S, Option<TokenCapCut>), CapBelowMinimum> {
    let full = build(Attempt {
        limit: None,
        max_evidence,
    });
    let (tokens, shaped) = measure(&full, None);
    if tokens <= cap {
        return Ok((shaped, None));
    }
    let before = full.pieces_kept();
    let cut = |kept: usize, max_evidence: Option<usize>| TokenCapCut {
        pieces_kept: kept,
        pieces_before_cap: before,
        max_evidence,
    };
    // The largest limit in 1..before that fits; fewer pieces never add tokens but the
    // few report fields, so the fit is searched, then confirmed.
    let (mut lo, mut hi) = (1usize, before.saturating_sub(1));
    let mut best: Option<(S, TokenCapCut)> = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let attempt = build(Attempt {
            limit: Some(mid),
            max_evidence,
        });
        let c = cut(attempt.pieces_kept(), None);
        let (tokens, shaped) = measure(&attempt, Some(c));
        if tokens <= cap {
            best = Some((shaped, c));
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if let Some((r, c)) = best {
        return Ok((r, Some(c)));
    }
    let mut minimum = usize::MAX;
    for claims in (1..max_evidence).rev().chain(std::iter::once(1)) {
        let attempt = build(Attempt {
            limit: Some(1),
            max_evidence: claims,
        });
        let c = cut(attempt.pieces_kept(), Some(claims));
        let (tokens, shaped) = measure(&attempt, Some(c));
        if tokens <= cap {
            return Ok((shaped, Some(c)));
        }
        minimum = minimum.min(tokens);
        if claims == 1 {
            break;
        }
    }
    Err(CapBelowMinimum { minimum })
}

/// A mode's report before the cap is settled.
pub(crate) fn mode_report(
    mode: ReconstructMode,
    cut: Option<TokenCapCut>,
    compacted: Compacted,
    places: Option<ProPlaces>,
) -> ModeReport {
    ModeReport {
        mode: mode.name(),
        token_cap: mode.token_cap(),
        token_cap_applied: false,
        token_cap_skipped: None,
        used_tokens: None,
        token_cap_cut: cut,
        places,
        walk: "skipped",
        shape: "compact",
        compacted,
    }
}

/// `response` in the mode's compact shape with its report, `used_tokens` settled against
/// `body` (the whole returned JSON): `(response, report, used tokens)`.
pub(crate) fn shape(
    mode: ReconstructMode,
    mut response: ReconstructResponse,
    cut: Option<TokenCapCut>,
    places: Option<ProPlaces>,
    body: impl Fn((&ReconstructResponse, &ModeReport)) -> serde_json::Value,
) -> (ReconstructResponse, ModeReport, usize) {
    let mut compacted = compact(&mut response);
    if cut.is_some() {
        compacted.cut_by.push("token_cap");
    }
    let mut report = mode_report(mode, cut, compacted, places);
    report.token_cap_applied = true;
    let used = settle_used_tokens(|said| {
        report.used_tokens = Some(said);
        cl100k_tokens(&body((&response, &report)).to_string())
    });
    report.used_tokens = Some(used);
    (response, report, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in response: pieces of given token sizes, and claims on the first item.
    #[derive(Debug, Clone, PartialEq)]
    struct Fake {
        pieces: Vec<usize>,
        claims: usize,
    }

    impl Fitting for Fake {
        fn pieces_kept(&self) -> usize {
            self.pieces.len()
        }
    }

    fn builder(sizes: &[usize], budget_pieces: usize) -> impl FnMut(Attempt) -> Fake + '_ {
        move |a: Attempt| Fake {
            pieces: sizes[..a.limit.unwrap_or(budget_pieces).min(budget_pieces)].to_vec(),
            claims: a.max_evidence,
        }
    }

    /// 20 tokens of envelope, the pieces, 5 tokens per claim, 8 for a cut report.
    fn count(f: &Fake, cut: Option<TokenCapCut>) -> usize {
        20 + f.pieces.iter().sum::<usize>() + 5 * f.claims + cut.map_or(0, |_| 8)
    }

    /// The fitter's view: the count and the attempt itself as the shaped result.
    fn measure(f: &Fake, cut: Option<TokenCapCut>) -> (usize, Fake) {
        (count(f, cut), f.clone())
    }

    #[test]
    fn under_the_cap_nothing_is_cut() {
        let sizes = [100, 100, 100];
        let (r, cut) = fit_to_cap(1_000, 3, builder(&sizes, 3), measure).unwrap();
        assert_eq!((r.pieces.len(), cut), (3, None));
    }

    #[test]
    fn keeps_the_longest_prefix_that_fits() {
        let sizes = [100; 10];
        // 20 + 5*3 + 8 = 43 of envelope: 543 tokens hold exactly 5 pieces.
        let (r, cut) = fit_to_cap(543, 3, builder(&sizes, 10), measure).unwrap();
        assert_eq!(r.pieces.len(), 5);
        let cut = cut.unwrap();
        assert_eq!((cut.pieces_kept, cut.pieces_before_cap), (5, 10));
        assert_eq!(cut.max_evidence, None);
        // One token less and the fifth piece goes.
        let (r, _) = fit_to_cap(542, 3, builder(&sizes, 10), measure).unwrap();
        assert_eq!(r.pieces.len(), 4);
        // Every prefix length is found, not only powers of two.
        for cap in (143..=1_100).step_by(37) {
            let (r, _) = fit_to_cap(cap, 3, builder(&sizes, 10), measure).unwrap();
            let n = r.pieces.len();
            assert!(
                count(
                    &r,
                    Some(TokenCapCut {
                        pieces_kept: n,
                        pieces_before_cap: 10,
                        max_evidence: None
                    })
                ) <= cap
                    || n == 10
            );
            if n < 10 {
                let one_more = Fake {
                    pieces: sizes[..n + 1].to_vec(),
                    claims: 3,
                };
                assert!(
                    count(
                        &one_more,
                        Some(TokenCapCut {
                            pieces_kept: n + 1,
                            pieces_before_cap: 10,
                            max_evidence: None
                        })
                    ) > cap,
                    "cap {cap}: {n} pieces, one more also fits"
                );
            }
        }
    }

    #[test]
    fn lowers_the_claims_then_refuses() {
        let sizes = [100, 100];
        // One head with 3 claims = 20+100+15+8 = 143; with 1 claim = 133.
        let (r, cut) = fit_to_cap(135, 3, builder(&sizes, 2), measure).unwrap();
        assert_eq!((r.pieces.len(), r.claims), (1, 1));
        assert_eq!(cut.unwrap().max_evidence, Some(1));
        let err = fit_to_cap(132, 3, builder(&sizes, 2), measure).unwrap_err();
        assert_eq!(err.minimum, 133);
    }

    #[test]
    fn used_tokens_counts_itself() {
        // A body of 995 tokens plus one token per digit of the stated number.
        let body = |n: usize| 995 + n.to_string().len();
        let said = settle_used_tokens(body);
        assert_eq!(said, body(said));
        assert_eq!(said, 998);
        // At the digit boundary: 996 + digits... the fixed point is still found.
        let body = |n: usize| 996 + n.to_string().len();
        let said = settle_used_tokens(body);
        assert_eq!(said, body(said));
    }
}
