//! `token new`: tokens that pass the start-up check, CPersona's entry shape, bad entries.

use super::*;

#[test]
fn new_tokens_are_long_random_and_pass_the_start_up_check() {
    let a = new_token();
    let b = new_token();
    assert_ne!(a, b);
    for token in [&a, &b] {
        assert_eq!(token.len(), NEW_TOKEN_CHARS);
        assert!(token.chars().all(|c| c.is_ascii_alphanumeric()), "{token}");
        assert_eq!(check_token(token), Ok(()));
    }
}

#[test]
fn the_entry_has_cpersonas_shape() {
    let entry = acl_entry(
        "laptop",
        "tok",
        &["*=read".to_owned(), "alice=read-write".to_owned()],
    )
    .unwrap();
    assert_eq!(
        entry,
        json!({"client_id": "laptop", "token": "tok",
               "grants": {"*": "read", "alice": "read-write"}})
    );
    assert_eq!(acl_entry("ci", "tok", &[]).unwrap()["grants"], json!({}));
}

#[test]
fn bad_entries_are_refused() {
    for (client, grants) in [
        ("", vec![]),
        ("local", vec![]),
        ("x", vec!["alice".to_owned()]),
        ("x", vec!["alice=write".to_owned()]),
        ("x", vec!["=read".to_owned()]),
        ("x", vec!["a=read".to_owned(), "a=none".to_owned()]),
    ] {
        assert!(
            acl_entry(client, "tok", &grants).is_err(),
            "{client} {grants:?}"
        );
    }
}
