//! Validation and sanitising of caller text before any write: CPersona's annotation strip,
//! the character limit, the key-field and JSON caps, and a deliberate NUL policy. Nothing here
//! touches the database; a write that fails here writes nothing, and no text is cut silently.

use crate::error::{Error, Result};

/// Key fields (agent_id, project_id, channel, msg_id, user ids) cap in characters, fixed in
/// CPersona 2.6 at 256: they are identifiers, not text.
pub const MAX_KEY_CHARS: usize = 256;
/// Timestamp text cap in characters (CPersona 2.6 fixes 64): no ISO-8601 instant is longer.
pub const MAX_TIMESTAMP_CHARS: usize = 64;

/// A profile text that passed [`sanitise_cut`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sanitised {
    /// The text to store.
    pub text: String,
    /// True when the character cap cut it (the response says `truncated`).
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
    /// Longer than the limit, counted after the annotation strip.
    TooLong {
        /// The text's length in characters.
        chars: usize,
        /// The limit it passed.
        max: usize,
    },
}

impl Refusal {
    /// The reason text (CPersona's words where CPersona has one).
    pub fn reason(self) -> String {
        match self {
            Refusal::Empty => "empty content".to_owned(),
            Refusal::EmptyAfterSanitization => "empty after sanitization".to_owned(),
            Refusal::Nul => "content holds a NUL character".to_owned(),
            Refusal::TooLong { chars, max } => format!(
                "{chars} characters, over the limit of {max}; nothing was stored (store it \
                 in parts, or raise the limit)"
            ),
        }
    }
}

/// The sanitiser for memory and episode text: NUL refused, `[Memory from …]` annotations (and
/// the whitespace after each) removed, surrounding whitespace stripped, and a text longer than
/// `max_chars` characters refused whole.
///
/// CPersona cuts at the limit and says `truncated`; a cut text then shares its first
/// `max_chars` characters with any other long text of the same start, so the second was
/// skipped as a duplicate of the first and lost (issue 18). Refusing keeps every stored text
/// exactly what the caller sent, and the limit is the one number the tool schema advertises.
///
/// NUL is refused rather than stripped: SQLite's C string APIs, FTS5 and many clients stop at
/// it, so a stored NUL silently shortens what recall can see. Other control characters
/// (tabs, newlines, ANSI escapes from pasted logs) are text and are kept verbatim, as
/// CPersona keeps them; a JSON client receives them escaped.
pub fn sanitise(text: &str, max_chars: usize) -> std::result::Result<String, Refusal> {
    let clean = clean(text)?;
    if clean.char_indices().nth(max_chars).is_some() {
        return Err(Refusal::TooLong {
            chars: clean.chars().count(),
            max: max_chars,
        });
    }
    Ok(clean)
}

/// The profile sanitiser: as [`sanitise`], but a text over `max_chars` is cut and marked
/// `truncated`, as CPersona does. A profile is one upserted row per agent with no duplicate
/// check, so a cut never makes another write skip.
pub fn sanitise_cut(text: &str, max_chars: usize) -> std::result::Result<Sanitised, Refusal> {
    let clean = clean(text)?;
    match clean.char_indices().nth(max_chars).map(|(cut, _)| cut) {
        Some(cut) => Ok(Sanitised {
            text: clean[..cut].to_owned(),
            truncated: true,
        }),
        None => Ok(Sanitised {
            text: clean,
            truncated: false,
        }),
    }
}

/// NUL and blank refused, annotations stripped, whitespace trimmed.
fn clean(text: &str) -> std::result::Result<String, Refusal> {
    if text.contains('\0') {
        return Err(Refusal::Nul);
    }
    if text.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    let stripped = strip_annotations(text);
    let trimmed = stripped.trim();
    if trimmed.is_empty() {
        return Err(Refusal::EmptyAfterSanitization);
    }
    Ok(trimmed.to_owned())
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
