//! `toolsearch exec` (one code cell) and `toolsearch bench cells` (warm, warm after idle,
//! in-process floor, cold, node).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::{CatalogArgs, ConfigArgs, load_catalog, load_policy, runtime};
use crate::gateway::{Gateway, GlobApprovals};
use crate::sandbox::bench::{BenchOptions, run_cells_bench_with};
use crate::sandbox::{
    CellOptions, CellResult, CellTelemetry, GatewayBridge, Limits, Outcome, Supervisor,
    SupervisorConfig,
};

/// The cell `toolsearch bench cells` runs: search + describe + call on the demo catalog.
pub const BENCH_CELL: &str = include_str!("../../js/examples/walkthrough.js");

#[derive(Debug, Args)]
pub(super) struct ExecArgs {
    /// A JavaScript file holding the cell body (or `-` for stdin).
    #[arg(
        value_name = "FILE.js",
        conflicts_with = "eval",
        required_unless_present = "eval"
    )]
    file: Option<PathBuf>,
    /// The cell body given inline.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    eval: Option<String>,
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Wall-clock limit in milliseconds (clamped to 1,000–60,000; default from the config,
    /// 10,000).
    #[arg(long, value_name = "N")]
    timeout_ms: Option<u64>,
    /// Approve tools that require approval when their id or name matches this glob.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    /// Print exactly one JSON object: {ok, value | error: {kind, message}, logs, telemetry}.
    #[arg(long)]
    json: bool,
    /// The binary that runs workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(super) struct BenchCellsArgs {
    /// Measured iterations per series.
    #[arg(long, default_value_t = 200)]
    iterations: usize,
    /// Print {"machine": {…}, "warm": {p50_ms, p99_ms, …, phases: {…}}, "warm_after_idle",
    /// "inprocess", "cold", "node", "ratio_node_over_warm", "ratio_warm_over_inprocess", …}.
    #[arg(long)]
    json: bool,
    /// Nice steps the sandbox runs below this process (`SupervisorConfig::worker_nice`, 0–19),
    /// for A/B runs of the priority.
    #[arg(long, value_name = "N", default_value_t = crate::sandbox::bench::BenchOptions::default().worker_nice)]
    worker_nice: u8,
    /// When supervisor and worker poll for each other's frames (`Polling::when`), for A/B runs:
    /// `peer-on-other-cpu` (default), `always`, `never`.
    #[arg(long, value_name = "WHEN", default_value = "peer-on-other-cpu")]
    polling: Polling,
    /// The binary that runs workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

/// `--polling` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Polling {
    /// Poll only while the peer runs on another CPU.
    PeerOnOtherCpu,
    /// Always poll after sending.
    Always,
    /// Never poll.
    Never,
}

impl From<Polling> for crate::sandbox::PollWhen {
    fn from(p: Polling) -> Self {
        match p {
            Polling::PeerOnOtherCpu => crate::sandbox::PollWhen::PeerOnOtherCpu,
            Polling::Always => crate::sandbox::PollWhen::Always,
            Polling::Never => crate::sandbox::PollWhen::Never,
        }
    }
}

fn worker_binary(explicit: &Option<PathBuf>) -> Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().context("cannot locate the toolsearch executable"),
    }
}

/// Sandbox limits from a resolved config.
pub(super) fn limits_for(config: &crate::config::Config) -> Limits {
    Limits {
        code_timeout: config.code_timeout,
        memory_limit_bytes: usize::try_from(config.memory_limit_bytes).unwrap_or(usize::MAX),
        ..Limits::default()
    }
}

