//! The bearer token's hygiene: at start-up a token must be printable ASCII (what an HTTP header
//! carries byte for byte on every client), at least 16 characters, at least 8 distinct ones and
//! no repeated pattern; on each request the `Bearer` scheme is read case-insensitively and the
//! token compared in constant time. A refusal never echoes the token.

use std::collections::BTreeSet;

use subtle::ConstantTimeEq;

/// The shortest token accepted.
pub const MIN_TOKEN_CHARS: usize = 16;
/// The fewest distinct characters a token may use (16 × `a` has one).
pub const MIN_DISTINCT_CHARS: usize = 8;

/// How to make a good token, said in every refusal.
const HOW: &str = "use a long random secret, e.g. the first line `cpersona token new \
--client NAME` prints";

/// Why a configured token is refused at start-up; the message names no variable, because the
/// token may come from `CPERSONA_AUTH_TOKEN` or an ACL file (the caller says which).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WeakToken {
    /// A character outside printable ASCII: a header carries it differently per client (a
    /// non-ASCII token starts a server no client can authenticate to).
    #[error(
        "the token holds {what} at character {position}: only printable ASCII \
         (letters, digits, punctuation; no spaces) is accepted; {HOW}"
    )]
    NotPrintableAscii { position: usize, what: &'static str },
    /// Too short to be a secret.
    #[error("the token is {len} characters; use at least {MIN_TOKEN_CHARS}; {HOW}")]
    Short { len: usize },
    /// Too few distinct characters.
    #[error(
        "the token uses only {distinct} distinct characters; use at least \
         {MIN_DISTINCT_CHARS}; {HOW}"
    )]
    FewCharacters { distinct: usize },
    /// The token repeats a shorter pattern.
    #[error("the token repeats one pattern of {period} characters; {HOW}")]
    Repeated { period: usize },
}

/// Checks a configured token (see the module doc).
pub fn check_token(token: &str) -> Result<(), WeakToken> {
    if let Some((index, c)) = token
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_graphic())
    {
        let what = if !c.is_ascii() {
            "a non-ASCII character"
        } else if c == ' ' {
            "a space"
        } else {
            "a control character"
        };
        return Err(WeakToken::NotPrintableAscii {
            position: index + 1,
            what,
        });
    }
    let bytes = token.as_bytes();
    if bytes.len() < MIN_TOKEN_CHARS {
        return Err(WeakToken::Short { len: bytes.len() });
    }
    let distinct = bytes.iter().collect::<BTreeSet<_>>().len();
    if distinct < MIN_DISTINCT_CHARS {
        return Err(WeakToken::FewCharacters { distinct });
    }
    // The shortest period p (every byte equals the one p before it) at most half the length:
    // `abcdefghabcdefgh`, `01234567890123456789`.
    if let Some(period) =
        (1..=bytes.len() / 2).find(|&p| bytes.iter().zip(&bytes[p..]).all(|(a, b)| a == b))
    {
        return Err(WeakToken::Repeated { period });
    }
    Ok(())
}

/// The token an `Authorization` header presents: the scheme `Bearer` in any case, then one or
/// more spaces, then the token. `None` for any other shape.
pub(super) fn presented(authorization: &str) -> Option<&str> {
    let (scheme, rest) = authorization.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start_matches(' ');
    (!token.is_empty()).then_some(token)
}

/// Whether `presented` is `expected`, in time that does not depend on where they differ.
pub(super) fn matches(presented: &str, expected: &str) -> bool {
    bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) && !presented.is_empty()
}

#[cfg(test)]
mod tests;
