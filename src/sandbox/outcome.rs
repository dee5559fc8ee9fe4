//! How a cell ended, as a closed enum, and what it produced (R-8.5, STYLE §3).
//!
//! Owns: [`Outcome`], [`CellResult`], [`CellTelemetry`], [`LogLine`] and the user-facing JSON
//! shape `{ok, value | error: {kind, message}, logs, telemetry}`.
//! Never does: decide an outcome (the supervisor classifies); carry raw, unstripped guest text
//! (log text is stripped of control sequences inside the worker and again by the supervisor).
//! Invariants: every message tells the model what to do next; `kind` strings are stable.

use serde::ser::SerializeStruct;

/// How a cell ended. Closed: tests match the variant, the CLI prints `{kind, message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The cell's promise resolved; `CellResult::value` holds the result.
    Ok,
    /// The cell threw or rejected (also a `RangeError` from deep recursion, a `SyntaxError`, or a
    /// promise that can never settle).
    JsError {
        /// `Name: message` of the thrown value (or `String(value)` for non-errors).
        message: String,
    },
    /// The wall-clock deadline passed: stopped by the interrupt handler or killed.
    Timeout,
    /// QuickJS ran out of its heap (`Limits::memory_limit_bytes`) and the guest did not catch it.
    Memory,
    /// The worker died from a signal that we did not send for a timeout (e.g. `SIGABRT` after an
    /// allocation failure outside QuickJS, `SIGKILL` from the OOM killer).
    KilledBySignal {
        /// The signal number.
        signal: i32,
    },
    /// The worker made a syscall outside the seccomp allow-list and was killed with `SIGSYS`.
    SeccompViolation,
    /// The worker broke the protocol (malformed or oversized frame, unexpected message, early
    /// exit) and was killed.
    ProtocolError {
        /// What was wrong.
        detail: String,
    },
    /// The sandbox itself went away under the cell: the zygote died (or stopped reporting) while
    /// the cell's worker ran, so the worker's end is unknown. Not the guest's doing; the
    /// supervisor restarts the zygote for the next cell.
    SandboxUnavailable {
        /// What was observed.
        detail: String,
    },
    /// No worker could be started for this cell (R-8.6: fall back to tools mode).
    WorkerSetupFailure {
        /// The failing setup stage or observation.
        detail: String,
    },
    /// Every live-worker slot stayed taken for the cell's whole queue deadline (or its client
    /// has too many cells waiting): the cell did not run.
    Busy {
        /// What was observed (running and waiting cells, the wait).
        detail: String,
    },
    /// A per-cell cap was exceeded.
    LimitExceeded {
        /// Which cap.
        limit: LimitKind,
    },
}

/// The caps that end a cell with [`Outcome::LimitExceeded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// The JSON result exceeded `Limits::result_bytes`.
    ResultBytes,
    /// The guest let the bridge-call cap's rejection (`Limits::bridge_calls`) escape the cell.
    BridgeCalls,
    /// The cell's source exceeded `Limits::code_bytes` (nothing ran).
    CodeBytes,
    /// The guest let the rejection of a bridge call whose arguments exceeded the frame bound
    /// (`Limits::frame_bytes`) escape the cell.
    ArgumentBytes,
    /// The guest let the rejection of a bridge call whose arguments nested deeper than
    /// `MAX_BRIDGE_ARGUMENT_DEPTH` (64, in `config::input`) escape the
    /// cell.
    ArgumentDepth,
}

