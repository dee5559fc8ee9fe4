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
//! ## Costs (2 × AMD EPYC VM, kernel 6.18 with `sched_vcpu_pack=15`; `toolsearch bench cells --json`)
//! Idle but for the bench (load average 0.84–1.17 at the start, 10 runs): a warm cell (ready
//! worker, search + describe + call through the real gateway, submitted as soon as the pool is
//! full) 0.64–0.76 ms p50 (p99 0.85–1.6); after 5 ms of idle 0.88–1.13 ms; the same cell in a
//! QuickJS context inside the host (`inprocess`, the floor) 0.33–0.35 ms, so the process boundary
//! costs 1.9–2.2×; cold (fork on demand) 2.1–3.1 ms; the Node-child-per-cell reference 47–49 ms
//! (65–73× warm). A ready worker: 5.4–7.4 MiB RSS, 1.7–2.3 MiB PSS. Where a warm cell's time goes
//! (CLOCK_MONOTONIC stamps on both sides, medians, `CellOptions::trace_phases`): submit → worker
//! running 32–49 µs, compiling the body 80–101 µs (in-process 74–76), per bridge call guest
//! 49–59 µs (28–29) / host 48–61 µs (45–50) / two socket trips 39–45 µs, after the last call
//! 45–58 µs (24–25), `Done` → caller 42–49 µs (2). The worker ran on the submitting CPU in
//! 56–93 % of the cells. With both CPUs busy with other builds (load 4.7–6.0, 3 runs) nearly the
//! same: warm 0.60–0.67 ms, floor 0.32–0.33, node 68–70. The zygote builds the seccomp filter
//! and, since the fifth pass below, an isolate with the prelude loaded once; workers inherit both
//! (before that pass each worker built its own isolate from bytecode the zygote compiled); pool
//! workers then rehearse a
//! cell (`js/rehearsal.js`) so its first-touch page faults happen before `Ready` (2 minor faults
//! during a warm cell, read from `/proc`). The zygote and its workers run 10 nice steps below the
//! host ([`SupervisorConfig::worker_nice`]): guest code cannot starve the host's threads, and the
//! refill that follows a cell (fork, hardening, rehearsal: ≈ 1 ms of CPU) does not preempt the
//! caller that is reading the cell's result.
//!
//! On a 2 × Intel Xeon (Sapphire Rapids) VM, same kernel and boot parameter, after the fourth
//! pass below (timer slack on the window's sleep; warm, floor and after-idle cells interleaved),
//! two series of 5 consecutive runs (load average 0.12–0.68 at the start, then 0.75–1.08 while
//! the VM ran slower): warm 0.33–0.50 ms p50 (p99 1.4–2.5× p50), after 5 ms of idle 1.25–1.47×
//! warm, the interleaved floor 0.25–0.38 ms (warm 1.21–1.34× the floor), cold 1.46–2.04 ms
//! (3.7–5.0× warm), node 31–41 ms (69–103× warm); per warm cell submit → running 22–29 µs, per
//! bridge call two socket trips 15–21 µs, `Done` → caller 21–30 µs. The floor moves with the
//! VM's speed (0.18 ms back-to-back on a quiet day, 0.25–0.38 interleaved), hence the
//! interleaving; the bench also reports each CPU's floor and a fixed loop per CPU at start and
//! end (`cpu_loop_us`). After the fifth pass (one isolate for every fork), three series of 5
//! consecutive runs, each run started at load average 0.23–0.89: warm 0.37–0.52 ms p50 (p99
//! 1.35–2.19× p50), after idle 1.23–1.38× warm, floor 0.28–0.39 ms (warm 1.25–1.33× the floor),
//! cold 1.34–1.97 ms (3.3–4.3× warm), node 34–50 ms (72–105× warm); a cold cell's submit →
//! running 0.69–1.01 ms.
//!
//! ### What one crossing costs, and what was tried (issue 14, second pass, Intel VM)
//! C probes (two processes, a `socketpair`, one byte each way): pinned to the same CPU 9.5–10.5 µs
//! per round trip; either unpinned 58–103 µs (the wake-up goes to the other, halted virtual CPU,
//! ≈ 40 µs); a peer at nice +10 (or `SCHED_BATCH`/`SCHED_IDLE`) triples the same-CPU round trip
//! (29 µs; nice +1: 13, +3: 18, +5: 19); an epoll waiter on the same socket adds 7–17 µs;
//! seccomp, AVX-512 state and the size of the address space: no effect. The real system pays
//! ≈ 16–18 µs median per crossing (bimodal 5 / 16), eight crossings per cell of three bridge
//! calls. Tried and rejected, alternating A/B runs in one session: pinning the host thread and
//! the worker to the submitting CPU with the socket out of the reactor and bridge answers inline
//! (warm 0.45–0.52 ms against 0.41–0.44), the same at nice 0 without the ready spin (0.50–0.63),
//! the current policy at nice 0 (0.40–0.52; compile slower when the worker lands on the other
//! CPU), an affinity mask to the other CPU (0.68), lingering in the worker after `Done`
//! (inconclusive), interleaving the series in the bench (warm 0.70–0.97: caches cold after each
//! node and cold cell). What is left is the crossings themselves and the JSON on both sides; on
//! this VM warm stays at 1.5–2.3× the floor.
//!
//! ### Third pass: two CPUs per cell, and what a halted virtual CPU costs (Intel VM, issue 14)
//! Upper bound first: the host process pinned to CPU 0 and the zygote (so every worker) to CPU 1
//! with `taskset` (two runs): warm 0.244–0.250 ms, 1.37–1.40× the floor, submit → running 11 µs,
//! socket trips 9 µs per bridge call — what the boundary costs when both sides poll, each on its
//! own CPU. Not shippable: it halves the CPUs the host may use, and warm after idle was still
//! 0.41–0.43 ms (1.63–1.75× warm: the worker's virtual CPU had halted). Confining only the
//! sandbox to CPU 1 is not enough: the host's thread was then woken onto CPU 1 by `Ready` in 74–84 %
//! of warm cells (warm 0.40–0.41 ms, 2.2–2.3× the floor); a zygote at `SCHED_IDLE` (so that the
//! polling worker's CPU would not count as busy) made it 96–98 % (warm 0.46–0.53 ms).
//! Built and rejected: a per-cell placement (the worker pinned itself to one CPU named in `Run`,
//! `sched_setaffinity` on itself allowed by seccomp; the host's driving thread confined to the other
//! CPUs until `Done`; a sleeping worker moved to the submitting CPU before `Run`). Six interleaved
//! A/B pairs of `bench cells --json` (load average ≈ 1.5–1.8): warm p50 0.32–0.44 ms against 0.42–0.58
//! without, warm/floor 1.75–2.47 against 2.26–3.26, trips 10–13 µs per call against 32–36 — but
//! warm p99 2.1–6.7× p50 (1.7–2.5× without) and after idle 1.33–1.67× warm (1.11–1.47×). In 80 %
//! of warm cells the worker was polling on the host thread's own CPU at submission (the `Ready`
//! that woke the host's thread had packed it there), so one of the two had to move to the halted
//! CPU: the host's `sched_setaffinity` on itself took 85 µs (57 after idle) and the worker ran
//! 68 µs after submission (36 µs without placement). C probes (two processes, one `socketpair`,
//! 2 ms idle between exchanges): waking a process on the other, halted virtual CPU 142–148 µs; a
//! thread migrating itself there 121–139 µs; a wake-up on the waker's own CPU 17–22 µs;
//! shared-memory ping-pong between two busy CPUs 0.11–0.14 µs per round trip; a syscall 0.1 µs.
//! One Tokio worker thread instead of two (`TOKIO_WORKER_THREADS=1`, two runs each): the worker
//! shared the submitting CPU in 37–48 % of warm cells instead of 89–91 % and submit → running took
//! 21–24 µs instead of 36–39, but warm p50 did not move (0.41–0.43 against 0.43–0.44 ms): the
//! second runtime thread, woken around each submission, is one reason the two sides end up on one
//! CPU, not the cost. On this VM every cell start pays either a context switch per crossing on a
//! shared CPU or one wake-up of a halted virtual CPU; making warm cells cheaper that way makes
//! the after-idle ratio worse, and the two acceptance ratios of issue 14 pull apart.
//!
//! ### Fourth pass: the timer behind every short sleep (Intel VM, issue 14)
//! Found with the kernel's trace events (`sched_switch`, `hrtimer_start`/`hrtimer_cancel`, raw
//! syscalls) on one warm cell: every time the supervisor's task slept on the worker's socket,
//! 11–13 µs passed between entering `ppoll` and the switch to the worker, and 13–15 µs between
//! the switch back and `ppoll` returning — against 1–2 µs for the worker's own sleeps. The
//! window's timeout (≤ 250 µs) is earlier than the next scheduler tick, so arming it reprograms
//! the CPU's timer and cancelling it on the worker's write reprograms it again; on this VM each
//! reprogramming is a trap to the hypervisor. A C probe (two processes on one CPU, one byte each
//! way through a `socketpair`, the waiting side in `ppoll`): no timeout 4.7 µs per round trip,
//! a 200 µs timeout 25 µs (peer at nice +10; bimodal 5 / 25, the slow mode whenever the timeout is
//! the CPU's earliest timer), a 4 ms timeout 5.0 µs, a 200 µs timeout with a 4 ms timer slack
//! (`PR_SET_TIMERSLACK`) 5.0 µs. This is also why the worker's priority seemed to triple a
//! crossing in the second pass. Kept: the window's `ppoll` runs with a 4 ms timer slack (one tick
//! at `HZ=250`; restored right after, so the runtime's own timers stay precise). Its timeout then
//! rides on the next tick: a window may last up to one tick longer when the worker stays silent,
//! the worker's write still wakes the task at once. Three interleaved A/B pairs (load 1.4–1.6):
//! socket trips 14.9–16.6 µs per bridge call instead of 32–42, submit → running 22–23 µs instead
//! of 37–49, `Done` → caller 21–25 µs instead of 32–42, warm p50 0.33–0.38 ms instead of
//! 0.41–0.58.
//!
//! Kept in the bench: warm, in-process and warm-after-idle cells interleaved cell by cell, the
//! floor cell on a thread pinned to the CPU the preceding warm cell was submitted from. As
//! separate series the three compared moments minutes apart on a VM whose speed drifts: in six
//! runs of the series bench with the timer fix the floor was 0.18–0.35 ms and warm/floor
//! 1.03–2.37. Interleaved, a floor cell sees the same cache and hypervisor state as the warm
//! cells around it (0.25–0.38 ms in 16 runs, against ≈ 0.18 ms for 200 back-to-back floor cells
//! on a quiet VM, whose working set never leaves the CPU's caches), and warm/floor held at
//! 1.21–1.34. Tried and dropped: cold cells interleaved too (warm cells then found their worker
//! on the other CPU in 34–43 % of cells instead of 87–94 %, submit → running 45–58 µs, node/warm
//! down to 66–75).
//!
//! ### Fifth pass: one isolate for every fork (Intel VM, issue 14)
//! Trace of one cold cell before this pass: fork ≈ 0.2 ms, building the runtime and context and
//! loading the prelude ≈ 0.7 ms (≈ 120 page faults), the seccomp filter ≈ 0.1 ms, `Ready` →
//! `Run` ≈ 0.05 ms. Now the zygote builds one isolate with the prelude loaded
//! (`isolate::Template`) before it forks anything, and each worker adopts its copy-on-write
//! copy: the request's heap and stack limits, its socket and frame cap, fresh counters and
//! budgets, and its own `Math.random` state (a native function seeded from `getrandom`, since a
//! context seeds QuickJS's generator once, at creation). Six alternating A/B pairs of `bench
//! cells --json` (load 1.3–1.8): cold p50 1.10–1.59 ms against 1.53–2.17, submit → running
//! 559–815 µs against 1,091–1,582, cold 2.8–3.8× warm against 3.9–5.2×. But warm/floor rose to
//! 1.36–1.42 from 1.30–1.34: a warm cell took 6–7 page faults instead of 3–4 (trace events, 20
//! cells each), the extra ones copy-on-write copies of pages the zygote had written (QuickJS
//! writes a reference count on every object it touches, and the kernel's `read` into the receive
//! buffer). Kept with it: a pool worker copies its whole inherited heap (408 KiB here) before
//! `Ready` with one `madvise(MADV_POPULATE_WRITE)`; a warm cell then takes 1 fault. Not for a
//! worker forked for a waiting cell: the call took 240 µs (2.3 µs a page, no cheaper than the
//! faults), more than the 50-odd pages such a cell writes. Three more A/B pairs with both:
//! warm/floor 1.26–1.32 against 1.31–1.33, cold 1.50–1.60 ms against 1.98–2.16 (3.1–3.4× warm
//! against 4.1–4.5×). What a cold cell still pays (trace of one): 72 µs from the fork to the
//! child's first system call, 85 µs of hardening, 75 µs adopting the template (24 faults), 78 µs
//! inside the `seccomp` call (the kernel checks and compiles the filter), and its first compile
//! and bridge call take ≈ 0.2 ms longer than a warm cell's (first-touch faults of the text the
//! rehearsal would have mapped).
//!
//! ## Why warm cells were 4× slower than documented (issue 14)
//! Both sides used to busy-poll after every frame they sent (the supervisor's task 250 µs, the
//! worker 150 µs), because waking a sleeping peer on another, halted virtual CPU costs tens of
//! microseconds. But this kernel packs wake-ups onto a busy virtual CPU (`sched_vcpu_pack=15`):
//! the worker woken by `Run` or by a reply mostly ran on its supervisor's CPU, where the
//! supervisor was polling for the worker's answer — and, 10 nice steps down, the worker got that
//! CPU only when the window ended. Every wait for a frame cost the window plus ~50 µs. Measured in
//! one interleaved run (load 7.4–7.6, 2 rounds) with the old policy and the host's window set to
//! 0 / 100 / 250 / 500 µs: warm p50 0.64–0.67 / 1.06–1.09 / 1.70–1.86 / 3.15–3.64 ms, socket
//! trips per bridge call 48 / 146–147 / 296–301 / 558–567 µs, submit → running 44–49 / 141–146 /
//! 289–309 / 553–555 µs, the worker on the submitting CPU in 79–100 % of cells. The bisection
//! (load 5.1–6.1, 3 rounds, same run): `09d3398` (before the background priority) 2.10–2.18 ms,
//! `ce7f065` (with it) 1.70–2.02 ms, this policy 0.67–0.72 ms. The priority alone did not make the
//! difference under load (old policy at nice 0: 1.73–1.80 ms vs 1.77–1.90 at +10, same run); on
//! an idle machine it decided how soon the worker got in ahead of the poller (renicing the zygote
//! to 0 gave 0.66–0.69 ms instead of 1.45–1.88). Where the worker lands is the kernel's choice
//! and differs from machine to machine, which is why the old figures did not reproduce.
//!
//! The fix ([`Polling`], default [`PollWhen::PeerOnOtherCpu`]): every frame carries the CPU it was
//! written from (read with `rdtscp`, no syscall, also under seccomp), and a side polls only while
//! its peer runs on another CPU and is itself still polling (a worker left waiting longer than its
//! window went to sleep, and where it wakes is unknown). Otherwise the worker sleeps in `poll` and
//! the task of a cell alone in flight sleeps on the worker's socket in `ppoll` for up to its
//! window (handing its CPU straight to the worker, and woken by its write without the runtime's
//! park and unpark), then in the reactor. Same runs: `always` 1.70–1.90 ms, `never` 0.68–0.76,
//! this policy 0.65–0.72 (load 5.2–7.7); sleeping on the socket instead of the reactor saved
//! 5–8 µs per bridge call and 9–25 µs of submit → running after idle (load 6.1–6.8). When the
//! worker happened to run on the other CPU (6–15 % of cells on the submitting one, an
//! instrumented build, load 5.6–5.8), the trips cost 13–16 µs per call instead of 41–44 and a warm
//! cell 0.55–0.60 ms: what is left on a shared CPU is two context switches per call (a bare
//! `socketpair` round trip between two processes on one CPU, from a C probe: 9–10 µs here) and the
//! JSON on both sides.
//!
//! On the idle machine (load 1.2–1.5, 2 rounds, same run): `ce7f065` 0.60 ms in a run where its
//! workers happened to run on the other CPU, 1.74 in the other; `09d3398` 2.14–2.21; `always`
//! 1.70; `never` 0.71–0.75; this policy 0.66–0.72. Tried and rejected, each A/B in one idle run:
//! keeping the worker off the submitting CPU with a per-cell affinity mask (0.97–1.05 ms against
//! 0.69–0.71: the other virtual CPU ran the same body 1.2–1.45× slower); yielding the CPU
//! (`sched_yield`) instead of sleeping in `ppoll` (trips 35–38 µs instead of 44–45, but `Done` →
//! caller 93–333 µs instead of 45: the worker exiting after `Done` kept the CPU); a zygote at
//! `SCHED_BATCH` with workers switched back before `Ready`, at nice 0 (0.66–0.77 against
//! 0.69–0.71); a longer `Ready` poll (1 or 2 ms instead of 150 µs, load 2.4–2.8: no change).
//! Workers at the host's priority (`worker_nice` 0) gave 0.55 ms in two idle runs and 0.68–0.83
//! in three later ones; the background priority stays.
//!
//! ## Process tree
//! ```text
//! host (tokio, multi-threaded) ── dedicated std thread ── zygote (`<bin> __sandbox-zygote`, env cleared)
//!                                                           ├── worker (forked, hardened, one cell)
//!                                                           └── worker …
//! ```

mod bridge;
mod cell;
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

pub use bridge::{Bridge, BridgeError, BridgeOp};
pub use error::SandboxError;
pub use gateway::GatewayBridge;
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
pub(crate) use gateway::{call_request, search_request};
pub(crate) use text::{strip_controls, truncate_to};

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
