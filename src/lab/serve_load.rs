//! `toolsearch bench serve`: a load test of serve mode over loopback.
//!
//! Starts `toolsearch serve --http 127.0.0.1:0` as a child process (with a random bearer token),
//! drives it with N concurrent MCP clients (rmcp's streamable-HTTP client) for a fixed duration
//! per phase — searches only; search → describe → call chains (tools mode); code cells (a second
//! child in code mode) — then runs a soak of consecutive cells on one client. Reports throughput
//! and p50/p99 per operation, and from `/proc`: each child's RSS and open descriptors before and
//! after, and its live sandbox workers after.
//!
//! Owns: the load generator and its report. Never does: listen anywhere but loopback; run
//! unbounded (clients, durations and the soak are clamped, the soak also by time); leave its
//! children behind (SIGTERM, then SIGKILL on drop).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

use super::lean_client::{Answer, LeanClient};

/// Most concurrent clients.
const MAX_CLIENTS: usize = 64;
/// Longest phase.
const MAX_PHASE: Duration = Duration::from_secs(300);
/// Most soak cells.
const MAX_SOAK_CELLS: usize = 1_000_000;
/// How long settling (descriptors closing, the pool refilling) may take after a phase.
const SETTLE: Duration = Duration::from_secs(3);

/// Targets on the 2-core reference machine (issue 16).
const TARGET_SEARCHES_PER_SEC: f64 = 5_000.0;
const TARGET_CELLS_PER_SEC: f64 = 500.0;
const TARGET_SOAK_RSS_GROWTH_KIB: i64 = 10 * 1024;

#[derive(Debug, Args)]
pub(crate) struct BenchServeArgs {
    /// Concurrent MCP clients per phase (1–64).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Seconds per phase (searches, chains, cells); fractions allowed (0.1–300).
    #[arg(long, default_value_t = 5.0)]
    duration_secs: f64,
    /// Consecutive cells in the soak, on one client (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    soak_cells: usize,
    /// The soak stops after this many seconds even if cells remain.
    #[arg(long, default_value_t = 300)]
    soak_max_secs: u64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

type Client = RunningService<rmcp::RoleClient, ()>;

/// Which MCP client the load generator runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientKind {
    /// [`LeanClient`]: the sessionless protocol (2026-07-28), one POST and one JSON answer per
    /// call, next to no client-side CPU. The load of the throughput phases and the soak.
    Lean,
    /// rmcp's client with the sessionless protocol (`server/discover`, self-contained requests).
    RmcpSessionless,
    /// rmcp's client with the legacy lifecycle (2025-11-25 and before): `initialize`, an
    /// `Mcp-Session-Id`, every answer on an event stream.
    RmcpSessions,
}

impl ClientKind {
    fn name(self) -> &'static str {
        match self {
            ClientKind::Lean => "lean client, sessionless MCP 2026-07-28",
            ClientKind::RmcpSessionless => "rmcp client, sessionless MCP 2026-07-28",
            ClientKind::RmcpSessions => "rmcp client, sessions (initialize)",
        }
    }
}

/// One connected MCP client.
enum Conn {
    Rmcp(Client),
    Lean(tokio::sync::Mutex<LeanClient>),
}

/// One `serve --http` child.
struct Server {
    child: Child,
    url: String,
    token: String,
}

