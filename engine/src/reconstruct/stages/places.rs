//! Pro's extra held places (reference cpersona-2.6.14 §3.10 (7) and (8), §4.2 step 11), both
//! read from one deeper ranking (the same recall at depth 100):
//! - keyword places, up to 8: rows only a lexical arm ranked. The reference gives them to such
//!   rows the gate refused (7), and one keyword seat to such rows that passed (2); this build's
//!   gate passes a lexical-only row that has no cosine, so refusals are rare and the 8 places
//!   take lexical-only rows passed or refused (the one seat of (2) is not offered otherwise);
//! - depth places, up to 8: rows of the deeper answer;
//!
//! each time among rows the candidate pool (and earlier places) do not hold, ordered by how
//! many of the question's parts (§5.3) their text holds, then by the deeper rank. They become
//! held items after the window (`admission: "reservation"`), keyword places first.
//!
//! Pure: the caller runs the deeper recall and reads the rows. It must never displace a row
//! of the pool or take a window place. Block places (§3.10 (6)) are not offered: recall has no
//! block reservation in this build.

use std::collections::BTreeSet;

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

use crate::refs::Ref;

/// The deeper ranking's depth (the library ceiling).
pub(crate) const DEPTH: usize = 100;
/// Pro's depth places.
pub(crate) const DEPTH_PLACES: usize = 8;
/// Pro's keyword places.
pub(crate) const KEYWORD_PLACES: usize = 8;
/// Parts of a question kept at most (§5.3).
const MAX_PARTS: usize = 32;

/// What pro's places did (`mode.places`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProPlaces {
    /// Keyword places: rows only a lexical arm ranked.
    pub keyword: Places,
    /// Depth places: rows of the deeper answer.
    pub depth: Places,
}

/// What one kind of place did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Places {
    /// The deeper ranking's depth.
    pub depth: usize,
    /// Places offered.
    pub places: usize,
    /// Rows eligible beyond the pool.
    pub beyond_pool: usize,
    /// Places taken.
    pub taken: usize,
}

fn normalise(text: &str) -> String {
    text.nfkc().flat_map(char::to_lowercase).collect()
}

fn is_katakana(c: char) -> bool {
    ('\u{30A0}'..='\u{30FF}').contains(&c)
}

fn is_kanji(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c) || c == '々'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn is_ident_inner(c: char) -> bool {
    is_ident(c) || matches!(c, '.' | '_' | '/' | '#' | '-')
}

/// The question's parts (§5.3): after NFKC and lower-casing, `#` + digits, identifiers
/// (`[a-z0-9]` runs that may hold `._/#-` inside, not at an end), katakana runs and kanji runs;
/// at least 2 characters, distinct, the first 32.
pub(crate) fn question_parts(query: &str) -> Vec<String> {
    let chars: Vec<char> = normalise(query).chars().collect();
    let mut parts: Vec<String> = Vec::new();
    let mut push = |part: String| {
        if part.chars().count() >= 2 && !parts.contains(&part) && parts.len() < MAX_PARTS {
            parts.push(part);
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = |from: usize, keep: &dyn Fn(char) -> bool| {
            let mut end = from;
            while end < chars.len() && keep(chars[end]) {
                end += 1;
            }
            end
        };
        if c == '#' && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            let end = run(i + 1, &|c: char| c.is_ascii_digit());
            push(chars[i..end].iter().collect());
            i = end;
        } else if is_ident(c) {
            let mut end = run(i, &is_ident_inner);
            // An identifier ends on a letter or digit.
            while end > i && !is_ident(chars[end - 1]) {
                end -= 1;
            }
            push(chars[i..end].iter().collect());
            i = end;
        } else if is_katakana(c) {
            let end = run(i, &is_katakana);
            push(chars[i..end].iter().collect());
            i = end;
        } else if is_kanji(c) {
            let end = run(i, &is_kanji);
            push(chars[i..end].iter().collect());
            i = end;
        } else {
            i += 1;
        }
    }
    parts
}

/// How many of `parts` the record's normalised text holds.
pub(crate) fn parts_held(parts: &[String], text: &str) -> usize {
    let text = normalise(text);
    parts.iter().filter(|p| text.contains(p.as_str())).count()
}

/// The rows taking `places` places: `deeper` holds the eligible rows best first with each
/// row's text, `pool` the rows already held.
pub(crate) fn pick(
    deeper: &[(Ref, String)],
    pool: &BTreeSet<Ref>,
    parts: &[String],
    places: usize,
) -> (Vec<Ref>, Places) {
    let mut beyond: Vec<(usize, usize, Ref)> = deeper
        .iter()
        .enumerate()
        .filter(|(_, (r, _))| !pool.contains(r))
        .map(|(rank, (r, text))| (parts_held(parts, text), rank, *r))
        .collect();
    let beyond_pool = beyond.len();
    // Most parts first; the deeper rank breaks ties (a total order: ranks are distinct).
    beyond.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let taken: Vec<Ref> = beyond.iter().take(places).map(|t| t.2).collect();
    let report = Places {
        depth: DEPTH,
        places,
        beyond_pool,
        taken: taken.len(),
    };
    (taken, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_follow_the_reference_rules() {
        assert_eq!(
            question_parts("What did Melanie say about issue #42 in src/main.rs?"),
            [
                "what",
                "did",
                "melanie",
                "say",
                "about",
                "issue",
                "#42",
                "in",
                "src/main.rs"
            ]
        );
        // NFKC folds full-width letters; one-character parts and repeats are dropped.
        assert_eq!(question_parts("ＡＢＣ abc a I x-y-"), ["abc", "x-y"]);
        assert_eq!(
            question_parts("東京タワーで会議"),
            ["東京", "タワー", "会議"]
        );
        let many: String = (0..40).map(|n| format!("w{n} ")).collect();
        assert_eq!(question_parts(&many).len(), 32);
    }

    #[test]
    fn depth_places_go_to_rows_beyond_the_pool_holding_most_parts() {
        let parts = question_parts("lighthouse keeper tide");
        let deeper: Vec<(Ref, String)> = (1..=12)
            .map(|id| {
                let text = match id {
                    5 => "The lighthouse keeper watched the tide.",
                    9 => "A keeper of the lighthouse.",
                    _ => "Nothing to see here.",
                };
                (Ref::mem(id), text.to_owned())
            })
            .collect();
        let pool: BTreeSet<Ref> = [Ref::mem(1), Ref::mem(2), Ref::mem(5)].into();
        let (taken, report) = pick(&deeper, &pool, &parts, DEPTH_PLACES);
        // Row 5 is held already; row 9 holds two parts; then deeper rank decides.
        assert_eq!(taken, [9, 3, 4, 6, 7, 8, 10, 11].map(Ref::mem).to_vec());
        assert_eq!((report.beyond_pool, report.taken), (9, 8));
        assert!(taken.iter().all(|r| !pool.contains(r)));
    }
}
