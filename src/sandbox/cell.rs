//! One cell on one worker, from the supervisor's side: the `Ready` handshake, sending the body,
//! running bridge calls concurrently, the wall-clock kill, and classifying the end.
//!
//! Owns: [`ReadyWorker`] (a worker that reported `Ready`) and [`CellRun`], one cell driven on it.
//! Never does: trust a frame (each is bounded by `frame_bytes`, parsed into a closed enum and
//! validated); let a bridge future outlive its cell (in-flight calls are dropped, i.e. cancelled,
//! when the cell ends); reuse a worker (it is killed when the cell ends).
//! Invariants: the deadline starts when the body is sent; at the deadline the worker is SIGKILLed
//! and the outcome is `Timeout`; a malformed, oversized or unexpected frame kills the worker with
//! `ProtocolError`.

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::bridge::Bridge;
use super::control::{WorkerExit, WorkerProcess};
use super::error::SandboxError;
use super::limits::Limits;
use super::outcome::{
    CallPhases, CellPhases, CellResult, CellTelemetry, LimitKind, LogLine, Outcome,
};
use super::protocol::{
    self, Done, DoneStatus, HostFrame, PollWhen, RunCell, SetupStage, Spin, Split, TRACE_CALLS,
    WorkerFrame, WorkerTrace, mono_ns,
};
use super::text::truncate_to;
use crate::config::input;
use crate::telemetry::terminal_safe;

/// How long to wait for the zygote's exit report after a worker's socket closed.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// How long a cell whose worker died waits for the exit report at least, even at its deadline.
const EXIT_REPORT_FLOOR: Duration = Duration::from_millis(50);

/// A forked worker that reported `Ready`.
pub(crate) struct ReadyWorker {
    pub(crate) process: WorkerProcess,
    stream: UnixStream,
    inbuf: Vec<u8>,
    /// When `Ready` was read, and the CPU the worker sent it from.
    ready: Option<(Instant, Option<u32>)>,
}

impl ReadyWorker {
    /// The worker's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.process.pid
    }

    /// The CPU the worker is polling for `Run` on, if it still is: it reported `Ready` from
    /// there less than `ready_spin` ago.
    pub(crate) fn polling_on(&self, ready_spin: Duration) -> Option<u32> {
        let (at, cpu) = self.ready?;
        if at.elapsed() < ready_spin { cpu } else { None }
    }

    /// Whether the worker died while idle.
    pub(crate) fn is_dead(&self) -> bool {
        self.process.exited().is_some()
    }

    /// Waits for `Ready` from a freshly forked worker, up to `limit`.
    pub(crate) async fn handshake(
        mut process: WorkerProcess,
        limit: Duration,
        frame_cap: usize,
    ) -> Result<ReadyWorker, SandboxError> {
        let Some(socket) = process.socket.take() else {
            return Err(SandboxError::setup("the zygote sent no socket"));
        };
        let stream =
            to_tokio(socket).map_err(|e| SandboxError::io("registering a worker socket", e))?;
        let mut w = ReadyWorker {
            process,
            stream,
            inbuf: Vec::new(),
            ready: None,
        };
        let mut scratch = vec![0u8; 4096];
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match protocol::split_frame(&w.inbuf, frame_cap) {
                Split::Frame { len } => {
                    let frame: Result<WorkerFrame, _> =
                        serde_json::from_slice(&w.inbuf[protocol::HEADER..protocol::HEADER + len]);
                    w.inbuf.drain(..protocol::HEADER + len);
                    return match frame {
                        Ok(WorkerFrame::Ready { pid, cpu }) if pid == w.process.pid => {
                            w.ready = Some((Instant::now(), cpu));
                            Ok(w)
                        }
                        Ok(other) => Err(SandboxError::setup(format!(
                            "expected Ready from worker {}, got {}",
                            w.process.pid,
                            frame_name(&other)
                        ))),
                        Err(e) => Err(SandboxError::setup(format!("malformed Ready frame: {e}"))),
                    };
                }
                Split::TooLarge { len } => {
                    return Err(SandboxError::setup(format!(
                        "oversized first frame ({len} bytes)"
                    )));
                }
                Split::Incomplete => {}
            }
            let read = tokio::time::timeout_at(deadline, w.stream.read(&mut scratch)).await;
            match read {
                Err(_) => {
                    return Err(SandboxError::setup(format!(
                        "worker {} did not report Ready within {} ms",
                        w.process.pid,
                        limit.as_millis()
                    )));
                }
                Ok(Ok(0)) | Ok(Err(_)) => {
                    let exit = w.process.wait_exit(EXIT_REPORT_WAIT).await;
                    return Err(SandboxError::setup(describe_setup_exit(exit)));
                }
                Ok(Ok(n)) => w.inbuf.extend_from_slice(&scratch[..n]),
            }
        }
    }

    /// The supervisor's seccomp self-check: asks this worker to make a forbidden syscall and
    /// reports how it died (`SeccompViolation` when the filter works).
    pub(crate) async fn forbidden_syscall(mut self) -> Outcome {
        let mut frame = Vec::new();
        if protocol::encode(&HostFrame::ForbiddenSyscall, &mut frame).is_err()
            || self.stream.write_all(&frame).await.is_err()
        {
            return Outcome::ProtocolError {
                detail: "could not send the self-check".into(),
            };
        }
        let mut scratch = [0u8; 256];
        loop {
            match tokio::time::timeout(Duration::from_secs(5), self.stream.read(&mut scratch)).await
            {
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(_)) => continue,
                Err(_) => {
                    return Outcome::ProtocolError {
                        detail: "the worker survived a forbidden syscall for 5 s".into(),
                    };
                }
            }
        }
        let exit = self.process.wait_exit(EXIT_REPORT_WAIT).await;
        classify_exit(exit, false)
    }
}

