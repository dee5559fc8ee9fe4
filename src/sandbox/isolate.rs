//! The QuickJS isolate inside a worker: runtime limits, the bridge prelude and the cell's event
//! loop (R-8.1–R-8.5).
//!
//! Owns: the heap-limiting allocator, the interrupt handler, the native `host` functions the
//! prelude captures, `Math.random` (seeded per process), the zygote's [`Template`] (an isolate
//! with the prelude loaded, which every forked worker adopts copy-on-write), the pre-`Ready`
//! rehearsal (`js/rehearsal.js` against canned replies), and [`Isolate::serve`] /
//! [`Template::serve`], which run exactly one request.
//! Never does: run anything but the prelude before the worker is hardened (the zygote's template
//! loads only the prelude; the rehearsal and the cell run in the hardened worker); reach the
//! filesystem or network (there is no binding for either); run a job after the deadline; copy a
//! guest string that exceeds its cap; let the rehearsal leave state a guest can see (ids,
//! counters, logs and budgets are reset).
//! Invariants: the heap is bounded by `memory_limit` (allocations beyond it fail and set
//! [`HeapBudget::refused`]; after that, by `memory_limit` + 1/8 for unwinding); the interrupt
//! handler fires from `deadline - INTERRUPT_MARGIN` on; a started bridge call is answered before
//! `Done` (drain); the result is at most `result_bytes`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::os::fd::RawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::allocator::Allocator;
use rquickjs::context::intrinsic;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Function, Object, Persistent, Runtime, Value, qjs};
use serde_json::value::RawValue;

use super::bridge::BridgeOp;
use super::channel::{Channel, ChannelError};
use super::outcome::{LogLevel, LogLine};
use super::protocol::{
    self, Done, DoneStatus, HostFrame, ReplyResult, RunCell, SetupStage, TRACE_CALLS, WorkerConfig,
    WorkerFrame, WorkerTrace, mono_ns,
};
use super::text::{repair_lone_surrogates, truncate_to};
use crate::config::input;
use crate::telemetry::terminal_safe;

/// The prelude, embedded at build time.
const PRELUDE: &str = include_str!("../../js/prelude.js");

/// How long before the supervisor's kill the interrupt handler starts firing, so that a timeout
/// caught inside the engine still reports the cell's logs.
pub(crate) const INTERRUPT_MARGIN: Duration = Duration::from_millis(20);

/// Flush queued `Call` frames once this many bytes are waiting, even while JS is still running.
const EAGER_FLUSH_BYTES: usize = 64 * 1024;

/// The QuickJS heap budget, shared with [`LimitedAllocator`].
pub(crate) struct HeapBudget {
    used: Cell<usize>,
    /// Set per worker (a template isolate is built before the worker's limits are known).
    limit: Cell<usize>,
    refused: Cell<bool>,
}

impl HeapBudget {
    /// Whether an allocation was refused since the isolate was built.
    pub(crate) fn refused(&self) -> bool {
        self.refused.get()
    }
}

/// libc malloc with a byte budget. Enforcing the limit here (instead of QuickJS's
/// `set_memory_limit`) lets the worker tell an out-of-memory failure apart from a guest that
/// throws `null` or a look-alike error.
///
/// After the first refusal the budget grows once by an eighth (the unwinding reserve): the
/// engine needs memory to raise the error, reject the promises that depended on the failed job
/// and run their reactions. Without it a promise-chain flood can livelock at the exact limit,
/// every job failing to allocate the next one's rejection, until the wall-clock kill (measured:
/// the escape corpus's chain flood then ended as a timeout instead of `memory`).
struct LimitedAllocator(Rc<HeapBudget>);

impl LimitedAllocator {
    fn admit(&self, current: usize, size: usize) -> bool {
        let limit = self.0.limit.get();
        let limit = if self.0.refused.get() {
            limit.saturating_add(limit / 8)
        } else {
            limit
        };
        let ok = self
            .0
            .used
            .get()
            .saturating_sub(current)
            .checked_add(size)
            .is_some_and(|total| total <= limit);
        if !ok {
            self.0.refused.set(true);
        }
        ok
    }

    fn account(&self, freed: usize, ptr: *mut u8) -> *mut u8 {
        if ptr.is_null() {
            self.0.refused.set(true);
            return ptr;
        }
        // SAFETY: ptr was just returned by libc malloc/calloc/realloc.
        let size = unsafe { libc::malloc_usable_size(ptr.cast()) };
        self.0
            .used
            .set(self.0.used.get().saturating_sub(freed) + size);
        ptr
    }
}

// SAFETY: every pointer comes from libc malloc/calloc/realloc (aligned to at least 16 bytes) and is
// released with libc free; usable_size is libc's malloc_usable_size on those pointers.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(0, size) {
            return std::ptr::null_mut();
        }
        // SAFETY: plain malloc.
        self.account(0, unsafe { libc::malloc(size) }.cast())
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            self.0.refused.set(true);
            return std::ptr::null_mut();
        };
        if !self.admit(0, total) {
            return std::ptr::null_mut();
        }
        // SAFETY: plain calloc.
        self.account(0, unsafe { libc::calloc(count, size) }.cast())
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        // SAFETY: the caller passes a pointer from this allocator.
        let size = unsafe { libc::malloc_usable_size(ptr.cast()) };
        self.0.used.set(self.0.used.get().saturating_sub(size));
        // SAFETY: as above.
        unsafe { libc::free(ptr.cast()) };
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller passes a pointer from this allocator.
        let old = unsafe { libc::malloc_usable_size(ptr.cast()) };
        if new_size == 0 {
            // SAFETY: as above.
            unsafe { self.dealloc(ptr) };
            return std::ptr::null_mut();
        }
        if !self.admit(old, new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above; on failure the old block stays valid and accounted.
        let new = unsafe { libc::realloc(ptr.cast(), new_size) }.cast::<u8>();
        if new.is_null() {
            self.0.refused.set(true);
            return new;
        }
        self.account(old, new)
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: the caller passes a pointer from this allocator.
        unsafe { libc::malloc_usable_size(ptr.cast()) }
    }
}

