//! Configuration values shared by every module (SPEC R-10).
//!
//! Owns the resolved, clamped numbers the rest of the crate reads: search limits for
//! now. Values are resolved once and never re-clamped downstream.

use std::fmt;

/// Search result limits: default 8 and max 20; the local-model profile uses 5 and 10.
/// `max` is clamped to 1..=50 and `default` to 1..=max.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    default: usize,
    max: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits::new(8, 20)
    }
}

/// The hard ceiling of `maxSearchLimit`.
pub const MAX_SEARCH_LIMIT_CEILING: usize = 50;

impl SearchLimits {
    /// Limits for the local-model profile.
    pub fn local() -> Self {
        SearchLimits::new(5, 10)
    }

    /// Builds clamped limits: `max` to 1..=50, `default` to 1..=max.
    pub fn new(default: usize, max: usize) -> Self {
        let max = max.clamp(1, MAX_SEARCH_LIMIT_CEILING);
        SearchLimits {
            default: default.clamp(1, max),
            max,
        }
    }

    /// The limit used when a request gives none.
    pub fn default_limit(&self) -> usize {
        self.default
    }

    /// The largest limit a request may get (larger ones are clamped).
    pub fn max_limit(&self) -> usize {
        self.max
    }
}

impl fmt::Display for SearchLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "default {}, max {}", self.default, self.max)
    }
}