impl Outcome {
    /// The stable `kind` string: `ok`, `js_error`, `timeout`, `memory`, `killed_by_signal`,
    /// `seccomp_violation`, `protocol_error`, `sandbox_unavailable`, `worker_setup_failure`,
    /// `busy`, `limit_exceeded`.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::JsError { .. } => "js_error",
            Outcome::Timeout => "timeout",
            Outcome::Memory => "memory",
            Outcome::KilledBySignal { .. } => "killed_by_signal",
            Outcome::SeccompViolation => "seccomp_violation",
            Outcome::ProtocolError { .. } => "protocol_error",
            Outcome::SandboxUnavailable { .. } => "sandbox_unavailable",
            Outcome::WorkerSetupFailure { .. } => "worker_setup_failure",
            Outcome::Busy { .. } => "busy",
            Outcome::LimitExceeded { .. } => "limit_exceeded",
        }
    }

    /// `true` only for [`Outcome::Ok`].
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }

    /// The model-facing message: what happened and how to recover.
    pub fn message(&self) -> String {
        match self {
            Outcome::Ok => "ok".to_owned(),
            Outcome::JsError { message } => message.clone(),
            Outcome::Timeout => {
                "the cell ran past its wall-clock timeout and was stopped; do less \
                                 work per cell or raise codeTimeoutMs (max 60000)"
                    .to_owned()
            }
            Outcome::Memory => "the cell ran out of memory; process less data per cell".to_owned(),
            Outcome::KilledBySignal { signal } => format!(
                "the sandbox worker was killed by signal {signal} ({}); retry with a smaller cell",
                signal_name(*signal)
            ),
            Outcome::SeccompViolation => "the sandbox worker attempted a forbidden system call \
                                          and was killed (SIGSYS); the sandbox grants no file, \
                                          network or process access"
                .to_owned(),
            Outcome::ProtocolError { detail } => {
                format!("the sandbox worker broke the protocol and was killed: {detail}")
            }
            Outcome::SandboxUnavailable { detail } => format!(
                "the sandbox became unavailable during the cell ({detail}); its result is lost. \
                 Retry the cell: the sandbox restarts"
            ),
            Outcome::WorkerSetupFailure { detail } => format!(
                "the sandbox could not start a worker: {detail}; use the search/describe/call \
                 tools instead"
            ),
            Outcome::Busy { detail } => detail.clone(),
            Outcome::LimitExceeded { limit } => match limit {
                LimitKind::ResultBytes => "the cell's return value is too large; return a \
                                           smaller summary (e.g. only the fields you need)"
                    .to_owned(),
                LimitKind::BridgeCalls => "the cell started more bridge calls than allowed per \
                                           cell; split the work across cells"
                    .to_owned(),
                LimitKind::CodeBytes => "the cell's code is too long and did not run; send a \
                                         shorter body (search, describe and call only what \
                                         this step needs)"
                    .to_owned(),
                LimitKind::ArgumentBytes => "a bridge call's arguments were larger than the \
                                             sandbox's frame bound (Limits::frame_bytes) and \
                                             the call was refused; pass less data per call"
                    .to_owned(),
                LimitKind::ArgumentDepth => format!(
                    "a bridge call's arguments nested deeper than \
                     {} levels of arrays and objects and the call was refused; pass flatter \
                     arguments",
                    crate::config::input::MAX_BRIDGE_ARGUMENT_DEPTH
                ),
            },
        }
    }
}

impl serde::Serialize for Outcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Outcome", 2)?;
        st.serialize_field("kind", self.kind())?;
        st.serialize_field("message", &self.message())?;
        st.end()
    }
}

/// A name for the signals a worker can die from.
pub(crate) fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSYS => "SIGSYS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// Which console method produced a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `console.log`.
    Log,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

/// One console line, stripped of control sequences.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogLine {
    /// The console method.
    pub level: LogLevel,
    /// The text (arguments joined by a space), control sequences removed.
    pub text: String,
}

/// Counters and durations of one cell (never payloads).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CellTelemetry {
    /// Pid of the worker that ran the cell (0 if none started).
    pub worker_pid: u32,
    /// `true` if the worker was ready before the cell arrived (warm pool), `false` if forked on
    /// demand.
    pub warm: bool,
    /// Milliseconds from `run_cell` until the body was sent to a ready worker (queueing behind
    /// the live-worker cap, plus the fork when cold).
    pub queue_ms: f64,
    /// Milliseconds from sending the body until the result (or the kill).
    pub run_ms: f64,
    /// The cell's timeout after clamping, in milliseconds.
    pub timeout_ms: u64,
    /// `true` when the supervisor SIGKILLed the worker at the deadline (the guest was inside a
    /// builtin or a bridge wait that QuickJS's interrupt handler cannot stop); its logs are lost.
    pub killed_at_deadline: bool,
    /// Bridge calls started by the cell (as seen by the supervisor).
    pub bridge_calls: u32,
    /// Bytes of console output kept.
    pub log_bytes: usize,
    /// Console lines dropped or cut at the cap.
    pub logs_dropped: usize,
    /// Bytes of the JSON result (0 when there is none).
    pub result_bytes: usize,
    /// Where the time went, when the cell ran with
    /// [`CellOptions::trace_phases`](super::CellOptions::trace_phases) and ended with `Done`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<CellPhases>,
}

/// Where a traced cell's time went, in microseconds, from CLOCK_MONOTONIC stamps taken on both
/// sides of every frame. The worker's stamps come from the worker: they are measurements to read,
/// never inputs to a decision.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CellPhases {
    /// From `run_cell` being called until the worker decoded the body: the supervisor's
    /// bookkeeping (queue, pool), sending `Run`, waking the worker (or forking one, when cold).
    pub submit_to_running_us: f64,
    /// Compiling the body into its async wrapper function.
    pub compile_us: f64,
    /// One entry per bridge call (at most 64).
    pub calls: Vec<CallPhases>,
    /// After the last bridge reply (or the compile, without calls) until the worker encoded
    /// `Done`: the guest's remaining work and the result's JSON encoding.
    pub tail_us: f64,
    /// From the worker encoding `Done` until `run_cell` returned: the frame's trip, its
    /// validation and decoding, killing the worker, handing the result to the caller's task.
    pub result_to_caller_us: f64,
    /// The CPU the supervisor's task sent `Run` from, if known.
    pub host_cpu: Option<u32>,
    /// The CPU the worker decoded `Run` on, if known.
    pub worker_cpu: Option<u32>,
    /// The worker's `Done` stamp, to finish `result_to_caller_us` at the caller.
    #[serde(skip)]
    pub(crate) done_ns: u64,
}