/// One QuickJS runtime and context, built before the seccomp filter and used for one request.
pub(crate) struct Isolate {
    // Field order matters for drop: the context before its runtime.
    context: Context,
    _runtime: Runtime,
    deadline: Rc<Cell<Option<Instant>>>,
    heap: Rc<HeapBudget>,
}

/// What [`Isolate::serve`] did.
pub(crate) enum Served {
    /// A cell ran and its `Done` frame was sent.
    Done,
    /// The forbidden-syscall self-check returned, i.e. the filter is not working.
    FilterInactive,
}

/// Native-side state of the running cell, shared with the `host` functions.
struct Shared {
    chan: Channel,
    out: Vec<u8>,
    next_id: u64,
    started: u32,
    cap: u32,
    outstanding: BTreeSet<u64>,
    logs: Vec<LogLine>,
    log_remaining: usize,
    log_bytes: usize,
    logs_dropped: usize,
    io_failed: bool,
    /// Stamps of a traced cell (`RunCell::trace`); `None` otherwise.
    trace: Option<WorkerTrace>,
    /// Calls from this index on in `trace.calls` are queued but not yet written.
    unsent: usize,
    /// The cell's compiled script is being evaluated (see [`compile_body`]): no call may start
    /// and no line is logged.
    compiling: bool,
}

impl Shared {
    fn new(chan: Channel, bridge_calls: u32, log_bytes: usize) -> Shared {
        Shared {
            chan,
            out: Vec::new(),
            next_id: 1,
            started: 0,
            cap: bridge_calls,
            outstanding: BTreeSet::new(),
            logs: Vec::new(),
            log_remaining: log_bytes,
            log_bytes: 0,
            logs_dropped: 0,
            io_failed: false,
            trace: None,
            unsent: 0,
            compiling: false,
        }
    }

    /// Back to the state of a worker that has run nothing (after the rehearsal, and in a worker
    /// forked from the zygote's [`Template`]).
    fn reset(&mut self, caps: &WorkerConfig) {
        self.chan.set_offline(false, &[]);
        self.cap = caps.bridge_calls;
        self.out.clear();
        self.next_id = 1;
        self.started = 0;
        self.outstanding.clear();
        self.logs.clear();
        self.log_remaining = caps.log_bytes;
        self.log_bytes = 0;
        self.logs_dropped = 0;
        self.io_failed = false;
        self.trace = None;
        self.unsent = 0;
        self.compiling = false;
    }

    fn flush(&mut self) {
        if self.out.is_empty() || self.io_failed {
            return;
        }
        // Stamped before the write: on a shared CPU the write may hand the CPU to the woken
        // supervisor, whose work must not count as the guest's.
        if let Some(trace) = &mut self.trace {
            let now = mono_ns();
            for call in &mut trace.calls[self.unsent..] {
                call[0] = now;
            }
            self.unsent = trace.calls.len();
        }
        if self.chan.send(&self.out).is_err() {
            self.io_failed = true;
        }
        self.out.clear();
    }

    /// `host.call`: queue a `Call` frame. Returns the id, or a refusal for the guest.
    fn start_call(&mut self, op: &str, args: String) -> Result<u64, Refused> {
        let op = match op {
            "search" => BridgeOp::Search,
            "describe" => BridgeOp::Describe,
            "call" => BridgeOp::Call,
            other => {
                return Err(Refused::other(format!(
                    "unknown bridge operation `{}`",
                    input::echo(other)
                )));
            }
        };
        if self.compiling {
            return Err(Refused::other(COMPILING_REFUSAL.to_owned()));
        }
        if self.started >= self.cap {
            return Err(Refused::bridge_calls(self.cap));
        }
        let cap = self.chan.frame_cap();
        if args.len() + 128 > cap {
            return Err(Refused::argument_bytes(args.len(), cap - 128));
        }
        // One level for the array of arguments.
        if input::json_depth_exceeds(args.as_bytes(), input::MAX_BRIDGE_ARGUMENT_DEPTH + 1) {
            return Err(Refused::argument_depth());
        }
        let Ok(args) = RawValue::from_string(repair_lone_surrogates(args)) else {
            return Err(Refused::other(
                "bridge arguments are not valid JSON".to_owned(),
            ));
        };
        let id = self.next_id;
        self.next_id += 1;
        let call = WorkerFrame::Call {
            id,
            op,
            args,
            cpu: protocol::current_cpu(),
        };
        if protocol::encode(&call, &mut self.out).is_err() {
            return Err(Refused::other(
                "bridge arguments could not be encoded".to_owned(),
            ));
        }
        self.started += 1;
        self.outstanding.insert(id);
        if let Some(trace) = &mut self.trace
            && trace.calls.len() < TRACE_CALLS
        {
            trace.calls.push([0, 0]);
        }
        if self.out.len() >= EAGER_FLUSH_BYTES {
            self.flush();
        }
        Ok(id)
    }

