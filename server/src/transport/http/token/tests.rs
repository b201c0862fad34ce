//! Token hygiene: start-up refusals by reason, the scheme in any case, exact matching.

use super::*;

#[test]
fn strong_tokens_pass() {
    for token in [
        "s3cret-token-for-tests-0123456789",
        "transport-test-token-0123456789abcdef",
        "Zx8+Qw3/Lm9=Tr5!",
    ] {
        assert_eq!(check_token(token), Ok(()), "{token}");
    }
}

#[test]
fn weak_tokens_are_refused_by_reason() {
    assert_eq!(check_token("short"), Err(WeakToken::Short { len: 5 }));
    assert_eq!(
        check_token(&"a".repeat(16)),
        Err(WeakToken::FewCharacters { distinct: 1 })
    );
    assert_eq!(
        check_token("abababababababababab"),
        Err(WeakToken::FewCharacters { distinct: 2 })
    );
    assert_eq!(
        check_token("abcdefghabcdefgh"),
        Err(WeakToken::Repeated { period: 8 })
    );
    assert_eq!(
        check_token("01234567890123456789"),
        Err(WeakToken::Repeated { period: 10 })
    );
    assert_eq!(
        check_token(&"é".repeat(16)),
        Err(WeakToken::NotPrintableAscii {
            position: 1,
            what: "a non-ASCII character"
        })
    );
    assert_eq!(
        check_token("good-token-0123456789 with space"),
        Err(WeakToken::NotPrintableAscii {
            position: 22,
            what: "a space"
        })
    );
    assert_eq!(
        check_token("good-token-0123456789\n"),
        Err(WeakToken::NotPrintableAscii {
            position: 22,
            what: "a control character"
        })
    );
}

#[test]
fn a_refusal_never_echoes_the_token() {
    for token in [
        "aaaaaaaaaaaaaaaaaaaa",
        "abcdefghabcdefgh",
        "ééééééééééééééééxyz",
        "sh0rt",
    ] {
        let weak = check_token(token).unwrap_err();
        let message = weak.to_string();
        assert!(!message.contains(token), "{message}");
        // The start-up refusal names the variable the token came from.
        let message = crate::transport::http::HttpStartError::from(weak).to_string();
        assert!(
            message.starts_with("CPERSONA_AUTH_TOKEN: the token"),
            "{message}"
        );
        assert!(!message.contains(token), "{message}");
    }
}

#[test]
fn the_scheme_is_case_insensitive_and_the_shape_strict() {
    for header in [
        "Bearer tok",
        "bearer tok",
        "BEARER tok",
        "bEaReR tok",
        "Bearer   tok",
    ] {
        assert_eq!(presented(header), Some("tok"), "{header}");
    }
    for header in [
        "Bearertok",
        "Basic tok",
        "Bearer ",
        "Bearer",
        "",
        " Bearer tok",
        "tok",
    ] {
        assert_eq!(presented(header), None, "{header}");
    }
}

#[test]
fn matching_is_exact() {
    assert!(matches("abc", "abc"));
    assert!(!matches("abd", "abc"));
    assert!(!matches("ab", "abc"));
    assert!(!matches("", ""));
}