pub(super) fn exec(args: ExecArgs) -> Result<ExitCode> {
    let code = match (&args.eval, &args.file) {
        (Some(code), _) => code.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut code = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut code)?;
            code
        }
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
        (None, None) => bail!("give a FILE.js or -e CODE"),
    };
    let config = args.config.load()?;
    let snapshot = load_catalog(&args.catalog)?;
    let policy = load_policy(&args.catalog)?;
    let approvals = GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
    let gateway = Gateway::builder(snapshot)
        .policy(policy)
        .approvals(Arc::new(approvals))
        .build()?;
    let mut limits = limits_for(&config);
    if let Some(ms) = args.timeout_ms {
        limits.code_timeout = std::time::Duration::from_millis(ms);
    }
    let binary = worker_binary(&args.worker_binary)?;
    let result = runtime()?.block_on(async move {
        let mut supervisor_config = SupervisorConfig::new(binary);
        // One cell: fork on demand rather than keeping a pool warm.
        supervisor_config.pool_size = 0;
        supervisor_config.limits = limits;
        match Supervisor::start(supervisor_config).await {
            Err(error) => CellResult::failed(
                Outcome::WorkerSetupFailure {
                    detail: error.to_string(),
                },
                CellTelemetry::default(),
            ),
            Ok(supervisor) => {
                let result = supervisor
                    .run_cell(
                        &code,
                        Arc::new(GatewayBridge::new(gateway)),
                        CellOptions::default(),
                    )
                    .await;
                supervisor.shutdown().await;
                result
            }
        }
    });
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&result.to_json())?)?;
    } else {
        for line in &result.logs {
            writeln!(out, "[{:?}] {}", line.level, line.text)?;
        }
        if result.logs_truncated {
            writeln!(out, "[logs truncated]")?;
        }
        match &result.value {
            Some(value) if result.outcome.is_ok() => {
                writeln!(out, "{}", serde_json::to_string_pretty(value)?)?
            }
            _ => writeln!(
                out,
                "error ({}): {}",
                result.outcome.kind(),
                result.outcome.message()
            )?,
        }
    }
    Ok(if result.outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

pub(super) fn bench_cells(args: BenchCellsArgs) -> Result<ExitCode> {
    let binary = worker_binary(&args.worker_binary)?;
    let gateway = Gateway::builder(crate::demo::catalog()).build()?;
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run_cells_bench_with(
            &binary,
            Arc::new(GatewayBridge::new(gateway)),
            BENCH_CELL,
            &BenchOptions {
                iterations: args.iterations,
                worker_nice: args.worker_nice.min(19),
                polling: args.polling.into(),
            },
        ))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "cells doing search + describe + call on the demo catalog, {} iterations each",
            args.iterations
        )?;
        let m = &report.machine;
        writeln!(
            out,
            "machine: {} × {}, load average {:.2} {:.2} {:.2} (after: {:.2}), sandbox nice +{}, polling {:?}",
            m.cpus,
            m.cpu_model,
            m.load_average_start[0],
            m.load_average_start[1],
            m.load_average_start[2],
            m.load_average_end[0],
            m.worker_nice,
            m.polling
        )?;
        for (name, series) in [
            ("warm", &report.warm),
            ("warm after idle", &report.warm_after_idle),
            ("in-process", &report.inprocess),
            ("cold", &report.cold),
            ("node", &report.node),
        ] {
            writeln!(
                out,
                "{name:>15}: p50 {:>8.3} ms   p99 {:>8.3} ms   mean {:>8.3} ms",
                series.p50_ms, series.p99_ms, series.mean_ms
            )?;
            if let Some(p) = &series.phases {
                writeln!(
                    out,
                    "{:>17}submit→running {:.0} µs, compile {:.0}, per call guest {:.0} / host {:.0} / hops {:.0}, tail {:.0}, result→caller {:.0}",
                    "",
                    p.submit_to_running_us,
                    p.compile_us,
                    p.call_guest_us,
                    p.call_host_us,
                    p.call_hops_us,
                    p.tail_us,
                    p.result_to_caller_us
                )?;
            }
        }
        writeln!(
            out,
            "node / warm (p50): {:.1}x   warm / in-process (p50): {:.2}x",
            report.ratio_node_over_warm, report.ratio_warm_over_inprocess
        )?;
        writeln!(
            out,
            "ready worker: VmRSS {} KiB, PSS {} KiB",
            report.ready_worker_rss_kib, report.ready_worker_pss_kib
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
