//! The wire formats: supervisor ⇄ worker frames and supervisor ⇄ zygote messages (STYLE §3).
//!
//! Owns: [`HostFrame`] (supervisor → worker), [`WorkerFrame`] (worker → supervisor), their
//! length-prefixed encoding, [`ZygoteRequest`]/[`ZygoteEvent`] (one JSON message per
//! `SOCK_SEQPACKET` packet) and the worker's setup exit codes.
//! Never does: trust a length or a field; decoding is bounded by the caller's frame cap.
//! Invariants: a frame is `u32` little-endian body length + one JSON value of one tagged enum;
//! a length above the cap, a body that does not parse, or an unknown tag is a protocol error; every
//! bridge call carries a request id that its reply echoes.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::bridge::BridgeOp;
use super::outcome::LogLine;

/// Bytes of the length prefix.
pub(crate) const HEADER: usize = 4;

/// Largest zygote message (requests and events are small fixed-shape JSON).
pub(crate) const ZYGOTE_MSG_MAX: usize = 4096;

/// Supervisor → worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum HostFrame {
    /// Run one cell. Sent once, to a worker that reported `Ready`.
    Run(RunCell),
    /// The answer to `WorkerFrame::Call` with the same id.
    Reply {
        /// The call's id.
        id: u64,
        /// The outcome.
        result: ReplyResult,
        /// The CPU the supervisor wrote this from (see [`RunCell::cpu`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u32>,
    },
    /// Supervisor self-check: perform a syscall outside the allow-list (expects `SIGSYS`).
    ForbiddenSyscall,
}

/// Parameters of one cell.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunCell {
    /// The JavaScript body (wrapped as an async function by the worker).
    pub code: String,
    /// Wall-clock budget in ms, already clamped.
    pub timeout_ms: u64,
    /// Stamp the cell's phases and report them in [`Done::trace`] (the benchmark's
    /// `CellOptions::trace_phases`).
    #[serde(default)]
    pub trace: bool,
    /// The CPU the supervisor wrote this frame from, if known: a waiting worker spins only while
    /// its supervisor runs on another CPU (`Channel::wait_readable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
}

/// A bridge call's outcome, as sent to the worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ReplyResult {
    /// Resolve with this JSON.
    Ok(Box<RawValue>),
    /// Reject with an `Error` whose message is this.
    Err(String),
}

/// A [`HostFrame::Reply`] as the supervisor encodes it: it borrows the tool's value and serializes
/// it straight into the frame instead of first turning it into JSON text. Same wire shape (the
/// worker decodes it as `HostFrame`; a test pins that).
pub(crate) enum ReplyRef<'a> {
    /// `{"reply": {"id": id, "result": {"ok": value}, "cpu": cpu}}`.
    Ok {
        /// The call's id.
        id: u64,
        /// The tool's result.
        value: &'a serde_json::Value,
        /// The supervisor's CPU.
        cpu: Option<u32>,
    },
    /// `{"reply": {"id": id, "result": {"err": message}, "cpu": cpu}}`.
    Err {
        /// The call's id.
        id: u64,
        /// The rejection message.
        message: &'a str,
        /// The supervisor's CPU.
        cpu: Option<u32>,
    },
}

impl Serialize for ReplyRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum Wire<'a> {
            Reply {
                id: u64,
                result: WireResult<'a>,
                #[serde(skip_serializing_if = "Option::is_none")]
                cpu: Option<u32>,
            },
        }
        #[derive(Serialize)]
        #[serde(rename_all = "snake_case")]
        enum WireResult<'a> {
            Ok(&'a serde_json::Value),
            Err(&'a str),
        }
        let (id, result, cpu) = match *self {
            ReplyRef::Ok { id, value, cpu } => (id, WireResult::Ok(value), cpu),
            ReplyRef::Err { id, message, cpu } => (id, WireResult::Err(message), cpu),
        };
        Wire::Reply { id, result, cpu }.serialize(serializer)
    }
}

/// Worker → supervisor.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum WorkerFrame {
    /// Hardened, isolate built, seccomp installed: ready for one `Run`.
    Ready {
        /// The worker's pid as it sees it (checked against the zygote's report).
        pid: u32,
        /// The CPU it sent this from: while it polls for `Run` (`WorkerConfig::ready_spin_us`),
        /// that is where it runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u32>,
    },
    /// The guest awaited a bridge call.
    Call {
        /// Unique per cell.
        id: u64,
        /// The operation.
        op: BridgeOp,
        /// JSON array of the JS arguments.
        args: Box<RawValue>,
        /// The CPU the worker wrote this from, if known: the supervisor spins for the reply's
        /// successor only while its worker runs on another CPU (`cell::CellRun::drive`). Untrusted: a
        /// wrong value only changes whether the supervisor polls (bounded) or sleeps.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu: Option<u32>,
    },
    /// The cell is over (every started bridge call has been answered).
    Done(Done),
}

