//! Every bound a cell runs under, as one documented type (STYLE §3, R-8.3, R-8.5).
//!
//! Owns: [`Limits`] (per supervisor) and [`CellOptions`] (per cell), their defaults and clamps.
//! Never does: enforce anything itself; the isolate, the worker and the supervisor read these.
//! Invariants: after [`Limits::clamped`] every field is inside its documented range, and
//! `frame_bytes` is large enough to carry a full result plus full logs.

use std::time::Duration;

use crate::config::{CODE_TIMEOUT_MS, MEMORY_LIMIT_BYTES};

const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// Bounds applied to every cell of a [`Supervisor`](super::Supervisor).
///
/// Each field lists its default and its clamp; [`Limits::clamped`] is applied by
/// [`Supervisor::start`](super::Supervisor::start), so out-of-range values are moved into range,
/// never rejected.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock budget of one cell, from the moment its worker receives the body (not from when
    /// the cell was queued) until its result. Default 10,000 ms, clamp 1,000–60,000 ms.
    /// The supervisor SIGKILLs the worker at this deadline; QuickJS's interrupt handler stops
    /// interpretable code 20 ms earlier so that logs survive. Per-cell override:
    /// [`CellOptions::timeout`] (same clamp).
    #[serde(with = "millis")]
    pub code_timeout: Duration,
    /// QuickJS heap limit. Default 64 MiB, clamp 16 MiB–1 GiB. An uncaught out-of-memory error is
    /// [`Outcome::Memory`](super::Outcome::Memory); the error is catchable inside JS, so a guest
    /// that swallows it runs into the deadline instead. Does not cover memory outside the QuickJS
    /// heap (bounded by `address_space_slack_bytes`).
    pub memory_limit_bytes: usize,
    /// QuickJS stack limit: deep recursion throws a `RangeError` instead of crashing.
    /// Default 1 MiB, clamp 128 KiB–4 MiB (the worker runs on the main thread's 8 MiB stack).
    pub max_stack_bytes: usize,
    /// Bytes of console output kept per cell (each line counts its text plus one). Beyond it
    /// output is dropped inside the worker and counted (`logs_dropped`, `logs_truncated`); the cell
    /// goes on. Default 64 KiB, clamp 1 KiB–16 MiB.
    pub log_bytes: usize,
    /// Bytes of the cell's source. A longer body does not run: the cell ends with
    /// [`Outcome::LimitExceeded`](super::Outcome::LimitExceeded) (`code_bytes`) before a worker
    /// is taken. Default 256 KiB, clamp 1 KiB–16 MiB and at most `frame_bytes − 32 KiB` (so an
    /// accepted body always fits its `Run` frame).
    pub code_bytes: usize,
    /// Bytes of the cell's JSON result. Beyond it the cell ends with
    /// [`Outcome::LimitExceeded`](super::Outcome::LimitExceeded). Default 1 MiB, clamp 1 KiB–64 MiB.
    pub result_bytes: usize,
    /// Largest IPC frame in either direction (bridge arguments, bridge results, the final result).
    /// A larger frame from a worker is a protocol error that kills it; a larger bridge result
    /// rejects the guest's promise. Default 4 MiB, clamp 64 KiB–256 MiB, raised to at least
    /// `result_bytes + 31 × log_bytes + 64 KiB` so a full result with full logs always fits.
    pub frame_bytes: usize,
    /// Bridge calls a cell may *start* (un-awaited calls never start and do not count). Beyond it
    /// the guest's promise rejects with a message naming the limit; if the guest does not catch it
    /// the cell ends with `LimitExceeded`. Default 1,000, clamp 1–100,000.
    pub bridge_calls: u32,
    /// Workers running cells at once; further cells queue, each client in turn (`sandbox::fair`). Ready (idle) pool workers are not
    /// counted, so at most `live_workers + pool_size` workers exist. Default 2 × cores (at least 2),
    /// clamp 1–256.
    pub live_workers: usize,
    /// Address space (RLIMIT_AS) a worker may map beyond `memory_limit_bytes`: its binary, libc,
    /// stack and non-QuickJS buffers. Default 256 MiB, clamp 64 MiB–4 GiB. Allocation failure
    /// outside QuickJS aborts the worker (`KilledBySignal`).
    pub address_space_slack_bytes: usize,
    /// How long a fork may take to report `Ready` before it counts as a setup failure.
    /// Default 5,000 ms, clamp 100–60,000 ms.
    #[serde(with = "millis")]
    pub setup_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Limits {
            code_timeout: Duration::from_millis(CODE_TIMEOUT_MS.default),
            memory_limit_bytes: MEMORY_LIMIT_BYTES.default as usize,
            max_stack_bytes: MIB,
            log_bytes: 64 * KIB,
            code_bytes: 256 * KIB,
            result_bytes: MIB,
            frame_bytes: 4 * MIB,
            bridge_calls: 1_000,
            live_workers: (2 * cores).max(2),
            address_space_slack_bytes: 256 * MIB,
            setup_timeout: Duration::from_millis(5_000),
        }
    }
}

