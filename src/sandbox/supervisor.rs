//! The public face of the sandbox: [`Supervisor`] runs cells on single-use workers from a warm
//! pool, behind a cap on live workers shared fairly between clients.
//!
//! Owns: the zygote handle (restarted if it dies), the pool of `Ready` workers and its background
//! refill, the live-worker slots ([`crate::sandbox::fair::Slots`]), [`Supervisor::probe`], [`Supervisor::verify_seccomp`] and
//! shutdown.
//! Never does: run a cell on a worker that already ran one; fork the host; refill inside a cell's
//! timed path; leave a process behind after [`Supervisor::shutdown`] (or, best effort, `Drop`).
//! Invariants: at most `live_workers` cells run at once (others wait, each client in turn, at
//! most their own timeout: [`crate::sandbox::fair`]); at most `pool_size`
//! idle ready workers exist; a cell's deadline starts when its body is sent to its worker, and
//! every wait on the zygote before that (restart, fork, `Ready`) is bounded by the same deadline:
//! a zygote that does not answer a fork request by then (at least 1 s) is killed and replaced.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::bridge::{Bridge, BridgeOp};
use super::cell::{self, ReadyWorker};
use super::control::Zygote;
use super::error::SandboxError;
use super::limits::{CellOptions, Limits, clamp_timeout};
use super::outcome::{CellResult, CellTelemetry, LimitKind, Outcome};
use super::protocol::{PollWhen, Spin, WorkerConfig, mono_ns};
use crate::sync::lock;

/// Consecutive failed forks after which the background refill waits for the next cell.
const REFILL_FAILURES_BEFORE_PAUSE: u32 = 3;

/// How long the refill waits for the workers of finished cells to be reaped before forking.
const RETIRED_EXIT_WAIT: Duration = Duration::from_millis(100);

/// How often [`Supervisor::wait_pool_full`] asks a paused refill to try again.
const REFILL_RETRY: Duration = Duration::from_millis(50);

/// The shortest wait for the zygote's answer to a fork request before it counts as stalled (and
/// is killed), whatever a cell's deadline: a healthy zygote below the host's priority on a busy
/// machine may need a few hundred milliseconds, and killing it costs every cell in flight.
const FORK_ANSWER_FLOOR: Duration = Duration::from_secs(1);

/// [`SupervisorConfig::worker_nice`] by default.
pub const DEFAULT_WORKER_NICE: u8 = 10;

/// How to start a [`Supervisor`].
#[derive(Debug, Clone)]
pub struct SupervisorConfig {
    /// The binary whose `main` calls [`dispatch_role`](crate::dispatch_role) first; usually the
    /// current executable (`std::env::current_exe()`), in tests `env!("CARGO_BIN_EXE_toolsearch")`.
    pub worker_binary: PathBuf,
    /// Ready workers kept forked, hardened and idle before cells arrive. Default 2, clamp 0–64.
    /// 0 means every cell forks on demand (cold).
    pub pool_size: usize,
    /// Per-cell bounds (clamped at start).
    pub limits: Limits,
    /// How many nice steps below the host the zygote and its workers run, guest code included.
    /// Default 10, clamp 0–19 (the result is capped at nice 19); 0 runs them at the host's
    /// priority. Untrusted code, and forking and preparing replacement workers, then never
    /// preempt the host's own threads: a cell spinning until its deadline cannot starve request
    /// handling, and a refill started after a cell does not stall the caller that is reading its
    /// result (measured on the 2-vCPU VM: ~0.2 ms at p50 before this).
    pub worker_nice: u8,
    /// How supervisor and worker wait for each other's frames. Default [`Polling::default`].
    pub polling: Polling,
}

impl SupervisorConfig {
    /// Defaults: pool of 2, [`Limits::default`], nice +10, [`Polling::default`].
    pub fn new(worker_binary: impl Into<PathBuf>) -> SupervisorConfig {
        SupervisorConfig {
            worker_binary: worker_binary.into(),
            pool_size: 2,
            limits: Limits::default(),
            worker_nice: DEFAULT_WORKER_NICE,
            polling: Polling::default(),
        }
    }
}

