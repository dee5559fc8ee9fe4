//! Code mode's sandbox through its public API: real workers, real signals, real seccomp.

/// Each bound in its own kind: argument depth and size, log lines, the wrapper, the zygote.
mod bounds;
/// The bridge: laziness, JSON values, draining, cancellation.
mod bridge;
/// The escape corpus: one named test per attempt.
mod escape;
/// Hardening of workers: seccomp, environment, credentials, pool.
mod hardening;
/// Caps and their outcomes: time, memory, logs, results, bridge calls.
mod limits;
/// Many cells at once through one supervisor.
mod load;
/// Harness: a test bridge, a supervisor per test, leak checks.
pub mod support;