fn to_tokio(socket: OwnedFd) -> std::io::Result<UnixStream> {
    let std = std::os::unix::net::UnixStream::from(socket);
    std.set_nonblocking(true)?;
    UnixStream::from_std(std)
}

fn frame_name(f: &WorkerFrame) -> &'static str {
    match f {
        WorkerFrame::Ready { .. } => "Ready",
        WorkerFrame::Call { .. } => "Call",
        WorkerFrame::Done(_) => "Done",
    }
}

fn describe_setup_exit(exit: Option<WorkerExit>) -> String {
    match exit {
        Some(WorkerExit::Code(c)) => match SetupStage::from_code(c) {
            Some(stage) => format!(
                "worker setup failed at {} (exit code {c})",
                stage.describe()
            ),
            None => format!("worker exited with code {c} before Ready"),
        },
        Some(WorkerExit::Signal(s)) => format!(
            "worker killed by signal {s} ({}) before Ready",
            super::outcome::signal_name(s)
        ),
        Some(WorkerExit::Unknown) | None => "worker vanished before Ready".to_owned(),
    }
}

/// How a worker that died without `Done` ended.
fn classify_exit(exit: Option<WorkerExit>, killed_by_us: bool) -> Outcome {
    match exit {
        Some(WorkerExit::Signal(libc::SIGSYS)) => Outcome::SeccompViolation,
        Some(WorkerExit::Signal(libc::SIGKILL)) if killed_by_us => Outcome::Timeout,
        Some(WorkerExit::Signal(signal)) => Outcome::KilledBySignal { signal },
        Some(WorkerExit::Code(c)) => Outcome::ProtocolError {
            detail: match SetupStage::from_code(c) {
                Some(stage) => {
                    format!(
                        "the worker exited with code {c} ({}) without a result",
                        stage.describe()
                    )
                }
                None => format!("the worker exited with code {c} without a result"),
            },
        },
        // Exits are reported by the zygote: without a report, it is the sandbox that failed.
        Some(WorkerExit::Unknown) => Outcome::SandboxUnavailable {
            detail: "the sandbox zygote died while the worker ran".into(),
        },
        None => Outcome::SandboxUnavailable {
            detail: format!(
                "the worker's socket closed and the sandbox zygote reported no exit within {} ms",
                EXIT_REPORT_WAIT.as_millis()
            ),
        },
    }
}

type CallFuture = Pin<Box<dyn Future<Output = (u64, Result<serde_json::Value, String>)> + Send>>;

/// Bridge calls in flight, polled on the cell's own task (no cross-thread wake-ups); dropping
/// the set cancels them.
#[derive(Default)]
struct InFlight(Vec<CallFuture>);

impl InFlight {
    fn next(&mut self) -> impl Future<Output = (u64, Result<serde_json::Value, String>)> + '_ {
        std::future::poll_fn(move |cx| {
            for i in 0..self.0.len() {
                if let Poll::Ready(out) = self.0[i].as_mut().poll(cx) {
                    drop(self.0.swap_remove(i));
                    return Poll::Ready(out);
                }
            }
            Poll::Pending
        })
    }
}

/// Frame bookkeeping of one cell.
struct Frames {
    cap: usize,
    calls: u32,
    last_id: u64,
    max_calls: u32,
    trace: Option<HostTrace>,
    /// The CPU the worker's last `Call` came from, while it is known to be polling there.
    peer_cpu: Option<u32>,
    /// When the worker's last `Call` was read.
    peer_seen: Instant,
}

/// How the task of a cell alone in flight waits for its worker's frames (see [`CellRun::drive`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SoloWait {
    /// The supervisor's policy and window.
    pub(crate) spin: Spin,
    /// How long the worker polls for a reply before it sleeps (`Polling::worker_window`).
    pub(crate) worker_window: Duration,
    /// The CPU the worker is polling for `Run` on, if it still is.
    pub(crate) worker_cpu: Option<u32>,
}

/// The supervisor's [`mono_ns`] stamps of a traced cell.
#[derive(Default)]
struct HostTrace {
    /// `run_cell` was called.
    submit: u64,
    /// The CPU `Run` was written from.
    cpu: Option<u32>,
    /// Per bridge call, by id (1 first): `[Call read, Reply about to be written]`.
    calls: Vec<[u64; 2]>,
    /// `Done` was read.
    done: u64,
}

impl HostTrace {
    fn call(&mut self, id: u64) -> Option<&mut [u64; 2]> {
        let i = usize::try_from(id).ok()?.checked_sub(1)?;
        if i >= TRACE_CALLS {
            return None;
        }
        if self.calls.len() <= i {
            self.calls.resize(i + 1, [0, 0]);
        }
        self.calls.get_mut(i)
    }

    /// The phases, from both sides' stamps (differences saturate at 0, so a worker's odd stamps
    /// cannot produce negative figures).
    fn phases(&self, worker: &WorkerTrace) -> CellPhases {
        let us = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e3;
        let mut resumed = worker.compiled;
        let mut calls = Vec::with_capacity(worker.calls.len());
        for (i, w) in worker.calls.iter().enumerate() {
            let [sent, replied] = *w;
            let [read, answered] = self.calls.get(i).copied().unwrap_or([0, 0]);
            calls.push(CallPhases {
                guest_us: us(resumed.min(sent), sent),
                hops_us: us(sent, read) + us(answered, replied),
                host_us: us(read, answered),
            });
            resumed = resumed.max(replied);
        }
        CellPhases {
            submit_to_running_us: us(self.submit, worker.run),
            compile_us: us(worker.run, worker.compiled),
            calls,
            tail_us: us(resumed, worker.done),
            result_to_caller_us: us(worker.done, self.done),
            host_cpu: self.cpu,
            worker_cpu: worker.cpu,
            done_ns: worker.done,
        }
    }
}

