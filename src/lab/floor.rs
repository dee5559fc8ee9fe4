//! The benchmark's floor: a cell run in a QuickJS context **inside the host process. Not
//! sandboxed** — none of layers 2 and 3 (no process boundary, no seccomp, no outside kill at the
//! deadline), so it must never run untrusted code; it exists only so that `bench cells` can say
//! what the process boundary costs (`inprocess` series, `ratio_warm_over_inprocess`).
//!
//! Owns: [`Floor`] (one per series) and its cell driver.
//! Never does: leave the crate (only [`super::cells`] uses it); reuse a runtime or context across
//! cells; talk to a worker.
//! Invariants: the same pieces as a warm worker's timed path — a fresh runtime and context per cell
//! with the worker's allocator, limits and intrinsics ([`Isolate::new`]), the same prelude from the
//! same bytecode, the same async wrapper around the body, the same [`Bridge`], the same JSON both
//! ways (arguments as JSON text parsed into a `Value` for the bridge, the bridge's value encoded to
//! JSON text that the prelude parses, the result encoded by the prelude and parsed into a
//! `Value`); only the frames and the sockets are missing. Like a pool worker's isolate, the
//! runtime, context and prelude are built before the clock starts.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use rquickjs::promise::PromiseState;
use rquickjs::{Ctx, Function, Value};

use crate::sandbox::lab_hook::{
    INTERRUPT_MARGIN, Internals, Isolate, Refused, Spin, WorkerConfig, compile_body,
    compile_prelude, install_prelude, mono_ns,
};
use crate::sandbox::{Bridge, BridgeOp, CallPhases, CellPhases, Limits, PollWhen};
use crate::telemetry::terminal_safe;

/// The in-process floor's setup, shared by every cell of a series.
pub(crate) struct Floor {
    bridge: Arc<dyn Bridge>,
    handle: tokio::runtime::Handle,
    caps: WorkerConfig,
    timeout: Duration,
    prelude: Option<Vec<u8>>,
}

/// Calls queued by `host.call`, the console lines and the counters of one in-process cell.
#[derive(Default)]
struct State {
    queued: Vec<(u64, BridgeOp, String)>,
    next_id: u64,
    cap: u32,
    logs: Vec<String>,
    log_remaining: usize,
}

type Answer = (u64, Result<serde_json::Value, String>);

impl Floor {
    /// `handle`: the runtime the bridge's futures run on (its timers and I/O).
    pub(crate) fn new(bridge: Arc<dyn Bridge>, handle: tokio::runtime::Handle) -> Floor {
        let limits = Limits::default().clamped();
        Floor {
            bridge,
            handle,
            caps: WorkerConfig {
                memory_limit: limits.memory_limit_bytes,
                max_stack: limits.max_stack_bytes,
                address_space: 0,
                frame_bytes: limits.frame_bytes,
                log_bytes: limits.log_bytes,
                result_bytes: limits.result_bytes,
                bridge_calls: limits.bridge_calls,
                rehearse: false,
                spin: Spin {
                    when: PollWhen::Never,
                    micros: 0,
                },
                ready_spin_us: 0,
            },
            timeout: limits.code_timeout,
            // As in the zygote: compiled once, loaded as bytecode by every cell.
            prelude: compile_prelude(),
        }
    }

    /// Runs one cell. Blocking: call it from a thread outside the async runtime (the bridge's
    /// futures are driven with `Handle::block_on`). Returns the time from the start to the parsed
    /// result, the result and the phases (`hops_us` is 0: there are none).
    pub(crate) fn run_cell(
        &self,
        code: &str,
    ) -> Result<(Duration, serde_json::Value, CellPhases), String> {
        let isolate = Isolate::new(self.caps.memory_limit, self.caps.max_stack)
            .map_err(|e| format!("building the in-process isolate: {e}"))?;
        let state = Rc::new(RefCell::new(State {
            next_id: 1,
            cap: self.caps.bridge_calls,
            log_remaining: self.caps.log_bytes,
            ..State::default()
        }));
        isolate.context().with(|ctx| {
            let (calls, logs) = (state.clone(), state.clone());
            let internals = install_prelude(
                &ctx,
                self.prelude.as_deref(),
                move |op, args| calls.borrow_mut().start_call(op, args),
                move |_level, text| logs.borrow_mut().log(text),
            )
            .and_then(|object| Internals::new(object, &self.caps))
            .map_err(|e| format!("loading the prelude in-process: {e}"))?;
            // The clock starts here, as a warm cell's starts with a ready isolate.
            let t0 = Instant::now();
            let submit = mono_ns();
            let soft = t0 + self.timeout - INTERRUPT_MARGIN;
            isolate.set_deadline(Some(soft));
            let out = self.drive(&ctx, &internals, &state, code, soft, submit);
            isolate.set_deadline(None);
            let (value, phases) = out?;
            Ok((t0.elapsed(), value, phases))
        })
    }

