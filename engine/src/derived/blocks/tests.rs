//! Property and unit tests of the block division, quantisation and `best_blocks`.

use proptest::prelude::*;

use super::*;

fn texts(text: &str, blocks: &[Block]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    blocks
        .iter()
        .map(|b| chars[b.start..b.end].iter().collect())
        .collect()
}

#[test]
fn cuts_at_line_breaks_and_sentence_ends() {
    let text = "First point. Second one!\nThird line\n\nNew paragraph? yes";
    let blocks = segment(text, &[]);
    assert_eq!(
        texts(text, &blocks),
        vec![
            "First point.",
            " Second one!",
            "\nThird line\n",
            "\nNew paragraph?",
            " yes"
        ]
    );
}

#[test]
fn never_cuts_inside_fences_brackets_or_quotes() {
    let text = "Run this:\n```\nlet a = 1.\nlet b = 2.\n```\nDone (see a. b. c.) and \"quoted. text.\" end.";
    let blocks = segment(text, &[]);
    let parts = texts(text, &blocks);
    assert!(
        parts.contains(&"```\nlet a = 1.\nlet b = 2.\n```\n".to_owned()),
        "{parts:?}"
    );
    assert!(
        parts.iter().any(|p| p.contains("(see a. b. c.)")),
        "{parts:?}"
    );
    assert!(
        parts.iter().any(|p| p.contains("\"quoted. text.\"")),
        "{parts:?}"
    );
}

#[test]
fn unterminated_fence_runs_to_the_end() {
    let text = "Intro.\n```\ncode. more.\nstill code.";
    let parts = texts(text, &segment(text, &[]));
    assert_eq!(parts, vec!["Intro.", "\n```\ncode. more.\nstill code."]);
}

#[test]
fn node_ends_always_cut() {
    let text = "one two three four five six";
    let blocks = segment(text, &[7]);
    assert_eq!(blocks[0].end, 7);
    assert!(blocks[0].forced);
    assert_eq!(
        texts(text, &blocks),
        vec!["one two", " three four five six"]
    );
}

#[test]
fn long_runs_split_by_force_at_weak_boundaries() {
    let text = "word, ".repeat(300);
    let blocks = segment(&text, &[]);
    assert!(blocks.len() > 1);
    assert!(blocks.iter().all(|b| b.len() <= MAX_BLOCK_CHARS));
    assert!(blocks[0].forced);
    // The cut leaves the whitespace after a comma: it falls on a boundary after ", " or ",".
    let first = &texts(&text, &blocks)[0];
    assert!(first.ends_with(", ") || first.ends_with(','), "{first:?}");
}

#[test]
fn quantisations() {
    let v = [0.5f32, -0.25, 0.0, 1.0, -1.0, 0.1, 0.2, -0.3, 0.9];
    assert_eq!(sign_bits(&v), vec![0b1001_0110, 0b1000_0000]);
    assert_eq!(
        int8_codes(&v).unwrap(),
        vec![64, -32, 0, 127, -127, 13, 25, -38, 114]
    );
    assert!(int8_codes(&[0.0; 4]).is_none());
}

#[test]
fn best_blocks_prefers_int8_and_falls_back_to_bits() {
    let q = [1.0f32, 0.0, 0.0, 0.0];
    let a = int8_codes(&[0.0, 1.0, 0.0, 0.0]).unwrap();
    let b = int8_codes(&[0.9, 0.1, 0.0, 0.0]).unwrap();
    let bits_a = sign_bits(&[0.0, 1.0, 0.0, 0.0]);
    let bits_b = sign_bits(&[0.9, 0.1, 0.0, 0.0]);
    let full = [
        BlockVectors {
            index: 0,
            bits: Some(&bits_a),
            int8: Some(&a),
        },
        BlockVectors {
            index: 1,
            bits: Some(&bits_b),
            int8: Some(&b),
        },
    ];
    let ranked = best_blocks(&q, &full);
    assert_eq!(
        ranked.iter().map(|r| r.index).collect::<Vec<_>>(),
        vec![1, 0]
    );
    assert_eq!(ranked[0].order, BlockOrder::Int8);
    let partial = [
        BlockVectors {
            index: 0,
            bits: Some(&bits_a),
            int8: None,
        },
        BlockVectors {
            index: 1,
            bits: Some(&bits_b),
            int8: Some(&b),
        },
    ];
    let ranked = best_blocks(&q, &partial);
    assert_eq!(ranked[0].order, BlockOrder::SignBits);
    assert_eq!(ranked[0].index, 1);
    // Bits 1000 against 1100 (one apart) and 0100 (two apart).
    assert_eq!(ranked[0].score, -1.0);
    assert_eq!(ranked[1].score, -2.0);
    let none = [BlockVectors {
        index: 0,
        bits: None,
        int8: None,
    }];
    assert!(best_blocks(&q, &none).is_empty());
}

fn text_strategy() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "word",
        " ",
        "\n",
        "\n\n",
        ". ",
        "!",
        "?",
        "。",
        "(",
        ")",
        "[",
        "]",
        "「",
        "」",
        "\"",
        "```",
        "\n```\n",
        ",",
        "、",
        "x",
        "long-token-without-breaks",
        "\t",
    ]);
    prop::collection::vec(atoms, 0..400).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn blocks_tile_the_text(text in text_strategy(), cut in 0usize..2000) {
        let n = text.chars().count();
        let node_ends = if n > 0 { vec![cut % n.max(1)] } else { vec![] };
        let blocks = segment(&text, &node_ends);
        // Exact tiling: contiguous, non-empty, from 0 to n.
        let mut pos = 0;
        for b in &blocks {
            prop_assert_eq!(b.start, pos);
            prop_assert!(b.end > b.start);
            prop_assert!(b.len() <= MAX_BLOCK_CHARS);
            pos = b.end;
        }
        prop_assert_eq!(pos, n);
        // Node ends are block ends.
        for &e in node_ends.iter().filter(|&&e| e > 0 && e < n) {
            prop_assert!(blocks.iter().any(|b| b.end == e));
        }
        // No unforced cut inside a protected run.
        let chars: Vec<char> = text.chars().collect();
        let protected = protected_boundaries(&chars);
        for b in blocks.iter().filter(|b| b.end < n) {
            prop_assert!(!protected[b.end] || b.forced, "unforced cut at {} in {:?}", b.end, text);
        }
        // Deterministic.
        prop_assert_eq!(segment(&text, &node_ends), blocks);
    }
}