impl Server {
    fn start(mode: &str) -> Result<Server> {
        let exe = std::env::current_exe().context("cannot locate the toolsearch executable")?;
        let token = format!(
            "bench-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        let mut child = Command::new(exe)
            .args(["serve", "--mode", mode, "--http", "127.0.0.1:0"])
            .env("TOOLSEARCH_AUTH_TOKEN", &token)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start `toolsearch serve`")?;
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        let url = line.trim().to_string();
        let mut server = Server { child, url, token };
        if !matches!(read, Some(Ok(n)) if n > 0) || !server.url.starts_with("http://127.0.0.1:") {
            server.kill();
            bail!("`toolsearch serve --http` did not print its URL (got {line:?})");
        }
        Ok(server)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then wait up to 20 s (then SIGKILL).
    fn stop(mut self) -> Result<()> {
        // SAFETY: signalling our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        bail!("serve did not exit within 20 s of SIGTERM")
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    async fn client(&self, kind: ClientKind) -> Result<Arc<Conn>> {
        let failed = |e: &dyn std::fmt::Display| {
            anyhow::anyhow!(
                "an MCP client ({}) could not connect to {}: {e}",
                kind.name(),
                self.url
            )
        };
        if kind == ClientKind::Lean {
            return LeanClient::connect(&self.url, &self.token)
                .await
                .map(|c| Arc::new(Conn::Lean(tokio::sync::Mutex::new(c))))
                .map_err(|e| failed(&format!("{e:#}")));
        }
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.as_str())
            .auth_header(&self.token);
        let transport = StreamableHttpClientTransport::from_config(config);
        let connected = if kind == ClientKind::RmcpSessionless {
            ().serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
        } else {
            ().serve(transport).await
        };
        connected
            .map(|c| Arc::new(Conn::Rmcp(c)))
            .map_err(|e| failed(&e))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

/// What `/proc` says about a serve child.
#[derive(Debug, Clone, Copy)]
struct ProcState {
    rss_kib: i64,
    fds: i64,
    /// Sandbox workers: the zygote's children (grandchildren of serve).
    workers: i64,
}

fn proc_state(pid: u32) -> ProcState {
    let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(-1);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(-1, |d| d.count() as i64);
    let workers = children(pid)
        .into_iter()
        .map(|c| children(c).len() as i64)
        .sum();
    ProcState {
        rss_kib,
        fds,
        workers,
    }
}

/// Live (not zombie) children of `pid`, from `/proc/<pid>/task/*/children`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for child in text
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            let running = matches!(std::fs::read_to_string(format!("/proc/{child}/stat")),
                Ok(s) if !s.contains(") Z "));
            if running {
                out.push(child);
            }
        }
    }
    out
}

/// Waits (up to [`SETTLE`]) until the child's descriptors and workers are back at `baseline`.
async fn settle(pid: u32, baseline: ProcState) -> ProcState {
    let deadline = Instant::now() + SETTLE;
    loop {
        let now = proc_state(pid);
        if (now.fds <= baseline.fds && now.workers <= baseline.workers)
            || Instant::now() >= deadline
        {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Search,
    Describe,
    Call,
    Cell,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Search => "search",
            Op::Describe => "describe",
            Op::Call => "call",
            Op::Cell => "cell",
        }
    }
}

const QUERIES: [&str; 8] = [
    "convert units",
    "weather forecast",
    "send an email",
    "create a calendar event",
    "stock quote",
    "translate text",
    "list open issues",
    "set a reminder",
];

const CELL: &str = "return 40 + 2;";

/// The tool and arguments of operation `op`, the `i`-th time.
fn op_args(op: Op, i: usize) -> (&'static str, Value) {
    match op {
        Op::Search => (
            "tool_search",
            json!({"query": QUERIES[i % QUERIES.len()], "limit": 5}),
        ),
        Op::Describe => ("tool_describe", json!({"id": "plugin:units:convert_units"})),
        Op::Call => (
            "tool_call",
            json!({"id": "plugin:units:convert_units",
                   "args": {"value": i % 100, "from_unit": "km", "to_unit": "mi"}}),
        ),
        Op::Cell => ("tool_search_code", json!({"code": CELL})),
    }
}

/// Latencies (µs) and errors of one operation.
#[derive(Debug, Default)]
struct Samples {
    micros: Vec<u32>,
    errors: u64,
    first_error: Option<String>,
}

impl Samples {
    fn merge(&mut self, other: Samples) {
        self.micros.extend(other.micros);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn report(&mut self, secs: f64) -> Value {
        self.micros.sort_unstable();
        let pct = |p: f64| -> f64 {
            if self.micros.is_empty() {
                return 0.0;
            }
            let i = ((self.micros.len() as f64 * p).ceil() as usize).clamp(1, self.micros.len());
            f64::from(self.micros[i - 1]) / 1e3
        };
        json!({
            "count": self.micros.len(),
            "per_sec": round1(self.micros.len() as f64 / secs.max(1e-9)),
            "p50_ms": round3(pct(0.50)),
            "p99_ms": round3(pct(0.99)),
            "max_ms": round3(pct(1.0)),
            "errors": self.errors,
            "first_error": self.first_error,
        })
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One timed request; a protocol error or an `isError` result counts as an error.
async fn timed(conn: &Conn, op: Op, i: usize, samples: &mut Samples) {
    let (name, args) = op_args(op, i);
    let started = Instant::now();
    // Ok(None): a result; Ok(Some(content)): an `isError` result; Err: no result.
    let outcome: std::result::Result<Option<String>, String> = match conn {
        Conn::Rmcp(client) => {
            let arguments = match args {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            let params = CallToolRequestParams::new(name).with_arguments(arguments);
            match client.peer().call_tool(params).await {
                Ok(result) if result.is_error != Some(true) => Ok(None),
                Ok(result) => Ok(Some(
                    serde_json::to_string(&result.content).unwrap_or_default(),
                )),
                Err(e) => Err(e.to_string()),
            }
        }
        Conn::Lean(client) => match client.lock().await.call_tool(name, args).await {
            Ok(Answer::Ok) => Ok(None),
            Ok(Answer::ToolError(content)) => Ok(Some(content)),
            Err(e) => Err(format!("{e:#}")),
        },
    };
    let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
    let failure = match outcome {
        Ok(None) => None,
        Ok(Some(content)) => Some(format!(
            "{} answered isError: {}",
            op.name(),
            crate::telemetry::terminal_safe(&content)
                .chars()
                .take(200)
                .collect::<String>()
        )),
        Err(e) => Some(format!(
            "{} failed: {}",
            op.name(),
            crate::telemetry::terminal_safe(&e)
        )),
    };
    match failure {
        None => samples.micros.push(micros),
        Some(message) => {
            samples.errors += 1;
            if samples.first_error.is_none() {
                samples.first_error = Some(message);
            }
        }
    }
}

/// Runs `ops` in a loop on every client (each on its own task) until `duration` passed; returns
/// samples per op and the seconds it took.
async fn phase(
    clients: &[Arc<Conn>],
    ops: &'static [Op],
    duration: Duration,
) -> (Vec<Samples>, f64) {
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        let conn = client.clone();
        tasks.spawn(async move {
            let mut samples: Vec<Samples> = ops.iter().map(|_| Samples::default()).collect();
            let mut i = c * 7919;
            while Instant::now() < deadline {
                for (k, op) in ops.iter().enumerate() {
                    timed(&conn, *op, i, &mut samples[k]).await;
                }
                i += 1;
            }
            samples
        });
    }
    let mut merged: Vec<Samples> = ops.iter().map(|_| Samples::default()).collect();
    while let Some(done) = tasks.join_next().await {
        if let Ok(samples) = done {
            for (k, s) in samples.into_iter().enumerate() {
                merged[k].merge(s);
            }
        }
    }
    (merged, started.elapsed().as_secs_f64())
}

async fn connect(server: &Server, n: usize, kind: ClientKind) -> Result<Vec<Arc<Conn>>> {
    let mut clients = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(server.client(kind).await?);
    }
    Ok(clients)
}

/// Ends every client's connection (an rmcp client with a session also ends the session).
async fn disconnect(clients: Vec<Arc<Conn>>) {
    for client in clients {
        if let Ok(Conn::Rmcp(client)) = Arc::try_unwrap(client) {
            let _ = client.cancel().await;
        }
    }
}

fn state_json(before: ProcState, after: ProcState) -> Value {
    json!({
        "rss_before_kib": before.rss_kib,
        "rss_after_kib": after.rss_kib,
        "fds_before": before.fds,
        "fds_after": after.fds,
        "live_workers_before": before.workers,
        "live_workers_after": after.workers,
        "leaked_fds": (after.fds - before.fds).max(0),
        "leaked_workers": (after.workers - before.workers).max(0),
    })
}

/// Warms a server up (connects, runs `ops` a few times, disconnects) and returns its settled
/// state: the baseline of its "before" figures.
async fn warm_up(server: &Server, ops: &[Op]) -> Result<ProcState> {
    let client = server.client(ClientKind::Lean).await?;
    let mut samples = Samples::default();
    for i in 0..50 {
        for op in ops {
            timed(&client, *op, i, &mut samples).await;
        }
    }
    if let Some(error) = samples.first_error {
        bail!("the warm-up failed: {error}");
    }
    disconnect(vec![client]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let first = proc_state(server.pid());
    // Let the sandbox's pool refill and closed connections go before taking the baseline.
    Ok(settle(server.pid(), first).await)
}

fn loadavg() -> Value {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let parts: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .filter_map(|p| p.parse().ok())
        .collect();
    json!(parts)
}

/// The run's bounds, clamped.
struct Plan {
    clients: usize,
    duration: Duration,
    soak_cells: usize,
    soak_limit: Duration,
}

impl Plan {
    fn of(args: &BenchServeArgs) -> Plan {
        Plan {
            clients: args.clients.clamp(1, MAX_CLIENTS),
            duration: Duration::from_secs_f64(
                args.duration_secs.clamp(0.1, MAX_PHASE.as_secs_f64()),
            ),
            soak_cells: args.soak_cells.min(MAX_SOAK_CELLS),
            soak_limit: Duration::from_secs(args.soak_max_secs.clamp(1, 3_600)),
        }
    }
}

/// The reports of the tools-mode server.
struct ToolsRun {
    searches: Value,
    chain: Value,
    /// Sessionless, then with sessions.
    rmcp_searches: Vec<Value>,
    state: Value,
}

/// The reports of the code-mode server.
struct CodeRun {
    cells: Value,
    soak: Option<Value>,
    state: Value,
}

/// Tools mode: searches alone, then search → describe → call chains, then the searches again
/// from rmcp's client.
async fn tools_mode(plan: &Plan) -> Result<ToolsRun> {
    let tools = Server::start("tools")?;
    let before = warm_up(&tools, &[Op::Search, Op::Describe, Op::Call]).await?;
    let conns = connect(&tools, plan.clients, ClientKind::Lean).await?;
    let (mut searches, search_secs) = phase(&conns, &[Op::Search], plan.duration).await;
    let (mut chain, chain_secs) =
        phase(&conns, &[Op::Search, Op::Describe, Op::Call], plan.duration).await;
    disconnect(conns).await;
    // The same searches from rmcp's client, as an application would run it: sessionless, then
    // with the legacy lifecycle (a session, answers on event streams).
    let mut rmcp_searches = Vec::new();
    for kind in [ClientKind::RmcpSessionless, ClientKind::RmcpSessions] {
        let conns = connect(&tools, plan.clients, kind).await?;
        let (mut samples, secs) = phase(&conns, &[Op::Search], plan.duration).await;
        disconnect(conns).await;
        let mut report = samples[0].report(secs);
        if let Value::Object(map) = &mut report {
            map.insert("client".into(), json!(kind.name()));
        }
        rmcp_searches.push(report);
    }
    let after = settle(tools.pid(), before).await;
    tools.stop()?;
    Ok(ToolsRun {
        searches: searches[0].report(search_secs),
        chain: json!({
            "search": chain[0].report(chain_secs),
            "describe": chain[1].report(chain_secs),
            "call": chain[2].report(chain_secs),
            "chains_per_sec": round1(chain[2].micros.len() as f64 / chain_secs.max(1e-9)),
        }),
        rmcp_searches,
        state: state_json(before, after),
    })
}

/// Code mode: cells from every client, then the soak on one.
async fn code_mode(plan: &Plan) -> Result<CodeRun> {
    let code = Server::start("code")?;
    let before = warm_up(&code, &[Op::Cell]).await?;
    let conns = connect(&code, plan.clients, ClientKind::Lean).await?;
    let (mut cells, cell_secs) = phase(&conns, &[Op::Cell], plan.duration).await;
    disconnect(conns).await;
    let after = settle(code.pid(), before).await;
    let soak = if plan.soak_cells > 0 {
        Some(soak(&code, before, plan).await?)
    } else {
        None
    };
    code.stop()?;
    Ok(CodeRun {
        cells: cells[0].report(cell_secs),
        soak,
        state: state_json(before, after),
    })
}

/// Consecutive cells on one client, compared with the server's settled `baseline`.
async fn soak(code: &Server, baseline: ProcState, plan: &Plan) -> Result<Value> {
    let client = code.client(ClientKind::Lean).await?;
    let before = proc_state(code.pid());
    let started = Instant::now();
    let mut samples = Samples::default();
    let mut done = 0;
    while done < plan.soak_cells && started.elapsed() < plan.soak_limit {
        timed(&client, Op::Cell, done, &mut samples).await;
        done += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    disconnect(vec![client]).await;
    let after = settle(code.pid(), baseline).await;
    let mut report = samples.report(secs);
    if let Value::Object(map) = &mut report {
        map.insert("cells_asked".into(), json!(plan.soak_cells));
        map.insert("secs".into(), json!(round3(secs)));
        map.insert("rss_before_kib".into(), json!(before.rss_kib));
        map.insert("rss_after_kib".into(), json!(after.rss_kib));
        map.insert(
            "rss_growth_kib".into(),
            json!(after.rss_kib - before.rss_kib),
        );
        map.insert("fds_before".into(), json!(baseline.fds));
        map.insert("fds_after".into(), json!(after.fds));
        map.insert("live_workers_after".into(), json!(after.workers));
        map.insert(
            "leaked_fds".into(),
            json!((after.fds - baseline.fds).max(0)),
        );
        map.insert(
            "leaked_workers".into(),
            json!((after.workers - baseline.workers).max(0)),
        );
    }
    Ok(report)
}

async fn run(args: &BenchServeArgs) -> Result<Value> {
    crate::mcp::install_tls_provider();
    let plan = Plan::of(args);
    let load_before = loadavg();
    let tools = tools_mode(&plan).await?;
    let code = code_mode(&plan).await?;
    Ok(summary(&plan, load_before, &tools, &code))
}

/// The whole report: every phase, the servers' states, error and leak totals, the targets.
fn summary(plan: &Plan, load_before: Value, tools: &ToolsRun, code: &CodeRun) -> Value {
    let soak = &code.soak;
    let leaked = |key: &str| -> i64 {
        [
            tools.state[key].as_i64(),
            code.state[key].as_i64(),
            soak.as_ref().and_then(|s| s[key].as_i64()),
        ]
        .into_iter()
        .flatten()
        .sum()
    };
    let searches_per_sec = tools.searches["per_sec"].as_f64().unwrap_or(0.0);
    let cells_per_sec = code.cells["per_sec"].as_f64().unwrap_or(0.0);
    let growth = soak.as_ref().and_then(|s| s["rss_growth_kib"].as_i64());
    let errors = tools.searches["errors"].as_u64().unwrap_or(0)
        + tools
            .rmcp_searches
            .iter()
            .map(|r| r["errors"].as_u64().unwrap_or(0))
            .sum::<u64>()
        + code.cells["errors"].as_u64().unwrap_or(0)
        + ["search", "describe", "call"]
            .iter()
            .map(|k| tools.chain[k]["errors"].as_u64().unwrap_or(0))
            .sum::<u64>()
        + soak
            .as_ref()
            .map_or(0, |s| s["errors"].as_u64().unwrap_or(0));
    json!({
        "machine": {
            "cpus": std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
            "loadavg_before": load_before,
            "loadavg_after": loadavg(),
        },
        "clients": plan.clients,
        "duration_secs": plan.duration.as_secs_f64(),
        "cell": CELL,
        "client": ClientKind::Lean.name(),
        "searches": tools.searches,
        "searches_rmcp_sessionless": tools.rmcp_searches[0],
        "searches_rmcp_sessions": tools.rmcp_searches[1],
        "chain": tools.chain,
        "cells": code.cells,
        "soak": soak,
        "servers": {"tools": tools.state, "code": code.state},
        "errors": errors,
        "leaked_workers": leaked("leaked_workers"),
        "leaked_fds": leaked("leaked_fds"),
        "targets": {
            "searches_per_sec": {"target": TARGET_SEARCHES_PER_SEC, "measured": searches_per_sec,
                                 "met": searches_per_sec >= TARGET_SEARCHES_PER_SEC},
            "cells_per_sec": {"target": TARGET_CELLS_PER_SEC, "measured": cells_per_sec,
                              "met": cells_per_sec >= TARGET_CELLS_PER_SEC},
            "soak_rss_growth_kib": {"target": TARGET_SOAK_RSS_GROWTH_KIB, "measured": growth,
                                    "met": growth.map(|g| g <= TARGET_SOAK_RSS_GROWTH_KIB)},
        },
    })
}

pub(crate) fn bench_serve(args: BenchServeArgs) -> Result<ExitCode> {
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(&args))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        print_text(&mut out, &report)?;
    }
    Ok(
        if report["errors"] == 0 && report["leaked_workers"] == 0 && report["leaked_fds"] == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}

fn print_text(out: &mut impl Write, r: &Value) -> Result<()> {
    let m = &r["machine"];
    writeln!(
        out,
        "serve --http on loopback: {} client(s), {} s per phase; {} CPU(s), load {} → {}",
        r["clients"], r["duration_secs"], m["cpus"], m["loadavg_before"], m["loadavg_after"]
    )?;
    let row = |out: &mut dyn Write, name: &str, s: &Value| -> std::io::Result<()> {
        writeln!(
            out,
            "  {name:<18} {:>9}/s  p50 {:>7} ms  p99 {:>7} ms  ({} ok, {} errors)",
            s["per_sec"], s["p50_ms"], s["p99_ms"], s["count"], s["errors"]
        )
    };
    row(out, "search", &r["searches"])?;
    row(out, "search (rmcp)", &r["searches_rmcp_sessionless"])?;
    row(out, "search (rmcp, sess.)", &r["searches_rmcp_sessions"])?;
    row(out, "chain: search", &r["chain"]["search"])?;
    row(out, "chain: describe", &r["chain"]["describe"])?;
    row(out, "chain: call", &r["chain"]["call"])?;
    row(out, "cell", &r["cells"])?;
    for (name, s) in [
        ("tools", &r["servers"]["tools"]),
        ("code", &r["servers"]["code"]),
    ] {
        writeln!(
            out,
            "  {name} server: RSS {} → {} KiB, fds {} → {}, workers {} → {}",
            s["rss_before_kib"],
            s["rss_after_kib"],
            s["fds_before"],
            s["fds_after"],
            s["live_workers_before"],
            s["live_workers_after"]
        )?;
    }
    if let Some(soak) = r["soak"].as_object() {
        writeln!(
            out,
            "  soak: {} cells in {} s ({}/s, p50 {} ms, p99 {} ms, {} errors); RSS {} → {} KiB ({:+} KiB)",
            soak["count"],
            soak["secs"],
            soak["per_sec"],
            soak["p50_ms"],
            soak["p99_ms"],
            soak["errors"],
            soak["rss_before_kib"],
            soak["rss_after_kib"],
            soak["rss_growth_kib"].as_i64().unwrap_or(0)
        )?;
    }
    writeln!(
        out,
        "  leaked: {} worker(s), {} fd(s); errors: {}",
        r["leaked_workers"], r["leaked_fds"], r["errors"]
    )?;
    for (name, t) in r["targets"].as_object().into_iter().flatten() {
        writeln!(
            out,
            "  target {name}: {} (measured {}) {}",
            t["target"],
            t["measured"],
            if t["met"] == true { "met" } else { "NOT met" }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut s = Samples {
            micros: (1..=100).rev().map(|x| x * 1000).collect(),
            ..Samples::default()
        };
        let r = s.report(2.0);
        assert_eq!(r["count"], 100);
        assert_eq!(r["per_sec"], 50.0);
        assert_eq!(r["p50_ms"], 50.0);
        assert_eq!(r["p99_ms"], 99.0);
        assert_eq!(r["max_ms"], 100.0);
    }

    #[test]
    fn this_process_is_visible_in_proc() {
        let state = proc_state(std::process::id());
        assert!(state.rss_kib > 0 && state.fds > 2, "{state:?}");
        assert!(std::path::Path::new("/proc/self/fd").is_dir());
    }
}
