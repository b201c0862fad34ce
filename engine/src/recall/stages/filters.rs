//! The caller's row filters of a recall — `exclude_contents`, `source_id` and `min_similarity`
//! (reference 2.5 §5.2, §5.3, §5.5) — applied to the arms' lists before fusion, so they never
//! make a recall return fewer than `limit` rows while other candidates remain. Pure: the store
//! hands in what it knows about a row through a closure; nothing here reads SQLite. A filtered
//! hit is removed from its list and the survivors keep their ranks (gaps allowed), as
//! CPersona's fusion counts them.

use std::collections::HashMap;

use serde::Serialize;

use super::candidate::ArmList;
use crate::refs::{Ref, RefKind};

/// An `exclude_contents` entry shorter than this many characters must equal the content;
/// a longer one matches by starts-with in either direction (CPersona's `_content_excluded`).
pub const EXACT_MATCH_BELOW_CHARS: usize = 32;

/// What a recall filters out, as the caller asked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowFilters {
    /// Contents to leave out, normalised (trimmed, lowercased, blanks dropped).
    exclude: Vec<String>,
    /// A memory's `source.id`: one id, or a namespace when it ends in a delimiter
    /// (`crate::source::source_id_matches`); empty = no filter.
    source_id: String,
    /// Vector hits below this cosine are dropped.
    min_similarity: Option<f64>,
    /// Episodes carry no per-user source: with `source_id` set and no channel they are
    /// skipped (reference 2.5 §5.2).
    skip_episodes: bool,
}

/// What the store knows about one row for the filters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowFacts {
    /// The row's text (a memory's content, an episode's summary).
    pub content: String,
    /// `source.id` of a memory, when it has one.
    pub source_id: Option<String>,
}

/// How many hits each filter removed (a hit listed by two arms counts twice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FilterReport {
    /// Hits whose content matched `exclude_contents`.
    pub excluded: usize,
    /// Hits outside `source_id` (memories of another source, episodes).
    pub source_mismatch: usize,
    /// Vector hits below `min_similarity`.
    pub below_similarity: usize,
}

impl FilterReport {
    /// Hits removed in all.
    pub fn total(&self) -> usize {
        self.excluded + self.source_mismatch + self.below_similarity
    }
}

/// Normalises one text the way CPersona compares contents.
fn normalise(text: &str) -> String {
    text.trim().to_lowercase()
}

impl RowFilters {
    /// The filters of one recall. `channel_set` says whether the recall names a channel
    /// (episodes survive a `source_id` filter only then).
    pub fn new(
        exclude_contents: &[String],
        source_id: &str,
        min_similarity: Option<f64>,
        channel_set: bool,
    ) -> RowFilters {
        let mut exclude: Vec<String> = exclude_contents
            .iter()
            .map(|c| normalise(c))
            .filter(|c| !c.is_empty())
            .collect();
        exclude.sort();
        exclude.dedup();
        RowFilters {
            exclude,
            source_id: source_id.to_owned(),
            min_similarity: min_similarity.filter(|m| m.is_finite()),
            skip_episodes: !source_id.is_empty() && !channel_set,
        }
    }

    /// True when no filter is set (the store can skip every lookup).
    pub fn is_empty(&self) -> bool {
        self.exclude.is_empty() && self.source_id.is_empty() && self.min_similarity.is_none()
    }

    /// True when a row of this content is excluded: empty content never is; an entry
    /// shorter than [`EXACT_MATCH_BELOW_CHARS`] must equal it, a longer one matches when
    /// either starts with the other.
    pub fn excludes(&self, content: &str) -> bool {
        let content = normalise(content);
        if content.is_empty() {
            return false;
        }
        self.exclude.iter().any(|entry| {
            if entry.chars().count() < EXACT_MATCH_BELOW_CHARS {
                *entry == content
            } else {
                content.starts_with(entry.as_str()) || entry.starts_with(content.as_str())
            }
        })
    }

    fn source_ok(&self, r: Ref, facts: Option<&RowFacts>) -> bool {
        if self.source_id.is_empty() {
            return true;
        }
        match r.kind {
            RefKind::Ep => !self.skip_episodes,
            RefKind::Mem => crate::source::source_id_matches(
                facts.and_then(|f| f.source_id.as_deref()),
                &self.source_id,
            ),
        }
    }

    /// Removes the filtered hits from `arms`; `facts` reads a row (called at most once per
    /// row, and only when a content or source filter is set). A row `facts` cannot read is
    /// left for hydration to report as vanished.
    pub fn apply(
        &self,
        arms: &mut [ArmList],
        mut facts: impl FnMut(Ref) -> Option<RowFacts>,
    ) -> FilterReport {
        let known: HashMap<Ref, Option<RowFacts>> = self
            .rows_to_read(arms)
            .into_iter()
            .map(|r| (r, facts(r)))
            .collect();
        self.apply_known(arms, &known)
    }

