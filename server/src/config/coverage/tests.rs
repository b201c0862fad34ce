//! The coverage table against the parser and the start-up check: the names marked `Honoured`
//! are exactly the `CPERSONA_*` names `Config::from_env` asks for, over environments that take
//! each of its branches; every `Fixed` row starts on each value it accepts and is refused on
//! another, every `Refused` row is refused, every `Inert` row starts and is listed; and what
//! start-up prints.

use std::collections::BTreeSet;

use super::*;
use crate::config::{Config, ProxySettings};

/// Environments that between them take every branch of the parser that reads more names.
const BRANCHES: &[&[(&str, &str)]] = &[
    &[],
    &[
        ("CPERSONA_EMBEDDING_MODE", "http"),
        ("CPERSONA_EMBEDDING_URL", "http://127.0.0.1:1/embed"),
    ],
    &[("CPERSONA_EMBEDDING_MODE", "api")],
    &[("CPERSONA_TRANSPORT", "streamable-http")],
];

fn names_the_parser_reads() -> BTreeSet<&'static str> {
    let mut asked = BTreeSet::new();
    for pairs in BRANCHES {
        let env = Env::from_pairs(pairs);
        Config::from_env(&env, None).unwrap();
        asked.extend(env.asked());
    }
    // `cpersona proxy` reads its settings on its own (a bad one never stops `serve`).
    let env = Env::from_pairs(&[("CPERSONA_REMOTE_URL", "http://127.0.0.1:1/mcp")]);
    ProxySettings::from_env(&env, None).unwrap();
    asked.extend(env.asked());
    asked.retain(|name| name.starts_with("CPERSONA_"));
    asked
}

#[test]
fn the_rows_marked_read_are_what_the_parser_reads() {
    let marked: BTreeSet<&str> = SETTINGS
        .iter()
        .filter(|s| s.coverage == Coverage::Honoured)
        .map(|s| s.name)
        .collect();
    let read = names_the_parser_reads();
    let unmarked: Vec<_> = read.difference(&marked).collect();
    let never_read: Vec<_> = marked.difference(&read).collect();
    assert!(
        unmarked.is_empty(),
        "the parser reads these, the table says they are not read: {unmarked:?}"
    );
    assert!(
        never_read.is_empty(),
        "the table says these are read, the parser never asks for them: {never_read:?}"
    );
}

#[test]
fn each_name_has_one_row_and_every_unhonoured_row_says_why() {
    let mut seen = BTreeSet::new();
    for s in SETTINGS {
        assert!(seen.insert(s.name), "{} has two rows", s.name);
        assert!(s.name.starts_with("CPERSONA_"), "{}", s.name);
        if s.coverage != Coverage::Honoured {
            assert!(
                !s.note.is_empty(),
                "{} is not honoured and says not why",
                s.name
            );
        }
        assert!(
            s.cpersona || s.coverage == Coverage::Honoured,
            "{} is this server's own, so it must be honoured",
            s.name
        );
    }
}

/// A value each `Fixed` row accepts, and one it does not.
fn accepted_and_not(accepts: Accepts) -> (String, String) {
    match accepts {
        Accepts::Words(words) => (words[0].to_owned(), "not-a-value-of-it".to_owned()),
        Accepts::Number(n) => (n.to_string(), (n + 0.5).to_string()),
        Accepts::AtLeast(n) => (n.to_string(), (n - 1).to_string()),
    }
}

/// Parses `name=value` alone and says whether start-up refuses it and whether it is listed.
fn start_up(name: &str, value: &str) -> (Option<String>, Vec<&'static str>) {
    let env = Env::from_pairs(&[(name, value)]);
    let config = Config::from_env(&env, None).unwrap_or_else(|e| panic!("{name}={value}: {e}"));
    let listed = config.unhonoured.iter().map(|s| s.status).collect();
    (config.refused_setting().map(|e| e.to_string()), listed)
}

