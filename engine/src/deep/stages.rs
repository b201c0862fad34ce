//! The pure half of `deep_check`: naming a speaker from a `[name] ` prefix, the weighted
//! length of trivial content, near-duplicate pairs among unit vectors, episodes whose span
//! holds no memory, and the L2 norm test. No SQLite here.

use unicode_normalization::UnicodeNormalization;

/// A row at most this long (East Asian wide characters weighing [`WIDE_CHAR_WEIGHT`]) is
/// trivial content (CPersona's `_SHORT_CONTENT_THRESHOLD`).
pub const SHORT_CONTENT_THRESHOLD: usize = 5;
/// What one wide character counts for against [`SHORT_CONTENT_THRESHOLD`].
pub const WIDE_CHAR_WEIGHT: usize = 3;
/// A pair above this cosine is a near duplicate (CPersona's `NEAR_DUPLICATE_COSINE`).
pub const NEAR_DUPLICATE_COSINE: f32 = 0.97;
/// Near-duplicate samples returned.
pub const NEAR_DUPLICATE_SAMPLES: usize = 20;
/// How far from 1 a stored vector's norm may be (CPersona's `_NORM_TOLERANCE`).
pub const NORM_TOLERANCE: f64 = 1e-3;

/// Leading brackets that are not a speaker's name: checkboxes, log levels and the labels
/// CPersona puts in front of what it hands out.
const NOT_A_SPEAKER: &[&str] = &[
    "x", "episode", "profile", "trace", "debug", "info", "notice", "warn", "warning", "error",
    "err", "critical", "crit", "fatal", "alert", "emerg",
];

/// The speaker a `[name] ` content prefix records, or `None` (CPersona's
/// `_speaker_from_prefix`): a bracket of 1 to 64 characters with a letter, followed by
/// whitespace, that is not a stamp, a checkbox, a log level or a label, and does not open
/// with `!` or `^`.
pub fn speaker_from_prefix(content: &str) -> Option<String> {
    let rest = content.strip_prefix('[')?;
    let end = rest.find(']')?;
    let inside = &rest[..end];
    let after = rest[end + 1..].chars().next()?;
    let len = inside.chars().count();
    if !(1..=64).contains(&len) || inside.contains(['[', '\n']) || !after.is_whitespace() {
        return None;
    }
    let name = inside.trim();
    let first = name.chars().next()?;
    if !name.chars().any(char::is_alphabetic)
        || NOT_A_SPEAKER.contains(&name.to_lowercase().as_str())
        || first == '!'
        || first == '^'
        || is_stamp(name)
    {
        return None;
    }
    Some(name.to_owned())
}

/// `^\d{1,4}[-/.:]\d`: a date or time stamp.
fn is_stamp(name: &str) -> bool {
    let digits = name.chars().take_while(char::is_ascii_digit).count();
    let mut rest = name.chars().skip(digits);
    (1..=4).contains(&digits)
        && rest.next().is_some_and(|c| "-/.:".contains(c))
        && rest.next().is_some_and(|c| c.is_ascii_digit())
}

/// The length of `content` for the trivial-content test: spaces trimmed (as SQLite's TRIM),
/// each East Asian wide or fullwidth character counting [`WIDE_CHAR_WEIGHT`].
pub fn short_content_length(content: &str) -> usize {
    content
        .trim_matches(' ')
        .chars()
        .map(|c| if is_wide(c) { WIDE_CHAR_WEIGHT } else { 1 })
        .sum()
}

/// East Asian Width W or F, by the blocks that hold them (CJK, kana, hangul, fullwidth
/// forms); close to `unicodedata.east_asian_width` for the scripts the rule is about.
fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0x303E | 0x3041..=0x33FF | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF | 0xA000..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF | 0x20000..=0x3FFFD)
}

/// Whether `text` is in Unicode normal form C.
pub fn is_nfc(text: &str) -> bool {
    text.nfc().eq(text.chars())
}

/// The code points NFC would change, as `U+XXXX`, at most 12.
pub fn decomposed_codepoints(text: &str) -> Vec<String> {
    let normal: std::collections::BTreeSet<char> = text.nfc().collect();
    let mut moved: Vec<char> = text.chars().filter(|c| !normal.contains(c)).collect();
    moved.sort_unstable();
    moved.dedup();
    moved
        .into_iter()
        .take(12)
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// One near-duplicate pair: the positions of its rows and their cosine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NearPair {
    /// The earlier row's position.
    pub a: usize,
    /// The later row's position.
    pub b: usize,
    /// Their cosine.
    pub cosine: f32,
}