/// The end of a cell, as the worker saw it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Done {
    /// How it ended.
    pub status: DoneStatus,
    /// The JSON result when `status` is `ok`.
    pub value: Option<Box<RawValue>>,
    /// The error text when `status` is `js_error`.
    pub error: Option<String>,
    /// Console lines kept.
    pub logs: Vec<LogLine>,
    /// Console lines dropped or cut.
    pub logs_dropped: usize,
    /// Bytes of console output kept.
    pub log_bytes: usize,
    /// Bridge calls started.
    pub bridge_calls: u32,
    /// Bytes of the JSON result.
    pub result_bytes: usize,
    /// The worker's stamps, when the `Run` asked for them. Untrusted like everything else in the
    /// frame: only ever reported, never acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<WorkerTrace>,
}

/// Bridge calls whose stamps a traced cell records (later calls are not stamped).
pub(crate) const TRACE_CALLS: usize = 64;

/// The worker's side of a traced cell: [`mono_ns`] stamps.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerTrace {
    /// The `Run` frame was decoded.
    pub run: u64,
    /// The body was compiled (the wrapper function exists).
    pub compiled: u64,
    /// Per bridge call, by id (1 first), at most [`TRACE_CALLS`]: `[Call frame written, Reply
    /// decoded]` (0 when it did not happen).
    pub calls: Vec<[u64; 2]>,
    /// Just before the `Done` frame was encoded.
    pub done: u64,
    /// The CPU the worker decoded `Run` on, if known.
    pub cpu: Option<u32>,
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so the stamps of
/// supervisor and worker can be subtracted from each other. A vDSO read (no syscall on x86_64).
pub(crate) fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}

/// The CPU this thread runs on, without a syscall (so it is safe under the worker's seccomp
/// filter): on x86_64, Linux keeps the CPU number in `TSC_AUX` (low 12 bits), which `rdtscp`
/// reads. `None` on other architectures and on CPUs without `rdtscp` (asked once with `cpuid`;
/// forked workers inherit the answer).
pub(crate) fn current_cpu() -> Option<u32> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::atomic::{AtomicU8, Ordering};
        // 0 = not asked yet, 1 = no rdtscp, 2 = rdtscp.
        static RDTSCP: AtomicU8 = AtomicU8::new(0);
        let known = match RDTSCP.load(Ordering::Relaxed) {
            0 => {
                // CPUID 0x8000_0001, EDX bit 27: RDTSCP. Leaf 0x8000_0000 gives the highest
                // extended leaf.
                let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
                let has = max >= 0x8000_0001
                    && core::arch::x86_64::__cpuid(0x8000_0001).edx & (1 << 27) != 0;
                let v = if has { 2 } else { 1 };
                RDTSCP.store(v, Ordering::Relaxed);
                v
            }
            v => v,
        };
        if known != 2 {
            return None;
        }
        let mut aux = 0u32;
        // SAFETY: rdtscp is present (checked above) and only writes `aux`.
        unsafe { core::arch::x86_64::__rdtscp(&mut aux) };
        Some(aux & 0xfff)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// How a cell ended inside the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DoneStatus {
    /// Resolved.
    Ok,
    /// Threw or rejected.
    JsError,
    /// The interrupt handler or the worker's own deadline check fired.
    Timeout,
    /// Uncaught QuickJS out-of-memory.
    Memory,
    /// The result exceeded `result_bytes`.
    ResultTooLarge,
    /// The bridge-call cap's rejection escaped the cell.
    BridgeCallLimit,
    /// The rejection of a call whose arguments exceeded the frame bound escaped the cell.
    ArgumentTooLarge,
    /// The rejection of a call whose arguments nested deeper than
    /// [`MAX_BRIDGE_ARGUMENT_DEPTH`](crate::config::input::MAX_BRIDGE_ARGUMENT_DEPTH) escaped the
    /// cell.
    ArgumentTooDeep,
}