#[test]
fn every_cpersona_setting_is_honoured_fixed_inert_or_refused_at_start_up() {
    let (mut honoured, mut differs, mut fixed, mut inert, mut refused) = (0, 0, 0, 0, 0);
    for s in SETTINGS.iter().filter(|s| s.cpersona) {
        match s.coverage {
            Coverage::Honoured if s.note.is_empty() => honoured += 1,
            Coverage::Honoured => differs += 1,
            Coverage::Fixed(accepts) => {
                fixed += 1;
                let (yes, no) = accepted_and_not(accepts);
                let (refusal, listed) = start_up(s.name, &yes);
                assert!(refusal.is_none(), "{}={yes}: {refusal:?}", s.name);
                assert!(listed.is_empty(), "{}={yes} is listed: {listed:?}", s.name);
                let (refusal, _) = start_up(s.name, &no);
                let refusal = refusal.unwrap_or_else(|| panic!("{}={no} starts", s.name));
                assert!(refusal.starts_with(s.name), "{refusal}");
                assert!(
                    refusal.contains(&format!("{no:?} is not offered")),
                    "{refusal}"
                );
            }
            Coverage::Inert => {
                inert += 1;
                let (refusal, listed) = start_up(s.name, "1");
                assert!(refusal.is_none(), "{}: {refusal:?}", s.name);
                assert_eq!(listed, ["inert"], "{}", s.name);
            }
            Coverage::Refused => {
                refused += 1;
                let (refusal, _) = start_up(s.name, "1");
                let refusal = refusal.unwrap_or_else(|| panic!("{} starts", s.name));
                assert!(refusal.starts_with(s.name), "{refusal}");
                assert!(refusal.contains(s.note), "{refusal}");
            }
        }
    }
    let total = honoured + differs + fixed + inert + refused;
    eprintln!(
        "CPersona settings: {total} = honoured {honoured} + differs on purpose {differs} + \
         fixed {fixed} + inert {inert} + refused {refused}"
    );
    // The 127 names of CPersona's tables (the reference's count).
    assert_eq!(total, 127, "a CPersona name was added or dropped");
}

#[test]
fn set_unhonoured_names_are_listed_and_honoured_or_empty_ones_are_not() {
    let env = Env::from_pairs(&[
        ("CPERSONA_VECTOR_SCAN_CHUNK_ROWS", "64"),
        ("CPERSONA_FTS_ENABLED", "yes"),
        ("CPERSONA_NOT_A_SETTING", "1"),
        ("CPERSONA_RRF_K", "30"),
        ("CPERSONA_STORE_BLOB", " "),
        ("EMBEDDING_MODE", "none"),
    ]);
    let config = Config::from_env(&env, None).unwrap();
    let listed: Vec<(&str, &str)> = config
        .unhonoured
        .iter()
        .map(|s| (s.name.as_str(), s.status))
        .collect();
    assert_eq!(
        listed,
        [
            ("CPERSONA_NOT_A_SETTING", "unknown"),
            ("CPERSONA_VECTOR_SCAN_CHUNK_ROWS", "inert"),
        ]
    );
    assert!(config.refused_setting().is_none());
    let lines = warning_lines(&config.unhonoured);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains("2 CPERSONA_* settings"), "{}", lines[0]);
    assert!(lines[2].contains("CPERSONA_VECTOR_SCAN_CHUNK_ROWS (accepted, inert here)"));
}

#[test]
fn several_refusals_are_named_together_with_their_reasons() {
    let env = Env::from_pairs(&[
        ("CPERSONA_FTS_ENABLED", "false"),
        ("CPERSONA_VECTOR_REACH", "50000"),
    ]);
    let config = Config::from_env(&env, None).unwrap();
    let message = config.refused_setting().unwrap().to_string();
    assert!(
        message.starts_with("CPERSONA_FTS_ENABLED, CPERSONA_VECTOR_REACH: set, but not honoured"),
        "{message}"
    );
    assert!(message.contains("CPERSONA_FTS_ENABLED: \"false\" is not offered: the FTS5 arm is always on; accepted: `true`, or unset"), "{message}");
    assert!(
        message.contains("CPERSONA_VECTOR_REACH: the far list is always on"),
        "{message}"
    );
}

#[test]
fn oauth_settings_are_refused_and_the_acl_file_is_honoured() {
    let env = Env::from_pairs(&[
        ("CPERSONA_ACL_FILE", "/etc/cpersona/acl.json"),
        ("CPERSONA_OAUTH_RESOURCE", "https://memory.example"),
        ("CPERSONA_OAUTH_SCOPES", "memory"),
    ]);
    let config = Config::from_env(&env, None).unwrap();
    let message = config.refused_setting().unwrap().to_string();
    assert!(
        message.starts_with("CPERSONA_OAUTH_RESOURCE: set, but not honoured"),
        "{message}"
    );
    // Only the resource is refused: the scopes are inert without it, the ACL file honoured.
    assert_eq!(
        message.split(':').next(),
        Some("CPERSONA_OAUTH_RESOURCE"),
        "{message}"
    );
    // See: issue 19. The ACL file is read (at serve start-up), so it is neither refused nor
    // listed as unhonoured.
    let env = Env::from_pairs(&[("CPERSONA_ACL_FILE", "/etc/cpersona/acl.json")]);
    let config = Config::from_env(&env, None).unwrap();
    assert!(config.refused_setting().is_none());
    assert!(config.unhonoured.is_empty(), "{:?}", config.unhonoured);
    assert_eq!(
        config.http.acl_file.as_deref(),
        Some(std::path::Path::new("/etc/cpersona/acl.json"))
    );
}
