//! Which `CPERSONA_*` settings this server honours: one row per name CPersona 2.6.14 reads (the
//! 127 names of its configuration tables, reference 2.6 §7 and 2.5 §9, also every quoted
//! `CPERSONA_*` literal in its 2.6.14 wheel) and per name this server adds.
//!
//! The policy (issue 20): **every setting is honoured or refused, none is silent.** A setting
//! is `Honoured` (read and applied; a note names any difference made on purpose), `Fixed`
//! (this server always does what some of its values ask: those values start, any other stops
//! start-up naming what to set instead), `Refused` (any value stops start-up) or `Inert` (a
//! tuning of a mechanism that changes no answer here, such as a cache size or the timeout of a
//! service this server does not call: accepted and listed once at start-up and in
//! `check_health`). The rows that the parser reads are checked against the names it really
//! asks for, and every `Fixed` and `Refused` row against the start-up check
//! (`coverage/tests.rs`).

use serde::Serialize;

use super::{ConfigError, Env};

mod table;

pub use table::SETTINGS;

/// What this server does with a setting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Coverage {
    /// Read and applied (with a difference on purpose when the note names one).
    Honoured,
    /// Honoured for the values that ask for what this server always does; any other value
    /// stops start-up.
    Fixed(Accepts),
    /// A tuning of a mechanism that changes no answer here: accepted, listed at start-up.
    Inert,
    /// Any value stops start-up: the behaviour it asks for is not offered.
    Refused,
}

/// The values a `Fixed` setting accepts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Accepts {
    /// One of these words (case-insensitive; `true`/`false` also as 1/0, yes/no, on/off).
    Words(&'static [&'static str]),
    /// A number equal to this one.
    Number(f64),
    /// A whole number at least this large.
    AtLeast(u64),
}

impl Accepts {
    /// Whether `raw` (trimmed, non-empty) is one of the accepted values.
    pub fn admits(self, raw: &str) -> bool {
        match self {
            Accepts::Words(words) => {
                let value = canonical_word(raw);
                words.iter().any(|w| *w == value)
            }
            Accepts::Number(n) => raw.parse::<f64>().is_ok_and(|v| v == n),
            Accepts::AtLeast(n) => raw.parse::<u64>().is_ok_and(|v| v >= n),
        }
    }

    /// The accepted values, in words for the refusal.
    fn describe(self) -> String {
        match self {
            Accepts::Words(words) => words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(" or "),
            Accepts::Number(n) => format!("`{n}`"),
            Accepts::AtLeast(n) => format!("a whole number >= {n}"),
        }
    }
}

/// A value as a `Words` row compares it: lower case, the boolean spellings as `true`/`false`.
fn canonical_word(raw: &str) -> String {
    let lower = raw.trim().to_ascii_lowercase();
    match lower.as_str() {
        "1" | "yes" | "on" => "true".to_owned(),
        "0" | "no" | "off" => "false".to_owned(),
        _ => lower,
    }
}

/// One `CPERSONA_*` name.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    pub name: &'static str,
    pub coverage: Coverage,
    /// CPersona 2.6.14 reads it (`false`: a setting of this server only).
    pub cpersona: bool,
    /// What differs on purpose (honoured), what this server does instead and what to set
    /// (fixed, refused), or why no answer depends on it (inert); empty when honoured as
    /// CPersona means it.
    pub note: &'static str,
}

/// The row for `name`, if it is one.
pub fn setting(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// A set `CPERSONA_*` variable that is not simply honoured, as start-up and `check_health`
/// list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnhonouredSetting {
    pub name: String,
    /// `inert` (accepted, changes no answer here), `refused` (stops the server: the
    /// behaviour its value asks for is not offered), or `unknown` (neither CPersona's nor
    /// this server's; a typo?).
    pub status: &'static str,
    pub note: String,
}

/// The set (non-empty) `CPERSONA_*` variables of `env` that are inert, refused or unknown,
/// by name. A `Fixed` setting set to an accepted value is honoured and not listed.
pub(super) fn unhonoured(env: &Env) -> Vec<UnhonouredSetting> {
    env.cpersona_vars()
        .filter_map(|(name, value)| {
            let Some(s) = setting(name) else {
                return Some(UnhonouredSetting {
                    name: name.to_owned(),
                    status: "unknown",
                    note: "not a setting of CPersona 2.6.14 or of this server".to_owned(),
                });
            };
            let (status, note) = match s.coverage {
                Coverage::Honoured => return None,
                Coverage::Fixed(accepts) if accepts.admits(value) => return None,
                Coverage::Fixed(accepts) => (
                    "refused",
                    format!(
                        "{value:?} is not offered: {}; accepted: {}, or unset",
                        s.note,
                        accepts.describe()
                    ),
                ),
                Coverage::Inert => ("inert", s.note.to_owned()),
                Coverage::Refused => ("refused", s.note.to_owned()),
            };
            Some(UnhonouredSetting {
                name: name.to_owned(),
                status,
                note,
            })
        })
        .collect()
}

/// The start-up error for the refused settings among `list`, if any (each named with why).
pub fn refusal(list: &[UnhonouredSetting]) -> Option<ConfigError> {
    let refused: Vec<&UnhonouredSetting> = list.iter().filter(|s| s.status == "refused").collect();
    if refused.is_empty() {
        return None;
    }
    Some(ConfigError::Unsupported {
        var: refused
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        reason: refused
            .iter()
            .map(|s| {
                if refused.len() == 1 {
                    s.note.clone()
                } else {
                    format!("{}: {}", s.name, s.note)
                }
            })
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// The lines start-up writes to stderr for `list` (none when it is empty).
pub fn warning_lines(list: &[UnhonouredSetting]) -> Vec<String> {
    if list.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "cpersona: {} CPERSONA_* setting{} set but change{} no answer on this server:",
        list.len(),
        if list.len() == 1 { " is" } else { "s are" },
        if list.len() == 1 { "s" } else { "" }
    )];
    for s in list {
        let status = match s.status {
            "inert" => "accepted, inert here",
            "unknown" => "unknown name",
            other => other,
        };
        lines.push(format!("  {} ({status}): {}", s.name, s.note));
    }
    lines
}

#[cfg(test)]
mod tests;