    /// `host.log`: keep what fits the budget, count the rest. Returns the remaining budget.
    fn log(&mut self, level: i32, text: &str) -> usize {
        if self.compiling {
            return self.log_remaining;
        }
        if self.log_remaining == 0 || self.logs.len() >= input::MAX_LOG_LINES {
            self.logs_dropped += 1;
            return 0;
        }
        let level = match level {
            1 => LogLevel::Warn,
            2 => LogLevel::Error,
            _ => LogLevel::Log,
        };
        let mut text = terminal_safe(text).into_owned();
        let cost = text.len() + 1;
        if cost <= self.log_remaining {
            self.log_remaining -= cost;
        } else {
            truncate_to(&mut text, self.log_remaining.saturating_sub(1));
            self.log_remaining = 0;
            self.logs_dropped += 1;
        }
        self.log_bytes += text.len();
        self.logs.push(LogLine { level, text });
        self.log_remaining
    }
}

/// Why `host.call` refused a call, as the prelude tags the guest's rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefusalKind {
    /// The bridge-call cap (`Limits::bridge_calls`).
    BridgeCalls,
    /// Arguments over the frame bound (`Limits::frame_bytes`).
    ArgumentBytes,
    /// Arguments nested deeper than [`input::MAX_BRIDGE_ARGUMENT_DEPTH`].
    ArgumentDepth,
    /// Anything else (not a named limit).
    Other,
}

/// A refused bridge call: its kind and the message the guest's promise rejects with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) kind: RefusalKind,
    pub(crate) message: String,
}

impl Refused {
    pub(crate) fn other(message: String) -> Refused {
        Refused {
            kind: RefusalKind::Other,
            message,
        }
    }

    pub(crate) fn bridge_calls(cap: u32) -> Refused {
        Refused {
            kind: RefusalKind::BridgeCalls,
            message: format!(
                "bridge call limit reached: a cell may start at most {cap} bridge calls; split the \
                 work across cells"
            ),
        }
    }

    pub(crate) fn argument_bytes(len: usize, cap: usize) -> Refused {
        Refused {
            kind: RefusalKind::ArgumentBytes,
            message: format!(
                "bridge arguments too large ({len} bytes, at most {cap} per call: the sandbox's \
                 frame bound); pass less data"
            ),
        }
    }

    pub(crate) fn argument_depth() -> Refused {
        Refused {
            kind: RefusalKind::ArgumentDepth,
            message: super::cell::argument_depth_message(),
        }
    }

    /// The string `host.call` returns: the kind's letter, then the message (see the prelude).
    fn tagged(&self) -> String {
        let tag = match self.kind {
            RefusalKind::BridgeCalls => 'L',
            RefusalKind::ArgumentBytes => 'B',
            RefusalKind::ArgumentDepth => 'D',
            RefusalKind::Other => 'E',
        };
        let mut out = String::with_capacity(self.message.len() + 1);
        out.push(tag);
        out.push_str(&self.message);
        out
    }
}

/// Why a call started while the cell's script is evaluated is refused (only a body that closes
/// its wrapper runs anything then, and it ends as a `SyntaxError`).
const COMPILING_REFUSAL: &str = "no bridge call may start while the cell is compiled";

/// The prelude's internals, looked up once before `Ready`.
pub(crate) struct Internals<'js> {
    /// `settle(id, ok, payload)`: resolves call `id` with JSON text or rejects it with a message.
    pub(crate) settle: Function<'js>,
    /// `encodeResult(value, cap)`: JSON text, or its length when over `cap`.
    pub(crate) encode_result: Function<'js>,
    describe_error: Function<'js>,
    set_log_budget: Function<'js>,
    /// `sourceOf(f)`: the function's source text (the original `Function.prototype.toString`).
    source_of: Function<'js>,
    result_bytes: usize,
}

impl<'js> Internals<'js> {
    /// Looks the internals up in the prelude's returned `object` and sets the log budget.
    pub(crate) fn new(
        object: Object<'js>,
        caps: &WorkerConfig,
    ) -> rquickjs::Result<Internals<'js>> {
        let internals = Internals {
            settle: object.get("settle")?,
            encode_result: object.get("encodeResult")?,
            describe_error: object.get("describeError")?,
            set_log_budget: object.get("setLogBudget")?,
            source_of: object.get("sourceOf")?,
            result_bytes: caps.result_bytes,
        };
        internals.reset_log_budget(caps)?;
        Ok(internals)
    }

    fn reset_log_budget(&self, caps: &WorkerConfig) -> rquickjs::Result<()> {
        self.set_log_budget.call::<_, ()>((caps.log_bytes as f64,))
    }
}