impl Frames {
    /// Consumes every complete frame in `inbuf`: bridge calls start, `Done` ends the cell, and
    /// anything malformed is a protocol error.
    fn take_frames(
        &mut self,
        inbuf: &mut Vec<u8>,
        bridge: &Arc<dyn Bridge>,
        inflight: &mut InFlight,
    ) -> Option<End> {
        let cap = self.cap;
        let mut consumed = 0;
        let mut now = 0;
        let end = loop {
            let len = match protocol::split_frame(&inbuf[consumed..], cap) {
                Split::Incomplete => break None,
                Split::TooLarge { len } => {
                    break Some(protocol_error(format!(
                        "oversized frame ({len} bytes > {cap})"
                    )));
                }
                Split::Frame { len } => len,
            };
            let body = &inbuf[consumed + protocol::HEADER..consumed + protocol::HEADER + len];
            consumed += protocol::HEADER + len;
            let frame: WorkerFrame = match serde_json::from_slice(body) {
                Ok(f) => f,
                Err(e) => {
                    break Some(protocol_error(format!(
                        "malformed frame: {}",
                        worker_said(&e)
                    )));
                }
            };
            if let Some(trace) = &mut self.trace
                && now == 0
            {
                now = mono_ns();
                trace.done = now;
            }
            match frame {
                WorkerFrame::Done(done) => break Some(End::Done(done)),
                WorkerFrame::Ready { .. } => break Some(protocol_error("unexpected Ready".into())),
                WorkerFrame::Call { id, op, args, cpu } => {
                    self.peer_cpu = cpu;
                    self.peer_seen = Instant::now();
                    if id <= self.last_id {
                        break Some(protocol_error(format!("bridge call id {id} reused")));
                    }
                    self.last_id = id;
                    self.calls += 1;
                    if let Some(call) = self.trace.as_mut().and_then(|t| t.call(id)) {
                        call[0] = now;
                    }
                    if self.calls > self.max_calls {
                        break Some(protocol_error(format!(
                            "more than {} bridge calls (the worker must refuse them)",
                            self.max_calls
                        )));
                    }
                    // One level for the array of arguments. The worker refuses deeper calls
                    // itself; a call that still arrives is refused here, not a protocol error.
                    if input::json_depth_exceeds(
                        args.get().as_bytes(),
                        input::MAX_BRIDGE_ARGUMENT_DEPTH + 1,
                    ) {
                        inflight.0.push(Box::pin(std::future::ready((
                            id,
                            Err(argument_depth_message()),
                        ))));
                        continue;
                    }
                    let args: serde_json::Value = match serde_json::from_str(args.get()) {
                        Ok(v @ serde_json::Value::Array(_)) => v,
                        _ => {
                            break Some(protocol_error(
                                "bridge arguments are not a JSON array".into(),
                            ));
                        }
                    };
                    let bridge = bridge.clone();
                    inflight.0.push(Box::pin(async move {
                        (id, bridge.invoke(op, args).await.map_err(|e| e.message))
                    }));
                }
            }
        };
        inbuf.drain(..consumed);
        end
    }
}

/// How the select loop ended.
enum End {
    Done(Done),
    Outcome(Outcome),
}

/// One cell to run on a ready worker: what it runs, what its bridge calls reach, and how it waits.
pub(crate) struct CellRun<'a> {
    pub code: &'a str,
    pub bridge: Arc<dyn Bridge>,
    pub timeout: Duration,
    pub limits: &'a Limits,
    /// The cell is the only one in flight, so its task may wait on the worker's socket itself
    /// (see [`CellRun::drive`]).
    pub solo: Option<SoloWait>,
    /// The [`mono_ns`] stamp of the submission when the cell's phases are to be measured.
    pub traced_from: Option<u64>,
}

