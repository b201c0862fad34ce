//! `RecallError`: the ways a pure recall stage refuses its input. The lead folds it into
//! `engine::Error`; every variant is the caller's fault (bad configuration or request).

/// A refused recall input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// The Recall Depth bounds are out of order.
    #[error(
        "invalid recall depth: floor {floor}, default {default}, max {max} (need 1 <= floor <= default <= max)"
    )]
    InvalidDepth {
        floor: usize,
        default: usize,
        max: usize,
    },
    /// `get_contents` got no refs.
    #[error("refs must be a non-empty list of mem:<id> or ep:<id>")]
    NoRefs,
    /// `get_contents` got more refs than it serves.
    #[error("too many refs ({given}; max {max})")]
    TooManyRefs { given: usize, max: usize },
    /// A configuration value is out of range.
    #[error("invalid recall setting {name}: {reason}")]
    InvalidSetting {
        name: &'static str,
        reason: &'static str,
    },
}

impl RecallError {
    /// True when the caller can fix this by changing its input (every variant).
    pub fn is_user_error(&self) -> bool {
        true
    }
}