/// How the cell's promise ended, before classification.
enum Settled<'js> {
    Value(Value<'js>),
    Threw(Value<'js>),
    TimedOut,
    NeverSettles,
    Io,
}

impl Isolate {
    /// The context (the in-process floor, through `lab_hook`, runs its cell in it directly).
    #[cfg(feature = "lab")]
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// Sets the instant from which the interrupt handler stops interpretable code (the
    /// in-process floor's; a worker's deadline is set in `serve`).
    #[cfg(feature = "lab")]
    pub(crate) fn set_deadline(&self, at: Option<Instant>) {
        self.deadline.set(at);
    }

    /// Builds the runtime (heap budget, stack limit, interrupt handler) and a context with only
    /// the intrinsics a cell needs (no module loader, no `performance`, no I/O).
    pub(crate) fn new(memory_limit: usize, max_stack: usize) -> Result<Isolate, rquickjs::Error> {
        let heap = Rc::new(HeapBudget {
            used: Cell::new(0),
            limit: Cell::new(memory_limit),
            refused: Cell::new(false),
        });
        let runtime = Runtime::new_with_alloc(LimitedAllocator(heap.clone()))?;
        runtime.set_max_stack_size(max_stack);
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let d = deadline.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || {
            d.get().is_some_and(|at| Instant::now() >= at)
        })));
        let context = Context::custom::<(
            intrinsic::Date,
            intrinsic::Eval,
            intrinsic::RegExpCompiler,
            intrinsic::RegExp,
            intrinsic::Json,
            intrinsic::Proxy,
            intrinsic::MapSet,
            intrinsic::TypedArrays,
            intrinsic::Promise,
            intrinsic::WeakRef,
        )>(&runtime)?;
        context.with(|ctx| install_random(&ctx))?;
        Ok(Isolate {
            context,
            _runtime: runtime,
            deadline,
            heap,
        })
    }

    /// Loads the prelude, calls `ready` (install seccomp, send `Ready`), then serves exactly one
    /// request from `chan`.
    pub(crate) fn serve(
        &self,
        chan: Channel,
        caps: &WorkerConfig,
        prelude: Option<&[u8]>,
        ready: impl FnOnce(&mut Channel) -> Result<(), SetupStage>,
    ) -> Result<Served, SetupStage> {
        let shared = Rc::new(RefCell::new(Shared::new(
            chan,
            caps.bridge_calls,
            caps.log_bytes,
        )));
        self.context.with(|ctx| {
            let object = load_prelude(&ctx, &shared, prelude).map_err(|_| SetupStage::Prelude)?;
            self.serve_loaded(&ctx, &shared, object, caps, ready)
        })
    }

    /// [`Isolate::serve`] once the prelude is loaded (here or in the zygote's [`Template`]).
    fn serve_loaded<'js>(
        &self,
        ctx: &Ctx<'js>,
        shared: &Rc<RefCell<Shared>>,
        object: Object<'js>,
        caps: &WorkerConfig,
        ready: impl FnOnce(&mut Channel) -> Result<(), SetupStage>,
    ) -> Result<Served, SetupStage> {
        let internals = Internals::new(object, caps).map_err(|_| SetupStage::Prelude)?;
        if caps.rehearse {
            self.rehearse(ctx, &internals, shared, caps)
                .map_err(|_| SetupStage::Prelude)?;
        }
        let frame = {
            let mut s = shared.borrow_mut();
            ready(&mut s.chan)?;
            let frame = s.chan.recv(None).map_err(|_| SetupStage::Handshake)?;
            if let Some(HostFrame::Run(run)) = &frame
                && run.trace
            {
                s.trace = Some(WorkerTrace {
                    run: mono_ns(),
                    cpu: protocol::current_cpu(),
                    ..WorkerTrace::default()
                });
            }
            frame
        };
        match frame {
            Some(HostFrame::Run(run)) => self.run_cell(ctx, &internals, shared, &run),
            Some(HostFrame::ForbiddenSyscall) => {
                super::harden::forbidden_syscall();
                Ok(Served::FilterInactive)
            }
            Some(HostFrame::Reply { .. }) | None => Err(SetupStage::Handshake),
        }
    }

    /// Runs [`REHEARSAL`] through the real cell path (frame decoding, body compilation, bridge
    /// calls, console, result and `Done` encoding) with the channel offline and canned replies,
    /// then restores every per-cell counter. A forked worker starts with no page-table entries
    /// for the binary's text and cold heap arenas; the rehearsal takes those first-touch faults
    /// here, before `Ready`, instead of on the cell's timed path (measured: ~50 µs of faults per
    /// warm cell without it). Nothing of it is visible to the guest: the body is a function
    /// scope, every call it made is settled, logs and counters are reset.
    fn rehearse<'js>(
        &self,
        ctx: &Ctx<'js>,
        internals: &Internals<'js>,
        shared: &Rc<RefCell<Shared>>,
        caps: &WorkerConfig,
    ) -> rquickjs::Result<()> {
        let mut frames = Vec::with_capacity(512);
        let run = HostFrame::Run(RunCell {
            code: REHEARSAL.to_owned(),
            timeout_ms: REHEARSAL_TIMEOUT_MS,
            trace: false,
            cpu: None,
        });
        let _ = protocol::encode(&run, &mut frames);
        for (id, reply) in REHEARSAL_REPLIES.iter().enumerate() {
            let result = match reply {
                Ok(json) => match RawValue::from_string((*json).to_owned()) {
                    Ok(raw) => ReplyResult::Ok(raw),
                    Err(_) => continue,
                },
                Err(message) => ReplyResult::Err((*message).to_owned()),
            };
            let frame = HostFrame::Reply {
                id: id as u64 + 1,
                result,
                cpu: None,
            };
            let _ = protocol::encode(&frame, &mut frames);
        }
        shared.borrow_mut().chan.set_offline(true, &frames);
        let run = shared.borrow_mut().chan.recv(None);
        if let Ok(Some(HostFrame::Run(run))) = run {
            // Its outcome is irrelevant: only the paths it walked matter.
            let _ = self.run_cell(ctx, internals, shared, &run);
        }
        self.deadline.set(None);
        shared.borrow_mut().reset(caps);
        internals.reset_log_budget(caps)
    }

    fn run_cell<'js>(
        &self,
        ctx: &Ctx<'js>,
        internals: &Internals<'js>,
        shared: &Rc<RefCell<Shared>>,
        run: &RunCell,
    ) -> Result<Served, SetupStage> {
        let start = Instant::now();
        let hard = start + Duration::from_millis(run.timeout_ms);
        let soft = hard
            .checked_sub(INTERRUPT_MARGIN)
            .unwrap_or(start)
            .max(start);
        self.deadline.set(Some(soft));

        // The body and its promise (which holds the result) are freed only after `Done` is sent:
        // freeing a function's bytecode, atoms and object graph is not on the caller's path.
        let mut keep = Vec::with_capacity(2);
        let settled = drive(ctx, shared, internals, &run.code, soft, &mut keep);
        let mut done = Done {
            status: DoneStatus::Ok,
            value: None,
            error: None,
            logs: Vec::new(),
            logs_dropped: 0,
            log_bytes: 0,
            bridge_calls: 0,
            result_bytes: 0,
            trace: None,
        };
        match settled {
            Settled::Io => return Err(SetupStage::Io),
            Settled::TimedOut => done.status = DoneStatus::Timeout,
            // Out of memory inside a job leaves the chain pending: report the cause.
            Settled::NeverSettles if self.heap.refused() => done.status = DoneStatus::Memory,
            Settled::NeverSettles => {
                done.status = DoneStatus::JsError;
                done.error = Some(
                    "the cell awaits a promise that can never settle (no bridge call is pending \
                     and the sandbox has no timers); await openclaw.tools calls or return a value"
                        .to_owned(),
                );
            }
            Settled::Threw(e) => self.classify_error(ctx, internals, e, soft, &mut done),
            Settled::Value(v) => self.encode_result(ctx, internals, v, soft, &mut done),
        }
        let mut s = shared.borrow_mut();
        done.logs = std::mem::take(&mut s.logs);
        done.logs_dropped = s.logs_dropped;
        done.log_bytes = s.log_bytes;
        done.bridge_calls = s.started;
        done.trace = s.trace.take().map(|mut t| {
            t.done = mono_ns();
            t
        });
        if protocol::encode(&WorkerFrame::Done(done), &mut s.out).is_err() {
            return Err(SetupStage::Io);
        }
        s.flush();
        if s.io_failed {
            return Err(SetupStage::Io);
        }
        drop(s);
        drop(keep);
        Ok(Served::Done)
    }

    fn classify_error<'js>(
        &self,
        ctx: &Ctx<'js>,
        internals: &Internals<'js>,
        e: Value<'js>,
        soft: Instant,
        done: &mut Done,
    ) {
        if Instant::now() >= soft {
            done.status = DoneStatus::Timeout;
            return;
        }
        let described: Option<(String, String)> = internals
            .describe_error
            .call::<_, Vec<String>>((e,))
            .ok()
            .and_then(|v| {
                let mut it = v.into_iter();
                Some((it.next()?, it.next()?))
            });
        let (kind, message) = match described {
            Some(d) => d,
            None => {
                let _ = ctx.catch();
                if Instant::now() >= soft {
                    done.status = DoneStatus::Timeout;
                    return;
                }
                (
                    "memory".to_owned(),
                    "uncaught exception (unprintable)".to_owned(),
                )
            }
        };
        done.status = match kind.as_str() {
            "memory" if self.heap.refused() => DoneStatus::Memory,
            "bridge_limit" => DoneStatus::BridgeCallLimit,
            "argument_bytes" => DoneStatus::ArgumentTooLarge,
            "argument_depth" => DoneStatus::ArgumentTooDeep,
            _ => DoneStatus::JsError,
        };
        let mut message = message;
        truncate_to(&mut message, 8 * 1024);
        done.error = Some(message);
    }

    fn encode_result<'js>(
        &self,
        ctx: &Ctx<'js>,
        internals: &Internals<'js>,
        v: Value<'js>,
        soft: Instant,
        done: &mut Done,
    ) {
        let encoded = internals
            .encode_result
            .call::<_, Value>((v, internals.result_bytes as f64));
        let encoded = match encoded {
            Ok(e) => e,
            Err(_) => {
                let e = ctx.catch();
                self.classify_error(ctx, internals, e, soft, done);
                if done.status == DoneStatus::JsError {
                    done.error = Some(format!(
                        "the cell's return value could not be encoded as JSON: {}",
                        done.error.take().unwrap_or_default()
                    ));
                }
                return;
            }
        };
        if let Some(len) = encoded.as_number() {
            done.status = DoneStatus::ResultTooLarge;
            done.result_bytes = len as usize;
            return;
        }
        let text = encoded.as_string().and_then(|s| s.to_string().ok());
        let Some(text) = text else {
            done.status = DoneStatus::JsError;
            done.error = Some("the cell's return value could not be encoded as JSON".to_owned());
            return;
        };
        done.result_bytes = text.len();
        if text.len() > internals.result_bytes {
            done.status = DoneStatus::ResultTooLarge;
            return;
        }
        match RawValue::from_string(repair_lone_surrogates(text)) {
            Ok(raw) => {
                done.status = DoneStatus::Ok;
                done.value = Some(raw);
            }
            Err(e) => {
                done.status = DoneStatus::JsError;
                done.error = Some(format!("the cell's return value is not valid JSON: {e}"));
            }
        }
    }
}

