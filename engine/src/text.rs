//! Validation and sanitising of caller text before any write: CPersona's annotation strip and
//! character cap, the key-field and JSON caps, and a deliberate NUL policy. Nothing here
//! touches the database; a write that fails here writes nothing.

use crate::error::{Error, Result};

/// Key fields (agent_id, project_id, channel, msg_id, user ids) cap in characters, fixed in
/// CPersona 2.6 at 256: they are identifiers, not text.
pub const MAX_KEY_CHARS: usize = 256;
/// Timestamp text cap in characters (CPersona 2.6 fixes 64): no ISO-8601 instant is longer.
pub const MAX_TIMESTAMP_CHARS: usize = 64;

/// Text that passed the sanitiser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sanitised {
    /// The text to store.
    pub text: String,
    /// True when the character cap cut it.
    pub truncated: bool,
}

/// Why a text was refused, in CPersona's words (`store` answers `rejected` with this reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Empty or blank before sanitising.
    Empty,
    /// Only `[Memory from …]` annotations and whitespace.
    EmptyAfterSanitization,
    /// Holds a NUL character.
    Nul,
}

impl Refusal {
    /// The reason text CPersona uses.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Empty => "empty content",
            Refusal::EmptyAfterSanitization => "empty after sanitization",
            Refusal::Nul => "content holds a NUL character",
        }
    }
}

/// CPersona's sanitiser: NUL refused, `[Memory from …]` annotations (and the whitespace after
/// each) removed, surrounding whitespace stripped, then cut to `max_chars` characters.
///
/// NUL is refused rather than stripped: SQLite's C string APIs, FTS5 and many clients stop at
/// it, so a stored NUL silently shortens what recall can see. Other control characters
/// (tabs, newlines, ANSI escapes from pasted logs) are text and are kept verbatim, as
/// CPersona keeps them; a JSON client receives them escaped.
pub fn sanitise(text: &str, max_chars: usize) -> std::result::Result<Sanitised, Refusal> {
    if text.contains('\0') {
        return Err(Refusal::Nul);
    }
    if text.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    let stripped = strip_annotations(text);
    let stripped = stripped.trim();
    if stripped.is_empty() {
        return Err(Refusal::EmptyAfterSanitization);
    }
    match stripped.char_indices().nth(max_chars) {
        Some((cut, _)) => Ok(Sanitised {
            text: stripped[..cut].to_owned(),
            truncated: true,
        }),
        None => Ok(Sanitised {
            text: stripped.to_owned(),
            truncated: false,
        }),
    }
}

/// Removes every `[Memory from <one or more non-']' chars>]` and the whitespace after it
/// (the regex `\[Memory from [^\]]+\]\s*`).
fn strip_annotations(text: &str) -> String {
    const OPEN: &str = "[Memory from ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        match after.find(']') {
            Some(close) if close > 0 => {
                out.push_str(&rest[..start]);
                rest = after[close + 1..].trim_start();
            }
            _ => {
                // Not an annotation: keep the bracket and look further on.
                out.push_str(&rest[..start + 1]);
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A key field (agent, project, channel, msg id): at most [`MAX_KEY_CHARS`]
/// characters and no NUL.
pub fn check_key(field: &'static str, value: &str) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::invalid(field, "holds a NUL character"));
    }
    let n_chars = value.chars().count();
    if n_chars > MAX_KEY_CHARS {
        return Err(Error::invalid(
            field,
            format!("{n_chars} chars, max {}", MAX_KEY_CHARS),
        ));
    }
    Ok(())
}

/// A required agent id: a key that is not blank.
pub fn check_agent(value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(Error::invalid("agent_id", "is required"));
    }
    check_key("agent_id", value)
}

/// Refuses a call on a row id that names no agent: ownership is never optional, so a caller
/// that leaves `agent_id` out cannot act on whichever agent's row the id happens to hit.
/// CPersona skips the owner check when `agent_id` is left out (under its ACL an empty agent
/// asks for a grant on `*`); here it is refused outright (issue 19): no principal names a
/// single agent the call could be resolved to.
pub fn require_owner(agent_id: &str) -> Result<()> {
    if agent_id.trim().is_empty() {
        return Err(Error::invalid(
            "agent_id",
            "is required: name the agent that owns the row",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