/// How the supervisor's task and a worker wait for each other's next frame: poll (busy-wait)
/// for a short window after sending, then sleep. Waking a sleeping peer on another, idle CPU
/// costs tens of microseconds on a VM (its virtual CPU halted); polling while the peer waits for
/// the same CPU costs the whole window (measured on the 2-vCPU VM with `bench cells`: every
/// exchange took window + ~50 µs, warm cells 0.65 → 1.7–1.9 ms with the 250 µs window; see the
/// module doc of `sandbox`). Only a cell alone in flight polls or sleeps on its socket on the
/// supervisor's side; others wait in the runtime's reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polling {
    /// When both sides poll. Default [`PollWhen::PeerOnOtherCpu`]: each frame carries the
    /// sender's CPU, and a side polls only while its peer runs elsewhere.
    pub when: PollWhen,
    /// The supervisor's longest poll after each exchange. Default 250 µs, clamp 0–2 ms.
    pub host_window: Duration,
    /// A worker's longest poll for a bridge reply. Default 150 µs, clamp 0–2 ms.
    pub worker_window: Duration,
    /// How long a fresh worker polls for `Run` after reporting `Ready` (always, whatever
    /// `when`: nobody else is waiting for its CPU then). Default 150 µs, clamp 0–2 ms.
    pub ready_window: Duration,
}

impl Default for Polling {
    fn default() -> Polling {
        Polling {
            when: PollWhen::PeerOnOtherCpu,
            host_window: Duration::from_micros(250),
            worker_window: Duration::from_micros(150),
            ready_window: Duration::from_micros(150),
        }
    }
}

impl Polling {
    /// Every window moved into its range.
    pub fn clamped(self) -> Polling {
        let max = Duration::from_millis(2);
        Polling {
            when: self.when,
            host_window: self.host_window.min(max),
            worker_window: self.worker_window.min(max),
            ready_window: self.ready_window.min(max),
        }
    }
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// Runs code cells in sandboxed worker processes. Cheap to clone (an `Arc` inside); `Send + Sync`.
///
/// Dropping the last handle shuts the zygote down in the background (it kills and reaps every
/// worker); call [`Supervisor::shutdown`] to wait for that.
#[derive(Clone)]
pub struct Supervisor {
    inner: Arc<Inner>,
}

struct Inner {
    binary: PathBuf,
    worker_nice: u8,
    pool_size: usize,
    limits: Limits,
    worker: WorkerConfig,
    host_spin: Spin,
    zygote: Mutex<Option<Arc<Zygote>>>,
    respawn: tokio::sync::Mutex<()>,
    pool: Mutex<VecDeque<ReadyWorker>>,
    /// Workers whose cells ended: killed, their descriptors still open, perhaps not yet reaped.
    /// The refill closes them (see `fill_pool`).
    retired: Mutex<Vec<ReadyWorker>>,
    refill: Arc<Notify>,
    /// Signalled (to every waiter) whenever a worker joins the pool.
    pooled: Notify,
    /// The live-worker slots, shared fairly between clients.
    slots: super::fair::Slots,
    closed: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        self.refill.notify_one();
        // Dropping the pool kills idle workers; dropping the zygote handle makes its thread shut
        // the zygote down, which kills and reaps the rest.
        lock(&self.pool).clear();
        lock(&self.retired).clear();
    }
}

