//! The wing's command lines: the arguments, runs and tables of `toolsearch bench cells`,
//! `bench payload`, `eval` and `mock-provider`, and the table of `bench agent` (whose provider
//! flags are the `agent` command's, so its arguments stay with them in `cli`). `bench serve` and
//! `bench search` keep theirs beside their engines (`serve_load`, `eval`).
//!
//! Owns: turning flags into a bench, eval or mock-provider run and printing its report.
//! Never does: parse `argv` (the `cli` routes a parsed subcommand here) or run anything that is
//! not a measurement or a simulation.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};

use super::cells::{BenchOptions, run_cells_bench_with};
use super::mock::MockProvider;
use super::payload::{self, AgentRow, BenchCatalog, PayloadRow};
use super::script::{Fault, MockScenario, SmallModel};
use crate::config::{Config, Mode};
use crate::session::Session;
use crate::telemetry::terminal_safe;

/// The cell `toolsearch bench cells` runs: search + describe + call on the demo catalog.
const WALKTHROUGH_CELL: &str = include_str!("../../js/examples/walkthrough.js");

/// A current-thread runtime for one command.
fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// The binary that runs code-mode workers: `explicit`, else this executable.
pub(crate) fn worker_binary(explicit: &Option<PathBuf>) -> Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().context("cannot locate the toolsearch executable"),
    }
}

/// Untrusted text for the terminal.
fn clean(text: &str) -> String {
    terminal_safe(text).into_owned()
}

#[derive(Debug, Args)]
pub(crate) struct BenchCellsArgs {
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
    #[arg(long, value_name = "N", default_value_t = super::cells::BenchOptions::default().worker_nice)]
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

pub(crate) fn bench_cells(args: BenchCellsArgs) -> Result<ExitCode> {
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
                run_cells_bench_with(&binary, session.bridge(), WALKTHROUGH_CELL, &options).await;
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

#[derive(Debug, Args)]
pub(crate) struct MockArgs {
    /// Address to listen on (port 0 picks a free one). The first stdout line is the base URL.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Listen on a non-loopback address.
    #[arg(long)]
    allow_remote: bool,
    /// The tool the scripted model is after: a name or an id.
    #[arg(long, value_name = "NAME", default_value = "convert_units")]
    target: String,
    /// The arguments it calls the target with (a JSON object).
    #[arg(
        long,
        value_name = "JSON",
        default_value = r#"{"value": 10, "from_unit": "km", "to_unit": "mi"}"#
    )]
    args: String,
    /// The queries of the batched tool_search (1–16).
    #[arg(long, value_name = "QUERY", num_args = 1..=16, default_values_t = ["convert units".to_string(), "length km to miles".to_string()])]
    queries: Vec<String>,
    /// Faults for the first requests, in order (comma-separated): 500, 429 (any 400–599),
    /// malformed, unknown-tool, bad-args, stall, stall:SECONDS, flood:CALLS (one answer with
    /// that many calls), duplicate-ids (two calls under one id).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    faults: Vec<String>,
    /// Play the first move on every request (a model stuck repeating a call).
    #[arg(long)]
    repeat_forever: bool,
    /// Write calls as text in content (<tool_call> blocks and fenced JSON), like small models.
    #[arg(long)]
    text_calls: bool,
    /// Get the controls' shape wrong like a small model: bridge-names, bare-names,
    /// structured-controls, fenced-code, no-return, code-as-text, repeats-search or bridge-steps.
    #[arg(long, value_name = "BEHAVIOUR")]
    small_model: Option<String>,
    /// Play a task of the `bench agent --tasks` suite instead of --target (its steps in order).
    #[arg(long, value_name = "NAME")]
    task: Option<String>,
}

