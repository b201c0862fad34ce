//! Excerpts: the passage with the most query trigrams, grown to the cap, deterministic.

use proptest::prelude::*;

use crate::recall::stages::excerpt::{ExcerptBasis, MAX_PASSAGE_CHARS, excerpt, passages};

#[test]
fn picks_the_matching_passage_past_the_preview() {
    let filler = "Nothing of note happened here. ".repeat(30);
    let text = format!("{filler}The cloudflared tunnel was deployed on Friday. {filler}");
    let got = excerpt(&text, "cloudflared tunnel", 60).expect("excerpt");
    assert_eq!(got.basis, ExcerptBasis::Lexical);
    assert!(
        got.text
            .starts_with("The cloudflared tunnel was deployed on Friday."),
        "{:?}",
        got.text
    );
    assert!(got.text.chars().count() <= 60);
    let chars: Vec<char> = text.chars().collect();
    assert_eq!(
        chars[got.span.0..got.span.1].iter().collect::<String>(),
        got.text
    );
}

#[test]
fn no_match_falls_back_to_the_start_and_blank_query_gives_none() {
    let text = "alpha beta. gamma delta.";
    let got = excerpt(text, "zzz", 8).expect("excerpt");
    assert_eq!(
        (got.basis, got.text.as_str()),
        (ExcerptBasis::Start, "alpha be")
    );
    assert_eq!(excerpt(text, "   ", 8), None);
    assert_eq!(excerpt(text, "alpha", 0), None);
}

#[test]
fn cjk_sentences_split_and_match() {
    let text = "今日は晴れ。東京タワーに行った。富士山も見えた。";
    let got = excerpt(text, "東京タワー", 10).expect("excerpt");
    assert_eq!(got.text, "東京タワーに行った。");
    // A passage longer than the cap is cut to it; a larger cap takes the next passage too.
    assert_eq!(
        excerpt(text, "東京タワー", 9).expect("excerpt").text,
        "東京タワーに行った"
    );
    // Neighbours join only when they hold query trigrams too.
    assert_eq!(
        excerpt(text, "東京タワー", 18).expect("excerpt").text,
        "東京タワーに行った。"
    );
    assert_eq!(
        excerpt(text, "東京タワー 富士山", 18)
            .expect("excerpt")
            .text,
        "東京タワーに行った。富士山も見えた。"
    );
}

#[test]
fn long_passages_are_split() {
    let text = "word ".repeat(400);
    let chars: Vec<char> = text.chars().collect();
    let parts = passages(&chars);
    assert!(parts.len() > 1);
    assert!(parts.iter().all(|(s, e)| e - s <= MAX_PASSAGE_CHARS));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn passages_partition_and_excerpts_are_quotes(text in "[a-z .!?\n。、東京]{0,400}", query in "[a-z 東京]{0,12}", cap in 1usize..200) {
        let chars: Vec<char> = text.chars().collect();
        let parts = passages(&chars);
        let mut at = 0;
        for (s, e) in &parts {
            prop_assert_eq!(*s, at);
            prop_assert!(e > s);
            at = *e;
        }
        prop_assert_eq!(at, chars.len());
        if let Some(got) = excerpt(&text, &query, cap) {
            prop_assert!(got.text.chars().count() <= cap);
            prop_assert_eq!(chars[got.span.0..got.span.1].iter().collect::<String>(), got.text.clone());
            prop_assert_eq!(excerpt(&text, &query, cap), Some(got));
        }
    }
}