impl Supervisor {
    /// Starts the zygote and the background pool refill. Fails only if the zygote cannot start;
    /// whether workers can start is [`Supervisor::probe`]'s question.
    pub async fn start(config: SupervisorConfig) -> Result<Supervisor, SandboxError> {
        let limits = config.limits.clamped();
        let polling = config.polling.clamped();
        let worker = WorkerConfig {
            memory_limit: limits.memory_limit_bytes,
            max_stack: limits.max_stack_bytes,
            address_space: (limits.memory_limit_bytes + limits.address_space_slack_bytes) as u64,
            frame_bytes: limits.frame_bytes,
            log_bytes: limits.log_bytes,
            result_bytes: limits.result_bytes,
            bridge_calls: limits.bridge_calls,
            rehearse: false,
            spin: Spin {
                when: polling.when,
                micros: micros(polling.worker_window),
            },
            ready_spin_us: micros(polling.ready_window),
        };
        let host_spin = Spin {
            when: polling.when,
            micros: micros(polling.host_window),
        };
        let worker_nice = config.worker_nice.min(19);
        let zygote = Zygote::spawn(&config.worker_binary, worker_nice).await?;
        let inner = Arc::new(Inner {
            binary: config.worker_binary,
            worker_nice,
            pool_size: config.pool_size.min(64),
            slots: super::fair::Slots::new(limits.live_workers),
            limits,
            worker,
            host_spin,
            zygote: Mutex::new(Some(Arc::new(zygote))),
            respawn: tokio::sync::Mutex::new(()),
            pool: Mutex::new(VecDeque::new()),
            retired: Mutex::new(Vec::new()),
            refill: Arc::new(Notify::new()),
            pooled: Notify::new(),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(refill_loop(Arc::downgrade(&inner), inner.refill.clone()));
        inner.refill.notify_one();
        Ok(Supervisor { inner })
    }

    /// The limits in force (after clamping).
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The configured pool size.
    pub fn pool_size(&self) -> usize {
        self.inner.pool_size
    }

    /// Runs one cell. Never panics and never returns an error: every failure is an [`Outcome`]
    /// (a panicking [`Bridge`] included: it ends the cell with `ProtocolError`).
    ///
    /// The cell is driven by the caller's own task, not a spawned one: handing the cell to a new
    /// task and its result back woke a second runtime thread at both ends (on a 2-vCPU VM, often
    /// the one on the other, idle CPU: tens of microseconds each way). Call it from a task, as a
    /// request handler does; from `block_on` every socket wake-up crosses threads. Dropping the
    /// returned future kills the worker and cancels the cell's bridge calls.
    pub async fn run_cell(
        &self,
        code: &str,
        bridge: Arc<dyn Bridge>,
        opts: CellOptions,
    ) -> CellResult {
        let traced_from = opts.trace_phases.then(mono_ns);
        // Dropped last, once the caller has its result (or gave up): the refill then never
        // competes with the cell for the CPU.
        let _refill = RefillOnDrop(self.inner.refill.clone());
        let cell = CatchUnwind(Box::pin(self.inner.run_cell(
            code,
            bridge,
            opts,
            traced_from,
        )));
        match cell.await {
            Ok(mut result) => {
                if let Some(phases) = &mut result.telemetry.phases {
                    let now = mono_ns();
                    phases.result_to_caller_us = now.saturating_sub(phases.done_ns) as f64 / 1e3;
                }
                result
            }
            Err(()) => CellResult::failed(
                Outcome::ProtocolError {
                    detail: "the cell's driver panicked; a Bridge implementation may have \
                             panicked"
                        .into(),
                },
                CellTelemetry::default(),
            ),
        }
    }

    /// Can a worker start and run a cell here (under the seccomp filter)? Forks a fresh worker
    /// and runs `return 1 + 1`. Code mode falls back to tools mode when this fails.
    pub async fn probe(&self) -> Result<(), SandboxError> {
        let mut worker = self
            .inner
            .spawn_worker(false, self.inner.limits.setup_timeout)
            .await?;
        let limits = &self.inner.limits;
        let result = cell::CellRun {
            code: "return 1 + 1",
            bridge: Arc::new(NoBridge),
            timeout: limits.code_timeout,
            limits,
            solo: None,
            traced_from: None,
        }
        .drive(&mut worker, CellTelemetry::default())
        .await;
        match (&result.outcome, &result.value) {
            (Outcome::Ok, Some(v)) if *v == serde_json::json!(2) => Ok(()),
            _ => Err(SandboxError::setup(format!(
                "the probe cell ended with {}: {}",
                result.outcome.kind(),
                result.outcome.message()
            ))),
        }
    }

    /// Self-check of the seccomp filter: a fresh worker performs `socket(AF_INET)` (outside the
    /// allow-list) at the supervisor's request. Returns how it ended:
    /// [`Outcome::SeccompViolation`] when the filter works. Not reachable from guest code.
    pub async fn verify_seccomp(&self) -> Outcome {
        match self
            .inner
            .spawn_worker(false, self.inner.limits.setup_timeout)
            .await
        {
            Ok(worker) => worker.forbidden_syscall().await,
            Err(e) => Outcome::WorkerSetupFailure {
                detail: e.to_string(),
            },
        }
    }

    /// Pids of the idle, ready workers in the pool.
    pub fn ready_worker_pids(&self) -> Vec<u32> {
        lock(&self.inner.pool)
            .iter()
            .map(ReadyWorker::pid)
            .collect()
    }

    /// Pids of every worker forked and not yet reaped (ready, running or dying).
    pub fn live_worker_pids(&self) -> Vec<u32> {
        self.inner
            .current_zygote()
            .map(|z| z.live_pids())
            .unwrap_or_default()
    }

    /// The zygote's pid, while it runs.
    pub fn zygote_pid(&self) -> Option<u32> {
        self.inner
            .current_zygote()
            .filter(|z| z.is_alive())
            .map(|z| z.pid())
    }

    /// Waits until the pool holds `pool_size` ready workers, up to `limit`. Returns whether it
    /// does. (The pool is refilled in the background; this only observes it.) Returns as soon as
    /// the last worker joins the pool: it is woken by the refill, it does not poll.
    pub async fn wait_pool_full(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let full = || lock(&self.inner.pool).len() >= self.inner.pool_size;
        loop {
            // Registered before the check, so a worker pooled in between is not missed.
            let pooled = self.inner.pooled.notified();
            tokio::pin!(pooled);
            pooled.as_mut().enable();
            if full() {
                return true;
            }
            if self.inner.closed.load(Ordering::SeqCst) {
                return false;
            }
            let retry = tokio::time::Instant::now() + REFILL_RETRY;
            tokio::select! {
                () = &mut pooled => {}
                () = tokio::time::sleep_until(retry.min(deadline)) => {
                    if tokio::time::Instant::now() >= deadline {
                        return full();
                    }
                    // Nothing joined for a while: the refill may have paused after failed
                    // forks. (Not asked on every pass: a wake-up stored while it runs would start
                    // a second pass that forks during the caller's next cell.)
                    self.inner.refill.notify_one();
                }
            }
        }
    }

    /// Kills the zygote and every worker and waits until all were reaped. Later cells fail with
    /// `WorkerSetupFailure`.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        inner.closed.store(true, Ordering::SeqCst);
        inner.slots.close();
        inner.refill.notify_one();
        let idle: Vec<ReadyWorker> = lock(&inner.pool).drain(..).collect();
        drop(idle);
        let retired: Vec<ReadyWorker> = lock(&inner.retired).drain(..).collect();
        drop(retired);
        let zygote = lock(&inner.zygote).take();
        if let Some(z) = zygote {
            z.kill_all();
            z.wait_no_workers(Duration::from_secs(5)).await;
            z.shutdown().await;
        }
    }
}

impl Inner {
    async fn run_cell(
        &self,
        code: &str,
        bridge: Arc<dyn Bridge>,
        opts: CellOptions,
        traced_from: Option<u64>,
    ) -> CellResult {
        let t0 = Instant::now();
        let timeout = clamp_timeout(opts.timeout.unwrap_or(self.limits.code_timeout));
        let mut telemetry = CellTelemetry {
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            ..CellTelemetry::default()
        };
        if code.len() > self.limits.code_bytes {
            return CellResult::failed(
                Outcome::LimitExceeded {
                    limit: LimitKind::CodeBytes,
                },
                telemetry,
            );
        }
        // A cell waits for its client's turn at most its own timeout; then it is answered busy.
        let _slot = match self
            .slots
            .acquire(super::fair::current_client(), timeout)
            .await
        {
            Ok(slot) => slot,
            Err(super::fair::Busy::Closed) => return CellResult::failed(shut_down(), telemetry),
            Err(busy) => {
                let outcome = Outcome::Busy {
                    detail: busy.message(),
                };
                return failed_after_wait(outcome, telemetry, t0);
            }
        };
        if self.closed.load(Ordering::SeqCst) {
            return CellResult::failed(shut_down(), telemetry);
        }
        // Every wait on the zygote is bounded by the cell's own deadline (a stopped zygote must not
        // stretch it), and by the setup bound.
        let setup = timeout.min(self.limits.setup_timeout);
        let (mut worker, warm) = match self.take_ready() {
            Some(w) => (w, true),
            None => match self.spawn_worker(false, setup).await {
                Ok(w) => (w, false),
                Err(e) => {
                    let outcome = Outcome::WorkerSetupFailure {
                        detail: e.to_string(),
                    };
                    return failed_after_wait(outcome, telemetry, t0);
                }
            },
        };
        telemetry.warm = warm;
        telemetry.worker_pid = worker.pid();
        telemetry.queue_ms = ms(t0);
        // Alone, the cell may spin on its worker's socket (see `cell::CellRun::drive`); with other cells
        // in flight it leaves the runtime's threads to them.
        let solo = self.slots.available() + 1 >= self.limits.live_workers;
        let ready_spin = Duration::from_micros(u64::from(self.worker.ready_spin_us));
        let solo = solo.then(|| cell::SoloWait {
            spin: self.host_spin,
            worker_window: Duration::from_micros(u64::from(self.worker.spin.micros)),
            worker_cpu: worker.polling_on(ready_spin),
        });
        let result = cell::CellRun {
            code,
            bridge,
            timeout,
            limits: &self.limits,
            solo,
            traced_from,
        }
        .drive(&mut worker, telemetry)
        .await;
        // Closing the worker's socket and pidfd took ~40 µs here (the close wakes the dying
        // worker on a shared CPU): the refill does it, after the caller has its result.
        if self.pool_size > 0 && !self.closed.load(Ordering::SeqCst) {
            lock(&self.retired).push(worker);
        }
        result
    }

