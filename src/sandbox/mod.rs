//! Code mode's sandbox (SPEC §8): runs a model-written JavaScript cell in a QuickJS isolate inside a
//! killable, hardened, single-use worker process, and answers its bridge calls through one narrow
//! trait, [`Bridge`].
//!
//! Owns: the zygote process, the worker processes and their hardening, the QuickJS isolate, the IPC
//! protocol, the warm pool, per-cell limits and the classification of how a cell ended ([`Outcome`]).
//! Never does: run a tool, hold a catalog, MCP client or secret (R-8.2); fork the multi-threaded host;
//! reuse a worker after guest code ran in it; trust a byte that a worker sends.
//!
//! # Threat model
//!
//! The guest is hostile model output. These are **bugs** if guest input can cause them:
//! - escape: reading or writing the filesystem, the network, the environment, other processes, or
//!   the host's memory; loading modules; compiling code from strings (`eval`, `new Function`, the
//!   function-prototype constructor chains) (R-8.2);
//! - a panic, hang or crash of the host (the supervisor's process);
//! - a cell outliving its wall-clock deadline, including inside builtins that never poll QuickJS's
//!   interrupt handler (R-8.3);
//! - unbounded memory, recursion, log output, result size, bridge calls or IPC frame size (R-8.3,
//!   R-8.5);
//! - state that survives from one cell to the next (each cell gets a fresh process).
//!
//! A wrong JS result, or a cell that uses its full budget of time or memory, is **not** a bug.
//!
//! ## Layers, innermost first
//! 1. **QuickJS limits** (`isolate.rs`): a memory limit, a stack limit and an interrupt handler that
//!    ends interpretable code shortly before the deadline; `eval`, `Function`, every
//!    function-prototype `constructor`, `Atomics`, `SharedArrayBuffer` and `WebAssembly` are removed
//!    before guest code runs; there is no module loader, no timer, no I/O binding. The only ways out
//!    are `console.log/warn/error` (captured, capped) and the lazy `openclaw.tools` bridge.
//! 2. **The worker process** (`worker.rs`, `harden.rs`): forked by a single-threaded zygote, it
//!    gets `PR_SET_PDEATHSIG(SIGKILL)`, only its IPC socket (+ `/dev/null` and the stderr pipe), an
//!    empty environment, rlimits (address space, no core, no file size, few fds, no processes), an
//!    unprivileged uid/gid (65534) with every capability dropped when started as root,
//!    `PR_SET_NO_NEW_PRIVS`, and finally a seccomp allow-list ([`ALLOWED_SYSCALLS`]; default
//!    action: kill the process with `SIGSYS`) before it reports `Ready`. It runs below the host's
//!    scheduling priority (nice +10 by default), so a spinning guest cannot starve the host.
//! 3. **The supervisor** ([`Supervisor`]): it SIGKILLs the worker at the wall-clock deadline from
//!    outside. **This is the guarantee**: a guest inside a long builtin (big `BigInt` arithmetic,
//!    huge string conversions) or blocked on the bridge is not interruptible by layer 1. It also
//!    bounds every frame, validates every message and kills the worker on any protocol violation.
//!
//! ## Not covered
//! - Kernel exploits through the allowed syscalls (the allow-list keeps that surface small; see
//!   [`ALLOWED_SYSCALLS`]).
//! - Side channels (timing via `Date`, Spectre-class attacks); `performance` is not installed.
//! - CPU and memory *fairness* between concurrent cells beyond the live-worker cap and the
//!   background priority; use cgroups around the whole gateway for that.
//! - What a [`Bridge`] implementation does with the arguments it receives: they are untrusted JSON.
//! - On hosts without `pidfd_open` (Linux < 5.3) a worker is killed by pid only while its exit has
//!   not been reported, which leaves a theoretical pid-reuse window.
//! - Logs of a cell killed from outside (a timeout inside a builtin or while waiting on the bridge)
//!   are lost; a timeout caught by the interrupt handler keeps them.
//! - Address-space layout and QuickJS's hash seed are the same in every worker: each is a fork of
//!   one zygote and adopts the isolate the zygote built (`Math.random` is reseeded per worker).
//!   A cell learns nothing about another cell from them, only about the binary's own layout.
//!
//! ## Defaults (nothing is granted unless listed)
//! No filesystem, network, environment, process, timers, modules, `eval`/`Function`, WebAssembly,
//! shared memory; only `console.log/warn/error` and `openclaw.tools.{search, describe, call}`.
//! Every bound is a field of [`Limits`] with its default and clamp.
//!
//! ## How a cell stays cheap
//! - **One zygote, forked per cell.** A single-threaded zygote (`<bin> __sandbox-zygote`, its
//!   environment cleared) builds the seccomp filter and one isolate with the prelude loaded, once;
//!   each worker is a fork that adopts a copy-on-write copy of that isolate with its own limits,
//!   socket, budgets and `Math.random` seed. The host itself never forks (it is multi-threaded).
//! - **A warm pool.** Ready workers wait for cells; a pool worker touches its inherited heap and
//!   rehearses a cell (`js/rehearsal.js`) before it reports `Ready`, so a warm cell takes almost no
//!   page faults. A cell with no ready worker forks one on demand (a cold cell).
//! - **Background priority.** The zygote and its workers run [`SupervisorConfig::worker_nice`]
//!   steps below the host (10 by default): a spinning guest cannot starve the host's threads, and
//!   refilling the pool does not preempt the caller reading a result.
//! - **Polling only when it pays** ([`Polling`], default [`PollWhen::PeerOnOtherCpu`]): every
//!   frame carries the CPU it was written from, and a side busy-polls for the next frame only while
//!   its peer runs, still polling, on another CPU; otherwise it sleeps on the socket (the host's
//!   `ppoll` with a one-tick timer slack, so the sleep does not reprogram the CPU's timer).
//!
//! What each of these saves, the current figures of `toolsearch bench cells --json` (warm, after
//! idle, cold, the in-process floor, the Node-per-cell reference) and what was tried and rejected
//! are in `docs/sandbox-performance.md`.
//!
//! ## Process tree
//! ```text
//! host (tokio, multi-threaded) ── dedicated std thread ── zygote (`<bin> __sandbox-zygote`, env cleared)
//!                                                           ├── worker (forked, hardened, one cell)
//!                                                           └── worker …
//! ```

