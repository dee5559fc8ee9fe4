//! Typed errors of the sandbox's own machinery (STYLE §2).
//!
//! Owns: [`SandboxError`]. Never does: describe how a *cell* ended; that is
//! [`Outcome`](super::Outcome), which is an answer to the model, not an error of ours.
//! Invariants: every variant keeps the offending input and says how to recover.

use std::path::PathBuf;

/// Why the sandbox machinery (not a cell) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The zygote process could not be started.
    #[error(
        "cannot start the sandbox zygote `{binary} {role}`: {source}; check that the worker binary \
         exists, is executable and calls `sandbox::dispatch_role()` first in main"
    )]
    ZygoteSpawn {
        /// The worker binary that was executed.
        binary: PathBuf,
        /// The role argument.
        role: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The zygote stopped answering or died.
    #[error("the sandbox zygote is gone ({detail}); the supervisor restarts it on the next cell")]
    ZygoteGone {
        /// What was observed.
        detail: String,
    },
    /// The zygote did not answer a fork request in time (stopped, or starved of CPU). It was
    /// killed, so the next cell starts a new one instead of waiting on it again.
    #[error(
        "the sandbox zygote did not answer a fork request within {waited_ms} ms (stopped or \
         starved); it was killed and the supervisor restarts it on the next cell"
    )]
    ZygoteStalled {
        /// How long the supervisor waited.
        waited_ms: u64,
    },
    /// A worker could not be forked or did not reach `Ready`.
    #[error(
        "a sandbox worker could not start: {detail}; code mode should fall back to tools mode (R-8.6)"
    )]
    WorkerSetup {
        /// The setup stage or observation.
        detail: String,
    },
    /// The supervisor was shut down.
    #[error("the sandbox supervisor was shut down; start a new one")]
    ShutDown,
    /// An OS call on the supervisor side failed.
    #[error("sandbox I/O failed while {what}: {source}")]
    Io {
        /// What the supervisor was doing.
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl SandboxError {
    #[cold]
    pub(crate) fn io(what: &'static str, source: std::io::Error) -> SandboxError {
        SandboxError::Io { what, source }
    }

    #[cold]
    pub(crate) fn setup(detail: impl Into<String>) -> SandboxError {
        SandboxError::WorkerSetup {
            detail: detail.into(),
        }
    }
}