    fn drive<'js>(
        &self,
        ctx: &Ctx<'js>,
        internals: &Internals<'js>,
        state: &Rc<RefCell<State>>,
        code: &str,
        soft: Instant,
        submit: u64,
    ) -> Result<(serde_json::Value, CellPhases), String> {
        let us = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e3;
        let run = mono_ns();
        let body: Function = compile_body(ctx, internals, code, soft, |_| {})
            .ok_or_else(|| caught(ctx, rquickjs::Error::Exception))?;
        let compiled = mono_ns();
        let promise = body
            .call::<_, Value>(())
            .map_err(|e| caught(ctx, e))?
            .into_promise()
            .ok_or("the cell's wrapper returned no promise")?;
        let mut calls = Vec::new();
        let mut resumed = compiled;
        loop {
            loop {
                if Instant::now() >= soft {
                    return Err("timeout".into());
                }
                if !ctx.execute_pending_job() {
                    break;
                }
            }
            let queued = std::mem::take(&mut state.borrow_mut().queued);
            if queued.is_empty() {
                break;
            }
            let sent = mono_ns();
            let answers = self.handle.block_on(answer_all(&self.bridge, queued));
            for (id, answer) in answers {
                let settled = match answer {
                    Ok(v) => {
                        let text = serde_json::to_string(&v).map_err(|e| e.to_string())?;
                        internals.settle.call::<_, ()>((id as f64, true, text))
                    }
                    Err(message) => internals.settle.call::<_, ()>((id as f64, false, message)),
                };
                settled.map_err(|e| caught(ctx, e))?;
            }
            let answered = mono_ns();
            calls.push(CallPhases {
                guest_us: us(resumed, sent),
                hops_us: 0.0,
                host_us: us(sent, answered),
            });
            resumed = answered;
        }
        let text = match promise.state() {
            PromiseState::Resolved => {
                let v: Value = promise
                    .result::<Value>()
                    .ok_or("no result")?
                    .map_err(|e| caught(ctx, e))?;
                let encoded: Value = internals
                    .encode_result
                    .call((v, self.caps.result_bytes as f64))
                    .map_err(|e| caught(ctx, e))?;
                encoded
                    .as_string()
                    .and_then(|s| s.to_string().ok())
                    .ok_or("the result is too large or not JSON")?
            }
            PromiseState::Rejected => {
                let _ = promise.result::<Value>();
                return Err(format!("the cell threw: {:?}", ctx.catch()));
            }
            PromiseState::Pending => return Err("the cell never settles".into()),
        };
        let done = mono_ns();
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Ok((
            value,
            CellPhases {
                submit_to_running_us: us(submit, run),
                compile_us: us(run, compiled),
                calls,
                tail_us: us(resumed, done),
                result_to_caller_us: us(done, mono_ns()),
                host_cpu: None,
                worker_cpu: None,
                done_ns: done,
            },
        ))
    }
}

impl State {
    /// `host.call`, with the worker's checks: a known operation, the bridge-call cap, JSON
    /// arguments (parsed when answered).
    fn start_call(&mut self, op: &str, args: String) -> Result<u64, Refused> {
        let op = match op {
            "search" => BridgeOp::Search,
            "describe" => BridgeOp::Describe,
            "call" => BridgeOp::Call,
            other => {
                return Err(Refused::other(format!(
                    "unknown bridge operation `{other}`"
                )));
            }
        };
        if self.next_id > u64::from(self.cap) {
            return Err(Refused::bridge_calls(self.cap));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.queued.push((id, op, args));
        Ok(id)
    }

    /// `host.log`: keep what fits the budget.
    fn log(&mut self, text: &str) -> usize {
        let text = terminal_safe(text).into_owned();
        self.log_remaining = self.log_remaining.saturating_sub(text.len() + 1);
        self.logs.push(text);
        self.log_remaining
    }
}

/// Answers every queued call concurrently (as the supervisor polls a cell's calls).
async fn answer_all(bridge: &Arc<dyn Bridge>, queued: Vec<(u64, BridgeOp, String)>) -> Vec<Answer> {
    let mut pending: Vec<Pin<Box<dyn Future<Output = Answer> + '_>>> = queued
        .into_iter()
        .map(|(id, op, args)| {
            let fut: Pin<Box<dyn Future<Output = Answer> + '_>> = Box::pin(async move {
                match serde_json::from_str::<serde_json::Value>(&args) {
                    Ok(args) => (id, bridge.invoke(op, args).await.map_err(|e| e.message)),
                    Err(e) => (id, Err(format!("bridge arguments are not valid JSON: {e}"))),
                }
            });
            fut
        })
        .collect();
    let mut answers = Vec::with_capacity(pending.len());
    std::future::poll_fn(|cx| {
        let mut i = 0;
        while i < pending.len() {
            if let Poll::Ready(answer) = pending[i].as_mut().poll(cx) {
                drop(pending.swap_remove(i));
                answers.push(answer);
            } else {
                i += 1;
            }
        }
        if pending.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    answers
}

fn caught(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    let thrown = ctx.catch();
    format!("{e}: {thrown:?}")
}
