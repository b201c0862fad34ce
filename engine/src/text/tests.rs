//! The sanitiser against CPersona's rules.

use super::*;

#[test]
fn strips_annotations_and_whitespace() {
    let got = sanitise("  [Memory from alice] hello [Memory from x]\n world ", 100).unwrap();
    assert_eq!(got.text, "hello world");
    assert!(!got.truncated);
}

#[test]
fn keeps_brackets_that_are_not_annotations() {
    let got = sanitise("[Memory from ] stays and [note]", 100).unwrap();
    assert_eq!(got.text, "[Memory from ] stays and [note]");
}

#[test]
fn refusals() {
    assert_eq!(sanitise("   ", 10), Err(Refusal::Empty));
    assert_eq!(
        sanitise("[Memory from bob]  ", 10),
        Err(Refusal::EmptyAfterSanitization)
    );
    assert_eq!(sanitise("a\0b", 10), Err(Refusal::Nul));
}

#[test]
fn cuts_on_characters_not_bytes() {
    let got = sanitise("日本語のテキスト", 3).unwrap();
    assert_eq!(got.text, "日本語");
    assert!(got.truncated);
    let kept = sanitise("abc", 3).unwrap();
    assert!(!kept.truncated);
}

#[test]
fn control_characters_other_than_nul_are_kept() {
    let got = sanitise("a\tb\u{1b}[0mc", 100).unwrap();
    assert_eq!(got.text, "a\tb\u{1b}[0mc");
}

#[test]
fn key_checks() {
    assert!(check_agent(" ").is_err());
    assert!(check_key("channel", &"x".repeat(257)).is_err());
    assert!(check_key("channel", &"x".repeat(256)).is_ok());
    assert!(check_key("msg_id", "a\0").is_err());
}
