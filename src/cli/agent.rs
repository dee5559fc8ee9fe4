//! `toolsearch agent` (one run against a provider), `toolsearch mock-provider` (the scripted
//! provider), `toolsearch bench payload` and `toolsearch bench agent`.
//!
//! Model text and provider errors are untrusted: control characters are stripped before they
//! reach the terminal.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use super::{CatalogArgs, ConfigArgs, runtime, session, with_session};
use crate::agent::bench::{self, AgentRow, BenchCatalog, PayloadRow};
use crate::agent::{
    Agent, AgentOptions, Fault, MockProvider, MockScenario, ProviderConfig, SmallModel, StopReason,
};
use crate::config::{AgentLimits, Mode};
use crate::gateway::GlobApprovals;
use crate::sandbox::strip_controls;
use crate::session::SessionBuilder;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ModeArg {
    Direct,
    Tools,
    Directory,
    Code,
    Auto,
}

impl ModeArg {
    fn mode(self) -> Mode {
        match self {
            ModeArg::Direct => Mode::Direct,
            ModeArg::Tools => Mode::Tools,
            ModeArg::Directory => Mode::Directory,
            ModeArg::Code => Mode::Code,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

/// How to reach the provider (shared by `agent` and `bench agent`).
#[derive(Debug, Args)]
pub(super) struct ProviderArgs {
    /// The provider's base URL (http://127.0.0.1:8080) or its …/chat/completions URL.
    #[arg(long, value_name = "URL")]
    provider: String,
    /// The model name sent with each request (llama-server ignores it; Ollama needs it).
    #[arg(long, value_name = "NAME", default_value = "default")]
    model: String,
    /// The environment variable holding the API key (sent as a bearer token when set).
    #[arg(long, value_name = "VAR", default_value = "TOOLSEARCH_API_KEY")]
    api_key_env: String,
    /// Limit of one request in seconds (local models on CPU are slow; default 300).
    #[arg(long, value_name = "N", default_value_t = 300)]
    timeout_secs: u64,
    /// Most model turns (provider requests) in a run.
    #[arg(long, value_name = "N", default_value_t = 10)]
    max_turns: usize,
    /// Stop before the next request once this many tokens were used.
    #[arg(long, value_name = "N")]
    token_budget: Option<u64>,
    /// Most tool calls run from one model answer; the rest get an error naming the bound
    /// (default: the config's agent.maxCallsPerTurn, else 64).
    #[arg(long, value_name = "N")]
    max_calls_per_turn: Option<usize>,
    /// Most bytes of tool results sent back to the provider in a run, then the run stops
    /// (default: the config's agent.maxRunResultBytes, else 16 MiB).
    #[arg(long, value_name = "BYTES")]
    max_run_result_bytes: Option<u64>,
    /// The whole run's deadline in seconds (default: the config's agent.runTimeoutMs, else
    /// 1800).
    #[arg(long, value_name = "N")]
    run_timeout_secs: Option<u64>,
}

impl ProviderArgs {
    fn config(&self) -> ProviderConfig {
        let mut config = ProviderConfig::new(&self.provider, &self.model);
        config.api_key = std::env::var(&self.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        config.request_timeout = Duration::from_secs(self.timeout_secs.clamp(1, 3600));
        config
    }

    /// The loop's options: these flags over the config's `agent` bounds.
    fn options(&self, lenient: bool, limits: &AgentLimits) -> AgentOptions {
        AgentOptions {
            max_turns: self.max_turns,
            token_budget: self.token_budget,
            lenient,
            max_calls_per_turn: self.max_calls_per_turn.unwrap_or(limits.max_calls_per_turn),
            max_run_result_bytes: self
                .max_run_result_bytes
                .unwrap_or(limits.max_run_result_bytes),
            run_timeout: self.run_timeout_secs.map_or(limits.run_timeout, |secs| {
                Duration::from_secs(secs.min(u64::MAX / 1000))
            }),
            ..AgentOptions::default()
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct AgentArgs {
    #[command(flatten)]
    provider: ProviderArgs,
    /// The user's prompt.
    #[arg(long, value_name = "TEXT")]
    prompt: String,
    /// The mode (default: the config's, else code).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Parse tool calls the model writes as text (<tool_call> blocks, fenced JSON).
    #[arg(long)]
    lenient: bool,
    /// The provider's context window in tokens (bounds the directory and auto mode).
    #[arg(long, value_name = "N")]
    context_tokens: Option<usize>,
    /// Approve tools that require approval when their id or name matches this glob.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Print the run as one JSON object: stop, answer, turns, requests (bytes, tokens), tool
    /// calls, first call per tool, wall time.
    #[arg(long)]
    json: bool,
    /// The binary that runs code-mode workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

fn worker_binary(explicit: &Option<PathBuf>) -> Result<PathBuf> {
    match explicit {
        Some(path) => Ok(path.clone()),
        None => std::env::current_exe().context("cannot locate the toolsearch executable"),
    }
}

/// Untrusted text for the terminal.
fn clean(text: &str) -> String {
    strip_controls(text).into_owned()
}

pub(super) fn agent(args: AgentArgs) -> Result<ExitCode> {
    // Set-up (flags, files, MCP servers, the session) fails before any request: with --json
    // that is still one object on stdout.
    let run = (|| -> Result<_> {
        let approvals = GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
        let plan = session(&args.config, &args.catalog)?;
        let worker = worker_binary(&args.worker_binary)?;
        let options = args.provider.options(args.lenient, &plan.config.agent);
        let agent = Agent::new(args.provider.config(), options)?;
        let mode = args.mode.map(ModeArg::mode);
        let configure = |builder: SessionBuilder| {
            let builder = builder
                .context_tokens(args.context_tokens)
                .warm_pool(0)
                .worker_binary(worker)
                .approvals(Arc::new(approvals));
            match mode {
                Some(mode) => builder.mode(mode),
                None => builder,
            }
        };
        with_session(plan, configure, async |session| {
            agent.run(session, &args.prompt).await
        })
    })();
    let run = match run {
        Ok(run) => run,
        Err(error) if args.json => {
            let message = clean(&format!("{error:#}"));
            writeln!(
                std::io::stdout().lock(),
                "{}",
                serde_json::to_string_pretty(
                    &json!({"stop": {"reason": "setup", "message": message}})
                )?
            )?;
            return Ok(ExitCode::from(1));
        }
        Err(error) => return Err(error),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&run.to_json())?)?;
    } else {
        if let Some(answer) = &run.answer {
            writeln!(out, "{}", clean(answer))?;
        }
        eprintln!(
            "toolsearch: {} mode, {} turn(s), {} tool call(s) ({} lenient), {} request bytes, {:.1} s",
            run.mode,
            run.turns,
            run.calls.len(),
            run.lenient_calls(),
            run.total_request_bytes(),
            run.wall.as_secs_f64()
        );
    }
    match &run.stop {
        StopReason::Answered => Ok(ExitCode::SUCCESS),
        other => {
            let why = match other {
                StopReason::TurnLimit { max_turns } => {
                    format!("stopped after {max_turns} turns without a final answer")
                }
                StopReason::TokenBudget { used, budget } => {
                    format!("stopped: {used} tokens used of a budget of {budget}")
                }
                StopReason::RepeatedCall { name, .. } => {
                    format!("stopped: the model kept repeating the same {name} call")
                }
                StopReason::ClientCall { call } => format!(
                    "stopped: {} is a client tool; the application must run it",
                    call.tool.id
                ),
                StopReason::RunResultBytes { used, limit } => format!(
                    "stopped: the tool results sent back reached {used} bytes (max_run_result_bytes = {limit})"
                ),
                StopReason::RunTimeout { timeout_ms } => format!(
                    "stopped: the run's deadline of {timeout_ms} ms passed (run_timeout; --run-timeout-secs)"
                ),
                StopReason::ProviderError { message, .. } => format!("stopped: {message}"),
                StopReason::Answered => String::new(),
            };
            eprintln!("toolsearch: {}", clean(&why));
            Ok(ExitCode::from(1))
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct MockArgs {
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
    /// structured-controls, fenced-code or no-return.
    #[arg(long, value_name = "BEHAVIOUR")]
    small_model: Option<String>,
}

pub(super) fn mock_provider(args: MockArgs) -> Result<ExitCode> {
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
                "invalid --small-model {name:?}: expected bridge-names, bare-names, structured-controls, fenced-code or no-return"
            )
        })?),
        None => None,
    };
    let scenario = MockScenario {
        target: args.target.clone(),
        arguments,
        queries: args.queries.clone(),
        faults,
        repeat_forever: args.repeat_forever,
        text_calls: args.text_calls,
        small_model,
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
pub(super) struct PayloadArgs {
    /// Synthetic catalog sizes (comma-separated).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = bench::SIZES.to_vec())]
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
    let loaded = crate::catalog::file::load(path, crate::catalog::Source::Plugin)?;
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

pub(super) fn bench_payload(args: PayloadArgs) -> Result<ExitCode> {
    let mut catalogs: Vec<BenchCatalog> = Vec::new();
    for &size in &args.sizes {
        if !(2..=crate::agent::scenario::MAX_SYNTHETIC).contains(&size) {
            bail!(
                "--sizes: {size} is out of range (2–{})",
                crate::agent::scenario::MAX_SYNTHETIC
            );
        }
        catalogs.push(BenchCatalog::synthetic(size));
    }
    for file in catalog_files(&args)? {
        catalogs.push(load_bench_catalog(&file)?);
    }
    let binary = worker_binary(&args.worker_binary)?;
    let rows = runtime()?.block_on(bench::payload(&catalogs, &binary))?;
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

#[derive(Debug, Args)]
pub(super) struct BenchAgentArgs {
    #[command(flatten)]
    provider: ProviderArgs,
    /// Modes to run (comma-separated; default all five).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [ModeArg::Direct, ModeArg::Tools, ModeArg::Directory, ModeArg::Code, ModeArg::Auto])]
    modes: Vec<ModeArg>,
    /// Take calls written as text as they come (default: lenient parsing on, counted apart).
    #[arg(long)]
    strict: bool,
    /// Print {"rows": [...]} with each run's full record.
    #[arg(long)]
    json: bool,
    /// The binary that runs code-mode workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

pub(super) fn bench_agent(args: BenchAgentArgs) -> Result<ExitCode> {
    let binary = worker_binary(&args.worker_binary)?;
    let modes: Vec<Mode> = args.modes.iter().map(|m| m.mode()).collect();
    let rows = runtime()?.block_on(bench::agent(
        args.provider.config(),
        args.provider.options(!args.strict, &AgentLimits::default()),
        &modes,
        &binary,
    ))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"rows": rows}))?
        )?;
    } else {
        print_agent(&mut out, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn opt<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn print_agent(out: &mut impl Write, rows: &[AgentRow]) -> Result<()> {
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
