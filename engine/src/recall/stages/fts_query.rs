//! Builds the FTS5 `MATCH` expression for the trigram tables from any user string, the way
//! CPersona's `_fts_recall_phrases` does: every term a double-quoted phrase, OR-joined. It
//! must never produce an expression SQLite refuses; a query it cannot express yields `None`.
//!
//! The rule, as CPersona 2.6 ships it (its test pins the builder as
//! `_expression_before` in `tests/test_rare_phrases.py`):
//! 1. split the query on whitespace and strip ``"'`.,;:!?()[]{}`` from each token's edges;
//! 2. split each token into runs of CJK (U+3040–30FF, U+3400–4DBF, U+4E00–9FFF,
//!    U+FF66–FF9F) and runs of anything else;
//! 3. a CJK run of 3 or more characters becomes all its overlapping 3-character grams;
//!    another run of 3 or more characters is kept whole, inner punctuation included
//!    (`CVE-2024-3094`, `bug-183`); shorter runs are dropped (a trigram index cannot
//!    match fewer than 3 characters: the keyword pass handles them);
//! 4. de-duplicate, keeping first occurrences;
//! 5. quote each term, doubling any `"` inside, and join with ` OR ` (any term may match;
//!    bm25 ranks rows holding more of them higher).
//!
//! Inside a double-quoted FTS5 string every character is literal, so operators (`AND`,
//! `OR`, `NOT`, `NEAR`), column filters (`col:`), `*`, `^`, `+` and parentheses lose their
//! meaning. Two characters need more: NUL, which would end the expression early inside
//! SQLite, is treated as whitespace (a departure from CPersona, whose Python strings pass it
//! through); and a lone UTF-16 surrogate cannot occur in a Rust `&str` (the server refuses
//! such input at its JSON boundary, as CPersona 2.6 does).

use std::collections::HashSet;

/// The most phrases one expression carries. A query longer than this many distinct terms
/// (about a 260-character CJK query, or 128 long words) keeps its first phrases and says how
/// many it dropped; the bound keeps one MATCH well inside FTS5's expression limits.
pub const MAX_FTS_PHRASES: usize = 256;

/// A MATCH expression and what went into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtsMatch {
    /// The expression to bind to `MATCH ?`.
    pub expression: String,
    /// The terms, unquoted, in expression order (also the keyword pass's `%term%` list).
    pub terms: Vec<String>,
    /// Distinct terms left out because of [`MAX_FTS_PHRASES`]; 0 when nothing was cut.
    pub dropped_terms: usize,
}

/// The characters CPersona strips from each whitespace token's edges.
const EDGE_PUNCTUATION: &[char] = &[
    '"', '\'', '`', '.', ',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}',
];

/// Builds the expression, or `None` when the query holds no term of 3 or more characters.
/// `None` means "the FTS arm has nothing to search": the caller runs the keyword pass.
pub fn build_match(query: &str) -> Option<FtsMatch> {
    let mut terms = fts_terms(query);
    if terms.is_empty() {
        return None;
    }
    let dropped_terms = terms.len().saturating_sub(MAX_FTS_PHRASES);
    terms.truncate(MAX_FTS_PHRASES);
    let expression = join_phrases(&terms, " OR ");
    Some(FtsMatch {
        expression,
        terms,
        dropped_terms,
    })
}

/// `terms` as FTS5 strings joined by `joiner` (`" OR "` or `" AND "`): the one way an
/// expression is written, so a subset of a query's terms is as safe as the whole.
pub fn join_phrases<S: AsRef<str>>(terms: &[S], joiner: &str) -> String {
    let mut expression = String::with_capacity(
        terms
            .iter()
            .map(|t| t.as_ref().len() + joiner.len() + 2)
            .sum(),
    );
    for (i, term) in terms.iter().enumerate() {
        if i > 0 {
            expression.push_str(joiner);
        }
        push_phrase(&mut expression, term.as_ref());
    }
    expression
}

/// The de-duplicated terms of a query, in first-occurrence order, before any cut.
pub fn fts_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut push = |term: String, terms: &mut Vec<String>| {
        if seen.insert(term.clone()) {
            terms.push(term);
        }
    };
    for token in query.split(is_query_whitespace) {
        let token = token.trim_matches(EDGE_PUNCTUATION);
        for (is_cjk_run, run) in runs(token) {
            let chars: Vec<char> = run.chars().collect();
            if chars.len() < 3 {
                continue;
            }
            if is_cjk_run {
                for gram in chars.windows(3) {
                    push(gram.iter().collect(), &mut terms);
                }
            } else {
                push(run.to_owned(), &mut terms);
            }
        }
    }
    terms
}

/// True for the CJK ranges CPersona decomposes into trigrams.
pub fn is_cjk(c: char) -> bool {
    matches!(c, '\u{3040}'..='\u{30ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}' | '\u{ff66}'..='\u{ff9f}')
}

/// Whitespace as Python's `str.split()` sees it (Unicode White_Space plus the information
/// separators U+001C–U+001F), and NUL, which must never reach SQLite inside an expression.
pub(crate) fn is_query_whitespace(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}' | '\0')
}

/// Appends `term` as one FTS5 string: wrapped in `"`, inner `"` doubled.
fn push_phrase(out: &mut String, term: &str) {
    out.push('"');
    for c in term.chars() {
        if c == '"' {
            out.push('"');
        }
        out.push(c);
    }
    out.push('"');
}

/// Splits a token into maximal runs of CJK and non-CJK characters.
fn runs(token: &str) -> impl Iterator<Item = (bool, &str)> {
    let mut rest = token;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let cjk = is_cjk(first);
        let end = rest
            .char_indices()
            .find(|&(_, c)| is_cjk(c) != cjk)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((cjk, run))
    })
}
