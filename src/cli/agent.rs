//! `toolsearch agent` (one run against a provider), and the arguments of `toolsearch bench
//! agent`, which shares the provider flags and runs in the measurement wing.
//!
//! Model text and provider errors are untrusted: control characters are stripped before they
//! reach the terminal.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::{ModeArg, PlanArgs, WorkerArgs, setup_or_json, with_session, write_json};
use crate::agent::{Agent, AgentOptions, ProviderConfig, StopReason};
use crate::config::AgentLimits;
use crate::gateway::GlobApprovals;
use crate::session::SessionBuilder;
use crate::telemetry::terminal_safe;

/// How to reach the provider (shared by `agent` and `bench agent`).
#[derive(Debug, Args)]
pub(super) struct ProviderArgs {
    /// The provider's base URL (http://127.0.0.1:8080) or its …/chat/completions URL.
    #[cfg_attr(
        feature = "lab",
        arg(long, value_name = "URL", required_unless_present = "scripted")
    )]
    #[cfg_attr(not(feature = "lab"), arg(long, value_name = "URL", required = true))]
    provider: Option<String>,
    /// Play the model with the scripted mock provider instead of --provider (bench agent
    /// --tasks; optionally as a small model: bridge-names, bare-names, structured-controls,
    /// fenced-code, no-return, code-as-text, repeats-search, bridge-steps).
    #[cfg(feature = "lab")]
    #[arg(long, value_name = "BEHAVIOUR", num_args = 0..=1, default_missing_value = "well-behaved")]
    scripted: Option<String>,
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
    /// Send tool_choice "required" with the first request: the provider must answer it with a
    /// tool call (llama-server constrains the answer from its first token).
    #[arg(long)]
    require_tool_first: bool,
}

impl ProviderArgs {
    fn config(&self) -> ProviderConfig {
        let mut config =
            ProviderConfig::new(self.provider.as_deref().unwrap_or_default(), &self.model);
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
            require_tool_first: self.require_tool_first,
            ..AgentOptions::default()
        }
    }
}

#[derive(Debug, Args)]
pub(super) struct AgentArgs {
    #[command(flatten)]
    provider: ProviderArgs,
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    semantic: crate::search::hybrid::SemanticArgs,
    /// The user's prompt.
    #[arg(long, value_name = "TEXT")]
    prompt: String,
    /// The mode (default: the config's, else code).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Parse tool calls the model writes as text (<tool_call> blocks, fenced JSON; in code mode
    /// also JavaScript calling openclaw.tools in a fence or on bare lines).
    #[arg(long)]
    lenient: bool,
    /// The provider's context window in tokens (bounds the directory and auto mode).
    #[arg(long, value_name = "N")]
    context_tokens: Option<usize>,
    /// Approve tools that require approval when their id or name matches this glob.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Print the run as one JSON object: stop, answer, turns, requests (bytes, tokens), tool
    /// calls, first call per tool, wall time.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    worker: WorkerArgs,
}

/// Untrusted text for the terminal.
fn clean(text: &str) -> String {
    terminal_safe(text).into_owned()
}

pub(super) fn agent(args: AgentArgs) -> Result<ExitCode> {
    // Set-up (flags, files, MCP servers, the session) fails before any request: with --json
    // that is still one object on stdout.
    let run = (|| -> Result<_> {
        let approvals = GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
        let plan = args.plan.plan()?;
        let worker = args.worker.binary()?;
        let options = args.provider.options(args.lenient, &plan.config.agent);
        if args.provider.provider.is_none() {
            anyhow::bail!("--provider is needed (--scripted is for bench agent --tasks)");
        }
        let agent = Agent::new(args.provider.config(), options)?;
        let mode = args.mode.map(ModeArg::mode);
        // Hybrid: the tool vectors are ready (cached or embedded) before the first request.
        #[cfg(feature = "semantic")]
        let hybrid = args
            .semantic
            .open(&plan.config.semantic)?
            .map(|store| super::semantic_cache(store, false));
        let configure = |builder: SessionBuilder| {
            let builder = builder
                .context_tokens(args.context_tokens)
                .warm_pool(0)
                .worker_binary(worker)
                .approvals(Arc::new(approvals));
            #[cfg(feature = "semantic")]
            let builder = super::with_index_cache(builder, hybrid);
            match mode {
                Some(mode) => builder.mode(mode),
                None => builder,
            }
        };
        with_session(plan, configure, async |session| {
            agent.run(session, &args.prompt).await
        })
    })();
    let failure = |error: &anyhow::Error| {
        let message = clean(&format!("{error:#}"));
        json!({"stop": {"reason": "setup", "message": message}})
    };
    let run = match setup_or_json(run, args.json, failure)? {
        Ok(run) => run,
        Err(code) => return Ok(code),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &run.to_json())?;
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

/// `toolsearch bench agent`: the provider flags of `agent`, run by the measurement wing.
#[cfg(feature = "lab")]
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
    /// Print {"rows": [...]} with each run's full record (with --tasks: {"modes": [...],
    /// "runs": [...]}).
    #[arg(long)]
    json: bool,
    /// Run the built-in task suite instead of the one release-order scenario.
    #[arg(long)]
    tasks: bool,
    /// Run only this task of the suite (repeatable; implies --tasks).
    #[arg(long, value_name = "NAME")]
    task: Vec<String>,
    #[command(flatten)]
    worker: WorkerArgs,
}

#[cfg(feature = "lab")]
pub(super) fn bench_agent(args: BenchAgentArgs) -> Result<ExitCode> {
    let binary = args.worker.binary()?;
    let modes: Vec<crate::config::Mode> = args.modes.iter().map(|m| m.mode()).collect();
    if args.tasks || !args.task.is_empty() {
        return crate::lab::command::bench_tasks(
            crate::lab::command::TasksRun {
                provider: args.provider.config(),
                scripted: args.provider.scripted.clone(),
                options: args.provider.options(!args.strict, &AgentLimits::default()),
                modes,
                only: args.task.clone(),
                json: args.json,
            },
            &binary,
        );
    }
    if args.provider.provider.is_none() {
        anyhow::bail!("--provider is needed (--scripted plays only the task suite: add --tasks)");
    }
    let rows = super::runtime()?.block_on(crate::lab::payload::agent(
        args.provider.config(),
        args.provider.options(!args.strict, &AgentLimits::default()),
        &modes,
        &binary,
    ))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &json!({"rows": rows}))?;
    } else {
        crate::lab::command::print_agent(&mut out, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}
