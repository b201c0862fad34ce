//! A forgiving walk over the bytes of a message that did not parse, to say something useful
//! about it: the top-level `id` (so the client can match the parse error to its request),
//! the path of a number no `f64` holds (`1e309`), and whether a string spells a lone UTF-16
//! surrogate. It never recurses (a line nesting 10,000 deep costs a stack of 10,000 small
//! frames on the heap), never panics on any input, and reads each byte once.

use serde_json::Value;

/// Where the walk stands inside one container.
enum Frame {
    /// An object: the key most recently read, and whether the next string is a key.
    Object { key: String, expect_key: bool },
    /// An array: the index of the current item.
    Array { index: usize },
}

/// What the walk found.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Findings {
    /// The raw value of the first `id` member of the top-level object, when it is a string
    /// or a number token.
    pub(crate) id: Option<Value>,
    /// The first number no `f64` holds: its path (`params.arguments.limit`) and its text.
    pub(crate) out_of_range: Option<(String, String)>,
    /// Whether some string spells an unpaired surrogate escape (`\ud800` alone).
    pub(crate) lone_surrogate: bool,
}

/// Walks `bytes` (any bytes: invalid UTF-8, cut short, unbalanced).
pub(crate) fn scan(bytes: &[u8]) -> Findings {
    let mut found = Findings::default();
    let mut stack: Vec<Frame> = Vec::new();
    // Whether the first value seen is an object (only then can it carry an id).
    let mut top_is_object = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'{' | b'[' => {
                top_is_object.get_or_insert(b == b'{');
                stack.push(if b == b'{' {
                    Frame::Object {
                        key: String::new(),
                        expect_key: true,
                    }
                } else {
                    Frame::Array { index: 0 }
                });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Object { expect_key, .. }) => *expect_key = true,
                    Some(Frame::Array { index }) => *index += 1,
                    None => {}
                }
                i += 1;
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
                i += 1;
            }
            b'"' => {
                let end = string_end(bytes, i);
                let token = &bytes[i..end];
                found.lone_surrogate |= spells_lone_surrogate(token);
                match stack.last_mut() {
                    Some(Frame::Object { key, expect_key }) if *expect_key => {
                        *key = decode_key(token);
                    }
                    _ => value_token(&stack, top_is_object, token, &mut found),
                }
                i = end;
            }
            _ => {
                top_is_object.get_or_insert(false);
                let end = bytes[i..]
                    .iter()
                    .position(|c| b",:[]{}\" \t\r\n".contains(c))
                    .map_or(bytes.len(), |p| i + p.max(1));
                let token = &bytes[i..end];
                if found.out_of_range.is_none() && is_out_of_range(token) {
                    found.out_of_range =
                        Some((path(&stack), String::from_utf8_lossy(token).into_owned()));
                }
                value_token(&stack, top_is_object, token, &mut found);
                i = end;
            }
        }
    }
    found
}

/// Records `token` as the id when it is the value of the top-level object's first `id`.
fn value_token(stack: &[Frame], top_is_object: Option<bool>, token: &[u8], found: &mut Findings) {
    if found.id.is_some() || top_is_object != Some(true) {
        return;
    }
    if let [Frame::Object { key, expect_key }] = stack
        && !*expect_key
        && key == "id"
    {
        // A token that is no JSON (`tru`, a string cut short) is no id.
        found.id = Some(serde_json::from_slice(token).unwrap_or(Value::Null));
    }
}

/// The index just past the string starting at `start` (a `"`), or the end of the input.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A key as text: decoded when it is valid JSON, else its bytes as lossy UTF-8.
fn decode_key(token: &[u8]) -> String {
    serde_json::from_slice::<String>(token).unwrap_or_else(|_| {
        let inner = token.strip_prefix(b"\"").unwrap_or(token);
        let inner = inner.strip_suffix(b"\"").unwrap_or(inner);
        String::from_utf8_lossy(inner).into_owned()
    })
}

/// A number token whose value no `f64` holds (JSON numbers are unbounded; serde_json refuses
/// these as "number out of range").
fn is_out_of_range(token: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(token) else {
        return false;
    };
    let number_like = text
        .bytes()
        .all(|c| c.is_ascii_digit() || b"+-.eE".contains(&c))
        && text.bytes().any(|c| c.is_ascii_digit());
    number_like && text.parse::<f64>().is_ok_and(f64::is_infinite)
}