    /// The rows whose facts [`RowFilters::apply_known`] needs: every hit the similarity floor
    /// keeps, once each, when a content or source filter is set (else none).
    pub fn rows_to_read(&self, arms: &[ArmList]) -> Vec<Ref> {
        if self.exclude.is_empty() && self.source_id.is_empty() {
            return Vec::new();
        }
        let mut seen = std::collections::HashSet::new();
        arms.iter()
            .flat_map(|list| {
                let vector = list.arm.is_vector();
                list.hits
                    .iter()
                    .filter(move |hit| !(vector && self.below_floor(hit.raw)))
                    .map(|hit| hit.r#ref)
            })
            .filter(|r| seen.insert(*r))
            .collect()
    }

    /// Removes the filtered hits from `arms`, with the facts of [`RowFilters::rows_to_read`]
    /// read by the caller (`None`: the row could not be read; hydration reports it vanished).
    pub fn apply_known(
        &self,
        arms: &mut [ArmList],
        known: &HashMap<Ref, Option<RowFacts>>,
    ) -> FilterReport {
        let mut report = FilterReport::default();
        if self.is_empty() {
            return report;
        }
        let needs_facts = !self.exclude.is_empty() || !self.source_id.is_empty();
        for list in arms.iter_mut() {
            let vector = list.arm.is_vector();
            list.hits.retain(|hit| {
                if vector && self.below_floor(hit.raw) {
                    report.below_similarity += 1;
                    return false;
                }
                if !needs_facts {
                    return true;
                }
                let row = known.get(&hit.r#ref).and_then(Option::as_ref);
                if !self.source_ok(hit.r#ref, row) {
                    report.source_mismatch += 1;
                    return false;
                }
                if let Some(row) = row
                    && self.excludes(&row.content)
                {
                    report.excluded += 1;
                    return false;
                }
                true
            });
        }
        report
    }

    /// True when a vector hit's cosine falls below the caller's `min_similarity`.
    fn below_floor(&self, cosine: Option<f64>) -> bool {
        matches!((self.min_similarity, cosine), (Some(floor), Some(c)) if c < floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recall::stages::candidate::Arm;

    fn facts(r: Ref) -> Option<RowFacts> {
        let (content, source) = match (r.kind, r.id) {
            (RefKind::Mem, 1) => ("Tea in Kyoto", Some("discord:1")),
            (RefKind::Mem, 2) => ("coffee in berlin", Some("discord:2")),
            (RefKind::Mem, 3) => (
                "a long memory about the quarterly budget meeting and its outcome",
                None,
            ),
            (RefKind::Ep, 9) => ("an episode", None),
            _ => return None,
        };
        Some(RowFacts {
            content: content.to_owned(),
            source_id: source.map(str::to_owned),
        })
    }

    fn arms() -> Vec<ArmList> {
        vec![
            ArmList::ranked(
                Arm::VectorNear,
                [
                    (Ref::mem(1), Some(0.9)),
                    (Ref::mem(2), Some(0.4)),
                    (Ref::mem(3), Some(0.1)),
                    (Ref::ep(9), Some(0.8)),
                ],
            ),
            ArmList::ranked(
                Arm::MemoryKeyword,
                [(Ref::mem(3), Some(-1.0)), (Ref::mem(2), Some(-2.0))],
            ),
        ]
    }

    fn kept(arms: &[ArmList]) -> Vec<Vec<(Ref, usize)>> {
        arms.iter()
            .map(|l| l.hits.iter().map(|h| (h.r#ref, h.rank)).collect())
            .collect()
    }

    #[test]
    fn no_filter_reads_nothing_and_keeps_everything() {
        let mut lists = arms();
        let report = RowFilters::default().apply(&mut lists, |_| panic!("no lookup expected"));
        assert_eq!(report.total(), 0);
        assert_eq!(kept(&lists), kept(&arms()));
    }

    #[test]
    fn exclude_contents_is_exact_when_short_and_prefix_when_long() {
        let f = RowFilters::new(
            &[
                "  TEA IN KYOTO ".into(),
                "tea".into(),
                "a long memory about the quarterly budget meeting".into(),
                " ".into(),
            ],
            "",
            None,
            false,
        );
        assert!(f.excludes("tea in kyoto"));
        assert!(
            !f.excludes("tea in kyoto, again"),
            "short entries match exactly"
        );
        assert!(f.excludes("A long memory about the quarterly budget meeting and more"));
        assert!(
            f.excludes("a long memory about the quarterly budget"),
            "either direction"
        );
        assert!(!f.excludes("   "), "empty content is never excluded");
        let mut lists = arms();
        let report = f.apply(&mut lists, facts);
        assert_eq!(report.excluded, 3);
        // Survivors keep their ranks.
        assert_eq!(
            kept(&lists),
            vec![
                vec![(Ref::mem(2), 1), (Ref::ep(9), 3)],
                vec![(Ref::mem(2), 1)]
            ]
        );
    }

    #[test]
    fn source_id_keeps_matching_memories_and_drops_episodes_without_a_channel() {
        let f = RowFilters::new(&[], "discord:1", None, false);
        let mut lists = arms();
        let mut lookups = 0;
        let report = f.apply(&mut lists, |r| {
            lookups += 1;
            facts(r)
        });
        assert_eq!(lookups, 4, "each row is read once");
        assert_eq!(kept(&lists), vec![vec![(Ref::mem(1), 0)], vec![]]);
        assert_eq!(report.source_mismatch, 5);
        let with_channel = RowFilters::new(&[], "discord:1", None, true);
        let mut lists = arms();
        with_channel.apply(&mut lists, facts);
        assert_eq!(
            kept(&lists),
            vec![vec![(Ref::mem(1), 0), (Ref::ep(9), 3)], vec![]]
        );
    }

    #[test]
    fn min_similarity_drops_only_vector_hits_below_it() {
        let f = RowFilters::new(&[], "", Some(0.5), false);
        let mut lists = arms();
        let report = f.apply(&mut lists, |_| panic!("no lookup expected"));
        assert_eq!(report.below_similarity, 2);
        assert_eq!(
            kept(&lists),
            vec![
                vec![(Ref::mem(1), 0), (Ref::ep(9), 3)],
                vec![(Ref::mem(3), 0), (Ref::mem(2), 1)]
            ]
        );
    }
}
