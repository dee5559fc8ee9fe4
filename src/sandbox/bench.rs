//! The code-cell benchmark behind `benches/cells.rs` and `toolsearch bench cells --json`: warm pool,
//! cold fork, and the reference architecture (a Node.js child per cell) in the same run.
//!
//! Owns: [`run_cells_bench`], [`BenchReport`], the benchmark cell ([`BENCH_CELL`]), the
//! reference runner ([`run_node_cell`], script `js/node_cell.js`) and [`FixtureBridge`].
//! Never does: time pool refill (warm iterations wait for a full pool outside the timed region);
//! skip a missing prerequisite (no `node` is an error); accept a wrong result (every iteration's
//! value is compared with the first warm one, inside the timed loop).
//! Invariants: all three series run the same body against the same [`Bridge`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::bridge::{Bridge, BridgeError, BridgeOp};
use super::error::SandboxError;
use super::limits::CellOptions;
use super::outcome::Outcome;
use super::supervisor::{Supervisor, SupervisorConfig};

/// The reference runner's script, written to a temp file per run.
pub const NODE_CELL_JS: &str = include_str!("../../js/node_cell.js");

/// How long the machine idles before each cell of [`BenchReport::warm_after_idle`].
pub const IDLE_BEFORE_CELL: Duration = Duration::from_millis(5);

/// The benchmark cell: one `search`, one `describe`, one `call`.
pub const BENCH_CELL: &str = "const hits = await openclaw.tools.search('create a calendar event', {limit: 3});\n\
const tool = await openclaw.tools.describe(hits[0].id);\n\
const out = await openclaw.tools.call(tool.id, {title: 'standup', a: 2, b: 3});\n\
return {hits: hits.length, tool: tool.name, result: out};";

/// Latency percentiles of one series, in milliseconds.
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
        }
    }
}