/// `params.arguments.limit`, `refs[0].block`: where the walk stands.
fn path(stack: &[Frame]) -> String {
    let mut out = String::new();
    for frame in stack {
        match frame {
            Frame::Object { key, .. } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Frame::Array { index } => out.push_str(&format!("[{index}]")),
        }
    }
    out
}

/// Whether a string token (quotes included) holds a `\uXXXX` escape of a UTF-16 surrogate
/// without its other half.
fn spells_lone_surrogate(token: &[u8]) -> bool {
    let mut i = 1;
    while i + 1 < token.len() {
        if token[i] != b'\\' {
            i += 1;
            continue;
        }
        if token[i + 1] != b'u' {
            i += 2;
            continue;
        }
        match hex4(token, i + 2) {
            Some(0xD800..=0xDBFF) => {
                let low = (token.get(i + 6) == Some(&b'\\') && token.get(i + 7) == Some(&b'u'))
                    .then(|| hex4(token, i + 8))
                    .flatten();
                if !matches!(low, Some(0xDC00..=0xDFFF)) {
                    return true;
                }
                i += 12;
            }
            Some(0xDC00..=0xDFFF) => return true,
            _ => i += 2,
        }
    }
    false
}

/// The value of four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    let text = std::str::from_utf8(digits).ok()?;
    u32::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_top_level_id_is_read_from_what_does_not_parse() {
        let id = |text: &[u8]| scan(text).id;
        assert_eq!(
            id(br#"{"jsonrpc":"2.0","id":7,"params":{"x":1e309}}"#),
            Some(json!(7))
        );
        assert_eq!(id(br#"{"id":"a\"b","method":"ping""#), Some(json!("a\"b")));
        assert_eq!(id(b"{\"id\":3,\"p\":\"\xff\"}"), Some(json!(3)));
        let deep = format!(r#"{{"id":4,"p":{}"#, "[".repeat(10_000));
        assert_eq!(id(deep.as_bytes()), Some(json!(4)));
        // Only the top level's id, and only the first.
        assert_eq!(id(br#"{"params":{"id":9},"id":5,"id":6,"#), Some(json!(5)));
        assert_eq!(id(br#"[{"id":1}"#), None);
        assert_eq!(id(br#"{"p":[{"id":1}]"#), None);
        // An escaped key is read as the key it spells.
        assert_eq!(id(br#"{"\u0069d":8,"#), Some(json!(8)));
        // A value that is no JSON token is a null id.
        assert_eq!(id(br#"{"id":tru,"#), Some(Value::Null));
        assert_eq!(id(b"hello"), None);
        assert_eq!(id(b""), None);
    }

    #[test]
    fn a_number_no_f64_holds_is_found_with_its_path() {
        let found = scan(br#"{"params":{"arguments":{"query":"1e309","limit":1e309}}}"#);
        assert_eq!(
            found.out_of_range,
            Some(("params.arguments.limit".into(), "1e309".into()))
        );
        let found = scan(br#"{"refs":[{"block":2},{"block":-1E400}]}"#);
        assert_eq!(
            found.out_of_range,
            Some(("refs[1].block".into(), "-1E400".into()))
        );
        for fine in [
            &b"[1e308, 1e-400, 123456789012345678901234567890]"[..],
            b"{\"a\":infinity}",
        ] {
            assert_eq!(scan(fine).out_of_range, None);
        }
    }

    #[test]
    fn lone_surrogates_are_told_from_pairs_and_escaped_backslashes() {
        for lone in [
            r#"{"p":"a \ud800 b"}"#,
            r#"{"p":"\uDC01"}"#,
            r#"{"p":"\ud800"}"#,
            r#"{"p":"\ud800\ud800\udc00"}"#,
            r#"{"p":"\ud800"#,
        ] {
            assert!(scan(lone.as_bytes()).lone_surrogate, "{lone}");
        }
        for fine in [
            r#"{"p":"\ud83d\ude00 paired"}"#,
            r#"{"p":"\\ud800 is an escaped backslash"}"#,
            r#"{"p":"\u00e9\n\"quoted\" \\"}"#,
            r#"{"p":"\\\ud83d\ude00"}"#,
            r#"{"a":1}\ud800"#,
        ] {
            assert!(!scan(fine.as_bytes()).lone_surrogate, "{fine}");
        }
    }

    #[test]
    fn any_bytes_are_walked_without_a_panic() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..2_000 {
            let len = (state % 64) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    b"{}[]\",:\\u0d8e1-. x\xff"[(state % 19) as usize]
                })
                .collect();
            let _ = scan(&bytes);
        }
    }
}
