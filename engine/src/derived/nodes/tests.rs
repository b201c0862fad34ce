//! Property and unit tests of the node division against the embedder's window.

use std::convert::Infallible;

use proptest::prelude::*;

use super::*;

/// A measure that counts one token per whitespace-separated word plus two specials, like a
/// BERT window of `window` tokens.
fn words(window: usize) -> impl FnMut(&str) -> Result<TokenInfo, Infallible> {
    move |text: &str| {
        let chars: Vec<char> = text.chars().collect();
        let mut count = 2;
        let mut window_end_char = chars.len();
        let mut in_word = false;
        for (i, c) in chars.iter().enumerate() {
            if c.is_whitespace() {
                in_word = false;
            } else if !in_word {
                in_word = true;
                count += 1;
                if count == window + 1 && window_end_char == chars.len() {
                    window_end_char = i;
                }
            }
        }
        Ok(TokenInfo {
            count,
            window,
            truncated: count > window,
            window_end_char,
        })
    }
}

#[test]
fn a_text_that_fits_has_no_nodes() {
    assert!(divide("a b c", words(10)).unwrap().is_empty());
}

#[test]
fn splits_at_sentence_ends_inside_the_window() {
    let text = "one two three. four five six. seven eight nine. ten eleven twelve.";
    let spans = divide(text, words(8)).unwrap();
    let parts: Vec<String> = spans
        .iter()
        .map(|s| text.chars().skip(s.start).take(s.end - s.start).collect())
        .collect();
    assert_eq!(
        parts,
        vec![
            "one two three. four five six.",
            " seven eight nine. ten eleven twelve."
        ]
    );
    assert!(spans.iter().all(|s| s.token_count <= 8));
}

#[test]
fn prefers_blank_lines_then_line_breaks() {
    let text = "alpha beta\n\ngamma delta\nepsilon zeta eta";
    let spans = divide(text, words(6)).unwrap();
    assert_eq!(spans[0].end, 12, "{spans:?}");
}

proptest! {
    #[test]
    fn division_tiles_respects_the_window_and_is_deterministic(
        words_in in prop::collection::vec(
            prop::sample::select(vec!["a", "bb", "ccc.", "dd!", "e\n", "f\n\n", "ggggg"]), 0..300),
        window in 3usize..40,
    ) {
        let text = words_in.join(" ");
        let spans = divide(&text, words(window)).unwrap();
        let n = text.chars().count();
        if !spans.is_empty() {
            let mut pos = 0;
            for s in &spans {
                prop_assert_eq!(s.start, pos);
                prop_assert!(s.end > s.start);
                prop_assert!(s.token_count <= window);
                pos = s.end;
            }
            prop_assert_eq!(pos, n);
        } else {
            prop_assert!(words(window)(&text).unwrap().count <= window);
        }
        prop_assert_eq!(divide(&text, words(window)).unwrap(), spans);
    }
}