    fn current_zygote(&self) -> Option<Arc<Zygote>> {
        lock(&self.zygote).clone()
    }

    /// The ready worker that finished its setup last (LIFO): its pages and caches, and the CPU it
    /// last ran on, are the warmest, so it starts the body sooner than one that idled longer
    /// (measured: warm p50 0.63–0.75 → ~0.55 ms on the 2-core VM). Workers are single-use, so
    /// an older one idling longer costs nothing.
    fn take_ready(&self) -> Option<ReadyWorker> {
        let mut pool = lock(&self.pool);
        while let Some(w) = pool.pop_back() {
            if !w.is_dead() {
                return Some(w);
            }
        }
        None
    }

    /// The running zygote, restarting it if it died.
    async fn zygote(&self) -> Result<Arc<Zygote>, SandboxError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(SandboxError::ShutDown);
        }
        if let Some(z) = self.current_zygote().filter(|z| z.is_alive()) {
            return Ok(z);
        }
        let _guard = self.respawn.lock().await;
        if let Some(z) = self.current_zygote().filter(|z| z.is_alive()) {
            return Ok(z);
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err(SandboxError::ShutDown);
        }
        tracing::warn!("sandbox zygote is gone; restarting it");
        let z = Arc::new(Zygote::spawn(&self.binary, self.worker_nice).await?);
        *lock(&self.zygote) = Some(z.clone());
        Ok(z)
    }

    /// Forks a worker and waits for its `Ready`, all within `limit` (restarting a dead zygote
    /// included). A zygote that does not answer the fork request within `limit` (at least
    /// [`FORK_ANSWER_FLOOR`]) is killed: the next cell starts a new one. `rehearse`: for the pool
    /// (see [`WorkerConfig::rehearse`]).
    async fn spawn_worker(
        &self,
        rehearse: bool,
        limit: Duration,
    ) -> Result<ReadyWorker, SandboxError> {
        let start = tokio::time::Instant::now();
        let deadline = start + limit;
        let config = WorkerConfig {
            rehearse,
            ..self.worker.clone()
        };
        let zygote = self.zygote_by(deadline, limit).await?;
        let process = match self.fork_by(&zygote, &config, deadline).await {
            Ok(p) => p,
            Err(SandboxError::ZygoteGone { .. }) => {
                let zygote = self.zygote_by(deadline, limit).await?;
                self.fork_by(&zygote, &config, deadline).await?
            }
            Err(e) => return Err(e),
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        ReadyWorker::handshake(process, left, self.limits.frame_bytes).await
    }

    /// [`Inner::zygote`], given up at `deadline`.
    async fn zygote_by(
        &self,
        deadline: tokio::time::Instant,
        limit: Duration,
    ) -> Result<Arc<Zygote>, SandboxError> {
        match tokio::time::timeout_at(deadline, self.zygote()).await {
            Ok(z) => z,
            Err(_) => Err(SandboxError::ZygoteGone {
                detail: format!(
                    "no zygote was ready within {} ms (restarting it takes longer)",
                    limit.as_millis()
                ),
            }),
        }
    }

    /// One fork request, given up at `deadline` (but not before [`FORK_ANSWER_FLOOR`]); a
    /// zygote that did not answer by then is killed.
    async fn fork_by(
        &self,
        zygote: &Zygote,
        config: &WorkerConfig,
        deadline: tokio::time::Instant,
    ) -> Result<super::control::WorkerProcess, SandboxError> {
        let asked = tokio::time::Instant::now();
        let deadline = deadline.max(asked + FORK_ANSWER_FLOOR);
        match tokio::time::timeout_at(deadline, zygote.fork(config)).await {
            Ok(forked) => forked,
            Err(_) => {
                zygote.kill_stalled();
                Err(SandboxError::ZygoteStalled {
                    waited_ms: u64::try_from(asked.elapsed().as_millis()).unwrap_or(u64::MAX),
                })
            }
        }
    }

    async fn fill_pool(&self) {
        let mut failures = 0;
        loop {
            // A killed worker still has to exit (unmapping its memory: ~0.2 ms of CPU here).
            // Forking only after that keeps the exit from landing on the next cell's path, where
            // it ran on the same CPU as the cell right after the new worker's `Ready`
            // (`perf sched`: submit → running 50 → 300 µs). Drained on every pass, so the list
            // stays as short as the number of cells since the last one.
            let retired: Vec<ReadyWorker> = lock(&self.retired).drain(..).collect();
            if self.closed.load(Ordering::SeqCst) || lock(&self.pool).len() >= self.pool_size {
                return;
            }
            for mut worker in retired {
                worker.process.wait_exit(RETIRED_EXIT_WAIT).await;
            }
            match self.spawn_worker(true, self.limits.setup_timeout).await {
                Ok(w) => {
                    failures = 0;
                    if self.closed.load(Ordering::SeqCst) {
                        return;
                    }
                    lock(&self.pool).push_back(w);
                    self.pooled.notify_waiters();
                }
                Err(e) => {
                    failures += 1;
                    tracing::warn!("sandbox pool refill failed ({failures}): {e}");
                    if failures >= REFILL_FAILURES_BEFORE_PAUSE {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

async fn refill_loop(inner: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        wake.notified().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::SeqCst) {
            return;
        }
        inner.fill_pool().await;
    }
}

/// Starts the pool refill when dropped.
struct RefillOnDrop(Arc<Notify>);

impl Drop for RefillOnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// Polls a future and turns a panic inside it into `Err(())` (the future is then dropped, which
/// kills the cell's worker).
struct CatchUnwind<F>(std::pin::Pin<Box<F>>);

impl<F: std::future::Future> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, ()>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(poll) => poll.map(Ok),
            Err(_) => std::task::Poll::Ready(Err(())),
        }
    }
}

fn shut_down() -> Outcome {
    Outcome::WorkerSetupFailure {
        detail: SandboxError::ShutDown.to_string(),
    }
}

fn ms(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// A cell that failed before it ran, its wait since `t0` (for a slot, a worker) counted.
fn failed_after_wait(outcome: Outcome, mut telemetry: CellTelemetry, t0: Instant) -> CellResult {
    telemetry.queue_ms = ms(t0);
    CellResult::failed(outcome, telemetry)
}

/// The probe's bridge: there is nothing to call.
struct NoBridge;

#[async_trait::async_trait]
impl Bridge for NoBridge {
    async fn invoke(
        &self,
        op: BridgeOp,
        _args: serde_json::Value,
    ) -> Result<serde_json::Value, crate::catalog::ToolError> {
        Err(format!("{} is not available in the probe", op.as_str()).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync + 'static>() {}

    #[test]
    fn handles_are_send_and_sync() {
        send_sync::<Supervisor>();
        send_sync::<CellResult>();
        send_sync::<SupervisorConfig>();
    }

    #[test]
    fn polling_windows_are_clamped_to_two_milliseconds() {
        let p = Polling {
            when: PollWhen::Always,
            host_window: Duration::from_secs(1),
            worker_window: Duration::ZERO,
            ready_window: Duration::from_micros(1_999),
        }
        .clamped();
        assert_eq!(p.when, PollWhen::Always);
        assert_eq!(p.host_window, Duration::from_millis(2));
        assert_eq!(p.worker_window, Duration::ZERO);
        assert_eq!(p.ready_window, Duration::from_micros(1_999));
        assert_eq!(Polling::default().clamped(), Polling::default());
    }
}