/// A runtime and context with the prelude loaded, built once by the zygote before it forks any
/// worker. A worker forked after that owns a copy-on-write copy of it, so a cell forked on demand
/// skips building the isolate and loading the prelude (about 0.7 ms of a cold cell's start on the
/// reference VM, mostly first-touch page faults).
///
/// What a fork must not share is redone in the worker by [`Template::serve`]: the heap and stack
/// limits of its request, its socket and frame cap, the per-cell counters and budgets, and the
/// `Math.random` state ([`install_random`]). Objects, atoms and shapes the prelude created are
/// shared by every worker, as they would be identical anyway; nothing a guest does in one worker
/// reaches the template or another worker (copy-on-write), and the zygote never runs guest code.
pub(crate) struct Template {
    // Field order matters for drop: the persistent handle before the runtime that owns it.
    internals: Persistent<Object<'static>>,
    shared: Rc<RefCell<Shared>>,
    isolate: Isolate,
}

impl Template {
    /// Builds the isolate with `memory_limit` and `max_stack` (replaced per worker) and loads the
    /// prelude into it with a detached channel. `None` if any step fails (workers then build
    /// their own isolate).
    pub(crate) fn build(
        memory_limit: usize,
        max_stack: usize,
        prelude: Option<&[u8]>,
    ) -> Option<Template> {
        let isolate = Isolate::new(memory_limit, max_stack).ok()?;
        let shared = Rc::new(RefCell::new(Shared::new(Channel::detached(), 0, 0)));
        let internals = isolate.context.with(|ctx| {
            load_prelude(&ctx, &shared, prelude)
                .ok()
                .map(|object| Persistent::save(&ctx, object))
        })?;
        Some(Template {
            internals,
            shared,
            isolate,
        })
    }