/// One bridge call of a traced cell, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CallPhases {
    /// Guest work before the call: from the worker resuming (the compile or the previous reply)
    /// until the `Call` frame was written.
    pub guest_us: f64,
    /// The two socket trips: `Call` written → read by the supervisor, plus `Reply` written →
    /// decoded by the worker (wake-ups included).
    pub hops_us: f64,
    /// On the supervisor: `Call` read → `Reply` written (decoding, the bridge, encoding).
    pub host_us: f64,
}

/// What a cell produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CellResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The JSON result when `outcome` is [`Outcome::Ok`] (`undefined` → `null`).
    pub value: Option<serde_json::Value>,
    /// Console output, capped by `Limits::log_bytes` and at `MAX_LOG_LINES` (1,000) lines.
    pub logs: Vec<LogLine>,
    /// `true` when console output was dropped at the cap.
    pub logs_truncated: bool,
    /// Counters and durations.
    pub telemetry: CellTelemetry,
}

impl CellResult {
    /// The user-facing shape: `{ok, value, logs, telemetry}` on success,
    /// `{ok: false, error: {kind, message}, logs, telemetry}` otherwise. `telemetry` also carries
    /// `logs_truncated`; when lines were dropped, `logs` ends with one
    /// [`truncation_marker`](CellResult::truncation_marker) line.
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        out.insert("ok".into(), self.outcome.is_ok().into());
        if self.outcome.is_ok() {
            out.insert(
                "value".into(),
                self.value.clone().unwrap_or(serde_json::Value::Null),
            );
        } else {
            out.insert(
                "error".into(),
                serde_json::json!({"kind": self.outcome.kind(), "message": self.outcome.message()}),
            );
        }
        let mut logs = serde_json::to_value(&self.logs).unwrap_or_default();
        if self.telemetry.logs_dropped > 0
            && let Some(lines) = logs.as_array_mut()
        {
            lines.push(serde_json::json!({"level": "warn", "text": self.truncation_marker()}));
        }
        out.insert("logs".into(), logs);
        let mut telemetry = serde_json::to_value(&self.telemetry).unwrap_or_default();
        if let Some(t) = telemetry.as_object_mut() {
            t.insert("logs_truncated".into(), self.logs_truncated.into());
        }
        out.insert("telemetry".into(), telemetry);
        serde_json::Value::Object(out)
    }

    /// What a model reads of a cell: `{ok: true, value}` or `{ok: false, error: {kind, message}}`,
    /// with `logs` only when the cell logged something (ending with the truncation marker when
    /// lines were dropped). Telemetry (worker, timings, counters) is for people: it stays in
    /// [`to_json`](CellResult::to_json) and the session log.
    pub fn to_model_json(&self) -> serde_json::Value {
        let mut out = self.to_json();
        if let Some(object) = out.as_object_mut() {
            object.remove("telemetry");
            if object
                .get("logs")
                .and_then(serde_json::Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                object.remove("logs");
            }
        }
        out
    }

    /// The last console line of the user-facing shape when output was dropped at a cap: how many
    /// lines were dropped or cut and both caps.
    pub fn truncation_marker(&self) -> String {
        format!(
            "[toolsearch: {} console line(s) dropped or cut; a cell keeps at most {} lines \
             (MAX_LOG_LINES) and Limits::log_bytes bytes of console output]",
            self.telemetry.logs_dropped,
            crate::config::input::MAX_LOG_LINES
        )
    }

    /// A result for a cell that never reached a worker.
    #[cold]
    pub fn failed(outcome: Outcome, telemetry: CellTelemetry) -> CellResult {
        CellResult {
            outcome,
            value: None,
            logs: Vec::new(),
            logs_truncated: false,
            telemetry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_json_shapes() {
        let ok = CellResult {
            outcome: Outcome::Ok,
            value: Some(serde_json::json!({"a": 1})),
            logs: vec![LogLine {
                level: LogLevel::Warn,
                text: "w".into(),
            }],
            logs_truncated: false,
            telemetry: CellTelemetry::default(),
        };
        let j = ok.to_json();
        assert_eq!(j["ok"], true);
        assert_eq!(j["value"], serde_json::json!({"a": 1}));
        assert_eq!(
            j["logs"][0],
            serde_json::json!({"level": "warn", "text": "w"})
        );
        assert_eq!(j["telemetry"]["logs_truncated"], false);
        assert!(j.get("error").is_none());

        let err = CellResult::failed(Outcome::Timeout, CellTelemetry::default());
        let j = err.to_json();
        assert_eq!(j["ok"], false);
        assert_eq!(j["error"]["kind"], "timeout");
        assert!(j.get("value").is_none());
        assert_eq!(
            serde_json::to_value(Outcome::LimitExceeded {
                limit: LimitKind::ResultBytes
            })
            .unwrap_or_default()["kind"],
            "limit_exceeded"
        );
    }
}