/// The suite's task names, comma-separated.
pub(crate) fn task_names() -> String {
    super::tasks::suite()
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn mock_provider(args: MockArgs) -> Result<ExitCode> {
    let arguments: Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not valid JSON: {}", args.args))?;
    if !arguments.is_object() {
        bail!("--args must be a JSON object");
    }
    let faults = args
        .faults
        .iter()
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            Fault::parse(f).with_context(|| {
                format!("invalid fault {f:?}: expected 500, 429, malformed, unknown-tool, bad-args, stall, stall:SECONDS, flood:CALLS or duplicate-ids")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let small_model = match &args.small_model {
        Some(name) => Some(SmallModel::parse(name).with_context(|| {
            format!(
                "invalid --small-model {name:?}: expected bridge-names, bare-names, structured-controls, fenced-code, no-return, code-as-text, repeats-search or bridge-steps"
            )
        })?),
        None => None,
    };
    let steps = match &args.task {
        Some(name) => {
            let task = super::tasks::suite()
                .into_iter()
                .find(|t| t.name == name.as_str())
                .ok_or_else(|| {
                    anyhow::anyhow!("no task named {name:?} in the suite ({})", task_names())
                })?;
            super::tasks::mock_scenario(&task, small_model, args.text_calls).steps
        }
        None => Vec::new(),
    };
    let scenario = MockScenario {
        target: args.target.clone(),
        arguments,
        queries: args.queries.clone(),
        faults,
        repeat_forever: args.repeat_forever,
        text_calls: args.text_calls,
        small_model,
        steps,
    };
    runtime()?.block_on(async {
        let mock = if args.allow_remote {
            MockProvider::start_any_address(args.listen, scenario).await?
        } else {
            MockProvider::start(args.listen, scenario).await?
        };
        {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", mock.url())?;
            out.flush()?;
        }
        eprintln!(
            "toolsearch: mock provider at {}/v1/chat/completions (debug: GET {}/debug/requests); Ctrl-C stops it",
            mock.url(),
            mock.url()
        );
        wait_for_signal().await;
        mock.shutdown().await;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn wait_for_signal() {
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match terminate.as_mut() {
                Some(signal) => { signal.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

#[derive(Debug, Args)]
pub(crate) struct PayloadArgs {
    /// Synthetic catalog sizes (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = payload::SIZES.to_vec())]
    sizes: Vec<usize>,
    /// Real catalog files (repeatable). Default: every .jsonl in the reference catalogs
    /// directory ($TOOLSEARCH_SHARED/catalogs or ../shared/catalogs).
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Measure only the synthetic catalogs.
    #[arg(long)]
    synthetic_only: bool,
    /// Print {"rows": [{mode, tools, catalog, declared_tools, first_request_bytes,
    /// total_request_bytes, turns, auto_chose, completed}]}.
    #[arg(long)]
    json: bool,
    /// The binary that runs code-mode workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

fn catalog_files(args: &PayloadArgs) -> Result<Vec<PathBuf>> {
    if args.synthetic_only {
        return Ok(Vec::new());
    }
    if !args.catalogs.is_empty() {
        return Ok(args.catalogs.clone());
    }
    let Some(dir) = super::shared_dir("catalogs") else {
        bail!(
            "no reference catalogs directory ($TOOLSEARCH_SHARED/catalogs or ../shared/catalogs): give --catalog FILE or --synthetic-only"
        );
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no .jsonl catalog in {}", dir.display());
    }
    Ok(files)
}

fn load_bench_catalog(path: &Path) -> Result<BenchCatalog> {
    let loaded = crate::catalog::file::load_catalog_file(path, crate::catalog::Source::Plugin)?;
    if !loaded.issues.is_empty() {
        eprintln!(
            "toolsearch: {}: skipped {} line(s)",
            path.display(),
            loaded.issues.len()
        );
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    Ok(BenchCatalog {
        name,
        tools: loaded.descriptors,
    })
}

pub(crate) fn bench_payload(args: PayloadArgs) -> Result<ExitCode> {
    let mut catalogs: Vec<BenchCatalog> = Vec::new();
    for &size in &args.sizes {
        if !(2..=super::scenario::MAX_SYNTHETIC).contains(&size) {
            bail!(
                "--sizes: {size} is out of range (2–{})",
                super::scenario::MAX_SYNTHETIC
            );
        }
        catalogs.push(BenchCatalog::synthetic(size));
    }
    for file in catalog_files(&args)? {
        catalogs.push(load_bench_catalog(&file)?);
    }
    let binary = worker_binary(&args.worker_binary)?;
    let rows = runtime()?.block_on(payload::payload(&catalogs, &binary))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"rows": rows}))?
        )?;
    } else {
        print_payload(&mut out, &rows)?;
    }
    Ok(if rows.iter().all(|r| r.completed) {
        ExitCode::SUCCESS
    } else {
        eprintln!("toolsearch: some scenarios did not complete (completed: no)");
        ExitCode::from(1)
    })
}

fn print_payload(out: &mut impl Write, rows: &[PayloadRow]) -> Result<()> {
    writeln!(
        out,
        "{:<10} {:>6} {:<30} {:>8} {:>13} {:>13} {:>6} {:>9}  completed",
        "mode", "tools", "catalog", "declared", "first bytes", "total bytes", "turns", "vs direct"
    )?;
    let mut direct_first = 0usize;
    for row in rows {
        if row.mode == "direct" {
            direct_first = row.first_request_bytes;
        }
        let ratio = if direct_first > 0 {
            format!(
                "{:.2}%",
                row.first_request_bytes as f64 * 100.0 / direct_first as f64
            )
        } else {
            "-".into()
        };
        let mode = match &row.auto_chose {
            Some(chosen) => format!("auto→{chosen}"),
            None => row.mode.clone(),
        };
        writeln!(
            out,
            "{:<10} {:>6} {:<30} {:>8} {:>13} {:>13} {:>6} {:>9}  {}",
            mode,
            row.tools,
            row.catalog,
            row.declared_tools,
            row.first_request_bytes,
            row.total_request_bytes,
            row.turns,
            ratio,
            if row.completed {
                "yes".to_string()
            } else {
                format!("no ({})", row.stop)
            }
        )?;
        if let Some(answer) = row.answer.as_deref().filter(|_| !row.completed) {
            writeln!(out, "           answer: {}", clean(answer))?;
        }
    }
    Ok(())
}

fn opt<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

/// What `bench agent --tasks` runs.
pub(crate) struct TasksRun {
    /// The provider (unused when scripted).
    pub provider: crate::agent::ProviderConfig,
    /// Play the model with the mock provider: `well-behaved` or a small model's behaviour.
    pub scripted: Option<String>,
    /// The loop's options.
    pub options: crate::agent::AgentOptions,
    /// The modes, in order.
    pub modes: Vec<crate::config::Mode>,
    /// Only these tasks (all when empty).
    pub only: Vec<String>,
    /// Print JSON.
    pub json: bool,
}

/// `toolsearch bench agent --tasks`: the suite per mode, a summary per mode and a line per
/// task run.
pub(crate) fn bench_tasks(run: TasksRun, worker_binary: &Path) -> Result<ExitCode> {
    use super::tasks::{SuiteProvider, run_suite, suite, summarize};
    let mut tasks = suite();
    if !run.only.is_empty() {
        for name in &run.only {
            if !tasks.iter().any(|t| t.name == name.as_str()) {
                bail!("no task named {name:?} in the suite ({})", task_names());
            }
        }
        tasks.retain(|t| run.only.iter().any(|n| n == t.name));
    }
    let provider = match run.scripted.as_deref() {
        None => SuiteProvider::External(run.provider),
        Some(behaviour) => SuiteProvider::Scripted {
            small_model: match behaviour {
                "well-behaved" => None,
                other => Some(SmallModel::parse(other).with_context(|| {
                    format!("invalid --scripted {other:?}: expected well-behaved, bridge-names, bare-names, structured-controls, fenced-code, no-return, code-as-text, repeats-search or bridge-steps")
                })?),
            },
            text_calls: false,
        },
    };
    let runs = runtime()?.block_on(run_suite(
        &tasks,
        &run.modes,
        &provider,
        &run.options,
        worker_binary,
    ))?;
    let modes = summarize(&runs);
    let mut out = std::io::stdout().lock();
    if run.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"modes": modes, "runs": runs}))?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "{:<10} {:>9} {:>8} {:>8} {:>13} {:>17} {:>15}",
        "mode", "success", "rate", "turns", "prompt tok", "completion tok", "target p50 s"
    )?;
    for m in &modes {
        writeln!(
            out,
            "{:<10} {:>9} {:>7.0}% {:>8.1} {:>13} {:>17} {:>15}",
            m.mode,
            format!("{}/{}", m.successes, m.tasks),
            m.success_rate * 100.0,
            m.median_turns,
            m.prompt_tokens,
            m.completion_tokens,
            m.median_target_ms
                .map_or("-".to_string(), |ms| format!("{:.2}", ms / 1000.0)),
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<26} {:<10} {:<4} {:>5} {:>9}  {:<14} called",
        "task", "mode", "ok", "turns", "recovered", "stop"
    )?;
    for r in &runs {
        let mut called = r.called.join(" ");
        if !r.wrong_tools.is_empty() {
            called.push_str(&format!(" (wrong tools ran: {})", r.wrong_tools.join(" ")));
        }
        writeln!(
            out,
            "{:<26} {:<10} {:<4} {:>5} {:>9}  {:<14} {}",
            r.task,
            r.mode,
            if r.success { "yes" } else { "no" },
            r.turns,
            r.recovered_calls,
            r.stop,
            clean(&called),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn print_agent(out: &mut impl Write, rows: &[AgentRow]) -> Result<()> {
    writeln!(
        out,
        "{:<16} {:>7} {:>6} {:>7} {:>5} {:>11} {:>12} {:>11} {:>11} {:>9}  stop",
        "mode",
        "success",
        "strict",
        "lenient",
        "turns",
        "first bytes",
        "prompt tok",
        "first tok s",
        "target s",
        "wall s"
    )?;
    for row in rows {
        let mode = if row.mode == row.chosen_mode {
            row.mode.clone()
        } else {
            format!("{}→{}", row.mode, row.chosen_mode)
        };
        writeln!(
            out,
            "{:<16} {:>7} {:>6} {:>7} {:>5} {:>11} {:>12} {:>11} {:>11} {:>9.1}  {}",
            mode,
            if row.success { "yes" } else { "no" },
            row.strict_calls,
            row.lenient_calls,
            row.turns,
            row.first_request_bytes,
            format!(
                "{}/{}",
                opt(row.first_prompt_tokens),
                opt(row.prompt_tokens)
            ),
            opt(row.first_token_ms.map(|ms| format!("{:.1}", ms / 1000.0))),
            opt(row.target_ms.map(|ms| format!("{:.1}", ms / 1000.0))),
            row.wall_ms / 1000.0,
            row.stop
        )?;
    }
    Ok(())
}

/// `toolsearch eval`.
#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    /// A catalog file whose lines' ids the gold ids refer to; repeatable (merged, or paired with
    /// --queries in order under --pooled). `demo` is the embedded demo catalog, also the default.
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Queries: JSONL of {"qid", "query", "gold": [ids], "lang"?}; repeatable (one table each,
    /// plus the macro average).
    #[arg(long = "queries", value_name = "FILE", required = true)]
    queries: Vec<PathBuf>,
    /// Search every set's queries against the union of all catalogs, ids prefixed `<set>:`.
    #[arg(long)]
    pooled: bool,
    /// Turn typo tolerance off (to compare).
    #[arg(long)]
    no_typos: bool,
    /// Turn the multilingual lexicon off (to compare).
    #[arg(long)]
    no_lexicon: bool,
    /// Also print one JSON line per query on stderr: qid, query, analyzed terms, ndcg@10, hit@5,
    /// top5.
    #[arg(long)]
    per_query: bool,
    /// Print one JSON object: the metrics (recall@1/5/10, hit@1/5/10, ndcg@10, mrr), latency_us
    /// {p50, p99}; with several sets, {mode, tools, sets, macro, latency_us}; per language too
    /// when query lines carry "lang".
    #[arg(long)]
    json: bool,
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    semantic: crate::search::hybrid::SemanticArgs,
    /// The hybrid ranker's lexical weight (0–1), to tune on dev sets.
    #[cfg(feature = "semantic")]
    #[arg(long, hide = true)]
    lexical_weight: Option<f32>,
}

/// Runs `toolsearch eval`.
pub(crate) fn eval(args: EvalArgs) -> Result<ExitCode> {
    super::eval::run(super::eval::EvalRequest {
        catalogs: &args.catalogs,
        queries: &args.queries,
        pooled: args.pooled,
        as_json: args.json,
        typo_tolerance: !args.no_typos,
        multilingual: !args.no_lexicon,
        per_query: args.per_query,
        #[cfg(feature = "semantic")]
        semantic: &args.semantic,
        #[cfg(feature = "semantic")]
        lexical_weight: args.lexical_weight,
    })
}