impl CellRun<'_> {
    /// Runs the cell on `worker`, which is killed at the end (the caller drops it, closing its
    /// descriptors, whenever it likes: off the result's path).
    pub(crate) async fn drive(
        self,
        worker: &mut ReadyWorker,
        mut telemetry: CellTelemetry,
    ) -> CellResult {
        let CellRun {
            code,
            bridge,
            timeout,
            limits,
            solo,
            traced_from,
        } = self;
        let Some(out) = run_frame(code, timeout, traced_from.is_some(), limits.frame_bytes) else {
            return CellResult::failed(
                Outcome::LimitExceeded {
                    limit: LimitKind::CodeBytes,
                },
                telemetry,
            );
        };
        let sent_at = Instant::now();
        let deadline = tokio::time::Instant::from_std(sent_at + timeout);
        let sleep = tokio::time::sleep_until(deadline);
        tokio::pin!(sleep);
        let mut x = Exchange {
            out,
            out_pos: 0,
            inflight: InFlight::default(),
            inbuf: std::mem::take(&mut worker.inbuf),
            frames: Frames {
                cap: limits.frame_bytes,
                calls: 0,
                last_id: 0,
                max_calls: limits.bridge_calls,
                trace: traced_from.map(|submit| HostTrace {
                    submit,
                    cpu: protocol::current_cpu(),
                    ..HostTrace::default()
                }),
                peer_cpu: solo.and_then(|s| s.worker_cpu),
                peer_seen: Instant::now(),
            },
            bridge,
            spin: solo.map(|s| s.spin),
            worker_window: solo.map_or(Duration::ZERO, |s| s.worker_window),
            spin_from: sent_at,
            fd: worker.stream.as_raw_fd(),
        };
        let (mut rd, mut wr) = worker.stream.split();
        let end = 'cell: loop {
            if let Some(end) = x.wait_solo() {
                break 'cell end;
            }
            tokio::select! {
                biased;
                () = &mut sleep => {
                    worker.process.kill();
                    telemetry.killed_at_deadline = true;
                    break 'cell End::Outcome(Outcome::Timeout);
                }
                // `read_buf` is cancel-safe and fills spare capacity without zeroing it first.
                read = rd.read_buf(&mut x.inbuf), if reserve(&mut x.inbuf) => {
                    match read {
                        Ok(0) | Err(_) => {
                            // Bounded by the cell's deadline too: a stopped zygote never reports.
                            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                            let wait = EXIT_REPORT_WAIT.min(left.max(EXIT_REPORT_FLOOR));
                            let exit = worker.process.wait_exit(wait).await;
                            break 'cell End::Outcome(classify_exit(exit, false));
                        }
                        Ok(_) => {}
                    }
                    if let Some(end) = x.read_frames() {
                        break 'cell end;
                    }
                }
                written = wr.write(&x.out[x.out_pos..]), if x.out_pos < x.out.len() => {
                    x.wrote(written);
                }
                (id, result) = x.inflight.next(), if !x.inflight.0.is_empty() => {
                    x.reply(id, result);
                }
            }
        };
        let Exchange {
            inflight, frames, ..
        } = x;
        drop(inflight);
        worker.process.kill();
        telemetry.worker_pid = worker.process.pid;
        telemetry.run_ms = sent_at.elapsed().as_secs_f64() * 1e3;
        telemetry.bridge_calls = frames.calls;
        match end {
            End::Outcome(outcome) => CellResult::failed(outcome, telemetry),
            End::Done(mut done) => {
                if let (Some(host), Some(worker)) = (&frames.trace, done.trace.take()) {
                    telemetry.phases = Some(host.phases(&worker));
                }
                finish(done, limits, telemetry)
            }
        }
    }
}

/// The encoded `Run` frame of a cell; `None` when it exceeds the frame cap.
fn run_frame(code: &str, timeout: Duration, trace: bool, cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(code.len() + 128);
    let run = HostFrame::Run(RunCell {
        code: code.to_owned(),
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        trace,
        cpu: protocol::current_cpu(),
    });
    if protocol::encode(&run, &mut out).is_err() || out.len() > cap + protocol::HEADER {
        return None;
    }
    Some(out)
}

/// The host's side of one cell's exchange with its worker: the bytes still to write, what has
/// been read, the bridge calls in flight, and how a solo cell waits.
struct Exchange {
    out: Vec<u8>,
    out_pos: usize,
    inflight: InFlight,
    inbuf: Vec<u8>,
    frames: Frames,
    bridge: Arc<dyn Bridge>,
    spin: Option<Spin>,
    worker_window: Duration,
    /// When the last exchange with the worker happened (a solo wait's window starts there).
    spin_from: Instant,
    fd: std::os::fd::RawFd,
}

impl Exchange {
    /// Consumes the frames read so far; the next solo window starts now.
    fn read_frames(&mut self) -> Option<End> {
        let end = self
            .frames
            .take_frames(&mut self.inbuf, &self.bridge, &mut self.inflight);
        if end.is_none() {
            self.spin_from = Instant::now();
        }
        end
    }

    /// A solo cell with nothing to write and no bridge call in flight waits on the worker's socket
    /// itself before it waits in the reactor.
    ///
    /// The worker answers fastest right after it was sent something; sleeping in the reactor and
    /// being woken costs tens of microseconds per hop on a virtualized host. So a solo cell's task
    /// waits on the socket itself for a short window after each exchange, and only then in the
    /// reactor: it polls with direct non-blocking reads while the worker runs on another CPU, and
    /// sleeps in `ppoll` otherwise (polling there would hold the very CPU the worker needs; see
    /// `PollWhen`). It does not yield while polling: on Tokio's multi-threaded runtime every yield
    /// wakes a parked worker thread to steal the task, and on a 2-vCPU host that thread lands on
    /// the sandbox worker's CPU and preempts it (measured with `perf sched`). The cost is bounded:
    /// at most one window of one runtime thread per exchange, and only while no other cell is in
    /// flight.
    fn wait_solo(&mut self) -> Option<End> {
        let spin = self.spin?;
        if self.out_pos < self.out.len() || !self.inflight.0.is_empty() {
            return None;
        }
        let window = spin.window(self.frames.peer_cpu);
        // With the worker on another CPU, poll; otherwise (same CPU, or unknown) sleep on the
        // socket itself, which hands the CPU to the worker at once and is woken by its write
        // without the runtime's park and unpark (see `Spin::window`).
        let sleep_for = match spin.when {
            PollWhen::PeerOnOtherCpu if window.is_zero() => {
                Duration::from_micros(u64::from(spin.micros))
                    .saturating_sub(self.spin_from.elapsed())
            }
            _ => Duration::ZERO,
        };
        while self.spin_from.elapsed() < window && reserve(&mut self.inbuf) {
            match read_now(self.fd, &mut self.inbuf) {
                Ok(0) => break,
                Ok(_) => {
                    if let Some(end) = self.read_frames() {
                        return Some(end);
                    }
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::hint::spin_loop();
                }
                Err(_) => break,
            }
        }
        if !sleep_for.is_zero()
            && reserve(&mut self.inbuf)
            && readable_within(self.fd, sleep_for)
            && matches!(read_now(self.fd, &mut self.inbuf), Ok(n) if n > 0)
        {
            return self.read_frames();
        }
        None
    }