/// Every pair of `vectors` above [`NEAR_DUPLICATE_COSINE`] whose `texts` differ (exact copies
/// are `duplicate_content`'s), counted; the `limit` best as samples, by cosine rounded to 4
/// places descending, then position (the order CPersona's stable sort gives).
pub fn near_duplicate_pairs(
    vectors: &[&[f32]],
    texts: &[&str],
    limit: usize,
) -> (usize, Vec<NearPair>) {
    let unit: Vec<Vec<f32>> = vectors
        .iter()
        .map(|v| {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let norm = if norm == 0.0 { 1.0 } else { norm };
            v.iter().map(|x| x / norm).collect()
        })
        .collect();
    let mut count = 0;
    let mut best: Vec<(i64, usize, usize, f32)> = Vec::new();
    for a in 0..unit.len() {
        for b in a + 1..unit.len() {
            let cosine: f32 = unit[a].iter().zip(&unit[b]).map(|(x, y)| x * y).sum();
            if cosine > NEAR_DUPLICATE_COSINE && texts[a] != texts[b] {
                count += 1;
                best.push((
                    -((f64::from(cosine) * 10_000.0).round() as i64),
                    a,
                    b,
                    cosine,
                ));
                if best.len() > 4 * limit.max(1) {
                    best.sort_by_key(|&(key, a, b, _)| (key, a, b));
                    best.truncate(limit);
                }
            }
        }
    }
    best.sort_by_key(|&(key, a, b, _)| (key, a, b));
    best.truncate(limit);
    let samples = best
        .into_iter()
        .map(|(_, a, b, cosine)| NearPair { a, b, cosine })
        .collect();
    (count, samples)
}

/// Whether a memory time falls in `[start, end]`: `times` sorted ascending.
pub fn span_holds_a_memory(times: &[i64], start: i64, end: i64) -> bool {
    let first = times.partition_point(|&t| t < start);
    first < times.len() && times[first] <= end
}

/// Whether a vector's L2 norm is within [`NORM_TOLERANCE`] of 1.
pub fn is_unit(vector: &[f32]) -> bool {
    let norm = vector
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    (norm - 1.0).abs() <= NORM_TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speakers_are_names_not_checkboxes_levels_or_stamps() {
        assert_eq!(speaker_from_prefix("[Alice] hi").as_deref(), Some("Alice"));
        assert_eq!(
            speaker_from_prefix("[ 田中 ] こんにちは").as_deref(),
            Some("田中")
        );
        for text in [
            "[x] renew the passport",
            "[ERROR] disk full",
            "[2026-10-01T09:00Z] boot",
            "[12] footnote",
            "[!note] hm",
            "[Alice]no space",
            "Alice: hi",
            "[] empty",
        ] {
            assert_eq!(speaker_from_prefix(text), None, "{text}");
        }
    }

    #[test]
    fn wide_characters_weigh_three_and_spaces_are_trimmed() {
        assert_eq!(short_content_length("  ok  "), 2);
        assert_eq!(short_content_length("はい"), 6);
        assert_eq!(short_content_length("hello"), 5);
    }

    #[test]
    fn near_duplicates_skip_exact_copies_and_rank_by_cosine() {
        let v = |x: f32| vec![1.0, x, 0.0];
        let owned = [v(0.0), v(0.01), v(0.5), v(0.0)];
        let vectors: Vec<&[f32]> = owned.iter().map(Vec::as_slice).collect();
        let texts = ["a", "b", "c", "a"];
        let (count, samples) = near_duplicate_pairs(&vectors, &texts, 20);
        // (0,1) and (1,3) are near; (0,3) is an exact copy; row 2 is far from all.
        assert_eq!(count, 2);
        assert_eq!((samples[0].a, samples[0].b), (0, 1));
        assert!(is_nfc("café") && !is_nfc("cafe\u{301}"));
        assert_eq!(decomposed_codepoints("cafe\u{301}"), ["U+0065", "U+0301"]);
        assert!(span_holds_a_memory(&[1, 5, 9], 4, 6));
        assert!(!span_holds_a_memory(&[1, 5, 9], 6, 8));
        assert!(is_unit(&[0.6, 0.8]) && !is_unit(&[0.6, 0.9]));
    }
}
