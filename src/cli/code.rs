//! `toolsearch exec` (one code cell) and `toolsearch bench cells` (warm, warm after idle,
//! in-process floor, cold, node).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::Args;

use super::{CatalogArgs, ConfigArgs, session, with_session};
use crate::config::Mode;
// A cell file or stdin is read up to this bound; the sandbox's own, smaller `code_bytes` limit
// then applies with its own error.
use crate::config::input::MAX_CELL_SOURCE_BYTES;
use crate::gateway::GlobApprovals;

/// The cell `toolsearch bench cells` runs: search + describe + call on the demo catalog.
#[cfg(feature = "demo")]
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
    /// Print {"machine": {…, cpu_loop_us: [per CPU]}, "warm": {p50_ms, p99_ms, …, phases: {…,
    /// host_cpus}}, "warm_after_idle", "inprocess" (each floor cell right after a warm cell, on
    /// the CPU it was submitted from: mostly "inprocess_cpu"; p50 per CPU in
    /// "inprocess_p50_by_cpu_ms"), "cold", "node", "ratio_node_over_warm",
    /// "ratio_warm_over_inprocess", …}.
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

fn read_code(args: &ExecArgs) -> Result<String> {
    Ok(match (&args.eval, &args.file) {
        (Some(code), _) => code.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut code = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(std::io::stdin(), MAX_CELL_SOURCE_BYTES + 1),
                &mut code,
            )?;
            if code.len() as u64 > MAX_CELL_SOURCE_BYTES {
                bail!(
                    "the cell on stdin is larger than the limit of {MAX_CELL_SOURCE_BYTES} bytes"
                );
            }
            code
        }
        (None, Some(path)) => {
            crate::config::input::read_text(path, MAX_CELL_SOURCE_BYTES, "cell file")
                .map_err(anyhow::Error::msg)?
        }
        (None, None) => bail!("give a FILE.js or -e CODE"),
    })
}

pub(super) fn exec(args: ExecArgs) -> Result<ExitCode> {
    // Everything before the cell runs is set-up; its failures are set-up failures.
    let prepared = (|| {
        let code = read_code(&args)?;
        let approvals = GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
        let binary = worker_binary(&args.worker_binary)?;
        let plan = session(&args.config, &args.catalog)?;
        let timeout = args.timeout_ms.map(std::time::Duration::from_millis);
        with_session(
            plan,
            // A cell always runs in code mode; one cell: fork on demand rather than keep a pool.
            |b| {
                b.mode(Mode::Code)
                    .warm_pool(0)
                    .worker_binary(binary)
                    .approvals(Arc::new(approvals))
            },
            async |session| session.run_cell(&code, timeout).await,
        )
    })();
    let result = match prepared {
        Ok(result) => result,
        // `--json` always prints exactly one object, set-up failures included.
        Err(error) if args.json => {
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({
                    "ok": false,
                    "error": {"kind": "setup", "message": format!("{error:#}")},
                    "logs": [],
                }))?
            )?;
            return Ok(ExitCode::from(1));
        }
        Err(error) => return Err(error),
    };
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

#[cfg(not(feature = "demo"))]
pub(super) fn bench_cells(_args: BenchCellsArgs) -> Result<ExitCode> {
    bail!("bench cells runs on the embedded demo catalog: build with the `demo` feature")
}

#[cfg(feature = "demo")]
pub(super) fn bench_cells(args: BenchCellsArgs) -> Result<ExitCode> {
    use crate::config::Config;
    use crate::sandbox::bench::{BenchOptions, run_cells_bench_with};
    use crate::session::Session;

    let binary = worker_binary(&args.worker_binary)?;
    let report = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            // The bench drives its own supervisors (warm pool, cold forks) against the bridge of
            // a demo-catalog run; the run itself needs no sandbox.
            let session = Session::builder(Config::default())
                .mode(Mode::Tools)
                .catalog(crate::demo::catalog())
                .build()
                .await?;
            let options = BenchOptions {
                iterations: args.iterations,
                worker_nice: args.worker_nice.min(19),
                polling: args.polling.into(),
            };
            let report =
                run_cells_bench_with(&binary, session.bridge(), BENCH_CELL, &options).await;
            session.finish().await;
            anyhow::Ok(report?)
        })?;
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
            "machine: {} × {}, kernel {} {}, load average {:.2} {:.2} {:.2} (after: {:.2}), sandbox nice +{}, polling {:?}",
            m.cpus,
            m.cpu_model,
            m.kernel,
            m.scheduler_boot_params.join(" "),
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
                    "{:>17}submit→running {:.0} µs, compile {:.0}, per call guest {:.0} / host {:.0} / hops {:.0}, tail {:.0}, result→caller {:.0}{}",
                    "",
                    p.submit_to_running_us,
                    p.compile_us,
                    p.call_guest_us,
                    p.call_host_us,
                    p.call_hops_us,
                    p.tail_us,
                    p.result_to_caller_us,
                    p.same_cpu_share
                        .map(|s| format!(
                            ", worker on the submitting CPU in {:.0}% of cells",
                            s * 100.0
                        ))
                        .unwrap_or_default()
                )?;
            }
        }
        writeln!(
            out,
            "{:>17}in-process p50 per CPU [{}] ms (mostly on CPU {}); fixed loop per CPU {:?} µs → {:?} µs",
            "",
            report
                .inprocess_p50_by_cpu_ms
                .iter()
                .map(|ms| format!("{ms:.3}"))
                .collect::<Vec<_>>()
                .join(", "),
            report
                .inprocess_cpu
                .map_or_else(|| "unknown".to_owned(), |c| c.to_string()),
            m.cpu_loop_us,
            m.cpu_loop_us_end
        )?;
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
