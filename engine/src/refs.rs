//! Row references, `mem:<id>` and `ep:<id>`: the one name every feature uses for a stored row
//! (recall's candidates, reconstruct's provenance, the trace, associations, the block index).
//! Pure data at the bottom of the crate; it knows no feature.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which table a reference points into. `memories` and `episodes` have independent id
/// spaces, so an id is meaningless without its kind.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// A row of `memories` (`mem:<id>`). Orders before episodes, as CPersona's vector
    /// arm lets memories win ties.
    Mem,
    /// A row of `episodes` (`ep:<id>`).
    Ep,
}

impl RefKind {
    /// The wire prefix without the colon.
    pub fn prefix(self) -> &'static str {
        match self {
            RefKind::Mem => "mem",
            RefKind::Ep => "ep",
        }
    }
}

/// A kind-prefixed row reference, `mem:<id>` or `ep:<id>`, with a positive id.
///
/// Total order: kind (memories first), then id ascending. This is the last key of every
/// tie-break in the recall stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ref {
    /// The table.
    pub kind: RefKind,
    /// The row id (SQLite rowid, always > 0).
    pub id: i64,
}

impl Ref {
    /// A memory reference.
    pub fn mem(id: i64) -> Ref {
        Ref {
            kind: RefKind::Mem,
            id,
        }
    }

    /// An episode reference.
    pub fn ep(id: i64) -> Ref {
        Ref {
            kind: RefKind::Ep,
            id,
        }
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.prefix(), self.id)
    }
}

impl Serialize for Ref {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Ref {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ref, D::Error> {
        ref_serde::deserialize(deserializer)
    }
}

/// On the wire a ref is its text, `mem:<id>` or `ep:<id>`.
impl schemars::JsonSchema for Ref {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ref".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(mem|ep):[1-9][0-9]*$",
            "description": "A row reference: mem:<id> or ep:<id>"
        })
    }
}

/// Why a string is not a reference.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid ref {text:?}: expected mem:<id> or ep:<id> with a positive decimal id")]
pub struct ParseRefError {
    /// The text as given (cut to 64 characters so an error never echoes a huge input).
    pub text: String,
}

impl FromStr for Ref {
    type Err = ParseRefError;

    /// Strict: `mem:` or `ep:`, then ASCII digits only (no sign, no spaces), a value in
    /// `1..=i64::MAX`. Leading zeros are refused so one row has one spelling.
    fn from_str(text: &str) -> Result<Ref, ParseRefError> {
        let err = || ParseRefError {
            text: text.chars().take(64).collect(),
        };
        let (kind, digits) = if let Some(rest) = text.strip_prefix("mem:") {
            (RefKind::Mem, rest)
        } else if let Some(rest) = text.strip_prefix("ep:") {
            (RefKind::Ep, rest)
        } else {
            return Err(err());
        };
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit())
            || digits.starts_with('0')
        {
            return Err(err());
        }
        let id: i64 = digits.parse().map_err(|_| err())?;
        Ok(Ref { kind, id })
    }
}

/// Serde for a [`Ref`] as its `mem:<id>` / `ep:<id>` text, both ways (the trace's format).
pub(crate) mod ref_serde {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::refs::Ref;

    pub(crate) fn serialize<S: Serializer>(r: &Ref, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(r)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ref, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
