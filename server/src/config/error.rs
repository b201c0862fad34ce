//! `ConfigError`: why a setting could not be used; every message names the variable.

/// A setting that could not be used; the message names the variable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value did not parse or is out of range.
    #[error("{var}={value:?} is invalid: {reason}")]
    Invalid {
        var: &'static str,
        value: String,
        reason: String,
    },
    /// Two settings contradict each other.
    #[error("{var} conflicts with {other}: {reason}")]
    Conflict {
        var: &'static str,
        other: &'static str,
        reason: String,
    },
    /// A required setting is missing.
    #[error("{var} must be set: {reason}")]
    Missing { var: &'static str, reason: String },
    /// An environment variable is not valid UTF-8.
    #[error("environment variable {var} is not valid UTF-8")]
    NotUnicode { var: String },
    /// A setting whose value asks for a behaviour this server does not offer (coverage table).
    #[error("{var}: set, but not honoured by this server ({reason})")]
    Unsupported { var: String, reason: String },
}

pub(crate) type Result<T, E = ConfigError> = std::result::Result<T, E>;