mod bridge;
mod cell;
mod channel;
mod control;
mod error;
pub mod fair;
mod harden;
mod isolate;
mod limits;
mod outcome;
mod protocol;
mod supervisor;
mod text;
mod worker;
mod zygote;

mod gateway;
#[cfg(feature = "lab")]
pub(crate) mod lab_hook;

pub use bridge::{Bridge, BridgeOp};
pub use error::SandboxError;
pub use gateway::{GatewayBridge, in_cell};
pub use harden::ALLOWED_SYSCALLS;
pub use limits::{CellOptions, Limits};
pub use outcome::{
    CallPhases, CellPhases, CellResult, CellTelemetry, LimitKind, LogLevel, LogLine, Outcome,
};
pub use protocol::PollWhen;
#[cfg(feature = "lab")]
pub(crate) use supervisor::DEFAULT_WORKER_NICE;
pub use supervisor::{Polling, Supervisor, SupervisorConfig};
// Untrusted text made safe for terminals, for other adapters too (the agent loop).
#[cfg(feature = "fuzzing")]
pub(crate) use cell::decode_worker_bytes;
pub(crate) use gateway::{CellCall, search_request};
pub(crate) use text::truncate_to;

/// The argv\[1\] that selects the zygote role of the one binary.
pub const ZYGOTE_ROLE: &str = "__sandbox-zygote";

/// Runs a sandbox role if this process was started as one.
///
/// Call it FIRST in `main()`, before any Tokio runtime or thread exists: the zygote forks workers and
/// must stay single-threaded. Returns `Some(exit code)` when argv\[1\] named a sandbox role (which has
/// then run to completion), `None` otherwise.
pub fn dispatch_role() -> Option<std::process::ExitCode> {
    let role = std::env::args_os().nth(1)?;
    if role == ZYGOTE_ROLE {
        Some(zygote::zygote_main())
    } else {
        None
    }
}
