//! The code-cell benchmark behind `benches/cells.rs` and `toolsearch bench cells --json`: warm pool,
//! warm after idle, the in-process floor (those three interleaved cell by cell), cold fork, and
//! the reference architecture (a Node.js child per cell) in the same run, with where each
//! series' time goes and the machine's state.
//!
//! Owns: [`run_cells_bench`], [`BenchReport`], the benchmark cell ([`BENCH_CELL`]), the
//! reference runner ([`run_node_cell`], script `js/node_cell.js`) and [`FixtureBridge`].
//! Never does: time pool refill (warm iterations wait for a full pool outside the timed region);
//! skip a missing prerequisite (no `node` is an error); accept a wrong result (every iteration's
//! value is compared with the first warm one, inside the timed loop); run code a model wrote: the
//! `inprocess` series runs the caller's benchmark cell unsandboxed (see `floor.rs`), so the
//! cell must be the caller's own, like [`BENCH_CELL`].
//! Invariants: every series runs the same body against the same [`Bridge`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::floor::Floor;
use crate::sandbox::{
    Bridge, BridgeOp, CellOptions, CellPhases, DEFAULT_WORKER_NICE, Outcome, PollWhen, Polling,
    SandboxError, Supervisor, SupervisorConfig,
};

/// Why the cell bench could not give a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CellsError {
    /// The sandbox machinery failed (zygote, worker, supervisor).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The reference series needs `node` on PATH.
    #[error("the node reference benchmark needs `node` (>= 20) on PATH: {detail}; install Node.js")]
    NodeMissing {
        /// What failed.
        detail: String,
    },
    /// An iteration produced a wrong result.
    #[error("benchmark `{which}` produced a wrong result: {detail}")]
    Mismatch {
        /// Which series.
        which: &'static str,
        /// Expected versus actual.
        detail: String,
    },
    /// An OS call of the bench itself failed.
    #[error("the cell bench failed while {what}: {source}")]
    Io {
        /// What the bench was doing.
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl CellsError {
    #[cold]
    fn io(what: &'static str, source: std::io::Error) -> CellsError {
        CellsError::Io { what, source }
    }
}

/// The reference runner's script, written to a temp file per run.
pub const NODE_CELL_JS: &str = include_str!("../../js/node_cell.js");

/// How long the machine idles before each cell of [`BenchReport::warm_after_idle`].
pub const IDLE_BEFORE_CELL: Duration = Duration::from_millis(5);

/// The benchmark cell: one `search`, one `describe`, one `call`.
pub const BENCH_CELL: &str = "const hits = await openclaw.tools.search('create a calendar event', {limit: 3});\n\
const tool = await openclaw.tools.describe(hits[0].id);\n\
const out = await openclaw.tools.call(tool.id, {title: 'standup', a: 2, b: 3});\n\
return {hits: hits.length, tool: tool.name, result: out};";

/// Latency percentiles of one series, in milliseconds, and where its time went.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Series {
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile (nearest rank).
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// Iterations measured.
    pub samples: usize,
    /// Medians of each phase over the series' cells (absent for `node`, which is not traced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<PhaseMedians>,
}

/// The median of each phase of [`CellPhases`] over a series, in microseconds (per-call phases:
/// over every bridge call of every cell).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PhaseMedians {
    /// `run_cell` called → the worker decoded the body.
    pub submit_to_running_us: f64,
    /// Compiling the body.
    pub compile_us: f64,
    /// Guest work before each bridge call.
    pub call_guest_us: f64,
    /// The supervisor's side of each bridge call (the gateway included).
    pub call_host_us: f64,
    /// Both socket trips of each bridge call (0 in-process).
    pub call_hops_us: f64,
    /// Last reply → `Done` encoded (the guest's remaining work, the result's encoding).
    pub tail_us: f64,
    /// `Done` encoded → `run_cell` returned.
    pub result_to_caller_us: f64,
    /// Share of cells whose worker decoded `Run` on the CPU the supervisor sent it from (0–1;
    /// absent when CPUs are unknown, and in-process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_cpu_share: Option<f64>,
    /// How many of the series' cells the supervisor submitted from each CPU (index = CPU; empty
    /// when unknown): with CPUs of unequal speed (see [`Machine::cpu_loop_us`]) it tells where
    /// the series ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_cpus: Vec<usize>,
}