/// What `toolsearch bench cells --json` prints.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct BenchReport {
    /// A ready worker exists when the cell is submitted (submitted as soon as the pool is full).
    pub warm: Series,
    /// Like `warm`, but the machine has been idle for [`IDLE_BEFORE_CELL`] when the cell is
    /// submitted, as between an agent's turns. On a VM the idle virtual CPUs lose their caches
    /// (the hypervisor runs other work on them), so the same cell costs more.
    pub warm_after_idle: Series,
    /// The zygote forks on demand (pool size 0).
    pub cold: Series,
    /// The reference: `node --experimental-permission` spawned per cell, empty environment,
    /// timed from spawn to result.
    pub node: Series,
    /// `node.p50_ms / warm.p50_ms`.
    pub ratio_node_over_warm: f64,
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
    async fn invoke(&self, op: BridgeOp, args: Value) -> Result<Value, BridgeError> {
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

fn mismatch(which: &'static str, detail: String) -> SandboxError {
    SandboxError::BenchMismatch { which, detail }
}

/// Every iteration of every series must return the first warm iteration's value.
fn same_value(which: &'static str, expected: &Value, value: &Value) -> Result<(), SandboxError> {
    if value == expected {
        Ok(())
    } else {
        Err(mismatch(which, format!("expected {expected}, got {value}")))
    }
}

/// Runs `iterations` warm, cold and node cells with `bridge` and reports percentiles.
/// Fails if `node` is missing or any iteration returns a different value.
///
/// The measurement runs on a Tokio task, as a gateway's request handler would (timing from a
/// `block_on` thread adds two cross-thread wake-ups per cell that a server never pays).
pub async fn run_cells_bench(
    worker_binary: &Path,
    bridge: Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
) -> Result<BenchReport, SandboxError> {
    let worker_binary = worker_binary.to_path_buf();
    let cell = cell.to_string();
    match tokio::spawn(async move { measure(&worker_binary, bridge, &cell, iterations).await })
        .await
    {
        Ok(report) => report,
        Err(e) => Err(mismatch("bench", format!("the benchmark task failed: {e}"))),
    }
}

async fn measure(
    worker_binary: &Path,
    bridge: Arc<dyn Bridge>,
    cell: &str,
    iterations: usize,
) -> Result<BenchReport, SandboxError> {
    let iterations = iterations.max(1);
    let node = find_node()?;
    let mut report = BenchReport::default();

    // Warm: a ready worker exists when each cell is submitted.
    let warm = Supervisor::start(SupervisorConfig::new(worker_binary)).await?;
    let mut expected: Option<Value> = None;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations + 1 {
        warm.wait_pool_full(Duration::from_secs(10)).await;
        let (dt, value) = warm_cell(&warm, &bridge, cell, true).await?;
        match &expected {
            None => expected = Some(value), // the first iteration only fixes the expected value
            Some(e) if *e == value => samples.push(dt),
            Some(e) => return Err(mismatch("warm", format!("expected {e}, got {value}"))),
        }
    }
    report.warm = Series::from_samples(samples);
    let expected = expected.unwrap_or_default();

    // Warm after idle: the same pool, the machine idle before each cell.
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        warm.wait_pool_full(Duration::from_secs(10)).await;
        tokio::time::sleep(IDLE_BEFORE_CELL).await;
        let (dt, value) = warm_cell(&warm, &bridge, cell, true).await?;
        same_value("warm_after_idle", &expected, &value)?;
        samples.push(dt);
    }
    report.warm_after_idle = Series::from_samples(samples);
    warm.wait_pool_full(Duration::from_secs(10)).await;
    if let Some(pid) = warm.ready_worker_pids().first() {
        report.ready_worker_rss_kib = proc_kib(&format!("/proc/{pid}/status"), "VmRSS:");
        report.ready_worker_pss_kib = proc_kib(&format!("/proc/{pid}/smaps_rollup"), "Pss:");
    }
    warm.shutdown().await;

    // Cold: the zygote forks on demand.
    let mut config = SupervisorConfig::new(worker_binary);
    config.pool_size = 0;
    let cold = Supervisor::start(config).await?;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (dt, value) = warm_cell(&cold, &bridge, cell, false).await?;
        same_value("cold", &expected, &value)?;
        samples.push(dt);
    }
    report.cold = Series::from_samples(samples);
    cold.shutdown().await;

    // Node: the reference architecture.
    let script = NodeScript::write()?;
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (dt, value) = run_node_cell(&node, script.path(), cell, &bridge).await?;
        same_value("node", &expected, &value)?;
        samples.push(ms(dt));
    }
    report.node = Series::from_samples(samples);
    report.ratio_node_over_warm = if report.warm.p50_ms > 0.0 {
        report.node.p50_ms / report.warm.p50_ms
    } else {
        0.0
    };
    report.value = expected;
    Ok(report)
}

async fn warm_cell(
    sup: &Supervisor,
    bridge: &Arc<dyn Bridge>,
    cell: &str,
    want_warm: bool,
) -> Result<(f64, Value), SandboxError> {
    let t = Instant::now();
    let r = sup
        .run_cell(cell, bridge.clone(), CellOptions::default())
        .await;
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
    Ok((dt, r.value.unwrap_or_default()))
}

fn proc_kib(path: &str, field: &str) -> u64 {
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
pub fn find_node() -> Result<PathBuf, SandboxError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())
        .ok_or_else(|| SandboxError::NodeMissing {
            detail: "not found on PATH".into(),
        })
}

/// `js/node_cell.js` written to a private temp file (removed on drop).
pub struct NodeScript {
    path: PathBuf,
}

impl NodeScript {
    /// Writes the script.
    pub fn write() -> Result<NodeScript, SandboxError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "toolsearch-node-cell-{}-{n}.js",
            std::process::id()
        ));
        std::fs::write(&path, NODE_CELL_JS)
            .map_err(|e| SandboxError::io("writing the node reference script", e))?;
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
) -> Result<(Duration, Value), SandboxError> {
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
        .map_err(|e| SandboxError::NodeMissing {
            detail: format!("spawning {}: {e}", node.display()),
        })?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(SandboxError::NodeMissing {
            detail: "no stdio pipes".into(),
        });
    };
    let io = |e: std::io::Error| SandboxError::io("talking to the node reference child", e);
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
