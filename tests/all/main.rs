//! The one integration-test binary. Each module carries a one-line purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

/// Signature rendering through the public API.
mod signature;