impl PhaseMedians {
    /// Medians over `cells` (`None` when no cell was traced).
    pub fn of(cells: &[CellPhases]) -> Option<PhaseMedians> {
        if cells.is_empty() {
            return None;
        }
        let med = |mut v: Vec<f64>| -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            v.sort_by(f64::total_cmp);
            v[(v.len() - 1) / 2]
        };
        let per_cell = |f: fn(&CellPhases) -> f64| med(cells.iter().map(f).collect());
        let per_call = |f: fn(&crate::sandbox::CallPhases) -> f64| {
            med(cells.iter().flat_map(|c| c.calls.iter().map(f)).collect())
        };
        let placed: Vec<bool> = cells
            .iter()
            .filter_map(|c| Some(c.host_cpu? == c.worker_cpu?))
            .collect();
        let mut host_cpus: Vec<usize> = Vec::new();
        for cpu in cells.iter().filter_map(|c| c.host_cpu) {
            let cpu = cpu as usize;
            if cpu < CpuSet::count() {
                if host_cpus.len() <= cpu {
                    host_cpus.resize(cpu + 1, 0);
                }
                host_cpus[cpu] += 1;
            }
        }
        Some(PhaseMedians {
            host_cpus,
            submit_to_running_us: per_cell(|c| c.submit_to_running_us),
            compile_us: per_cell(|c| c.compile_us),
            call_guest_us: per_call(|c| c.guest_us),
            call_host_us: per_call(|c| c.host_us),
            call_hops_us: per_call(|c| c.hops_us),
            tail_us: per_cell(|c| c.tail_us),
            result_to_caller_us: per_cell(|c| c.result_to_caller_us),
            same_cpu_share: (!placed.is_empty())
                .then(|| placed.iter().filter(|s| **s).count() as f64 / placed.len() as f64),
        })
    }
}

impl Series {
    /// Percentiles of `samples` (milliseconds).
    pub fn from_samples(mut samples: Vec<f64>) -> Series {
        if samples.is_empty() {
            return Series::default();
        }
        samples.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            let i = ((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
            samples[i]
        };
        Series {
            p50_ms: rank(0.50),
            p99_ms: rank(0.99),
            mean_ms: samples.iter().sum::<f64>() / samples.len() as f64,
            samples: samples.len(),
            phases: None,
        }
    }

    /// [`Series::from_samples`] plus the phase medians of the same cells.
    pub fn traced(samples: Vec<f64>, phases: &[CellPhases]) -> Series {
        Series {
            phases: PhaseMedians::of(phases),
            ..Series::from_samples(samples)
        }
    }
}

/// The machine the benchmark ran on.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Machine {
    /// `/proc/loadavg` (1, 5, 15 minutes) when the benchmark started.
    pub load_average_start: [f64; 3],
    /// The same when it ended.
    pub load_average_end: [f64; 3],
    /// `model name` of `/proc/cpuinfo`.
    pub cpu_model: String,
    /// CPUs this process may run on.
    pub cpus: usize,
    /// The kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The kernel's boot parameters that steer the scheduler (`sched*`, `preempt`, `isolcpus`,
    /// `nohz*` of `/proc/cmdline`). On the 2-vCPU VM of issue 14, `sched_vcpu_pack=15` packs
    /// wake-ups onto busy virtual CPUs: a woken worker mostly runs on its supervisor's CPU (see
    /// [`PhaseMedians::same_cpu_share`]).
    pub scheduler_boot_params: Vec<String>,
    /// The sandbox's [`SupervisorConfig::worker_nice`] in this run.
    pub worker_nice: u8,
    /// The sandbox's [`Polling::when`] in this run.
    pub polling: PollWhen,
    /// Per CPU (index = CPU), the median time of a fixed integer loop run by a thread pinned
    /// there, at the start and at the end of the run. The virtual CPUs of a VM need not be equal
    /// (one may share its core with another tenant): on the 2-vCPU VM of issue 14 one CPU ran the
    /// same loop 1.5–1.65× slower than the other, and a series' median follows the CPU it ran on.
    pub cpu_loop_us: Vec<f64>,
    /// The same at the end of the run.
    pub cpu_loop_us_end: Vec<f64>,
}

impl Machine {
    fn now(options: &BenchOptions) -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            })
            .unwrap_or_default();
        Machine {
            load_average_start: load_average(),
            load_average_end: [0.0; 3],
            cpu_model,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            scheduler_boot_params: scheduler_boot_params(
                &std::fs::read_to_string("/proc/cmdline").unwrap_or_default(),
            ),
            worker_nice: options.worker_nice,
            polling: options.polling,
            cpu_loop_us: cpu_loop_us(),
            cpu_loop_us_end: Vec::new(),
        }
    }
}

