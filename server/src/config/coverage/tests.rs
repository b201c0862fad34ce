//! The coverage table against the parser: the names marked read (`Honoured`, `Ignored`) are
//! exactly the `CPERSONA_*` names `Config::from_env` asks for, over environments that take each
//! of its branches; and what start-up lists and refuses.

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
        .filter(|s| matches!(s.coverage, Coverage::Honoured | Coverage::Ignored))
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

#[test]
fn set_unhonoured_names_are_listed_and_honoured_or_empty_ones_are_not() {
    let env = Env::from_pairs(&[
        ("CPERSONA_AUTO_CALIBRATE", "true"),
        ("CPERSONA_VECTOR_REACH", "5"),
        ("CPERSONA_NOT_A_SETTING", "1"),
        ("CPERSONA_RRF_K", "30"),
        ("CPERSONA_FTS_ENABLED", " "),
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
            ("CPERSONA_AUTO_CALIBRATE", "not_read"),
            ("CPERSONA_NOT_A_SETTING", "unknown"),
            ("CPERSONA_VECTOR_REACH", "ignored"),
        ]
    );
    assert!(config.refused_setting().is_none());
    let lines = warning_lines(&config.unhonoured);
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(lines[0].contains("3 CPERSONA_* settings"), "{}", lines[0]);
    assert!(lines[3].contains("CPERSONA_VECTOR_REACH (parsed, then ignored)"));
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
    assert!(!message.contains("CPERSONA_ACL_FILE"), "{message}");
    assert!(!message.contains("CPERSONA_OAUTH_SCOPES"), "{message}");
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