    /// In a freshly forked worker: adopts the request's limits, attaches the socket (`ipc`),
    /// reseeds `Math.random`, then serves exactly one request as [`Isolate::serve`] does.
    pub(crate) fn serve(
        &self,
        ipc: RawFd,
        caps: &WorkerConfig,
        max_stack: usize,
        ready: impl FnOnce(&mut Channel) -> Result<(), SetupStage>,
    ) -> Result<Served, SetupStage> {
        if caps.rehearse {
            // A pool worker, before `Ready`: off any cell's path. A worker forked for a waiting
            // cell skips it (≈ 2.3 µs a page either way on the reference VM, and the cell writes
            // only a fraction of the pages).
            own_inherited_heap();
        }
        self.isolate.heap.limit.set(caps.memory_limit);
        self.isolate._runtime.set_max_stack_size(max_stack);
        seed_random();
        {
            let mut s = self.shared.borrow_mut();
            // SAFETY: the worker moved its socket to `ipc`; nothing else owns it.
            unsafe { s.chan.attach(ipc, caps.frame_bytes) };
            s.chan.set_spin(caps.spin, caps.ready_spin_us);
            s.reset(caps);
        }
        self.isolate.context.with(|ctx| {
            let object = self
                .internals
                .clone()
                .restore(&ctx)
                .map_err(|_| SetupStage::Prelude)?;
            self.isolate
                .serve_loaded(&ctx, &self.shared, object, caps, ready)
        })
    }
}

/// Copies the heap inherited from the zygote into this worker's own pages in one call
/// (`MADV_POPULATE_WRITE`, Linux ≥ 5.14), instead of one copy-on-write fault per page the first
/// time the cell writes it (QuickJS writes reference counts on every object it touches). On a
/// kernel without it the faults simply happen later.
fn own_inherited_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: sbrk(0) only reads the break; mallinfo2 reads the allocator's statistics; the
        // range is the main arena's (page-aligned down), which madvise only pre-faults.
        unsafe {
            let end = libc::sbrk(0) as usize;
            let arena = libc::mallinfo2().arena;
            // The system's page size (madvise wants an aligned start), 4 KiB if unknown.
            let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE))
                .ok()
                .filter(|p| p.is_power_of_two())
                .unwrap_or(4096);
            if end != usize::MAX && arena > 0 && arena <= end {
                let start = (end - arena) & !(page - 1);
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
}

thread_local! {
    /// `Math.random`'s xorshift64* state for the isolate(s) of this thread.
    static RANDOM_STATE: Cell<u64> = const { Cell::new(1) };
}

/// Seeds `Math.random` from the kernel's generator (before the seccomp filter; falls back to the
/// clock and pid). A forked worker calls it again: the state it inherited is its zygote's.
pub(crate) fn seed_random() {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the local buffer.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), libc::GRND_NONBLOCK) };
    let mut seed = u64::from_ne_bytes(bytes);
    if n != bytes.len() as isize {
        // SAFETY: getpid has no failure mode.
        let pid = unsafe { libc::getpid() } as u64;
        seed = mono_ns() ^ pid.rotate_left(32);
    }
    RANDOM_STATE.set(seed.max(1));
}

/// `Math.random`: QuickJS's own algorithm (xorshift64*, 52 random bits), but with its state
/// outside the context, so that workers sharing one template context each draw their own
/// sequence.
fn random() -> f64 {
    RANDOM_STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 12;
        f64::from_bits((0x3ff << 52) | bits) - 1.0
    })
}

/// Replaces the context's `Math.random` with [`random`] and seeds it.
fn install_random(ctx: &Ctx<'_>) -> rquickjs::Result<()> {
    seed_random();
    let math: Object = ctx.globals().get("Math")?;
    math.set(
        "random",
        Function::new(ctx.clone(), random)?.with_name("random")?,
    )
}

/// Trusted cell body run once before `Ready` (see `Isolate::rehearse`): the usual shapes of a
/// cell (bridge calls in sequence, a rejected call caught, console output, array callbacks,
/// template literals, destructuring, JSON both ways), answered by [`REHEARSAL_REPLIES`].
const REHEARSAL: &str = include_str!("../../js/rehearsal.js");

