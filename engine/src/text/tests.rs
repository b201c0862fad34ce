//! The sanitiser against CPersona's rules.

use super::*;

#[test]
fn strips_annotations_and_whitespace() {
    let got = sanitise("  [Memory from alice] hello [Memory from x]\n world ", 100).unwrap();
    assert_eq!(got, "hello world");
}

#[test]
fn keeps_brackets_that_are_not_annotations() {
    let got = sanitise("[Memory from ] stays and [note]", 100).unwrap();
    assert_eq!(got, "[Memory from ] stays and [note]");
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

// See: issue 18. A text over the limit is refused whole, never cut: a cut text made the next
// long text of the same start a "duplicate" and lost it.
#[test]
fn r18_over_the_limit_is_refused_counting_characters_not_bytes() {
    assert_eq!(
        sanitise("日本語のテキスト", 3),
        Err(Refusal::TooLong { chars: 8, max: 3 })
    );
    assert_eq!(sanitise("日本語", 3).unwrap(), "日本語");
    // Counted after the annotation strip, as CPersona counts its cap.
    assert_eq!(sanitise("[Memory from a] abc", 3).unwrap(), "abc");
    let reason = Refusal::TooLong {
        chars: 16004,
        max: 16000,
    }
    .reason();
    assert!(
        reason.contains("16004") && reason.contains("16000"),
        "{reason}"
    );
}

#[test]
fn profiles_are_cut_on_characters_and_say_so() {
    let got = sanitise_cut("日本語のテキスト", 3).unwrap();
    assert_eq!(got.text, "日本語");
    assert!(got.truncated);
    let kept = sanitise_cut("abc", 3).unwrap();
    assert!(!kept.truncated);
}

#[test]
fn control_characters_other_than_nul_are_kept() {
    let got = sanitise("a\tb\u{1b}[0mc", 100).unwrap();
    assert_eq!(got, "a\tb\u{1b}[0mc");
}

#[test]
fn key_checks() {
    assert!(check_agent(" ").is_err());
    assert!(check_key("channel", &"x".repeat(257)).is_err());
    assert!(check_key("channel", &"x".repeat(256)).is_ok());
    assert!(check_key("msg_id", "a\0").is_err());
}