/// Clamp range of [`Limits::code_timeout`] and [`CellOptions::timeout`].
pub const CODE_TIMEOUT_RANGE: (Duration, Duration) = (
    Duration::from_millis(CODE_TIMEOUT_MS.min),
    Duration::from_millis(CODE_TIMEOUT_MS.max),
);

impl Limits {
    /// Moves every field into its documented range.
    pub fn clamped(mut self) -> Limits {
        self.code_timeout = clamp_timeout(self.code_timeout);
        self.memory_limit_bytes = self.memory_limit_bytes.clamp(
            MEMORY_LIMIT_BYTES.min as usize,
            MEMORY_LIMIT_BYTES.max as usize,
        );
        self.max_stack_bytes = self.max_stack_bytes.clamp(128 * KIB, 4 * MIB);
        self.log_bytes = self.log_bytes.clamp(KIB, 16 * MIB);
        self.result_bytes = self.result_bytes.clamp(KIB, 64 * MIB);
        self.code_bytes = self.code_bytes.clamp(KIB, 16 * MIB);
        let floor = self.result_bytes + 31 * self.log_bytes + 64 * KIB;
        self.frame_bytes = self.frame_bytes.clamp(64 * KIB, 256 * MIB).max(floor);
        self.code_bytes = self.code_bytes.min(self.frame_bytes - 32 * KIB);
        self.bridge_calls = self.bridge_calls.clamp(1, 100_000);
        self.live_workers = self.live_workers.clamp(1, 256);
        self.address_space_slack_bytes = self.address_space_slack_bytes.clamp(64 * MIB, 4096 * MIB);
        self.setup_timeout = self
            .setup_timeout
            .clamp(Duration::from_millis(100), Duration::from_millis(60_000));
        self
    }
}

/// Clamps a cell timeout to 1,000–60,000 ms.
pub fn clamp_timeout(timeout: Duration) -> Duration {
    timeout.clamp(CODE_TIMEOUT_RANGE.0, CODE_TIMEOUT_RANGE.1)
}

/// Per-cell options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellOptions {
    /// Overrides [`Limits::code_timeout`] for this cell (`codeTimeoutMs`); clamped to
    /// 1,000–60,000 ms. `None`: the supervisor's default.
    pub timeout: Option<Duration>,
    /// Stamp where the cell's time goes and report it in
    /// [`CellTelemetry::phases`](super::CellTelemetry::phases) (a few clock reads per frame and a
    /// few hundred bytes more in the final frame). Default `false`; `toolsearch bench cells` sets
    /// it.
    pub trace_phases: bool,
}

mod millis {
    //! Durations as integer milliseconds in config files.
    use std::time::Duration;

    pub(super) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        let ms = <u64 as serde::Deserialize>::deserialize(d)?;
        Ok(Duration::from_millis(ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_timeout_both_ways() {
        assert_eq!(
            clamp_timeout(Duration::from_millis(5)),
            Duration::from_millis(1_000)
        );
        assert_eq!(
            clamp_timeout(Duration::from_secs(600)),
            Duration::from_millis(60_000)
        );
        assert_eq!(
            clamp_timeout(Duration::from_millis(2_500)),
            Duration::from_millis(2_500)
        );
    }

    #[test]
    fn frame_fits_result_and_logs() {
        let l = Limits {
            result_bytes: 64 * MIB,
            frame_bytes: 1,
            ..Limits::default()
        }
        .clamped();
        assert!(l.frame_bytes >= l.result_bytes + 31 * l.log_bytes);
    }
}
