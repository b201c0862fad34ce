//! The association cue: when a query names a declared entity (its name or an alias, matched
//! exactly after normalisation, on word boundaries for ASCII letters and digits), the records
//! that mention it, then those of entities one relation away, take up to [`SEATS`] held
//! places. Pure: the store reads the registry and hydrates the rows. It never displaces or
//! reorders a row the pipeline chose, and with no declared term it does nothing at all.

use super::excerpt::excerpt;
use super::shape::{Hydrated, MatchReason, RecallMessage, ShapeConfig, Signal};
use crate::refs::Ref;

/// Held places the cue takes at most.
pub const SEATS: usize = 3;
/// The shortest term (in characters, after normalisation) the cue matches, as CPersona's
/// entity terms: shorter ones match by accident.
pub const MIN_TERM_CHARS: usize = 3;
/// Declared terms (names plus aliases) read per recall at most; past it the cue says so.
pub const MAX_TERMS: usize = 10_000;

/// True when `term` occurs in `query` (both normalised) and each end that is an ASCII letter
/// or digit is not glued to another one.
pub fn term_in_query(query: &str, term: &str) -> bool {
    if term.chars().count() < MIN_TERM_CHARS {
        return false;
    }
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let first = term.chars().next();
    let last = term.chars().next_back();
    let mut from = 0;
    while let Some(at) = query[from..].find(term) {
        let start = from + at;
        let end = start + term.len();
        let before = query[..start].chars().next_back();
        let after = query[end..].chars().next();
        let left_ok = !(glued(first) && glued(before));
        let right_ok = !(glued(last) && glued(after));
        if left_ok && right_ok {
            return true;
        }
        from = start + term.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The entity ids whose terms the query names, ascending, without repeats. `terms` are
/// `(entity id, normalised term)`.
pub fn matched_entities(query: &str, terms: &[(i64, String)]) -> Vec<i64> {
    let mut ids: Vec<i64> = terms
        .iter()
        .filter(|(_, term)| term_in_query(query, term))
        .map(|(id, _)| *id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Picks up to [`SEATS`] refs from `mentions` (best first: `(ref, entity name, hops)`) that
/// are not `held`, without repeats; also returns how many more it passed over.
pub fn pick(
    mentions: &[(Ref, String, usize)],
    held: impl Fn(Ref) -> bool,
) -> (Vec<(Ref, String, usize)>, usize) {
    let mut out: Vec<(Ref, String, usize)> = Vec::new();
    let mut passed = 0;
    for (r, name, hops) in mentions {
        if held(*r) || out.iter().any(|(o, ..)| o == r) {
            continue;
        }
        if out.len() >= SEATS {
            passed += 1;
            continue;
        }
        out.push((*r, name.clone(), *hops));
    }
    (out, passed)
}

/// A held row on the wire: preview-cut like any other row, `score` 0 (it is not ranked), and
/// `match_reason` as given.
pub fn held_message(
    config: &ShapeConfig,
    query: &str,
    r: Ref,
    row: Hydrated,
    match_reason: MatchReason,
) -> RecallMessage {
    let len = row.content.chars().count();
    let cut = config.preview_chars > 0 && len > config.preview_chars;
    let (content, found) = if cut {
        (
            row.content.chars().take(config.preview_chars).collect(),
            excerpt(&row.content, query, config.excerpt_chars),
        )
    } else {
        (row.content, None)
    };
    RecallMessage {
        content,
        r#ref: r,
        source: row.source,
        timestamp: row.timestamp,
        id: row.msg_id,
        score: 0.0,
        confidence: None,
        match_reason,
        content_truncated: cut,
        content_len: cut.then_some(len),
        excerpt_basis: found.as_ref().map(|e| e.basis),
        excerpt: found.map(|e| e.text),
    }
}

/// The `match_reason` of an association seat.
pub fn reason(entity: String, hops: usize) -> MatchReason {
    MatchReason {
        signal: Signal::Association,
        score: 0.0,
        cosine: None,
        rrf: None,
        rsf: None,
        arms: Vec::new(),
        admission: Some("reservation"),
        fused_rank: None,
        cosine_rank: None,
        depth: None,
        cue_rank: None,
        entity: Some(entity),
        hops: Some(hops),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_on_ascii_word_boundaries_only() {
        assert!(term_in_query("where does alice work?", "alice"));
        assert!(!term_in_query("where does malice work?", "alice"));
        assert!(!term_in_query("alicent", "alice"));
        assert!(term_in_query("alice", "alice"));
        assert!(term_in_query("ask acme corp about it", "acme corp"));
        // Japanese has no spaces: no boundary is asked for.
        assert!(term_in_query("田中さんの会社はどこ", "田中さん"));
        // A later occurrence on boundaries still matches.
        assert!(term_in_query("malice and alice", "alice"));
    }

    #[test]
    fn short_terms_never_match() {
        assert!(!term_in_query("ab cd", "ab"));
        assert!(matched_entities("ab cd", &[(1, "ab".into())]).is_empty());
    }

    #[test]
    fn matched_entities_are_sorted_and_unique() {
        let terms = [
            (3, "bob".to_owned()),
            (1, "alice".to_owned()),
            (3, "robert".to_owned()),
            (2, "carol".to_owned()),
        ];
        assert_eq!(
            matched_entities("did bob (robert) meet alice?", &terms),
            vec![1, 3]
        );
    }

    #[test]
    fn pick_skips_held_and_repeats_and_counts_the_rest() {
        let m = |id| (Ref::mem(id), "alice".to_owned(), 0);
        let mentions = [m(1), m(2), m(2), m(3), m(4), m(5)];
        let (picked, passed) = pick(&mentions, |r| r.id == 1);
        let ids: Vec<i64> = picked.iter().map(|(r, ..)| r.id).collect();
        assert_eq!(ids, vec![2, 3, 4]);
        assert_eq!(passed, 1);
    }

    #[test]
    fn held_message_cuts_to_the_preview_and_carries_the_reason() {
        let config = ShapeConfig {
            preview_chars: 5,
            excerpt_chars: 0,
            full_content_budget_chars: 100,
        };
        let row = Hydrated {
            content: "alice works at acme".into(),
            ..Hydrated::default()
        };
        let msg = held_message(
            &config,
            "alice",
            Ref::mem(9),
            row,
            reason("Alice".into(), 1),
        );
        assert_eq!(msg.content, "alice");
        assert!(msg.content_truncated);
        assert_eq!(msg.content_len, Some(19));
        assert_eq!(msg.match_reason.signal, Signal::Association);
        assert_eq!(msg.match_reason.admission, Some("reservation"));
        assert_eq!(msg.match_reason.hops, Some(1));
    }
}
