//! Telemetry: per-run counters and the tracing setup (SPEC ).
//!
//! Owns counters that record counts, ids and durations — never payloads. The session log
//! builds on these in the gateway.

use std::sync::atomic::{AtomicU64, Ordering};

/// Per-run counters. All relaxed atomics: they are statistics, not synchronization.
#[derive(Debug, Default)]
pub struct Counters {
    /// `tool_search` requests (a batch counts once).
    pub searches: AtomicU64,
    /// Queries run (a batch counts each query).
    pub queries: AtomicU64,
    /// `tool_describe` requests.
    pub describes: AtomicU64,
    /// Final tool calls attempted.
    pub calls: AtomicU64,
    /// Final tool calls that failed.
    pub call_errors: AtomicU64,
}

impl Counters {
    /// Adds one to `counter`.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads `counter`.
    pub fn read(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Installs a stderr `tracing` subscriber honouring `RUST_LOG` (default: warnings). Safe to call
/// more than once.
pub fn init_stderr_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