/// Appends one frame (header + JSON) to `out`.
pub(crate) fn encode<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    if let Err(e) = serde_json::to_writer(&mut *out, msg) {
        out.truncate(start);
        return Err(e);
    }
    let len = out.len() - start - HEADER;
    match u32::try_from(len) {
        Ok(n) => {
            out[start..start + HEADER].copy_from_slice(&n.to_le_bytes());
            Ok(())
        }
        Err(_) => {
            out.truncate(start);
            Err(serde::ser::Error::custom("frame longer than 4 GiB"))
        }
    }
}

/// What [`split_frame`] found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Split {
    /// Need more bytes.
    Incomplete,
    /// A complete frame: its body is `buf[HEADER..HEADER + len]`.
    Frame {
        /// Body length.
        len: usize,
    },
    /// The announced length is above the cap.
    TooLarge {
        /// The announced length.
        len: usize,
    },
}

/// Looks for one complete frame at the start of `buf`, bounded by `cap` body bytes.
pub(crate) fn split_frame(buf: &[u8], cap: usize) -> Split {
    let Some(header) = buf.first_chunk::<HEADER>() else {
        return Split::Incomplete;
    };
    let len = u32::from_le_bytes(*header) as usize;
    if len > cap {
        Split::TooLarge { len }
    } else if buf.len() < HEADER + len {
        Split::Incomplete
    } else {
        Split::Frame { len }
    }
}

/// Supervisor → zygote.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ZygoteRequest {
    /// Fork one worker with this configuration.
    Fork {
        /// Echoed in `Forked`/`ForkFailed`.
        token: u64,
        /// How to harden and size it.
        config: WorkerConfig,
    },
    /// Kill every worker, reap them, exit.
    Shutdown,
}

/// Zygote → supervisor.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum ZygoteEvent {
    /// The zygote is up.
    Hello {
        /// Its pid.
        pid: u32,
    },
    /// A worker was forked; the packet carries its socket and (if `pidfd`) its pidfd via
    /// `SCM_RIGHTS`, in that order.
    Forked {
        /// The request's token.
        token: u64,
        /// The worker's pid.
        pid: u32,
        /// Whether a pidfd follows the socket.
        pidfd: bool,
    },
    /// The fork failed.
    ForkFailed {
        /// The request's token.
        token: u64,
        /// `errno` of the failing call.
        errno: i32,
    },
    /// A worker was reaped.
    Exited {
        /// Its pid.
        pid: u32,
        /// Exit code, if it exited.
        code: Option<i32>,
        /// Terminating signal, if it was killed.
        signal: Option<i32>,
    },
}

/// How the zygote hardens and sizes one worker (computed from [`Limits`](super::Limits)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkerConfig {
    /// QuickJS heap limit.
    pub memory_limit: usize,
    /// QuickJS stack limit.
    pub max_stack: usize,
    /// RLIMIT_AS.
    pub address_space: u64,
    /// Largest frame the worker accepts.
    pub frame_bytes: usize,
    /// `Limits::log_bytes`.
    pub log_bytes: usize,
    /// `Limits::result_bytes`.
    pub result_bytes: usize,
    /// `Limits::bridge_calls`.
    pub bridge_calls: u32,
    /// Rehearse a cell before `Ready` (pool workers: it moves first-touch costs off the cell's
    /// path; a worker forked for a waiting cell skips it, the cell would pay it anyway).
    pub rehearse: bool,
    /// How the worker waits for a bridge reply.
    pub spin: Spin,
    /// How long a ready worker polls for `Run` after sending `Ready`, in microseconds.
    pub ready_spin_us: u32,
}

/// When the supervisor's task and a worker poll (busy-wait) for each other's next frame before
/// sleeping ([`Polling`](super::Polling)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PollWhen {
    /// After every frame sent, wherever the peer runs (the first policy; kept for comparison in `bench cells`). When the
    /// scheduler puts both on one CPU, every wait lasts the whole window: the poller holds the
    /// CPU its peer needs to answer.
    Always,
    /// Never: sleep in the runtime's reactor at once; every frame costs a wake-up.
    Never,
    /// Poll only while the peer's last frame came from another CPU. Otherwise a worker sleeps in
    /// `poll(2)`, and the supervisor's task (of a cell alone in flight) sleeps on the worker's
    /// socket in `ppoll(2)` for up to its window (its timeout rides on the next scheduler tick,
    /// see `cell::readable_within`) before falling back to the reactor: that hands the CPU
    /// straight to a worker on the same CPU, and the worker's write wakes it without the
    /// runtime's park and unpark. The default.
    #[default]
    PeerOnOtherCpu,
}