/// The CPUs this thread may run on (empty when unknown).
fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
        .collect()
}

/// Pins the calling thread to `cpu` alone (`false` when it cannot run there).
fn pin_to(cpu: usize) -> bool {
    let mut one = CpuSet::new();
    one.set(cpu).is_ok() && sched_setaffinity(Pid::from_raw(0), &one).is_ok()
}

/// Runs `f` on the calling thread pinned to `cpu`, then restores the thread's mask. `None` when
/// the thread cannot be pinned there.
fn on_cpu<T>(cpu: usize, f: impl FnOnce() -> T) -> Option<T> {
    let this = Pid::from_raw(0);
    let saved = sched_getaffinity(this).ok()?;
    if !pin_to(cpu) {
        return None;
    }
    let out = f();
    let _ = sched_setaffinity(this, &saved);
    Some(out)
}

/// [`Machine::cpu_loop_us`]: per allowed CPU, the median of 5 runs of a fixed integer loop
/// (≈ 1 ms on the reference VM), on this thread pinned there (0 for a CPU it cannot use).
fn cpu_loop_us() -> Vec<f64> {
    let cpus = allowed_cpus();
    let Some(&last) = cpus.last() else {
        return Vec::new();
    };
    let mut out = vec![0.0; last + 1];
    for cpu in cpus {
        let runs = on_cpu(cpu, || {
            let mut runs: Vec<f64> = (0..5)
                .map(|_| {
                    let started = Instant::now();
                    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
                    for i in 0..2_000_000u64 {
                        x = x.rotate_left(7) ^ i.wrapping_mul(0x2545_F491_4F6C_DD1D);
                    }
                    std::hint::black_box(x);
                    started.elapsed().as_secs_f64() * 1e6
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            runs[2]
        });
        out[cpu] = runs.map_or(0.0, |us| (us * 10.0).round() / 10.0);
    }
    out
}

/// The parameters of a kernel command line that steer the scheduler (up to a bare `--`, after
/// which the arguments belong to init).
fn scheduler_boot_params(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        .take_while(|p| *p != "--")
        .filter(|p| {
            let key = p.split('=').next().unwrap_or_default();
            key.starts_with("sched")
                || key.starts_with("nohz")
                || key == "preempt"
                || key == "isolcpus"
        })
        .map(str::to_owned)
        .collect()
}

/// `/proc/loadavg`'s three averages (zeros if unreadable).
pub fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut out = [0.0; 3];
    for (slot, v) in out.iter_mut().zip(text.split_whitespace()) {
        *slot = v.parse().unwrap_or(0.0);
    }
    out
}

/// How to run [`run_cells_bench_with`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchOptions {
    /// Measured iterations per series (at least 1).
    pub iterations: usize,
    /// [`SupervisorConfig::worker_nice`] of the warm and cold supervisors.
    pub worker_nice: u8,
    /// [`Polling::when`] of the warm and cold supervisors (windows at their defaults).
    pub polling: PollWhen,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions {
            iterations: 200,
            worker_nice: DEFAULT_WORKER_NICE,
            polling: Polling::default().when,
        }
    }
}

/// What `toolsearch bench cells --json` prints.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BenchReport {
    /// Where and under which load it ran.
    pub machine: Machine,
    /// A ready worker exists when the cell is submitted (submitted as soon as the pool is full).
    pub warm: Series,
    /// Like `warm`, but the machine has been idle for [`IDLE_BEFORE_CELL`] when the cell is
    /// submitted, as between an agent's turns. On a VM the idle virtual CPUs lose their caches
    /// (the hypervisor runs other work on them), so the same cell costs more. Interleaved with
    /// `warm` and `inprocess`, cell by cell (see [`run_cells_bench_with`]).
    pub warm_after_idle: Series,
    /// The floor: the same cell in a fresh QuickJS runtime and context inside this process, with
    /// the same prelude and bridge, the isolate built before the clock starts (as a pool worker's
    /// is). Each floor cell runs right after a warm cell, on a thread pinned to the CPU that warm
    /// cell was submitted from, so that `ratio_warm_over_inprocess` compares the process boundary
    /// on the same CPU at the same moment, not two CPUs of unequal speed or two moods of the
    /// machine. Not sandboxed; a measurement only.
    pub inprocess: Series,
    /// The CPU most `inprocess` cells ran on (pinned; `None`: unknown or not pinnable, the floor
    /// then ran wherever it was put).
    pub inprocess_cpu: Option<usize>,
    /// The floor's p50 on every CPU (index = CPU, ms; 0 for a CPU no floor cell ran on).
    pub inprocess_p50_by_cpu_ms: Vec<f64>,
    /// The zygote forks on demand (pool size 0).
    pub cold: Series,
    /// The reference: `node --experimental-permission` spawned per cell, empty environment,
    /// timed from spawn to result.
    pub node: Series,
    /// `node.p50_ms / warm.p50_ms`.
    pub ratio_node_over_warm: f64,
    /// `warm.p50_ms / inprocess.p50_ms`: what the process boundary costs.
    pub ratio_warm_over_inprocess: f64,
    /// VmRSS of a ready worker, KiB.
    pub ready_worker_rss_kib: u64,
    /// PSS of a ready worker (`/proc/<pid>/smaps_rollup`), KiB.
    pub ready_worker_pss_kib: u64,
    /// The value every iteration returned.
    pub value: Value,
}