    /// Accounts for one write of pending frames.
    fn wrote(&mut self, written: std::io::Result<usize>) {
        match written {
            Ok(n) => {
                self.out_pos += n;
                if self.out_pos == self.out.len() {
                    self.out.clear();
                    self.out_pos = 0;
                }
            }
            // The worker is gone; the read side reports how.
            Err(_) => {
                self.out.clear();
                self.out_pos = 0;
            }
        }
    }

    /// Queues the reply of a finished bridge call.
    fn reply(&mut self, id: u64, result: Result<serde_json::Value, String>) {
        // A worker left waiting longer than its own window went to sleep: where the reply wakes
        // it is the scheduler's choice (often this CPU, which polling would then hold), so it
        // counts as unknown until its next frame.
        if self.frames.peer_seen.elapsed() > self.worker_window {
            self.frames.peer_cpu = None;
        }
        encode_reply(
            id,
            result,
            self.frames.cap,
            protocol::current_cpu(),
            &mut self.out,
        );
        // Stamped when the reply is ready to go: the write follows at once.
        if let Some(call) = self.frames.trace.as_mut().and_then(|t| t.call(id)) {
            call[1] = mono_ns();
        }
        self.spin_from = Instant::now();
    }
}

/// One non-blocking `read(2)` into `buf`'s spare capacity.
///
/// Deliberately not Tokio's `try_read_buf`: that one answers `WouldBlock` from its cached
/// readiness without a syscall until the reactor has seen the socket's next edge, and the
/// reactor runs on whichever runtime thread is parked in `epoll_wait`, which has to be woken
/// and scheduled first (measured: often behind the spinning worker on the other vCPU, hundreds
/// of microseconds). Reading the fd directly sees a frame as soon as the worker wrote it. Tokio
/// tolerates the bypass: a stale readiness only costs its next read one `WouldBlock`.
fn read_now(fd: std::os::fd::RawFd, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    // SAFETY: `spare` is writable memory of `spare.len()` bytes owned by `buf`; MSG_DONTWAIT
    // never blocks; the fd stays open while `worker.stream` lives (the caller borrows it).
    let n = unsafe {
        libc::recv(
            fd,
            spare.as_mut_ptr().cast::<libc::c_void>(),
            spare.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let n = n as usize;
    // SAFETY: the kernel initialised the first `n` bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// Sleeps in `ppoll(2)` until `fd` is readable (`true`) or `limit` passed (`false`). Blocks the
/// calling runtime thread, like the solo cell's polling: only ever for a short, bounded time
/// (`limit`, plus at most [`WINDOW_TIMER_SLACK`]).
///
/// The sleep runs with a timer slack of [`WINDOW_TIMER_SLACK`] so that its timeout never becomes
/// the CPU's earliest timer: a window of a few hundred microseconds is shorter than the time to
/// the next scheduler tick, and arming it would reprogram the CPU's timer hardware, then
/// cancelling it on the worker's write would reprogram it again. On a virtual machine each
/// reprogramming is a trap to the hypervisor (12–15 µs on each side of every sleep on one VM; see
/// `docs/sandbox-performance.md`). With the slack the kernel lets the timeout ride on the next tick
/// instead; the worker's write still wakes this thread at once.
fn readable_within(fd: std::os::fd::RawFd, limit: Duration) -> bool {
    // Failure only leaves the default slack (and the slower wake-up): never worth an error.
    let _ = nix::sys::prctl::set_timerslack(WINDOW_TIMER_SLACK.as_nanos() as libc::c_ulong);
    let readable = ppoll_readable(fd, limit);
    // 0 restores this thread's default slack, so the runtime's own timers stay precise.
    let _ = nix::sys::prctl::set_timerslack(0);
    readable
}

/// The timer slack of the solo cell's `ppoll` ([`readable_within`]): one scheduler tick at
/// `HZ=250`, so the timeout is due no earlier than the next tick on any common kernel.
const WINDOW_TIMER_SLACK: Duration = Duration::from_millis(4);

fn ppoll_readable(fd: std::os::fd::RawFd, limit: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: limit.as_secs() as libc::time_t,
        tv_nsec: limit.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec; no signal mask is changed.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    n > 0
}

/// Keeps at least 4 KiB of spare capacity for the next read, growing by doubling (always `true`,
/// for `select!`). Small on purpose: most cells exchange a few KiB, and a 64 KiB buffer per cell
/// made glibc consolidate and trim its heap on every cell.
fn reserve(buf: &mut Vec<u8>) -> bool {
    if buf.capacity() - buf.len() < 4 * 1024 {
        buf.reserve(buf.len().max(8 * 1024));
    }
    true
}

/// The refusal of a call whose arguments nest deeper than [`input::MAX_BRIDGE_ARGUMENT_DEPTH`]
/// (the worker's and the supervisor's wording).
pub(crate) fn argument_depth_message() -> String {
    format!(
        "bridge arguments nested deeper than {} levels of arrays and objects (limit \
         MAX_BRIDGE_ARGUMENT_DEPTH); pass flatter arguments",
        input::MAX_BRIDGE_ARGUMENT_DEPTH
    )
}

/// A parse error about worker-supplied bytes, made safe to show: serde quotes an unknown field's
/// name whole, so the message is bounded like any echo of untrusted input
/// ([`input::MAX_ECHO_CHARS`]) and its control characters are removed.
fn worker_said(e: &serde_json::Error) -> String {
    terminal_safe(&input::echo(&e.to_string()).to_string()).into_owned()
}

fn protocol_error(detail: String) -> End {
    End::Outcome(Outcome::ProtocolError { detail })
}

/// Appends the `Reply` frame for call `id` to `out`. A value is serialized straight into the frame
/// (no intermediate JSON string); if the frame would exceed `cap` it is replaced by an error reply.
fn encode_reply(
    id: u64,
    result: Result<serde_json::Value, String>,
    cap: usize,
    cpu: Option<u32>,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let message = match result {
        Ok(value) => {
            let frame = protocol::ReplyRef::Ok {
                id,
                value: &value,
                cpu,
            };
            match protocol::encode(&frame, out) {
                Ok(()) if out.len() - start <= cap + protocol::HEADER => return,
                Ok(()) => {
                    let bytes = out.len() - start;
                    out.truncate(start);
                    format!(
                        "the tool result is too large for the sandbox ({bytes} bytes, at most \
                         {cap}); ask for less"
                    )
                }
                Err(e) => format!("the tool result could not be encoded: {e}"),
            }
        }
        Err(mut message) => {
            truncate_to(&mut message, cap / 2);
            message
        }
    };
    let frame = protocol::ReplyRef::Err {
        id,
        message: &message,
        cpu,
    };
    if protocol::encode(&frame, out).is_err() {
        let fallback = protocol::ReplyRef::Err {
            id,
            message: "the tool result could not be encoded",
            cpu,
        };
        let _ = protocol::encode(&fallback, out);
    }
}

/// Validates the worker's `Done` and builds the result (never trusting its counters).
fn finish(done: Done, limits: &Limits, mut telemetry: CellTelemetry) -> CellResult {
    let (logs, log_bytes, cut) = revalidate_logs(done.logs, limits.log_bytes);
    telemetry.log_bytes = log_bytes;
    telemetry.logs_dropped = done.logs_dropped.saturating_add(cut);
    let logs_truncated = telemetry.logs_dropped > 0;
    let mut value = None;
    let outcome = match done.status {
        // A JSON `null` value arrives as `None` (serde's Option), so `None` means null here.
        DoneStatus::Ok => match done
            .value
            .as_deref()
            .map_or(Ok(serde_json::Value::Null), parse_result)
        {
            Ok(v) => {
                let bytes = done.value.as_deref().map_or(4, |r| r.get().len());
                telemetry.result_bytes = bytes;
                if bytes > limits.result_bytes {
                    Outcome::LimitExceeded {
                        limit: LimitKind::ResultBytes,
                    }
                } else {
                    value = Some(v);
                    Outcome::Ok
                }
            }
            Err(e) => Outcome::ProtocolError {
                detail: format!("the result is not valid JSON: {}", worker_said(&e)),
            },
        },
        DoneStatus::JsError => {
            let mut message = terminal_safe(done.error.as_deref().unwrap_or("error")).into_owned();
            truncate_to(&mut message, 8 * 1024);
            Outcome::JsError { message }
        }
        DoneStatus::Timeout => Outcome::Timeout,
        DoneStatus::Memory => Outcome::Memory,
        DoneStatus::ResultTooLarge => {
            telemetry.result_bytes = done.result_bytes;
            Outcome::LimitExceeded {
                limit: LimitKind::ResultBytes,
            }
        }
        DoneStatus::BridgeCallLimit => Outcome::LimitExceeded {
            limit: LimitKind::BridgeCalls,
        },
        DoneStatus::ArgumentTooLarge => Outcome::LimitExceeded {
            limit: LimitKind::ArgumentBytes,
        },
        DoneStatus::ArgumentTooDeep => Outcome::LimitExceeded {
            limit: LimitKind::ArgumentDepth,
        },
    };
    CellResult {
        outcome,
        value,
        logs,
        logs_truncated,
        telemetry,
    }
}

fn parse_result(raw: &RawValue) -> Result<serde_json::Value, serde_json::Error> {
    serde_json::from_str(raw.get())
}

/// Strips control sequences again and enforces the byte and line caps on the supervisor's side.
fn revalidate_logs(lines: Vec<LogLine>, cap: usize) -> (Vec<LogLine>, usize, usize) {
    let mut remaining = cap;
    let mut bytes = 0;
    let mut cut = 0;
    let mut kept = Vec::with_capacity(lines.len().min(input::MAX_LOG_LINES));
    for mut line in lines {
        if remaining == 0 || kept.len() >= input::MAX_LOG_LINES {
            cut += 1;
            continue;
        }
        if let std::borrow::Cow::Owned(s) = terminal_safe(&line.text) {
            line.text = s;
        }
        let cost = line.text.len() + 1;
        if cost > remaining {
            truncate_to(&mut line.text, remaining.saturating_sub(1));
            remaining = 0;
            cut += 1;
        } else {
            remaining -= cost;
        }
        bytes += line.text.len();
        kept.push(line);
    }
    (kept, bytes, cut)
}

/// What the host makes of the bytes a worker wrote, without a worker (the fuzz target).
#[cfg(feature = "fuzzing")]
pub(crate) struct Decoded {
    /// Bridge calls the frames started (their futures are never polled).
    pub(crate) calls_started: usize,
    /// The cell's result when the frames ended it: from a `Done` frame, or a protocol error.
    pub(crate) result: Option<CellResult>,
    /// Bytes left unconsumed (an incomplete frame).
    pub(crate) left: usize,
}

/// Feeds `bytes`, as if read from a worker in `chunk`-byte reads, through the supervisor's
/// frame decoder ([`Frames::take_frames`]) and, on `Done`, through [`finish`].
#[cfg(feature = "fuzzing")]
pub(crate) fn decode_worker_bytes(bytes: &[u8], chunk: usize, limits: &Limits) -> Decoded {
    struct NoBridge;
    #[async_trait::async_trait]
    impl Bridge for NoBridge {
        async fn invoke(
            &self,
            _op: super::bridge::BridgeOp,
            _args: serde_json::Value,
        ) -> Result<serde_json::Value, crate::catalog::ToolError> {
            Ok(serde_json::Value::Null)
        }
    }
    let bridge: Arc<dyn Bridge> = Arc::new(NoBridge);
    let mut state = Frames {
        cap: limits.frame_bytes,
        calls: 0,
        last_id: 0,
        max_calls: limits.bridge_calls,
        trace: None,
        peer_cpu: None,
        peer_seen: Instant::now(),
    };
    let mut inflight = InFlight(Vec::new());
    let mut inbuf = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        inbuf.extend_from_slice(piece);
        if let Some(end) = state.take_frames(&mut inbuf, &bridge, &mut inflight) {
            let result = match end {
                End::Outcome(outcome) => CellResult::failed(outcome, CellTelemetry::default()),
                End::Done(done) => finish(done, limits, CellTelemetry::default()),
            };
            return Decoded {
                calls_started: inflight.0.len(),
                result: Some(result),
                left: inbuf.len(),
            };
        }
    }
    Decoded {
        calls_started: inflight.0.len(),
        result: None,
        left: inbuf.len(),
    }
}

#[cfg(test)]
mod tests {
    //! The supervisor's side of the protocol against a fake worker that misbehaves.
    use std::io::Write;

    use super::*;
    use crate::sandbox::outcome::LogLevel;

    #[test]
    fn the_windowed_sleep_sees_a_frame_gives_up_in_time_and_restores_the_timer_slack() {
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap_or_else(|e| panic!("{e}"));
        let fd = a.as_raw_fd();
        let slack = || nix::sys::prctl::get_timerslack().unwrap_or_else(|e| panic!("{e}"));
        let before = slack();
        // Nothing to read: back within the window plus the slack (one tick at most), not later.
        let started = Instant::now();
        assert!(!readable_within(fd, Duration::from_micros(300)));
        assert!(
            started.elapsed() < Duration::from_micros(300) + WINDOW_TIMER_SLACK * 25,
            "{:?}",
            started.elapsed()
        );
        b.write_all(b"x").unwrap_or_else(|e| panic!("{e}"));
        assert!(readable_within(fd, Duration::from_secs(5)));
        // The runtime thread's own timers keep their precision.
        assert_eq!(slack(), before);
    }

    struct NoBridge;

    #[async_trait::async_trait]
    impl Bridge for NoBridge {
        async fn invoke(
            &self,
            _op: super::super::bridge::BridgeOp,
            _args: serde_json::Value,
        ) -> Result<serde_json::Value, crate::catalog::ToolError> {
            Ok(serde_json::Value::Null)
        }
    }

    /// Runs a cell against a fake worker that sends `bytes` and then closes its socket.
    async fn against(bytes: Vec<u8>) -> CellResult {
        let (ours, theirs) =
            std::os::unix::net::UnixStream::pair().unwrap_or_else(|e| panic!("{e}"));
        ours.set_nonblocking(true).unwrap_or_else(|e| panic!("{e}"));
        let writer = std::thread::spawn(move || {
            let mut theirs = theirs;
            let _ = theirs.write_all(&bytes);
            // Keep the socket open briefly so the frames are read before EOF.
            std::thread::sleep(Duration::from_millis(50));
        });
        let mut worker = ReadyWorker {
            process: WorkerProcess::fake(),
            stream: UnixStream::from_std(ours).unwrap_or_else(|e| panic!("{e}")),
            inbuf: Vec::new(),
            ready: None,
        };
        let limits = Limits::default().clamped();
        let r = CellRun {
            code: "return 1",
            bridge: Arc::new(NoBridge),
            timeout: Duration::from_secs(5),
            limits: &limits,
            solo: Some(SoloWait {
                spin: Spin {
                    when: protocol::PollWhen::Always,
                    micros: 250,
                },
                worker_window: Duration::from_micros(150),
                worker_cpu: None,
            }),
            traced_from: None,
        }
        .drive(&mut worker, CellTelemetry::default())
        .await;
        let _ = writer.join();
        r
    }

    fn frame(msg: &WorkerFrame) -> Vec<u8> {
        let mut out = Vec::new();
        protocol::encode(msg, &mut out).unwrap_or_else(|e| panic!("{e}"));
        out
    }

    fn raw(json: &str) -> Vec<u8> {
        let mut out = (json.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        out
    }

    fn protocol_detail(r: &CellResult) -> &str {
        match &r.outcome {
            Outcome::ProtocolError { detail } => detail,
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn oversized_frame_is_a_protocol_error() {
        let r = against(u32::MAX.to_le_bytes().to_vec()).await;
        assert!(protocol_detail(&r).starts_with("oversized frame"), "{r:?}");
    }

    #[tokio::test]
    async fn malformed_frame_is_a_protocol_error() {
        let r = against(raw("{not json")).await;
        assert!(protocol_detail(&r).starts_with("malformed frame"), "{r:?}");
        let r = against(raw("{\"launch_missiles\":{}}")).await;
        assert!(protocol_detail(&r).starts_with("malformed frame"), "{r:?}");
    }

    /// serde quotes an unknown field's name whole: a worker naming a field with 40 KiB of text
    /// (and control characters) must not get it into the model's error (a worker_frames fuzz
    /// finding).
    #[tokio::test]
    async fn a_protocol_error_quotes_the_worker_bounded_and_without_controls() {
        let field = format!("erro\\u001b[31m{}", "x".repeat(40 * 1024));
        let r = against(raw(&format!(
            "{{\"done\":{{\"status\":\"ok\",\"{field}\":0}}}}"
        )))
        .await;
        let detail = protocol_detail(&r);
        assert!(detail.starts_with("malformed frame"), "{detail}");
        assert!(detail.contains("erro"), "{detail}");
        assert!(detail.len() <= 600, "{} bytes", detail.len());
        assert!(!detail.contains('\u{1b}'), "{detail}");
    }

    #[tokio::test]
    async fn unexpected_ready_is_a_protocol_error() {
        let r = against(frame(&WorkerFrame::Ready { pid: 1, cpu: None })).await;
        assert_eq!(protocol_detail(&r), "unexpected Ready");
    }

    #[tokio::test]
    async fn reused_call_id_is_a_protocol_error() {
        let call = |id| {
            raw(&format!(
                "{{\"call\":{{\"id\":{id},\"op\":\"search\",\"args\":[]}}}}"
            ))
        };
        let mut bytes = call(1);
        bytes.extend(call(1));
        let r = against(bytes).await;
        assert_eq!(protocol_detail(&r), "bridge call id 1 reused");
    }

    #[tokio::test]
    async fn non_array_arguments_are_a_protocol_error() {
        let r = against(raw(
            "{\"call\":{\"id\":1,\"op\":\"call\",\"args\":{\"a\":1}}}",
        ))
        .await;
        assert_eq!(protocol_detail(&r), "bridge arguments are not a JSON array");
    }

    #[tokio::test]
    async fn an_exit_the_zygote_never_reported_is_the_sandbox_not_the_worker() {
        // The fake worker's exit report channel is closed: as when the zygote died.
        let r = against(Vec::new()).await;
        assert_eq!(
            r.outcome,
            Outcome::SandboxUnavailable {
                detail: "the sandbox zygote died while the worker ran".into()
            }
        );
        assert_eq!(r.outcome.kind(), "sandbox_unavailable");
    }

    #[tokio::test]
    async fn a_too_deep_call_is_answered_with_an_error_not_a_kill() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let mut bytes = raw(&format!(
            "{{\"call\":{{\"id\":1,\"op\":\"call\",\"args\":[\"x\",{deep}]}}}}"
        ));
        bytes.extend(raw("{\"launch_missiles\":{}}"));
        // The deep call is refused; only the malformed frame after it is a protocol error.
        let r = against(bytes).await;
        assert!(protocol_detail(&r).starts_with("malformed frame"), "{r:?}");
        assert!(argument_depth_message().contains("MAX_BRIDGE_ARGUMENT_DEPTH"));
    }

    #[tokio::test]
    async fn done_is_revalidated() {
        let done = Done {
            status: DoneStatus::Ok,
            value: Some(RawValue::from_string("[1]".into()).unwrap_or_else(|e| panic!("{e}"))),
            error: None,
            logs: vec![
                LogLine {
                    level: LogLevel::Log,
                    text: "\u{1b}[31mred".into(),
                },
                LogLine {
                    level: LogLevel::Log,
                    text: "x".repeat(200_000),
                },
            ],
            logs_dropped: 0,
            log_bytes: 0,
            bridge_calls: 99,
            result_bytes: 3,
            trace: None,
        };
        let r = against(frame(&WorkerFrame::Done(done))).await;
        assert_eq!(r.outcome, Outcome::Ok);
        assert_eq!(r.value, Some(serde_json::json!([1])));
        assert_eq!(r.logs[0].text, "[31mred");
        assert!(r.logs_truncated);
        assert!(
            r.logs.iter().map(|l| l.text.len() + 1).sum::<usize>() <= Limits::default().log_bytes
        );
        assert_eq!(
            r.telemetry.bridge_calls, 0,
            "the supervisor counts calls itself"
        );
    }

    #[test]
    fn phases_come_from_both_sides_stamps() {
        let us = 1_000;
        let host = HostTrace {
            submit: 100 * us,
            cpu: Some(0),
            calls: vec![[260 * us, 390 * us]],
            done: 470 * us,
        };
        let worker = WorkerTrace {
            run: 150 * us,
            compiled: 200 * us,
            calls: vec![[250 * us, 400 * us]],
            done: 450 * us,
            cpu: Some(1),
        };
        let p = host.phases(&worker);
        assert_eq!(p.submit_to_running_us, 50.0);
        assert_eq!(p.compile_us, 50.0);
        assert_eq!(
            p.calls,
            vec![CallPhases {
                guest_us: 50.0,
                hops_us: 20.0,
                host_us: 130.0,
            }]
        );
        assert_eq!(p.tail_us, 50.0);
        assert_eq!(p.result_to_caller_us, 20.0);
        assert_eq!((p.host_cpu, p.worker_cpu), (Some(0), Some(1)));
        // A worker's stamps are untrusted: out of order, they give zeros, never negative figures.
        let odd = WorkerTrace {
            run: 1,
            compiled: 0,
            calls: vec![[u64::MAX, 0], [0, 0]],
            done: 0,
            cpu: None,
        };
        let p = host.phases(&odd);
        assert_eq!(p.submit_to_running_us, 0.0);
        assert_eq!(p.calls.len(), 2);
        assert!(
            p.calls
                .iter()
                .all(|c| c.guest_us >= 0.0 && c.hops_us >= 0.0)
        );
        assert!(p.tail_us >= 0.0);
    }
}