/// The canned replies to the rehearsal's bridge calls, in call order (ids 1, 2, 3).
const REHEARSAL_REPLIES: [Result<&str, &str>; 3] = [
    Ok(r#"[{"id":"r:a","name":"a","score":2.5},{"id":"r:b","name":"b","score":1.5}]"#),
    Ok(r#"{"id":"r:b","name":"b","input":"b(n: number)","input_schema":{"type":"object"}}"#),
    Err("rehearsal: the call is refused"),
];

/// The rehearsal's deadline (it takes well under a millisecond).
const REHEARSAL_TIMEOUT_MS: u64 = 1_000;

/// Compiles the prelude to QuickJS bytecode. The zygote does this once; each worker then loads
/// the bytecode (~40 µs) instead of parsing the source (~500 µs on this class of machine).
/// `None` if compiling fails (workers then parse the source).
pub(crate) fn compile_prelude() -> Option<Vec<u8>> {
    let runtime = Runtime::new().ok()?;
    let context = Context::custom::<(intrinsic::Eval,)>(&runtime).ok()?;
    context.with(|ctx| {
        let raw = ctx.as_raw().as_ptr();
        let source = std::ffi::CString::new(PRELUDE).ok()?;
        let flags = (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
        // SAFETY: a NUL-terminated source of the given length, a static file name, a live context.
        let compiled = unsafe {
            qjs::JS_Eval(
                raw,
                source.as_ptr(),
                PRELUDE.len() as _,
                c"prelude.js".as_ptr(),
                flags,
            )
        };
        // SAFETY: JS_IsException only inspects the tag.
        if unsafe { qjs::JS_IsException(compiled) } {
            let _ = ctx.catch();
            return None;
        }
        let mut size: qjs::size_t = 0;
        // SAFETY: `compiled` is a live function object; the buffer is freed with js_free below.
        let buf = unsafe {
            qjs::JS_WriteObject(raw, &mut size, compiled, qjs::JS_WRITE_OBJ_BYTECODE as i32)
        };
        // SAFETY: we own `compiled` and release it exactly once.
        unsafe { qjs::JS_FreeValue(raw, compiled) };
        if buf.is_null() {
            let _ = ctx.catch();
            return None;
        }
        // SAFETY: JS_WriteObject returned `size` readable bytes at `buf`, which we copy, then free.
        let bytes = unsafe { std::slice::from_raw_parts(buf, size as usize).to_vec() };
        // SAFETY: `buf` came from QuickJS's allocator for this context.
        unsafe { qjs::js_free(raw, buf.cast()) };
        Some(bytes)
    })
}

/// The prelude's function: from the zygote's bytecode when available (only ever bytes this binary
/// produced), else parsed from source.
fn prelude_function<'js>(
    ctx: &Ctx<'js>,
    bytecode: Option<&[u8]>,
) -> rquickjs::Result<Function<'js>> {
    if let Some(bytes) = bytecode {
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: the bytes were written by JS_WriteObject of this same QuickJS build in the zygote.
        let object = unsafe {
            qjs::JS_ReadObject(
                raw,
                bytes.as_ptr(),
                bytes.len() as _,
                qjs::JS_READ_OBJ_BYTECODE as i32,
            )
        };
        // SAFETY: tag checks; JS_EvalFunction takes ownership of `object`.
        unsafe {
            if !qjs::JS_IsException(object) {
                let value = qjs::JS_EvalFunction(raw, object);
                if !qjs::JS_IsException(value)
                    && let Some(f) = Value::from_raw(ctx.clone(), value).into_function()
                {
                    return Ok(f);
                }
            }
        }
        let _ = ctx.catch();
    }
    ctx.eval(PRELUDE)
}

/// Evaluates the prelude and calls it with the native `host` object; returns its internals.
fn load_prelude<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<RefCell<Shared>>,
    bytecode: Option<&[u8]>,
) -> Result<Object<'js>, rquickjs::Error> {
    let (calls, logs) = (shared.clone(), shared.clone());
    install_prelude(
        ctx,
        bytecode,
        move |op, args| calls.borrow_mut().start_call(op, args),
        move |level, text| logs.borrow_mut().log(level, text),
    )
}

/// Evaluates the prelude and calls it with a native `host` object made of `call` (`host.call`:
/// the new call's id, or the refusal message the guest's promise rejects with) and `log`
/// (`host.log`: the remaining log budget); returns the prelude's internals. The worker passes its
/// channel-backed pair; the measurement wing's in-process floor (`lab/floor.rs`) its own.
pub(crate) fn install_prelude<'js>(
    ctx: &Ctx<'js>,
    bytecode: Option<&[u8]>,
    call: impl Fn(&str, String) -> Result<u64, Refused> + 'js,
    log: impl Fn(i32, &str) -> usize + 'js,
) -> Result<Object<'js>, rquickjs::Error> {
    let host = Object::new(ctx.clone())?;
    host.set(
        "call",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, op: String, args: String| -> rquickjs::Result<Value<'js>> {
                match call(&op, args) {
                    Ok(id) => Ok(Value::new_number(ctx, id as f64)),
                    Err(refused) => {
                        Ok(rquickjs::String::from_str(ctx, &refused.tagged())?.into_value())
                    }
                }
            },
        )?,
    )?;
    host.set(
        "log",
        Function::new(ctx.clone(), move |level: i32, text: String| -> f64 {
            log(level, &text) as f64
        })?,
    )?;
    let prelude = prelude_function(ctx, bytecode)?;
    prelude.call((host,))
}

