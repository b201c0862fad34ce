//! Overflow nodes (CPersona 2.6 `nodes.py`): a record whose text runs past the embedder's
//! window is divided into a chain of spans that each fit the window, so each gets its own
//! embedding and a long record can be quoted by its best part.
//!
//! [`divide`] is pure: it asks a `measure` function (the embedder's token count) how a text
//! fits and cuts at the end of the last structural match inside the window — blank line,
//! line break, sentence end, whitespace, in that order, a class accepted only when its cut
//! keeps at least half the window — else at the window's end. The same text and the same
//! measure always give the same spans; a text that fits has no nodes. Nodes are never read
//! by a retrieval arm; this module must never touch the store or the model itself.

use crate::embed::TokenInfo;

/// One node: `[start, end)` in characters of the stored text, and its token count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSpan {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// Tokens the span takes (special tokens included), as measured.
    pub token_count: usize,
}

/// Divides `text` against the window `measure` reports. `measure` gets a text and answers
/// how it fits (its `window_end_char` counts characters of that text). Empty when the whole
/// text fits. Every span fits its window unless a single character does not (then that
/// character is its own node, so the division always ends).
pub fn divide<E>(
    text: &str,
    mut measure: impl FnMut(&str) -> Result<TokenInfo, E>,
) -> Result<Vec<NodeSpan>, E> {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut spans = Vec::new();
    let mut pos = 0;
    while pos < n {
        let rest = &chars[pos..];
        let info = measure(&rest.iter().collect::<String>())?;
        if !info.truncated {
            if pos == 0 {
                return Ok(Vec::new());
            }
            spans.push(NodeSpan {
                start: pos,
                end: n,
                token_count: info.count,
            });
            break;
        }
        let mut limit = info.window_end_char.min(rest.len());
        loop {
            let cut = choose_cut(rest, limit.max(1));
            let info = measure(&rest[..cut].iter().collect::<String>())?;
            if !info.truncated || cut == 1 {
                spans.push(NodeSpan {
                    start: pos,
                    end: pos + cut,
                    token_count: info.count,
                });
                pos += cut;
                break;
            }
            limit = info.window_end_char.min(cut - 1);
        }
    }
    Ok(spans)
}

/// The cut for `text` whose window ends at character `window_end` (≥ 1): the end of the
/// last match of the first boundary class that ends at or before `window_end` and keeps at
/// least half of it; else `window_end`.
pub fn choose_cut(text: &[char], window_end: usize) -> usize {
    let window_end = window_end.clamp(1, text.len().max(1));
    let classes: [&dyn Fn(usize) -> bool; 4] = [
        // Blank line: `\n[ \t]*\n` ending at p.
        &|p| {
            text[p - 1] == '\n' && {
                let before = &text[..p - 1];
                let mut i = before.len();
                while i > 0 && matches!(before[i - 1], ' ' | '\t') {
                    i -= 1;
                }
                i > 0 && before[i - 1] == '\n'
            }
        },
        &|p| text[p - 1] == '\n',
        &|p| {
            matches!(text[p - 1], '。' | '．' | '！' | '？')
                || (matches!(text[p - 1], '.' | '!' | '?')
                    && text.get(p).is_none_or(|c| c.is_whitespace()))
        },
        &|p| text[p - 1].is_whitespace(),
    ];
    for class in classes {
        if let Some(best) = (1..=window_end).rev().find(|&p| class(p))
            && best * 2 >= window_end
        {
            return best;
        }
    }
    window_end
}

#[cfg(test)]
mod tests;