/// A polling policy: when, and for how long at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Spin {
    /// When to poll.
    pub when: PollWhen,
    /// The longest poll, in microseconds.
    pub micros: u32,
}

impl Spin {
    /// How long to poll now, given the CPU the peer last reported.
    pub(crate) fn window(&self, peer_cpu: Option<u32>) -> std::time::Duration {
        let poll = match self.when {
            PollWhen::Always => true,
            PollWhen::Never => false,
            PollWhen::PeerOnOtherCpu => {
                peer_cpu.is_some_and(|peer| current_cpu().is_some_and(|mine| mine != peer))
            }
        };
        if poll {
            std::time::Duration::from_micros(u64::from(self.micros))
        } else {
            std::time::Duration::ZERO
        }
    }
}

/// Exit codes of a worker that failed before `Ready`: one per setup stage, so the supervisor can
/// name the stage (STYLE §3). Codes are in 100..=120 to stay clear of shells' conventions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum SetupStage {
    /// `PR_SET_PDEATHSIG` failed or the zygote was already gone.
    ParentDeath = 101,
    /// Moving the IPC socket or closing inherited fds failed.
    Fds = 102,
    /// `setrlimit` failed.
    Rlimits = 103,
    /// Dropping to uid/gid 65534 failed.
    Identity = 104,
    /// Dropping capabilities failed.
    Capabilities = 105,
    /// `PR_SET_NO_NEW_PRIVS` failed.
    NoNewPrivs = 106,
    /// The QuickJS runtime or context could not be built.
    Isolate = 107,
    /// The prelude failed to load.
    Prelude = 108,
    /// The seccomp filter could not be built or installed.
    Seccomp = 109,
    /// Writing `Ready` or reading the first frame failed.
    Handshake = 110,
    /// The worker's main loop failed to talk to the supervisor.
    Io = 111,
    /// The worker panicked.
    Panic = 112,
}

impl SetupStage {
    const ALL: [SetupStage; 12] = [
        SetupStage::ParentDeath,
        SetupStage::Fds,
        SetupStage::Rlimits,
        SetupStage::Identity,
        SetupStage::Capabilities,
        SetupStage::NoNewPrivs,
        SetupStage::Isolate,
        SetupStage::Prelude,
        SetupStage::Seccomp,
        SetupStage::Handshake,
        SetupStage::Io,
        SetupStage::Panic,
    ];

    /// The process exit code for this stage.
    pub(crate) fn code(self) -> i32 {
        self as i32
    }

    /// The stage that an exit code names, if any.
    pub(crate) fn from_code(code: i32) -> Option<SetupStage> {
        SetupStage::ALL.into_iter().find(|s| s.code() == code)
    }