/// A deterministic stand-in for the gateway, used by the benchmark and the demo.
/// `search` → three hits; `describe(id)` → `{id, name, input_schema}`; `call(id, args)` →
/// `{id, ok: true, sum: args.a + args.b}`.
#[derive(Debug, Default, Clone, Copy)]
pub struct FixtureBridge;

#[async_trait::async_trait]
impl Bridge for FixtureBridge {
    async fn invoke(&self, op: BridgeOp, args: Value) -> Result<Value, crate::catalog::ToolError> {
        let first = args.get(0).cloned().unwrap_or(Value::Null);
        match op {
            BridgeOp::Search => Ok(json!([
                {"id": "mcp:calendar:create_event", "name": "create_event", "score": 3.5},
                {"id": "mcp:calendar:list_events", "name": "list_events", "score": 2.0},
                {"id": "plugin:mail:send", "name": "send", "score": 1.0}
            ])),
            BridgeOp::Describe => {
                let id = first.as_str().unwrap_or_default().to_owned();
                let name = id.rsplit(':').next().unwrap_or_default().to_owned();
                Ok(json!({"id": id, "name": name, "input_schema": {"type": "object"}}))
            }
            BridgeOp::Call => {
                let a = args.get(1).and_then(|v| v.get("a")).and_then(Value::as_i64);
                let b = args.get(1).and_then(|v| v.get("b")).and_then(Value::as_i64);
                match (first.as_str(), a, b) {
                    (Some(id), Some(a), Some(b)) => Ok(json!({"id": id, "ok": true, "sum": a + b})),
                    (Some(id), _, _) => Ok(json!({"id": id, "ok": true})),
                    (None, _, _) => {
                        Err("Unknown tool: pass a tool id. Use search to find tools.".into())
                    }
                }
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mismatch(which: &'static str, detail: String) -> CellsError {
    CellsError::Mismatch { which, detail }
}

/// Every iteration of every series must return the first warm iteration's value.
fn same_value(which: &'static str, expected: &Value, value: &Value) -> Result<(), CellsError> {
    if value == expected {
        Ok(())
    } else {
        Err(mismatch(which, format!("expected {expected}, got {value}")))
    }
}

/// Runs `iterations` cells of every series with `bridge` and reports percentiles (see
/// [`run_cells_bench_with`]).
pub async fn run_cells_bench(
    worker_binary: &Path,
    bridge: Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
) -> Result<BenchReport, CellsError> {
    let options = BenchOptions {
        iterations,
        ..BenchOptions::default()
    };
    run_cells_bench_with(worker_binary, bridge, cell, &options).await
}

/// Runs warm, in-process and warm-after-idle cells with `bridge`, interleaved cell by cell, then
/// cold and node cells, and reports percentiles, phase medians and the machine's state. Fails if `node` is missing or any
/// iteration returns a different value. `cell` also runs outside the sandbox (the `inprocess`
/// series): pass the benchmark's own code, never a model's.
///
/// The measurement runs on a Tokio task, as a gateway's request handler would (timing from a
/// `block_on` thread adds two cross-thread wake-ups per cell that a server never pays).
pub async fn run_cells_bench_with(
    worker_binary: &Path,
    bridge: Arc<dyn Bridge>,
    cell: &str,
    options: &BenchOptions,
) -> Result<BenchReport, CellsError> {
    let worker_binary = worker_binary.to_path_buf();
    let cell = cell.to_string();
    let options = options.clone();
    match tokio::spawn(async move { measure(&worker_binary, bridge, &cell, &options).await }).await
    {
        Ok(report) => report,
        Err(e) => Err(mismatch("bench", format!("the benchmark task failed: {e}"))),
    }
}

async fn measure(
    worker_binary: &Path,
    bridge: Arc<dyn Bridge>,
    cell: &str,
    options: &BenchOptions,
) -> Result<BenchReport, CellsError> {
    let iterations = options.iterations.max(1);
    let node = find_node()?;
    let mut report = BenchReport {
        machine: Machine::now(options),
        ..BenchReport::default()
    };
    let config = || {
        let mut config = SupervisorConfig::new(worker_binary);
        config.worker_nice = options.worker_nice;
        config.polling.when = options.polling;
        config
    };
    let expected = interleaved_series(config(), &bridge, cell, iterations, &mut report).await?;

    // Cold: the zygote forks on demand.
    let mut cold_config = config();
    cold_config.pool_size = 0;
    report.cold = cold_series(cold_config, &bridge, cell, iterations, &expected).await?;

    // Node: the reference architecture.
    report.node = node_series(&node, &bridge, cell, iterations, &expected).await?;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    report.ratio_node_over_warm = ratio(report.node.p50_ms, report.warm.p50_ms);
    report.ratio_warm_over_inprocess = ratio(report.warm.p50_ms, report.inprocess.p50_ms);
    report.value = expected;
    report.machine.load_average_end = load_average();
    report.machine.cpu_loop_us_end = cpu_loop_us();
    Ok(report)
}

/// Runs warm, in-process floor and warm-after-idle cells, interleaved, and puts their series
/// and a ready worker's memory in `report`; returns the value every cell must return.
async fn interleaved_series(
    config: SupervisorConfig,
    bridge: &Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
    report: &mut BenchReport,
) -> Result<Value, CellsError> {
    // Warm, the floor and warm after idle, interleaved cell by cell: this VM's speed drifts by
    // up to 1.7× within minutes (the floor alone, measured as a series of its own, moved between
    // 0.18 and 0.33 ms from one run to the next and between the two CPUs), so three series
    // measured one after the other compared the machine's moods, not the process boundary. Each
    // iteration runs one warm cell (a ready worker exists when it is submitted), then the same
    // cell in-process on a thread pinned to the CPU that warm cell was submitted from, then one
    // warm cell after the machine idled for `IDLE_BEFORE_CELL`.
    let warm = Supervisor::start(config).await?;
    let mut floors = FloorThreads::new(bridge.clone(), cell);
    let mut samples = Interleaved::default();
    let expected = samples
        .run(&warm, &mut floors, bridge, cell, iterations)
        .await?;
    floors.stop();
    let expected = expected.unwrap_or_default();
    warm.wait_pool_full(Duration::from_secs(10)).await;
    if let Some(pid) = warm.ready_worker_pids().first() {
        report.ready_worker_rss_kib = proc_kib(&format!("/proc/{pid}/status"), "VmRSS:");
        report.ready_worker_pss_kib = proc_kib(&format!("/proc/{pid}/smaps_rollup"), "Pss:");
    }
    warm.shutdown().await;
    samples.report(report);
    Ok(expected)
}

/// The samples of the interleaved series: warm, the in-process floor (with the CPU each floor
/// cell was pinned to) and warm after idle.
#[derive(Default)]
struct Interleaved {
    warm_ms: Vec<f64>,
    warm_phases: Vec<CellPhases>,
    floor_ms: Vec<f64>,
    floor_phases: Vec<CellPhases>,
    floor_cpus: Vec<Option<usize>>,
    idle_ms: Vec<f64>,
    idle_phases: Vec<CellPhases>,
}

impl Interleaved {
    /// Runs `iterations` + 1 rounds (the first, untimed, fixes the expected value) and returns
    /// that value.
    async fn run(
        &mut self,
        warm: &Supervisor,
        floors: &mut FloorThreads,
        bridge: &Arc<dyn Bridge>,
        cell: &str,
        iterations: usize,
    ) -> Result<Option<Value>, CellsError> {
        let mut expected: Option<Value> = None;
        for i in 0..iterations + 1 {
            warm.wait_pool_full(Duration::from_secs(10)).await;
            let (dt, value, cell_phases) = warm_cell(warm, bridge, cell, true).await?;
            let cpu = cell_phases
                .as_ref()
                .and_then(|p| p.host_cpu)
                .map(|c| c as usize);
            match &expected {
                // The first iteration only fixes the expected value (and warms every piece up).
                None => expected = Some(value),
                Some(e) if *e == value => {
                    self.warm_ms.push(dt);
                    self.warm_phases.extend(cell_phases);
                }
                Some(e) => return Err(mismatch("warm", format!("expected {e}, got {value}"))),
            }
            let Some(expected) = &expected else {
                return Err(mismatch("warm", "no value".into()));
            };
            let (dt, value, cell_phases, ran_on) = floors.run(cpu, expected).await?;
            same_value("inprocess", expected, &value)?;
            if i > 0 {
                self.floor_ms.push(dt);
                self.floor_phases.push(cell_phases);
                self.floor_cpus.push(ran_on);
            }
            warm.wait_pool_full(Duration::from_secs(10)).await;
            tokio::time::sleep(IDLE_BEFORE_CELL).await;
            let (dt, value, cell_phases) = warm_cell(warm, bridge, cell, true).await?;
            same_value("warm_after_idle", expected, &value)?;
            if i > 0 {
                self.idle_ms.push(dt);
                self.idle_phases.extend(cell_phases);
            }
        }
        Ok(expected)
    }

    /// Puts the three series in `report`, with the floor's CPU (the one most of its cells ran
    /// on) and its p50 on every CPU it ran on.
    fn report(self, report: &mut BenchReport) {
        report.warm = Series::traced(self.warm_ms, &self.warm_phases);
        report.warm_after_idle = Series::traced(self.idle_ms, &self.idle_phases);
        let mut by_cpu: Vec<Vec<f64>> = Vec::new();
        for (&cpu, &dt) in self.floor_cpus.iter().zip(&self.floor_ms) {
            if let Some(cpu) = cpu {
                if by_cpu.len() <= cpu {
                    by_cpu.resize(cpu + 1, Vec::new());
                }
                by_cpu[cpu].push(dt);
            }
        }
        report.inprocess_cpu = (0..by_cpu.len()).max_by_key(|&cpu| by_cpu[cpu].len());
        report.inprocess_p50_by_cpu_ms = by_cpu
            .into_iter()
            .map(|samples| Series::from_samples(samples).p50_ms)
            .collect();
        report.inprocess = Series::traced(self.floor_ms, &self.floor_phases);
    }
}

/// The cold series: `iterations` cells on a supervisor started with `config` (no pool).
async fn cold_series(
    config: SupervisorConfig,
    bridge: &Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
    expected: &Value,
) -> Result<Series, CellsError> {
    let cold = Supervisor::start(config).await?;
    let mut samples = Vec::with_capacity(iterations);
    let mut phases = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (dt, value, cell_phases) = warm_cell(&cold, bridge, cell, false).await?;
        same_value("cold", expected, &value)?;
        samples.push(dt);
        phases.extend(cell_phases);
    }
    let series = Series::traced(samples, &phases);
    cold.shutdown().await;
    Ok(series)
}

/// The reference series: `iterations` cells, each in a `node` child of its own.
async fn node_series(
    node: &Path,
    bridge: &Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
    expected: &Value,
) -> Result<Series, CellsError> {
    let script = NodeScript::write()?;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (dt, value) = run_node_cell(node, script.path(), cell, bridge).await?;
        same_value("node", expected, &value)?;
        samples.push(ms(dt));
    }
    Ok(Series::from_samples(samples))
}

/// The in-process floor's threads: one per CPU it was asked to run on, pinned there (started on
/// first use), each with its own [`Floor`] (a QuickJS context is not `Send`; the bridge's
/// futures run through this runtime's handle).
struct FloorThreads {
    bridge: Arc<dyn Bridge>,
    cell: String,
    handle: tokio::runtime::Handle,
    /// By CPU (`None` in the last slot: the unpinned thread used when the CPU is unknown).
    threads: Vec<(Option<usize>, FloorThread)>,
}

type FloorAnswer = Result<(f64, Value, CellPhases), String>;

struct FloorThread {
    jobs: std::sync::mpsc::Sender<tokio::sync::oneshot::Sender<FloorAnswer>>,
    join: std::thread::JoinHandle<()>,
    /// Where the thread runs: its CPU when pinning worked.
    pinned: Option<usize>,
}

impl FloorThreads {
    fn new(bridge: Arc<dyn Bridge>, cell: &str) -> FloorThreads {
        FloorThreads {
            bridge,
            cell: cell.to_owned(),
            handle: tokio::runtime::Handle::current(),
            threads: Vec::new(),
        }
    }

    /// Runs one floor cell on `cpu` (anywhere when `None` or not pinnable) and returns its time
    /// (ms), value, phases and the CPU it was pinned to. A thread's first use also runs one
    /// untimed cell, as the warm series' first iteration, checked against `expected`.
    async fn run(
        &mut self,
        cpu: Option<usize>,
        expected: &Value,
    ) -> Result<(f64, Value, CellPhases, Option<usize>), CellsError> {
        let slot = match self.threads.iter().position(|(c, _)| *c == cpu) {
            Some(i) => i,
            None => {
                let thread = self.spawn(cpu)?;
                self.threads.push((cpu, thread));
                let i = self.threads.len() - 1;
                let (_, value, _) = self.ask(i).await?;
                same_value("inprocess", expected, &value)?;
                i
            }
        };
        let (dt, value, phases) = self.ask(slot).await?;
        Ok((dt, value, phases, self.threads[slot].1.pinned))
    }

    async fn ask(&self, slot: usize) -> Result<(f64, Value, CellPhases), CellsError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let gone = || mismatch("inprocess", "the floor's thread is gone".into());
        self.threads[slot].1.jobs.send(tx).map_err(|_| gone())?;
        rx.await
            .map_err(|_| gone())?
            .map_err(|e| mismatch("inprocess", e))
    }

    fn spawn(&self, cpu: Option<usize>) -> Result<FloorThread, CellsError> {
        let (jobs, queue) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<FloorAnswer>>();
        let floor = Floor::new(self.bridge.clone(), self.handle.clone());
        let cell = self.cell.clone();
        // Pinned before the thread starts its loop, so every cell it runs is on `cpu`.
        let (pinned_tx, pinned_rx) = std::sync::mpsc::channel();
        let join = std::thread::Builder::new()
            .name("bench-floor".into())
            .spawn(move || {
                let pinned = cpu.filter(|&cpu| pin_to(cpu));
                let _ = pinned_tx.send(pinned);
                while let Ok(reply) = queue.recv() {
                    let answer = floor
                        .run_cell(&cell)
                        .map(|(dt, value, phases)| (ms(dt), value, phases));
                    let _ = reply.send(answer);
                }
            })
            .map_err(|e| CellsError::io("starting the floor's thread", e))?;
        let pinned = pinned_rx.recv().unwrap_or(None);
        Ok(FloorThread { jobs, join, pinned })
    }

    /// Ends every thread (their queues close) and waits for them.
    fn stop(self) {
        for (_, thread) in self.threads {
            drop(thread.jobs);
            let _ = thread.join.join();
        }
    }
}

async fn warm_cell(
    sup: &Supervisor,
    bridge: &Arc<dyn Bridge>,
    cell: &str,
    want_warm: bool,
) -> Result<(f64, Value, Option<CellPhases>), CellsError> {
    let options = CellOptions {
        trace_phases: true,
        ..CellOptions::default()
    };
    let t = Instant::now();
    let r = sup.run_cell(cell, bridge.clone(), options).await;
    let dt = ms(t.elapsed());
    let which = if want_warm { "warm" } else { "cold" };
    if r.outcome != Outcome::Ok {
        return Err(mismatch(
            which,
            format!("{}: {}", r.outcome.kind(), r.outcome.message()),
        ));
    }
    if r.telemetry.warm != want_warm {
        return Err(mismatch(
            which,
            format!("telemetry.warm = {}", r.telemetry.warm),
        ));
    }
    Ok((dt, r.value.unwrap_or_default(), r.telemetry.phases))
}

/// A `/proc` status field in KiB (0 when absent).
pub(crate) fn proc_kib(path: &str, field: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// Finds `node` on PATH.
pub fn find_node() -> Result<PathBuf, CellsError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .ok_or_else(|| CellsError::NodeMissing {
            detail: "not found on PATH".into(),
        })
}

/// `js/node_cell.js` written to a private temp file (removed on drop).
pub struct NodeScript {
    path: PathBuf,
}

impl NodeScript {
    /// Writes the script.
    pub fn write() -> Result<NodeScript, CellsError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "toolsearch-node-cell-{}-{n}.js",
            std::process::id()
        ));
        std::fs::write(&path, NODE_CELL_JS)
            .map_err(|e| CellsError::io("writing the node reference script", e))?;
        Ok(NodeScript { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for NodeScript {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs `code` in a fresh `node --experimental-permission --allow-fs-read=S S` child with an
/// empty environment, answering its bridge calls with `bridge`. Returns the time from spawn to
/// result and the value.
pub async fn run_node_cell(
    node: &Path,
    script: &Path,
    code: &str,
    bridge: &Arc<dyn Bridge>,
) -> Result<(Duration, Value), CellsError> {
    let t = Instant::now();
    let mut child = tokio::process::Command::new(node)
        .arg("--experimental-permission")
        .arg(format!("--allow-fs-read={}", script.display()))
        .arg(script)
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| CellsError::NodeMissing {
            detail: format!("spawning {}: {e}", node.display()),
        })?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(CellsError::NodeMissing {
            detail: "no stdio pipes".into(),
        });
    };
    let io = |e: std::io::Error| CellsError::io("talking to the node reference child", e);
    let mut first = serde_json::to_vec(&json!({ "code": code })).map_err(|e| io(e.into()))?;
    first.push(b'\n');
    stdin.write_all(&first).await.map_err(io)?;
    let mut lines = BufReader::new(stdout).lines();
    let value = loop {
        let Some(line) = lines.next_line().await.map_err(io)? else {
            return Err(mismatch(
                "node",
                "the node child exited without a result".into(),
            ));
        };
        let msg: Value = serde_json::from_str(&line).map_err(|e| io(e.into()))?;
        if msg.get("done").is_some() {
            if let Some(e) = msg.get("error") {
                return Err(mismatch("node", format!("the node cell failed: {e}")));
            }
            break msg.get("value").cloned().unwrap_or(Value::Null);
        }
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let op: BridgeOp = serde_json::from_value(msg.get("op").cloned().unwrap_or(Value::Null))
            .map_err(|e| io(e.into()))?;
        let args = msg.get("args").cloned().unwrap_or(Value::Null);
        let reply = match bridge.invoke(op, args).await {
            Ok(v) => json!({"id": id, "ok": v}),
            Err(e) => json!({"id": id, "err": e.message}),
        };
        let mut bytes = serde_json::to_vec(&reply).map_err(|e| io(e.into()))?;
        bytes.push(b'\n');
        stdin.write_all(&bytes).await.map_err(io)?;
    };
    let dt = t.elapsed();
    drop(stdin);
    let _ = child.wait().await;
    Ok((dt, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::CallPhases;

    fn cell(compile: f64, hops: &[f64], cpus: (Option<u32>, Option<u32>)) -> CellPhases {
        CellPhases {
            compile_us: compile,
            calls: hops
                .iter()
                .map(|&h| CallPhases {
                    hops_us: h,
                    ..CallPhases::default()
                })
                .collect(),
            host_cpu: cpus.0,
            worker_cpu: cpus.1,
            ..CellPhases::default()
        }
    }

    #[test]
    fn phase_medians_are_per_cell_and_per_call() {
        assert_eq!(PhaseMedians::of(&[]), None);
        let cells = [
            cell(10.0, &[1.0, 2.0, 3.0], (Some(0), Some(0))),
            cell(30.0, &[4.0], (Some(0), Some(1))),
            cell(20.0, &[5.0, 6.0, 7.0], (None, Some(1))),
        ];
        let m = PhaseMedians::of(&cells).unwrap_or_else(|| panic!("traced cells"));
        // Per cell: the median of 10, 30, 20.
        assert_eq!(m.compile_us, 20.0);
        // Per call: the median of the seven calls' hops.
        assert_eq!(m.call_hops_us, 4.0);
        // Only the cells whose two CPUs are known count: one of two shared its CPU.
        assert_eq!(m.same_cpu_share, Some(0.5));
        let unknown = PhaseMedians::of(&[cell(1.0, &[], (None, None))]);
        assert_eq!(unknown.and_then(|m| m.same_cpu_share), None);
    }

    #[test]
    fn series_percentiles_and_machine_state() {
        let s = Series::from_samples((1..=100).map(f64::from).collect());
        assert_eq!((s.p50_ms, s.p99_ms, s.samples), (50.0, 99.0, 100));
        let load = load_average();
        assert!(load.iter().all(|l| *l >= 0.0), "{load:?}");
        let m = Machine::now(&BenchOptions::default());
        assert!(m.cpus >= 1);
        assert!(!m.kernel.is_empty());
        assert_eq!(m.worker_nice, DEFAULT_WORKER_NICE);
        assert_eq!(
            scheduler_boot_params(
                "console=ttyS0 sched_vcpu_pack=15 preempt=full nohz_full=1 quiet -- --sched-x"
            ),
            vec!["sched_vcpu_pack=15", "preempt=full", "nohz_full=1"]
        );
    }
}
