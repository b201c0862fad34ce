//! Counting `cl100k_base` tokens, the unit of a reconstruct `mode`'s cap (reference
//! cpersona-2.6.14 §4.2 step 11). The vocabulary is the one CPersona ships (sha256
//! `223921b7…65b2a7`), compiled into the binary by `tiktoken-rs`: nothing is downloaded.
//!
//! It only counts: it must never be used to shorten, rewrite or generate text.

/// Tokens of `text` under `cl100k_base`, special-token spellings counted as ordinary text
/// (a stored memory that quotes `<|endoftext|>` is text, not a control token).
pub fn cl100k_tokens(text: &str) -> usize {
    // The first call parses the vocabulary (~100K ranks); later calls share it.
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len()
}

#[cfg(test)]
mod tests {
    use super::cl100k_tokens;

    #[test]
    fn counts_match_openai_cl100k() {
        // Counts from OpenAI's Python tiktoken 0.x (`encode_ordinary`, cl100k_base loaded from
        // the same vocabulary file) for these strings.
        assert_eq!(cl100k_tokens(""), 0);
        assert_eq!(cl100k_tokens("hello world"), 2);
        assert_eq!(cl100k_tokens("tiktoken is great!"), 6);
        assert_eq!(cl100k_tokens("<|endoftext|>"), 7);
        assert_eq!(cl100k_tokens("東京で会議がありました。明日は雨です"), 17);
        assert_eq!(cl100k_tokens("the quick brown fox"), 4);
        assert_eq!(
            cl100k_tokens(r#"{"items":[{"content":"the quick brown fox"}]}"#),
            11
        );
    }
}