    /// A human name for reports.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            SetupStage::ParentDeath => "PR_SET_PDEATHSIG (zygote gone?)",
            SetupStage::Fds => "closing inherited file descriptors",
            SetupStage::Rlimits => "setrlimit",
            SetupStage::Identity => "dropping to uid/gid 65534",
            SetupStage::Capabilities => "dropping capabilities",
            SetupStage::NoNewPrivs => "PR_SET_NO_NEW_PRIVS",
            SetupStage::Isolate => "building the QuickJS runtime",
            SetupStage::Prelude => "loading the bridge prelude",
            SetupStage::Seccomp => "installing the seccomp filter",
            SetupStage::Handshake => "the Ready handshake",
            SetupStage::Io => "talking to the supervisor",
            SetupStage::Panic => "a panic in the worker",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrowed_replies_decode_as_host_frames() {
        let value =
            serde_json::json!({"hits": [{"id": "a:b", "score": 1.5}], "s": "\u{1F600}\"\n"});
        let mut buf = Vec::new();
        encode(
            &ReplyRef::Ok {
                id: 3,
                value: &value,
                cpu: Some(1),
            },
            &mut buf,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        encode(
            &ReplyRef::Err {
                id: 4,
                message: "no \"such\" tool",
                cpu: None,
            },
            &mut buf,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut frames = Vec::new();
        let mut at = 0;
        while let Split::Frame { len } = split_frame(&buf[at..], 1 << 20) {
            let frame: HostFrame = serde_json::from_slice(&buf[at + HEADER..at + HEADER + len])
                .unwrap_or_else(|e| panic!("{e}"));
            frames.push(frame);
            at += HEADER + len;
        }
        assert_eq!(at, buf.len());
        match &frames[..] {
            [
                HostFrame::Reply {
                    id: 3,
                    result: ReplyResult::Ok(raw),
                    cpu: Some(1),
                },
                HostFrame::Reply {
                    id: 4,
                    result: ReplyResult::Err(message),
                    cpu: None,
                },
            ] => {
                let back: serde_json::Value =
                    serde_json::from_str(raw.get()).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(back, value);
                assert_eq!(message, "no \"such\" tool");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn frames_round_trip_and_bound() {
        let mut buf = Vec::new();
        let reply = HostFrame::Reply {
            id: 7,
            result: ReplyResult::Ok(
                RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("valid JSON")),
            ),
            cpu: None,
        };
        encode(&reply, &mut buf).unwrap_or_else(|e| panic!("{e}"));
        let Split::Frame { len } = split_frame(&buf, 1 << 20) else {
            panic!("no frame")
        };
        let back: HostFrame =
            serde_json::from_slice(&buf[HEADER..HEADER + len]).unwrap_or_else(|e| panic!("{e}"));
        match back {
            HostFrame::Reply {
                id: 7,
                result: ReplyResult::Ok(v),
                ..
            } => assert_eq!(v.get(), "null"),
            other => panic!("{other:?}"),
        }
        assert_eq!(split_frame(&buf, 3), Split::TooLarge { len });
        assert_eq!(
            split_frame(&buf[..buf.len() - 1], 1 << 20),
            Split::Incomplete
        );
    }

    #[test]
    fn the_cpu_is_read_without_a_syscall_and_matches_the_kernel() {
        // rdtscp and sched_getcpu agree whenever the thread did not migrate between the reads:
        // bracket it by two kernel answers and retry until both brackets agree.
        for _ in 0..1_000 {
            // SAFETY: sched_getcpu has no preconditions.
            let before = unsafe { libc::sched_getcpu() };
            let ours = current_cpu();
            // SAFETY: as above.
            let after = unsafe { libc::sched_getcpu() };
            if before == after && before >= 0 {
                if let Some(cpu) = ours {
                    assert_eq!(i64::from(cpu), i64::from(before));
                }
                return;
            }
        }
        panic!("the thread migrated between every pair of reads");
    }

    #[test]
    fn spin_windows_follow_the_policy() {
        let window = |when, peer| Spin { when, micros: 70 }.window(peer);
        let full = std::time::Duration::from_micros(70);
        assert_eq!(window(PollWhen::Always, None), full);
        assert_eq!(
            window(PollWhen::Never, Some(u32::MAX)),
            std::time::Duration::ZERO
        );
        // An unknown peer CPU is never polled for.
        assert_eq!(
            window(PollWhen::PeerOnOtherCpu, None),
            std::time::Duration::ZERO
        );
        // A CPU no thread runs on is "another CPU" whenever this thread's is known.
        let other = if current_cpu().is_some() {
            full
        } else {
            std::time::Duration::ZERO
        };
        assert_eq!(window(PollWhen::PeerOnOtherCpu, Some(u32::MAX)), other);
    }

    #[test]
    fn frames_without_cpus_or_traces_still_decode() {
        let run: HostFrame =
            serde_json::from_str(r#"{"run": {"code": "return 1", "timeout_ms": 5}}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        match run {
            HostFrame::Run(RunCell {
                trace: false,
                cpu: None,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let ready: WorkerFrame =
            serde_json::from_str(r#"{"ready": {"pid": 7}}"#).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(ready, WorkerFrame::Ready { pid: 7, cpu: None }));
        // A trace is checked field by field like the rest of `Done`.
        let done = |trace: &str| {
            format!(
                r#"{{"done": {{"status": "ok", "value": null, "error": null, "logs": [],
                "logs_dropped": 0, "log_bytes": 0, "bridge_calls": 0, "result_bytes": 0,
                "trace": {{"run": 1, "compiled": 2, "calls": [[3, 4]], "done": 5, "cpu": 0{trace}}}}}}}"#
            )
        };
        match serde_json::from_str::<WorkerFrame>(&done("")) {
            Ok(WorkerFrame::Done(Done {
                trace: Some(trace), ..
            })) => assert_eq!(trace.calls, vec![[3, 4]]),
            other => panic!("{other:?}"),
        }
        assert!(serde_json::from_str::<WorkerFrame>(&done(r#", "extra": 1"#)).is_err());
    }

    #[test]
    fn setup_codes_round_trip() {
        for s in SetupStage::ALL {
            assert_eq!(SetupStage::from_code(s.code()), Some(s));
        }
        assert_eq!(SetupStage::from_code(0), None);
    }
}