/// Runs the cell body and its job queue, answering bridge calls, until the cell's promise settled
/// and no started call is outstanding, or the deadline passed.
fn drive<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<RefCell<Shared>>,
    internals: &Internals<'js>,
    code: &str,
    soft: Instant,
    keep: &mut Vec<Value<'js>>,
) -> Settled<'js> {
    let body = match compile_body(ctx, internals, code, soft, |on| {
        shared.borrow_mut().compiling = on;
    }) {
        Some(f) => f,
        None => return threw(ctx, soft),
    };
    if let Some(trace) = &mut shared.borrow_mut().trace {
        trace.compiled = mono_ns();
    }
    keep.push(body.clone().into_value());
    let promise = match body.call::<_, Value>(()) {
        Ok(v) => match v.into_promise() {
            Some(p) => p,
            None => return threw(ctx, soft),
        },
        Err(_) => return threw(ctx, soft),
    };
    keep.push(promise.clone().into_value());
    loop {
        // Run every queued job, checking our own deadline: `execute_pending_job` swallows errors
        // raised in jobs, including the interrupt (MEASUREMENTS.md).
        loop {
            if Instant::now() >= soft {
                return Settled::TimedOut;
            }
            if !ctx.execute_pending_job() {
                break;
            }
        }
        let outstanding = shared.borrow().outstanding.len();
        let state = promise.state();
        if outstanding == 0 {
            return match state {
                PromiseState::Pending => Settled::NeverSettles,
                PromiseState::Resolved => match promise.result::<Value>() {
                    Some(Ok(v)) => Settled::Value(v),
                    _ => threw(ctx, soft),
                },
                PromiseState::Rejected => {
                    let _ = promise.result::<Value>();
                    Settled::Threw(ctx.catch())
                }
            };
        }
        let reply = {
            let mut s = shared.borrow_mut();
            s.flush();
            if s.io_failed {
                return Settled::Io;
            }
            match s.chan.recv(Some(soft)) {
                Ok(Some(HostFrame::Reply { id, result, .. })) => {
                    if let Some(trace) = &mut s.trace
                        && let Some(call) = usize::try_from(id)
                            .ok()
                            .and_then(|id| trace.calls.get_mut(id.wrapping_sub(1)))
                    {
                        call[1] = mono_ns();
                    }
                    if s.outstanding.remove(&id) {
                        Some((id, result))
                    } else {
                        None
                    }
                }
                Ok(Some(_)) | Err(ChannelError::Io | ChannelError::Malformed) => {
                    return Settled::Io;
                }
                Ok(None) => return Settled::TimedOut,
            }
        };
        if let Some((id, result)) = reply {
            let call = match result {
                ReplyResult::Ok(raw) => {
                    internals.settle.call::<_, ()>((id as f64, true, raw.get()))
                }
                ReplyResult::Err(message) => {
                    internals.settle.call::<_, ()>((id as f64, false, message))
                }
            };
            if call.is_err() {
                let _ = ctx.catch();
            }
        }
    }
}

/// The wrapper a cell body is compiled in; the body shares its first line with it so guest line
/// numbers stay right.
const WRAPPER_HEAD: &str = "(async function () { ";
const WRAPPER_TAIL: &str = "\n})";

/// The `SyntaxError` of a body that closes its wrapper.
const CLOSES_WRAPPER: &str = "the cell body is not a function body: it closes the async function \
                              the sandbox compiles it in (an unmatched `}` or `)`); send only \
                              statements";

/// Compiles `code` as the body of an async function and returns that function, or `None` with
/// the exception pending (a `SyntaxError` from the parser, or [`CLOSES_WRAPPER`]).
///
/// The body is compiled inside `(async function () { … \n})`, compile-only, so a syntax error
/// runs nothing. A body is a function body exactly when the script's value is a function whose
/// source text is the whole wrapper minus its parentheses: a function's source is a contiguous
/// slice of the script, so only the wrapper's own function spans it, and then the body was
/// parsed entirely inside it. A body that closes the wrapper (`}); (async function(){ …`) fails
/// that check; whatever top-level code it smuggled in ran with `compiling(true)` (no bridge call
/// starts, nothing is logged: the worker's native side refuses them) and the cell ends with
/// [`CLOSES_WRAPPER`]. The check costs one call into the prelude and one comparison of the
/// body's text.
pub(crate) fn compile_body<'js>(
    ctx: &Ctx<'js>,
    internals: &Internals<'js>,
    code: &str,
    soft: Instant,
    compiling: impl Fn(bool),
) -> Option<Function<'js>> {
    let mut source =
        String::with_capacity(WRAPPER_HEAD.len() + code.len() + WRAPPER_TAIL.len() + 1);
    source.push_str(WRAPPER_HEAD);
    source.push_str(code);
    source.push_str(WRAPPER_TAIL);
    let len = source.len();
    // QuickJS's parser needs a NUL after the source.
    source.push('\0');
    let raw = ctx.as_raw().as_ptr();
    let flags = (qjs::JS_EVAL_TYPE_GLOBAL
        | qjs::JS_EVAL_FLAG_STRICT
        | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32;
    // SAFETY: a NUL-terminated source of `len` bytes, a static file name, a live context.
    let compiled = unsafe {
        qjs::JS_Eval(
            raw,
            source.as_ptr().cast(),
            len as _,
            c"eval_script".as_ptr(),
            flags,
        )
    };
    // SAFETY: JS_IsException only inspects the tag.
    if unsafe { qjs::JS_IsException(compiled) } {
        return None;
    }
    compiling(true);
    // SAFETY: JS_EvalFunction takes ownership of the compiled script.
    let value = unsafe { qjs::JS_EvalFunction(raw, compiled) };
    compiling(false);
    // SAFETY: tag check only.
    if unsafe { qjs::JS_IsException(value) } {
        // Evaluating the wrapper alone runs nothing; so something smuggled in ran and threw. The
        // deadline and out-of-memory keep their own outcome.
        if Instant::now() < soft {
            let _ = ctx.catch();
            let _ = rquickjs::Exception::throw_syntax(ctx, CLOSES_WRAPPER);
        }
        return None;
    }
    // SAFETY: `value` is a live, owned value of this context; `Value` takes the reference.
    let value = unsafe { Value::from_raw(ctx.clone(), value) };
    let own = value.as_function().is_some_and(|f| {
        internals
            .source_of
            .call::<_, rquickjs::String>((f.clone(),))
            .ok()
            .and_then(|s| s.to_string().ok())
            .is_some_and(|text| text.as_str() == &source[1..len - 1])
    });
    if !own {
        let _ = ctx.catch();
        let _ = rquickjs::Exception::throw_syntax(ctx, CLOSES_WRAPPER);
        return None;
    }
    value.into_function()
}

fn threw<'js>(ctx: &Ctx<'js>, soft: Instant) -> Settled<'js> {
    if Instant::now() >= soft {
        return Settled::TimedOut;
    }
    Settled::Threw(ctx.catch())
}
